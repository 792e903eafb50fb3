"""Ingest rate over a generated corpus, beside the floor of merely parsing its YAML.

    python -m benchmarks.ingest [--trials 2000] [--seed 0] [--repeat 3]

The floor reads and parses every file ingest reads (the bundles' YAML and corpus.yaml)
with PyYAML's C loader (``yaml.CSafeLoader``) and does nothing else. The ingest column
is the whole ``ledger.app.ingest.ingest`` call into a fresh ledger: detection, bounded
loading, shape checks, the timeline, event ids, payload validation and the one atomic
append (Merkle leaves included). Target: ingest ≤ 2 × the parse floor.
Best of ``--repeat`` runs for each column; both measured in this process, same files.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import yaml

from benchmarks.generate_corpus import generate
from ledger.app.ingest import ingest_into as ingest
from ledger.log.store import open_ledger
from ledger.sources.tolokaforge import OPTIONAL_FILES


def parse_floor(files: list[Path]) -> float:
    start = time.perf_counter()
    for p in files:
        yaml.load(p.read_bytes(), Loader=yaml.CSafeLoader)  # noqa: S506 - C safe loader
    return time.perf_counter() - start


def corpus_files(corpus: Path) -> list[Path]:
    """Every file ingest parses in a generated corpus: corpus.yaml and the bundles' YAML."""
    return [corpus / "corpus.yaml"] + [
        p for b in sorted(corpus.iterdir()) if b.is_dir()
        for p in [b / "trajectory.yaml", *(b / n for n in OPTIONAL_FILES)] if p.is_file()
    ]  # fmt: skip


def ingest_once(corpus: Path, work: Path) -> tuple[float, int, int, float]:
    """(seconds, trials, events) of a first ingest, then the seconds of a re-ingest."""
    lg_dir = work / "ledger"
    shutil.rmtree(lg_dir, ignore_errors=True)
    with open_ledger(lg_dir, create=True) as lg:
        start = time.perf_counter()
        # one worker: the per-core rate this table has tracked (N workers:
        # benchmarks.ingest_parallel)
        report = ingest(lg, [corpus], workers=1)
        elapsed = time.perf_counter() - start
        start = time.perf_counter()
        again = ingest(lg, [corpus], workers=1)
        re_elapsed = time.perf_counter() - start
        assert again.events_new == 0 and again.events_present == report.events_new
    return elapsed, report.trials_new, report.events_new, re_elapsed


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="vledger-bench-ingest-") as tmp:
        work = Path(tmp)
        corpus = work / "corpus"
        generate(corpus, args.trials, args.seed)
        files = corpus_files(corpus)
        size_mb = sum(p.stat().st_size for p in files) / 1e6
        floors, runs = [], []
        for _ in range(args.repeat):  # interleaved, so load from other processes hits both
            floors.append(parse_floor(files))
            runs.append(ingest_once(corpus, work))
        floor = min(floors)
        best, trials, events, _ = min(runs)
        re_best = min(r[3] for r in runs)
    print(
        f"Generated corpus: {args.trials} bundles, {len(files)} YAML files, {size_mb:.1f} MB (seed {args.seed})\n"
    )
    print("| measurement | seconds | trials/s | events/s | × parse floor |")
    print("| --- | ---: | ---: | ---: | ---: |")
    print(
        f"| parse floor (PyYAML CSafeLoader, read + parse only) | {floor:.2f} | "
        f"{trials / floor:,.0f} | – | 1.00 |"
    )
    print(
        f"| `ingest` into a fresh ledger ({events:,} events, one append) | {best:.2f} | "
        f"{trials / best:,.0f} | {events / best:,.0f} | {best / floor:.2f} |"
    )
    print(
        f"| re-ingest of the same corpus (0 new, all {events:,} already present) | {re_best:.2f} | "
        f"{trials / re_best:,.0f} | {events / re_best:,.0f} | {re_best / floor:.2f} |"
    )
    verdict = "meets" if best <= 2 * floor else "MISSES"
    print(f"\nTarget ingest ≤ 2 × parse floor: {verdict} ({best / floor:.2f}×).")


if __name__ == "__main__":
    main()
