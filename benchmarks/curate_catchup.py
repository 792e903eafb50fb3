"""What ``curate --from-ledger`` costs over a grown ledger with kept bundle files, against a
curation that renders every bundle (``full=True``).

``--trials`` generated trials (in the run layout, as ``benchmarks.curate`` lays them out) are
ingested and curated once from the log (which keeps their rendered files); ``--add`` (default
1 %) more are ingested as another run. Over two copies of that grown ledger, one curation
renders only the new trials and one renders all; both write the corpus, and the two corpora
must be equal byte for byte (the clock is fixed). Best of ``--repeat``, in process.

    PYTHONPATH=. python -m benchmarks.curate_catchup [--trials 2000] [--add N] [--repeat 2]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks.curate import CRITERION, runs_layout
from benchmarks.generate_corpus import generate
from ledger.app import curate as curate_mod
from ledger.app.curate import curate
from ledger.app.ingest import ingest_into
from ledger.log.store import open_ledger


def _runs(out: Path, trials: int, seed: int) -> list[str]:
    generate(out / "flat", trials=trials, seed=seed)
    return [str(p) for p in runs_layout(out / "flat", out / "runs", seed)]


def _corpus(into: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(into)): p.read_bytes() for p in sorted(into.rglob("*")) if p.is_file()
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--add", type=int, default=None)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    add = args.add or max(args.trials // 100, 1)
    curate_mod.now_utc = lambda: "2026-09-01T00:00:00Z"  # equal corpora, byte for byte
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        lg_dir = tmp / "lg"
        with open_ledger(lg_dir, create=True) as lg:
            ingest_into(lg, _runs(tmp / "base", args.trials, args.seed))
        t0 = time.perf_counter()
        first = curate(criterion=CRITERION, from_ledger=True, ledger=lg_dir, into=tmp / "c0")
        build = time.perf_counter() - t0
        with open_ledger(lg_dir) as lg:
            ingest_into(lg, _runs(tmp / "more", add, args.seed + 1))
        best: dict[str, float] = {}
        corpora: dict[str, dict[str, bytes]] = {}
        for i in range(args.repeat):
            for mode in ("kept", "full"):
                run = tmp / f"run-{mode}-{i}"
                shutil.copytree(lg_dir, run)
                t0 = time.perf_counter()
                curate(criterion=CRITERION, from_ledger=True, ledger=run, into=tmp / f"out-{mode}-{i}",
                       full=mode == "full")  # fmt: skip
                best[mode] = min(best.get(mode, float("inf")), time.perf_counter() - t0)
                corpora[mode] = _corpus(tmp / f"out-{mode}-{i}")
                shutil.rmtree(run)
        if corpora["kept"] != corpora["full"]:
            raise SystemExit("the corpus curated with kept bundle files differs from the full one")
    admitted = len(first.curation.admitted)
    print(
        f"| curate --from-ledger over {args.trials:,} + {add:,} added trials ({admitted:,} admitted "
        f"before; first curation {build:.1f} s) | {best['kept']:.2f} s | full=True: "
        f"{best['full']:.2f} s | {best['kept'] / best['full']:.1%} |"
    )


if __name__ == "__main__":
    main()
