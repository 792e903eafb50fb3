"""Peak memory against corpus size: does a command hold the whole corpus?

For ``vledger retrace --source DIR``, ``vledger ingest DIR``, ``vledger retrace`` from
the log and ``vledger retrace --json`` from the log, the peak RSS of one fresh process over ``--small`` and ``--large`` generated
bundles (``benchmarks.generate_corpus``), this code beside a baseline revision in the
same run. Flat means the large peak is at most 1.3× the small one.

    PYTHONPATH=. python -m benchmarks.memory_flat [--small 1000] [--large 10000] [--baseline REV]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from benchmarks.baseline import ROOT, export, peak_rss, wall
from benchmarks.generate_corpus import generate
from benchmarks.startup import BASELINE

MIB = 1024 * 1024


def peaks(code: Path, corpus: Path, work: Path) -> dict[str, int]:
    """Peak RSS of each command over ``corpus``, each into its own fresh ledger."""
    fresh = {"VLEDGER_HOME": str(work / "fresh")}
    logged = {"VLEDGER_HOME": str(work / "logged")}
    for env in (fresh, logged):
        wall(code, ["init"], env)
    out = {
        "retrace --source": peak_rss(code, ["retrace", "--source", corpus], fresh),
        "ingest": peak_rss(code, ["ingest", corpus], logged),
        "retrace (log)": peak_rss(code, ["retrace"], logged),
        "retrace --json (log)": peak_rss(code, ["retrace", "--json"], logged),
    }
    shutil.rmtree(work)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", type=int, default=1000)
    ap.add_argument("--large", type=int, default=10000)
    ap.add_argument("--baseline", default=BASELINE)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        trees = {"this code": ROOT, args.baseline: export(args.baseline, tmp / "base")}
        rows: dict[tuple[str, int], dict[str, int]] = {}
        for size in (args.small, args.large):
            corpus = tmp / f"corpus-{size}"
            generate(corpus, size, seed=0)
            for name, code in trees.items():
                rows[name, size] = peaks(code, corpus, tmp / f"work-{size}")
            shutil.rmtree(corpus)
        print(f"peak RSS (MiB) over {args.small:,} / {args.large:,} generated bundles:")
        for name in trees:
            for command, small in rows[name, args.small].items():
                large = rows[name, args.large][command]
                print(
                    f"  {name:<10} {command:<22} {small / MIB:7.0f} {large / MIB:7.0f}"
                    f"  {large / small:5.2f}x  (flat: <= 1.30x)"
                )


if __name__ == "__main__":
    main()
