"""``vledger retrace --source`` beside the reference's ``tolokaforge retrace --source`` over
the same generated corpora, in one run: wall time and peak RSS of each whole process.

    PYTHONPATH=. python -m benchmarks.retrace_reference [--trials 1000 10000] [--seed 4]
        [--reference /work/tf312/bin/tolokaforge]

For each size, ``benchmarks.generate_corpus`` writes the corpus; then one fresh process of
each tool re-checks every bundle's recorded trace checks from the files: ours into a fresh
ledger (it ingests, then retraces from the log), the reference with
``--replay-id`` (it writes its replay artifacts under the corpus, in a ``trace_replay/``
subtree our reader skips; ours runs first). Peak RSS is the process's own
(``getrusage`` of a probe's only child). The reference needs Python 3.12 and is not a
dependency of this project: without ``--reference`` found, the script says so and measures
nothing (exit 0, as ``benchmarks.curate`` without its reference).
Rows: each tool's wall and peak; ours ÷ the reference's; and ours beside the same work
in two whole processes, ``vledger ingest`` then ``vledger retrace`` from the log, which
``--source`` must not cost more than. Targets at the larger size: time ≤ 0.12×, peak
≤ 0.6×, ``--source`` ≤ 1.0× the two steps.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.baseline import ROOT, command
from benchmarks.generate_corpus import generate

DEFAULT_REFERENCE = Path("/work/tf312/bin/tolokaforge")
_PROBE = (
    "import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], "
    "stdout=subprocess.DEVNULL, stderr=subprocess.PIPE); sys.stderr.buffer.write(r.stderr); "
    "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def measured(args: list[str], env: dict[str, str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of one whole process ``args``; exit 0 or 1 (a
    replay disagreeing with a recorded grade is a result) is required."""
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args], env=env, cwd=ROOT, capture_output=True
    )
    wall = time.perf_counter() - t0
    code, kib = done.stdout.split()
    if done.returncode != 0 or int(code) not in (0, 1) or b"Traceback" in done.stderr:
        raise SystemExit(f"{args[:3]} failed: {done.stderr[-2000:].decode()}")
    return wall, int(kib) * 1024


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trials", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--seed", type=int, default=4)
    ap.add_argument("--reference", type=Path, default=DEFAULT_REFERENCE)
    args = ap.parse_args(argv)
    if not args.reference.exists():
        print(f"reference CLI {args.reference} not found (tolokaforge 0.33.1 needs Python 3.12): "
              "nothing measured")  # fmt: skip
        return 0
    ours_env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # offline: the reference's start-up otherwise retries a model-price download
    ref_env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    rows = []
    with tempfile.TemporaryDirectory(prefix="vledger-bench-retrace-ref-") as tmp:
        for n in args.trials:
            corpus = Path(tmp) / f"gen{n}"
            generate(corpus, n, args.seed)
            lg = Path(tmp) / "ledger"
            ours = measured(command("retrace", "--source", corpus, "--ledger", lg), ours_env)
            shutil.rmtree(lg, ignore_errors=True)
            # the same work in two steps: what --source must not cost more than
            ingest = measured(command("ingest", corpus, "--ledger", lg), ours_env)
            replay = measured(command("retrace", "--ledger", lg), ours_env)
            ref = measured(
                [str(args.reference), "retrace", "--source", str(corpus), "--replay-id",
                 "bench"], ref_env,
            )  # fmt: skip
            rows.append((n, ours, ref, ingest[0] + replay[0]))
            shutil.rmtree(corpus)
            shutil.rmtree(lg, ignore_errors=True)
    mib = 1 << 20
    print(f"Generated corpora (seed {args.seed}); {os.cpu_count()} CPUs; one run each\n")
    print("| bundles | `vledger retrace --source` | `tolokaforge retrace --source` (0.33.1) "
          "| time ours ÷ reference | peak ours ÷ reference "
          "| `vledger ingest` + `vledger retrace` | --source ÷ the two |")  # fmt: skip
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for n, (ow, op), (rw, rp), two in rows:
        print(f"| {n:,} | {ow:.1f} s, {op / mib:,.0f} MiB | {rw:.1f} s, {rp / mib:,.0f} MiB "
              f"| {ow / rw:.3f}× | {op / rp:.2f}× | {two:.1f} s | {ow / two:.2f}× |")  # fmt: skip
    print("\nTargets at the largest size: time ≤ 0.12×, peak ≤ 0.6×; --source ≤ 1.0× the two steps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
