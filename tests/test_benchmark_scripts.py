"""The benchmark scripts still run end to end at small sizes (no figure is checked here:
speed lives in ``benchmarks/``). A script that drifts from the code it measures fails here
instead of at the next measurement."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("module", "args", "expect"),
    [
        ("benchmarks.store", ["--events", "20000", "--memory-events", "0", "--reps", "1"], "| verify (MB/s"),
        ("benchmarks.scale", ["--trials", "300"], "driver: append of the replay results"),
        ("benchmarks.ingest_parallel", ["--trials", "70", "--scale", "2"], "per-worker cost"),
        ("benchmarks.catchup", ["--trials", "40", "--add", "5", "--repeat", "1"], "extension peak RSS"),
        ("benchmarks.views_catchup", ["--trials", "100", "--repeat", "1"], "peak RSS of the kept run"),
        ("benchmarks.curate_catchup", ["--trials", "60", "--repeat", "1"], "curate --from-ledger over"),
        ("benchmarks.reconcile_catchup", ["--trials", "60", "--add", "5", "--repeat", "1"],
         "extension peak RSS"),
        ("benchmarks.reconcile_catchup",
         ["--trials", "60", "--add", "5", "--repeat", "1", "--from-ledger"],
         "reconcile --from-ledger of 60 + 5 ingested trials"),
    ],
)
def test_benchmark_script_runs(module: str, args: list[str], expect: str) -> None:
    if module == "benchmarks.scale":
        pytest.importorskip("ray", reason="the optional [ray] extra is not installed")
    done = subprocess.run(
        [sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert expect in done.stdout
