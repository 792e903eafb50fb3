"""Retrace of the Tolokaforge 0.33.1 trace corpus, this code beside a baseline revision.

Reading every recorded key must not make retrace of the compat trace corpus (unpacked
from ``tests/data/tolokaforge/compat-0.33.1.tar.gz``) slower. The baseline is the code as
of ``--baseline`` (default: the last commit before the recorded/authored reader), exported with ``git archive``
into a temporary directory and run with the same interpreter; both sides run the same
whole-process command (``vledger retrace --source CORPUS --json``, each into a fresh
ledger), alternating, so machine noise falls on both alike. The baseline refuses most of
the corpus (it read 127 of 242 constraint rows), so it does less work per trial than the
code under test.

    PYTHONPATH=. python -m benchmarks.compat [--baseline REV] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.baseline import export
from tests.data_paths import unpack_compat

ROOT = Path(__file__).resolve().parents[1]
BASELINE = "64a16f3"  # the code before schemas/reading.py (recorded vs authored reads)


def run_once(code: Path, corpus: Path, work: Path) -> float:
    home = work / f"ledger-{time.monotonic_ns()}"
    env = {**os.environ, "PYTHONPATH": str(code), "VLEDGER_HOME": str(home)}
    cli = [sys.executable, "-c", "from ledger.cli import main; main()"]
    subprocess.run([*cli, "init"], env=env, cwd=code, capture_output=True, check=True)
    t0 = time.perf_counter()
    done = subprocess.run(
        [*cli, "retrace", "--source", str(corpus), "--json"], env=env, cwd=code, capture_output=True
    )
    elapsed = time.perf_counter() - t0
    if done.returncode not in (0, 1) or b"Traceback" in done.stderr:
        raise SystemExit(f"retrace under {code} failed: {done.stderr[-2000:].decode()}")
    shutil.rmtree(home, ignore_errors=True)
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", default=BASELINE)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        corpus = unpack_compat(tmp / "compat") / "trace-corpus"
        base = export(args.baseline, tmp / "baseline")
        now: list[float] = []
        then: list[float] = []
        for _ in range(args.repeat):
            then.append(run_once(base, corpus, tmp))
            now.append(run_once(ROOT, corpus, tmp))
        m_now, m_then = statistics.median(now), statistics.median(then)
        print(f"retrace trace-corpus (360 bundles), whole process, median of {args.repeat}:")
        print(f"  this code:           {m_now:.2f} s ({min(now):.2f}-{max(now):.2f})")
        print(f"  baseline {args.baseline}: {m_then:.2f} s ({min(then):.2f}-{max(then):.2f})")
        print(f"  ratio: {m_now / m_then:.2f}x the baseline's time")


if __name__ == "__main__":
    main()
