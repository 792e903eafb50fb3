"""The driver's own CPU time in a parallel ingest, beside a baseline revision's, in one run.

    python -m benchmarks.ingest_driver [--trials 1000] [--workers 2] [--seed 4]
                                       [--repeat 3] [--baseline main]

With N workers reading, what stays serial is the driver: taking each read stream back,
comparing, and appending it (the single writer). That share bounds how far more workers
can speed an ingest up, so it is measured here on its own: ``time.process_time()`` of the
process calling ``ingest(..., workers=N)`` (its pool's workers are other processes and
not counted), which a machine loaded by other work changes far less than wall time.
Beside it, the workers' share: the CPU time of reading every input as a worker does
(``ingest_read.read_chunk``), in one process.

Two generated corpora (``benchmarks.generate_corpus``, ``--trials`` and twice as many
bundles); for this tree and for ``--baseline`` (``git archive`` of that revision, its C
module built as a user's would be: ``benchmarks.baseline.export``), each ingest runs in a
fresh process into a fresh ledger, the two trees interleaved, best of ``--repeat``. Rows:
driver CPU seconds at each size, and per 1,000 bundles from the smaller to the larger
(start-up — imports, opening the ledger — left out), their ratio between the trees; the
logs of both trees must be the same byte for byte (size and tree root).
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

# what the workers do, on one core here: every input read into the results the driver takes
_READ = """
import sys, time
from ledger.app.ingest_inputs import tasks_for
from ledger.app.ingest_read import read_chunk
from ledger.sources.yaml_safe import DEFAULT_LIMITS
tasks = tasks_for(sys.argv[1], None, DEFAULT_LIMITS)[1]
cpu = time.process_time()
read_chunk((tasks, DEFAULT_LIMITS, None))
print(time.process_time() - cpu)
"""


def read_cpu(code: Path, corpus: Path) -> float:
    """CPU seconds of reading every input of ``corpus`` as the workers do, in one process."""
    done = subprocess.run(
        [sys.executable, "-c", _READ, str(corpus)],
        env={**os.environ, "PYTHONPATH": str(code)}, cwd=code, capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"reading under {code} failed: {done.stderr[-2000:]}")
    return float(done.stdout.strip().splitlines()[-1])


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
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline", default="main", help="git revision to measure beside this tree")
    args = ap.parse_args(argv)
    sizes = (args.trials, 2 * args.trials)
    trees = {"this tree": ROOT, f"baseline {args.baseline}": Path()}
    best: dict[tuple[str, int], dict] = {}
    with tempfile.TemporaryDirectory(prefix="vledger-bench-driver-") as tmp:
        work = Path(tmp)
        trees[f"baseline {args.baseline}"] = export(args.baseline, work / "base")
        for size in sizes:
            corpus = work / f"gen{size}"
            generate(corpus, size, args.seed)
            for _ in range(args.repeat):  # interleaved, so load from elsewhere hits both
                for name, code in trees.items():
                    run = measure(code, corpus, work / "ledger", args.workers)
                    if (name, size) not in best or run["cpu"] < best[(name, size)]["cpu"]:
                        best[(name, size)] = run
                    if size == sizes[-1]:
                        held = best[(name, size)]
                        held["read"] = min(held.get("read", 1e9), read_cpu(code, corpus))
            shutil.rmtree(corpus)
    _report(args, sizes, list(trees), best)


def _report(args, sizes, names, best) -> None:  # noqa: ANN001 - a printer
    small, large = sizes
    print(
        f"Generated corpora (seed {args.seed}) of {small:,} and {large:,} bundles "
        f"({best[(names[0], large)]['events']:,} events), --workers {args.workers}, "
        f"best of {args.repeat}; {os.cpu_count()} CPUs\n"
    )
    print(
        f"| | driver CPU s, {small:,} | driver CPU s, {large:,} | driver CPU s per 1,000 "
        f"bundles ({small:,} → {large:,}) | reading CPU s per 1,000 bundles (the workers' "
        f"share, one core) | wall s, {large:,} |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    marginal = {}
    for name in names:
        a, b = best[(name, small)], best[(name, large)]
        marginal[name] = (b["cpu"] - a["cpu"]) / (large - small) * 1000
        print(
            f"| {name} | {a['cpu']:.2f} | {b['cpu']:.2f} | {marginal[name]:.3f} "
            f"| {b['read'] / large * 1000:.3f} | {b['wall']:.1f} |"
        )
    this, base = names
    print(
        f"\nthis tree ÷ baseline, driver CPU per 1,000 bundles: "
        f"{marginal[this] / marginal[base]:.2f}×; at {large:,} bundles: "
        f"{best[(this, large)]['cpu'] / best[(base, large)]['cpu']:.2f}×"
    )
    for size in sizes:
        runs = [best[(n, size)] for n in names]
        if len({(r["root"], r["events"]) for r in runs}) != 1:
            raise SystemExit(f"the logs of {size:,} bundles differ between the trees: {runs}")
    print("same log (size and tree root) from both trees at both sizes: yes")


if __name__ == "__main__":
    main()
