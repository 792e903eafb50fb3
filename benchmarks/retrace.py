"""Retrace throughput over a generated corpus, and the 17-trial corpus as a whole process.

Ingest is excluded from the throughput figures (it is measured by benchmarks.ingest):
the corpus is generated and ingested once, then ``retrace`` runs over the ledger in
dry-run mode (nothing appended, so every run reads the same log) with 1 and 2 workers.
The baseline measured in the same run is the floor of reading the same trial events
back out of the ledger and grouping them, which every retrace pays before projecting.

    PYTHONPATH=. python -m benchmarks.retrace [--trials 10000] [--seed 7]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.generate_corpus import generate
from ledger.app.ingest import ingest_into as ingest
from ledger.app.retrace import retrace
from ledger.engines.trials import group_trials
from ledger.log.layout import TRIAL_PREFIX
from ledger.log.store import open_ledger
from tests.data_paths import NOTES

ROOT = Path(__file__).resolve().parents[1]


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def whole_process_17(tmp: Path) -> float:
    """``vledger ingest`` is not part of it: the ledger is prepared first, then timed."""
    led = tmp / "notes"
    with open_ledger(led, create=True) as lg:
        ingest(lg, [str(NOTES)])
    cmd = [sys.executable, "-c", "from ledger.cli import main; main()", "retrace",
           "--ledger", str(led), "--json", "--dry-run"]
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, cwd=ROOT, text=True)
        if done.returncode != 0:
            raise SystemExit(f"retrace subprocess failed: {done.stderr[-2000:]}")
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        corpus = tmp / "gen"
        _, gen_s = _timed(lambda: generate(corpus, trials=args.trials, seed=args.seed))
        with open_ledger(tmp / "L", create=True) as lg:
            _, ing_s = _timed(lambda: ingest(lg, [str(corpus)]))
            size = lg.size()
            groups, read_s = _timed(
                lambda: group_trials(lg.read(stream_prefix=TRIAL_PREFIX, to_seq=size - 1))
            )
            n = len(groups)
            r1, one_s = _timed(lambda: retrace(ledger=lg, workers=1, dry_run=True))
            r2, two_s = _timed(lambda: retrace(ledger=lg, workers=2, dry_run=True))
            assert r1.report["receipt"] == r2.report["receipt"], "worker count changed the output"
        proc17 = whole_process_17(tmp)
    print(f"generated {n} trials in {gen_s:.1f}s, ingested in {ing_s:.1f}s ({size} events)\n")
    print("| measurement | result | baseline (same run) | ratio |")
    print("| --- | --- | --- | --- |")
    print(f"| retrace, {n} trials, 1 worker | {n / one_s:,.0f} trials/s ({one_s:.2f} s) | "
          f"read + group the same events: {n / read_s:,.0f} trials/s ({read_s:.2f} s) | "
          f"{one_s / read_s:.1f}× the read floor |")
    print(f"| retrace, {n} trials, 2 workers | {n / two_s:,.0f} trials/s ({two_s:.2f} s) | "
          f"1 worker: {one_s:.2f} s | {one_s / two_s:.2f}× speed-up |")
    print(f"| retrace of the 17-trial notes corpus, whole process | {proc17:.2f} s | — | — |")


if __name__ == "__main__":
    main()
