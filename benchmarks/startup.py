"""Whole-process start-up of the everyday commands, this code beside a baseline revision.

The start-up targets are whole processes, as a user types them: ``vledger --help``,
``vledger retrace`` over the 17 shipped trials and ``vledger reconcile --packs
corpora/packs``. Each side runs from its own tree (``benchmarks.baseline.export``) with
the same interpreter, alternating, every retrace and reconcile on a fresh copy of a ledger
that side ingested itself, so neither sees the other's log. Best of ``--repeat``.

    PYTHONPATH=. python -m benchmarks.startup [--baseline REV] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.baseline import ROOT, export, wall

BASELINE = "bbddc0b"  # the code before lazy command loading
TARGETS = {"--help": 0.15, "retrace": 0.30, "reconcile": 0.35}  # seconds (README § Performance)
# What every command that touches the log loads before any line of ours: the floor the
# retrace and reconcile targets sit on.
# (pyarrow is not part of it: a small log is read and appended without it.)
FLOOR = "import click, duckdb; from pydantic import BaseModel"


def floor() -> float:
    """Seconds of a whole interpreter that only imports the store's three libraries."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", FLOOR], check=True)
    return time.perf_counter() - t0


def _prepared(code: Path, work: Path) -> Path:
    """A ledger holding the shipped trials and packs, ingested by ``code`` itself."""
    home = work / "ledger"
    env = {"VLEDGER_HOME": str(home)}
    wall(code, ["init"], env)
    wall(
        code,
        ["ingest", ROOT / "corpora" / "notes_duplicate_check", ROOT / "corpora" / "packs"],
        env,
    )
    return home


def _on_copy(code: Path, home: Path, args: list[str | Path]) -> Callable[[], float]:
    def run() -> float:
        copy = home.with_name(f"{home.name}-run")
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(home, copy)
        return wall(code, args, {"VLEDGER_HOME": str(copy)})

    return run


def scenarios(code: Path, work: Path) -> dict[str, Callable[[], float]]:
    home = _prepared(code, work)
    return {
        "--help": lambda: wall(code, ["--help"]),
        "retrace": _on_copy(code, home, ["retrace"]),
        "reconcile": _on_copy(code, home, ["reconcile", "--packs", ROOT / "corpora" / "packs"]),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", default=BASELINE)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    # An installed command runs from bytecode. With PYTHONDONTWRITEBYTECODE set (some shells
    # and sandboxes set it) every run would compile both trees' sources again, ~0.1 s each;
    # the first of the alternating runs writes the bytecode, best-of keeps the later ones.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        (tmp / "now").mkdir()
        (tmp / "then").mkdir()
        now = scenarios(ROOT, tmp / "now")
        then = scenarios(export(args.baseline, tmp / "base"), tmp / "then")
        print(f"whole process, best of {args.repeat} alternating runs (seconds):")
        print(f"  {'command':<12}{'this code':>10}{args.baseline:>10}{'ratio':>8}{'target':>8}")
        for name in now:
            a = b = float("inf")
            for _ in range(args.repeat):
                b = min(b, then[name]())
                a = min(a, now[name]())
            print(f"  {name:<12}{a:>10.3f}{b:>10.3f}{a / b:>7.2f}x{TARGETS[name]:>8.2f}")
        best = min(floor() for _ in range(args.repeat))
        print(f"  floor: python -c '{FLOOR}' {best:.3f}")


if __name__ == "__main__":
    main()
