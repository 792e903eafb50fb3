"""The driver's own CPU time in a parallel ingest, beside a baseline revision's, in one run.

    python -m benchmarks.ingest_driver [--trials 2000] [--workers 2] [--seed 4]
                                       [--repeat 3] [--baseline main]

With N workers reading, what stays serial is the driver: taking each read stream back,
comparing, and appending it (the single writer). That share bounds how far more workers
can speed an ingest up, so it is measured here on its own: ``time.process_time()`` of the
process calling ``ingest(..., workers=N)`` (its pool's workers are other processes and
not counted), which a machine loaded by other work changes far less than wall time.

One generated corpus (``benchmarks.generate_corpus``); for this tree and for
``--baseline`` (``git archive`` of that revision, its C module built as a user's would
be: ``benchmarks.baseline.export``), each ingest runs in a fresh process into a fresh
ledger, the two trees interleaved, best of ``--repeat``. Rows: driver CPU seconds per
1,000 bundles for each, their ratio, and the tree roots (which must be equal: the log is
the same byte for byte).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.baseline import ROOT, export
from benchmarks.generate_corpus import generate

# run in a fresh interpreter with PYTHONPATH at the tree measured: only the public API,
# which both revisions have
_SNIPPET = """
import json, sys, time
from ledger.app.ingest import ingest
from ledger.log.store import open_ledger
corpus, lg, workers = sys.argv[1], sys.argv[2], int(sys.argv[3])
cpu, t0 = time.process_time(), time.perf_counter()
ingest(corpus, ledger=lg, workers=workers)
cpu, wall = time.process_time() - cpu, time.perf_counter() - t0
with open_ledger(lg) as led:
    root = led.root(led.size()).hex()
    size = led.size()
print(json.dumps({"cpu": cpu, "wall": wall, "root": root, "events": size}))
"""


def measure(code: Path, corpus: Path, ledger: Path, workers: int) -> dict[str, float | str]:
    """One ingest of ``corpus`` by tree ``code`` in a fresh process: driver CPU, wall, root."""
    shutil.rmtree(ledger, ignore_errors=True)
    done = subprocess.run(
        [sys.executable, "-c", _SNIPPET, str(corpus), str(ledger), str(workers)],
        env={**os.environ, "PYTHONPATH": str(code)}, cwd=code, capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"ingest under {code} failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline", default="main", help="git revision to measure beside this tree")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="vledger-bench-driver-") as tmp:
        work = Path(tmp)
        base = export(args.baseline, work / "base")
        corpus = work / "corpus"
        generate(corpus, args.trials, args.seed)
        trees = {"this tree": ROOT, f"baseline {args.baseline}": base}
        best: dict[str, dict] = {}
        for _ in range(args.repeat):  # interleaved, so load from elsewhere hits both
            for name, code in trees.items():
                run = measure(code, corpus, work / "ledger", args.workers)
                if name not in best or run["cpu"] < best[name]["cpu"]:
                    best[name] = run
    per = 1000 / args.trials
    this, other = best["this tree"], best[f"baseline {args.baseline}"]
    print(
        f"{args.trials:,} generated bundles (seed {args.seed}), {this['events']:,} events, "
        f"--workers {args.workers}, best of {args.repeat}; {os.cpu_count()} CPUs\n"
    )
    print("| | driver CPU s / 1,000 bundles | driver CPU µs / event | wall s |")
    print("| --- | --- | --- | --- |")
    for name, run in best.items():
        print(
            f"| {name} | {run['cpu'] * per:.3f} | {run['cpu'] / run['events'] * 1e6:.1f} "
            f"| {run['wall']:.2f} |"
        )
    print(f"\nthis tree ÷ baseline, driver CPU: {this['cpu'] / other['cpu']:.2f}×")
    same = this["root"] == other["root"] and this["events"] == other["events"]
    print(f"same log (size and tree root): {'yes' if same else 'NO'}")
    if not same:
        raise SystemExit(f"the logs differ: {this['root']} vs {other['root']}")


if __name__ == "__main__":
    main()
