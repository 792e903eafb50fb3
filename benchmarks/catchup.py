"""What it costs to retrace a grown ledger by extending its last replay, against a full one.

A ledger of ``--trials`` generated trials is ingested and retraced (the replay to extend);
then ``--add`` more trials are ingested under another corpus name. The ledger is copied,
and over the two identical logs one fresh process retraces as it comes (extending the
replay: only the added trials are evaluated) and one with ``full=True`` (every trial).
Both append their replay (each run on a fresh copy; best of ``--repeat`` alternating
runs); their outputs digests must be equal. Reported: each one's time inside the process
(the ``ledger.retrace`` call, imports excluded), the process's peak RSS, and the ratio. The same is done at a tenth of ``--trials``, so the extension's peak RSS at both
sizes shows whether its memory is flat in ledger size.

    PYTHONPATH=. python -m benchmarks.catchup [--trials 100000] [--add 1000] [--seed 7] [--repeat 3]

Targets: the extension costs at most 5 % of the full retrace; its peak RSS at ``--trials``
is at most 1.3x the one at a tenth of it.
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
from benchmarks.timing import MIB, best_alternating, flat_row
from ledger.app.ingest import ingest_into
from ledger.app.retrace import retrace
from ledger.log.store import open_ledger

ROOT = Path(__file__).resolve().parents[1]

# One measured retrace in a fresh process: the call's time, the outputs digest, what it
# extended, and the process's own peak RSS (baseline.OWN_PEAK).
PROBE = """
import json, sys, time
t00 = time.perf_counter()
import pyarrow, ledger, ledger.app.retrace, replay.trace_checks.evaluate  # imports: not timed
t0 = time.perf_counter()
res = ledger.retrace(ledger=sys.argv[1], full=sys.argv[2] == "full")
seconds = time.perf_counter() - t0
rc = res.report["receipt"]
print(json.dumps({"seconds": seconds, "process": time.perf_counter() - t00, "digest": rc["outputs_digest"],
                  "evaluated": rc.get("evaluated"), "carried": rc.get("carried"),
                  "peak": PEAK}))
""".replace("PEAK", OWN_PEAK)


def probe(ledger_dir: Path, mode: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(ledger_dir), mode],
        capture_output=True, text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT)}, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"retrace ({mode}) failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def grown_ledgers(tmp: Path, trials: int, add: int, seed: int) -> tuple[Path, Path, float]:
    """Two copies of one ledger: ``trials`` trials retraced once, then ``add`` more
    ingested. Also the seconds the first (full) retrace took, for scale."""
    base, more = tmp / f"gen-{trials}", tmp / f"add-{trials}"
    generate(base, trials=trials, seed=seed)
    generate(more, trials=add, seed=seed + 1)
    extend_dir, full_dir = tmp / f"L-{trials}", tmp / f"F-{trials}"
    with open_ledger(extend_dir, create=True) as lg:
        ingest_into(lg, [str(base)])
        t0 = time.perf_counter()
        retrace(ledger=lg)
        first = time.perf_counter() - t0
        ingest_into(lg, [str(more)], "added")
    shutil.rmtree(base)
    shutil.rmtree(more)
    shutil.copytree(extend_dir, full_dir)
    return extend_dir, full_dir, first


def measure(tmp: Path, trials: int, add: int, seed: int, repeat: int) -> dict[str, Any]:
    """Best of ``repeat`` alternating runs, each on its own fresh copy of the grown log."""
    extend_dir, full_dir, first = grown_ledgers(tmp, trials, add, seed)
    best = best_alternating((("extend", extend_dir), ("full", full_dir)), probe, tmp / "run", repeat)
    ext, full = best["extend"], best["full"]
    if ext["digest"] != full["digest"] or ext["evaluated"] != add:
        raise SystemExit(f"the extension differs from the full replay: {ext} vs {full}")
    shutil.rmtree(extend_dir)
    shutil.rmtree(full_dir)
    return {"trials": trials, "first": first, "extend": ext, "full": full}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=100_000)
    ap.add_argument("--add", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=3, help="alternating runs; the best is kept")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        small = measure(tmp, max(args.trials // 10, 1), args.add, args.seed, args.repeat)
        large = measure(tmp, args.trials, args.add, args.seed, args.repeat)
    print("| measurement | result | baseline (same run) | ratio |")
    print("| --- | --- | --- | --- |")
    for row in (small, large):
        n, ext, full = row["trials"], row["extend"], row["full"]
        print(
            f"| retrace of {n:,} + {args.add:,} added trials, extending the replay of the "
            f"{n:,} ({ext['carried']:,} carried, {ext['evaluated']:,} evaluated) | "
            f"{ext['seconds']:.2f} s, peak {ext['peak'] / MIB:.0f} MiB | full retrace of the "
            f"same log: {full['seconds']:.2f} s, peak {full['peak'] / MIB:.0f} MiB | "
            f"{ext['seconds'] / full['seconds']:.1%} of the full (target <= 5 %) |"
        )
    print(flat_row("extension", large["extend"] | {"trials": large["trials"]},
                   small["extend"] | {"trials": small["trials"]}))  # fmt: skip


if __name__ == "__main__":
    main()
