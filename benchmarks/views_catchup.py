"""What the views that fold history cost over a grown ledger: read over their kept rows
(brought up to date first) against computed from scratch, as before rows were kept.

A ledger of ``--trials`` generated trials is ingested (and retraced once with
``--retrace``, so replayed grades are in it too), the views' rows are kept by one query,
then ``--add`` (default: 1 %) more trials are ingested under another corpus name. Over
copies of that grown ledger, one fresh process runs the queries below as ``vledger sql``
does (one connection each): the first brings the kept rows up to date with the added
events, the rest read them as they are. Another fresh process runs the same queries with
the views computed in memory from the whole log (``materialise.reads_kept`` answered no:
the code path of a ledger without kept rows). Both must return the same rows (doubles
compared to 12 significant digits: DuckDB does not fix the order in which an aggregate
adds them, so the last bits of a sum or mean vary between two from-scratch runs too). Reported:
each one's time inside the process (the query calls, imports excluded), the time of
bringing the kept rows up to date (the first query), its peak RSS, and the ratio. The same
is done at a tenth of ``--trials``, so the peak RSS at both sizes shows whether memory is
flat in ledger size.

    PYTHONPATH=. python -m benchmarks.views_catchup [--trials 100000] [--add N] [--retrace] [--repeat 2]

Target: the kept run costs at most 5 % of the from-scratch run at 100,000 trials; its
peak RSS at ``--trials`` is at most 1.3x the one at a tenth of it.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.baseline import OWN_PEAK
from benchmarks.generate_corpus import generate
from benchmarks.timing import MIB, best_alternating
from ledger.analytics import sql as analytics
from ledger.app.ingest import ingest_into
from ledger.app.retrace import retrace
from ledger.log.store import open_ledger

ROOT = Path(__file__).resolve().parents[1]

# The views that fold history (a latest-wins pick or an aggregate per trial / task / key)
QUERIES = (
    "SELECT * FROM pass_at_k",
    "SELECT * FROM current_grades",
    "SELECT * FROM trials",
    "SELECT * FROM spend",
    "SELECT * FROM usage",
    "SELECT * FROM agreement",
    "SELECT * FROM constraint_separation",
    "SELECT * FROM key_accounting",
)

PROBE = """
import hashlib, json, sys, time
import pyarrow
from ledger.analytics import materialise, sql as analytics
queries = json.loads(sys.argv[3])
if sys.argv[2] == "scratch":
    materialise.reads_kept = lambda con, statements: False  # as if no rows were kept
seconds, digest, first, kept = [], hashlib.sha256(), None, None
for q in queries:
    t0 = time.perf_counter()
    table, source = analytics.query_with_source(sys.argv[1], q)
    seconds.append(time.perf_counter() - t0)
    kept = kept or (source.kept and source.kept.action)
    for row in sorted(repr({k: f"{v:.12g}" if isinstance(v, float) else v for k, v in r.items()})
                      for r in table.to_pylist()):
        digest.update(row.encode())
print(json.dumps({"seconds": sum(seconds), "each": seconds, "digest": digest.hexdigest(),
                  "kept": kept, "peak": PEAK}))
""".replace("PEAK", OWN_PEAK)  # the probe's own peak, not its forking parent's (baseline)


def probe(ledger_dir: Path, mode: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(ledger_dir), mode, json.dumps(QUERIES)],
        capture_output=True, text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT)}, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"queries ({mode}) failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def grown_ledger(
    tmp: Path, trials: int, add: int, seed: int, with_retrace: bool
) -> tuple[Path, dict[str, float]]:
    """A ledger of ``trials`` whose view rows were kept, then ``add`` more ingested; the
    seconds each step took, for scale."""
    base, more, lg_dir = tmp / f"gen-{trials}", tmp / f"add-{trials}", tmp / f"L-{trials}"
    generate(base, trials=trials, seed=seed)
    generate(more, trials=add, seed=seed + 1)
    steps: dict[str, float] = {}
    with open_ledger(lg_dir, create=True) as lg:
        t0 = time.perf_counter()
        ingest_into(lg, [str(base)])
        steps["ingest"] = time.perf_counter() - t0
        if with_retrace:
            t0 = time.perf_counter()
            retrace(ledger=lg)
            steps["retrace"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    analytics.query(lg_dir, "SELECT count(*) FROM pass_at_k, spend")  # keeps the rows
    steps["build"] = time.perf_counter() - t0
    with open_ledger(lg_dir) as lg:
        ingest_into(lg, [str(more)], "added")
        steps["size"] = lg.size()
    shutil.rmtree(base)
    shutil.rmtree(more)
    return lg_dir, steps


def measure(
    tmp: Path, trials: int, add: int, seed: int, repeat: int, with_retrace: bool
) -> dict[str, Any]:
    """Best of ``repeat`` alternating runs, each on its own fresh copy of the grown log."""
    lg_dir, steps = grown_ledger(tmp, trials, add, seed, with_retrace)
    best = best_alternating((("kept", lg_dir), ("scratch", lg_dir)), probe, tmp / "run", repeat)
    kept, scratch = best["kept"], best["scratch"]
    if kept["digest"] != scratch["digest"] or kept["kept"] != "extended":
        raise SystemExit(f"the kept views differ from the fresh ones: {kept} vs {scratch}")
    shutil.rmtree(lg_dir)
    return {"trials": trials, "steps": steps, "kept": kept, "scratch": scratch}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=100_000)
    ap.add_argument("--add", type=int, default=None, help="trials added (default: 1 %%)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=2, help="alternating runs; the best is kept")
    ap.add_argument("--retrace", action="store_true", help="retrace once before keeping rows")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for n in (max(args.trials // 10, 1), args.trials):
            add = args.add or max(n // 100, 1)
            rows.append(measure(Path(d), n, add, args.seed, args.repeat, args.retrace))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print("| measurement | kept rows, brought up to date | from scratch (same run) | ratio |")
    print("| --- | --- | --- | --- |")
    for row in rows:
        n, kept, scratch, steps = row["trials"], row["kept"], row["scratch"], row["steps"]
        print(
            f"| {len(QUERIES)} fold-view queries over {n:,} + {n // 100:,} added trials "
            f"({int(steps['size']):,} events; catching up: {kept['each'][0]:.2f} s; "
            f"build once: {steps['build']:.1f} s) | {kept['seconds']:.2f} s, "
            f"{kept['peak'] / MIB:.0f} MiB | {scratch['seconds']:.2f} s, "
            f"{scratch['peak'] / MIB:.0f} MiB | {kept['seconds'] / scratch['seconds']:.1%} |"
        )
    small, large = rows
    print(f"\npeak RSS of the kept run: {large['kept']['peak'] / small['kept']['peak']:.2f}x "
          f"from {small['trials']:,} to {large['trials']:,} trials")  # fmt: skip


if __name__ == "__main__":
    main()
