"""Ingest reading in worker processes, beside the one-core floor of merely parsing the YAML.

    python -m benchmarks.ingest_parallel [--trials 1000] [--scale 10] [--workers 1 2]
                                         [--seed 4] [--repeat 1]

Two generated corpora (``benchmarks.generate_corpus``, ``--trials`` and ``--scale`` ×
``--trials`` bundles). For each, in this one run:

* the parse floor: every file ingest parses (corpus.yaml and the bundles' YAML) read and
  parsed by PyYAML's C loader (``yaml.CSafeLoader``) in this process, on one core;
* for each ``--workers N``: one whole ``vledger ingest CORPUS --workers N`` process into a
  fresh ledger (interpreter start, pool start, reading, the append), best of
  ``--repeat``: its wall time, its own peak RSS (``getrusage``, exact) and the peak of the
  RSS summed over it and every process under it (the pool's workers; sampled every
  0.1 s from /proc, so a shorter spike can be missed).

Rows, each a ratio within this run: the wall of N workers to one worker's; per-worker
cost (wall × N) to the parse floor; each peak at the larger corpus to the smaller's.
Targets: N=2 at most 0.6× one worker's wall at the larger corpus; per-worker cost at
most 1.3× the floor; peaks at most 1.3× from the smaller corpus to the larger.
Every ledger written is checked to hold the same tree root for every N.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.baseline import ROOT, command
from benchmarks.generate_corpus import generate
from benchmarks.ingest import corpus_files, parse_floor
from ledger.log.store import open_ledger

PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_PROBE = (
    "import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], "
    "stdout=subprocess.DEVNULL, stderr=subprocess.PIPE); sys.stderr.buffer.write(r.stderr); "
    "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


@dataclass(frozen=True)
class Run:
    wall: float
    driver_peak: int  # bytes
    tree_peak: int  # bytes, sampled
    root: str


def _tree_rss(top: int) -> int:
    """RSS summed over every process under ``top``, not ``top`` itself (Linux /proc)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    stat = f.read()
            except OSError:
                continue
            parents[int(entry)] = int(stat[stat.rindex(b")") + 2 :].split()[1])
    tree, todo = {top}, [top]
    while todo:
        pid = todo.pop()
        for child, parent in parents.items():
            if parent == pid and child not in tree:
                tree.add(child)
                todo.append(child)
    total = 0
    for pid in tree - {top}:
        try:
            with open(f"/proc/{pid}/statm", "rb") as f:
                total += int(f.read().split()[1]) * PAGE
        except OSError:
            continue
    return total


def ingest_run(corpus: Path, lg_dir: Path, workers: int) -> Run:
    """One whole ``vledger ingest`` process: wall, own peak RSS, sampled tree peak, root.

    Run under a small probe process (as ``benchmarks.baseline.peak_rss`` does), so the
    probe's RUSAGE_CHILDREN holds that one ``vledger`` process only; the probe itself is
    left out of the sampled sum."""
    shutil.rmtree(lg_dir, ignore_errors=True)
    args = ["ingest", str(corpus), "--ledger", str(lg_dir), "--workers", str(workers)]
    peak = [0]
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", _PROBE, *command(*args)],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.1):
            peak[0] = max(peak[0], _tree_rss(proc.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    wall = time.perf_counter() - t0
    stop.set()
    sampler.join()
    code, kib = out.split()
    if proc.returncode != 0 or int(code) != 0:
        raise SystemExit(f"vledger {' '.join(args)} failed: {err.decode()[-2000:]}")
    driver = int(kib) * 1024
    with open_ledger(lg_dir) as lg:
        root = lg.root(lg.size()).hex()
    return Run(wall, driver, max(peak[0], driver), root)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--scale", type=int, default=10)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--seed", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args(argv)
    sizes = [args.trials, args.trials * args.scale]
    floors: dict[int, float] = {}
    runs: dict[tuple[int, int], Run] = {}
    nfiles: dict[int, int] = {}
    with tempfile.TemporaryDirectory(prefix="vledger-bench-ingest-par-") as tmp:
        work = Path(tmp)
        for size in sizes:
            corpus = work / f"gen{size}"
            generate(corpus, size, args.seed)
            files = corpus_files(corpus)
            nfiles[size] = len(files)
            for _ in range(args.repeat):  # interleaved, so load from elsewhere hits all
                floor = parse_floor(files)
                floors[size] = min(floors.get(size, floor), floor)
                for n in args.workers:
                    run = ingest_run(corpus, work / "ledger", n)
                    best = runs.get((size, n))
                    if best is None or run.wall < best.wall:
                        runs[(size, n)] = run
            shutil.rmtree(corpus)
            roots = {runs[(size, n)].root for n in args.workers}
            assert len(roots) == 1, f"the tree root differs between worker counts: {roots}"
    _report(args, sizes, floors, runs, nfiles)


def _report(args, sizes, floors, runs, nfiles) -> None:  # noqa: ANN001 - a printer
    mib = 1 << 20
    print(
        f"Generated corpora (seed {args.seed}): "
        + ", ".join(f"{s:,} bundles ({nfiles[s]:,} YAML files)" for s in sizes)
        + f"; {os.cpu_count()} CPUs; best of {args.repeat}\n"
    )
    head = " | ".join(f"{s:,} bundles" for s in sizes)
    print(f"| measurement | {head} |")
    print("| --- |" + " ---: |" * len(sizes))
    print(
        "| parse floor: PyYAML CSafeLoader, 1 core (s; trials/s) | "
        + " | ".join(f"{floors[s]:.2f} s; {s / floors[s]:,.0f}/s" for s in sizes)
        + " |"
    )
    for n in args.workers:
        print(
            f"| `vledger ingest --workers {n}`: wall (s); trials/s per worker | "
            + " | ".join(f"{runs[(s, n)].wall:.2f} s; {s / (runs[(s, n)].wall * n):,.0f}/s"
                         for s in sizes)  # fmt: skip
            + " |"
        )
        print(
            f"| `--workers {n}`: peak RSS, driver / all processes (MiB) | "
            + " | ".join(f"{runs[(s, n)].driver_peak / mib:,.0f} / {runs[(s, n)].tree_peak / mib:,.0f}"
                         for s in sizes)  # fmt: skip
            + " |"
        )
    print("\n| ratio (this run) | " + head + " | target |")
    print("| --- |" + " ---: |" * len(sizes) + " --- |")
    one = args.workers[0]
    for n in args.workers[1:]:
        print(
            f"| wall, {n} workers ÷ {one} | "
            + " | ".join(f"{runs[(s, n)].wall / runs[(s, one)].wall:.2f}×" for s in sizes)
            + (" | ≤ 0.6× (2 workers, larger corpus) |" if n == 2 else " | – |")
        )
    for n in args.workers:
        print(
            f"| per-worker cost ({n} × wall) ÷ parse floor | "
            + " | ".join(f"{runs[(s, n)].wall * n / floors[s]:.2f}×" for s in sizes)
            + " | ≤ 1.3× |"
        )
    small, large = sizes
    for n in args.workers:
        d = runs[(large, n)].driver_peak / max(1, runs[(small, n)].driver_peak)
        t = runs[(large, n)].tree_peak / max(1, runs[(small, n)].tree_peak)
        print(
            f"| peak RSS {large:,} ÷ {small:,} bundles, {n} worker(s): driver / all | "
            f"{d:.2f}× / {t:.2f}× | – | ≤ 1.3× |"
        )


if __name__ == "__main__":
    main()
