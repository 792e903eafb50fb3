"""Run every benchmark script in turn and collect what they print into one file.

Each script measures its figures beside a named baseline in the same run; this runner adds
nothing of its own. Output: ``benchmarks/out/results.md`` (and stdout, not versioned).
The README's Performance table and the versioned ``benchmarks/results.md`` (date and
commit per figure) are copied from such runs.

    PYTHONPATH=. python -m benchmarks.run_all [--only NAME …] [--quick]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# name -> (module, default args, --quick args): quick runs are for a smoke check only.
SCRIPTS: dict[str, tuple[str, list[str], list[str]]] = {
    "store": ("benchmarks.store", [], ["--events", "50000"]),
    "timeline": ("benchmarks.timeline", [], ["--trials", "500", "--repeat", "2"]),
    "ingest": ("benchmarks.ingest", [], ["--trials", "200"]),
    "ingest_parallel": ("benchmarks.ingest_parallel", [], ["--trials", "150", "--scale", "2"]),
    "trace_checks": ("benchmarks.trace_checks", [], []),
    "grade": ("benchmarks.grade", [], ["--trials", "300", "--repeat", "1"]),
    "retrace": ("benchmarks.retrace", [], ["--trials", "300"]),
    "compat": ("benchmarks.compat", [], ["--repeat", "1"]),
    "reconcile": ("benchmarks.reconcile", [], ["--trials", "300"]),
    "curate": ("benchmarks.curate", [], ["--trials", "60", "--repeat", "1"]),
    "retrace_reference": ("benchmarks.retrace_reference", [], ["--trials", "40"]),
    "verdict": ("benchmarks.verdict", [], []),
    "analytics": ("benchmarks.analytics", [], ["--trials", "500"]),
    "inspect_import": ("benchmarks.inspect_import", [], ["--samples", "40", "--logs", "2"]),
    "inspect_memory": ("benchmarks.inspect_memory", [], ["--small", "20", "--large", "60"]),
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*", choices=sorted(SCRIPTS))
    ap.add_argument("--quick", action="store_true", help="small sizes: a smoke run, not figures")
    args = ap.parse_args()
    out_dir = ROOT / "benchmarks" / "out"
    out_dir.mkdir(parents=True, exist_ok=True)
    chunks = []
    for name in args.only or SCRIPTS:
        module, full, quick = SCRIPTS[name]
        cmd = [sys.executable, "-m", module, *(quick if args.quick else full)]
        t0 = time.perf_counter()
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        took = time.perf_counter() - t0
        status = "ok" if done.returncode == 0 else f"FAILED (exit {done.returncode})"
        body = done.stdout if done.returncode == 0 else done.stdout + done.stderr[-3000:]
        chunk = f"## {name} — {status}, {took:.0f} s\n\n`{' '.join(cmd[1:])}`\n\n{body}\n"
        print(chunk, flush=True)
        chunks.append(chunk)
    (out_dir / "results.md").write_text("\n".join(chunks))


if __name__ == "__main__":
    main()
