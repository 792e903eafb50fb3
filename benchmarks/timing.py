"""The one timing helper the benchmark scripts share."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

MIB = 1024 * 1024


def rate(fn: Callable[[Any], object], items: Sequence[Any], repeat: int) -> float:
    """Best-of-``repeat`` items per second of ``fn`` over ``items``."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for item in items:
            fn(item)
        best = min(best, time.perf_counter() - start)
    return len(items) / best


def best_alternating(
    runs: Sequence[tuple[str, Path]], probe: Callable[[Path, str], dict[str, Any]],
    scratch: Path, repeat: int, prepare: Callable[[Path, str], None] | None = None,
) -> dict[str, dict[str, Any]]:  # fmt: skip
    """Per mode, the fastest (``"seconds"``) of ``repeat`` rounds in which every mode runs
    once, in turn, on a fresh copy of its ledger at ``scratch`` (``prepare`` may alter the
    copy first): alternating, so a change in the machine's load touches every mode alike."""
    best: dict[str, dict[str, Any]] = {}
    for _ in range(repeat):
        for mode, src in runs:
            shutil.copytree(src, scratch)
            if prepare is not None:
                prepare(scratch, mode)
            # the copy's dirty pages (a 1.2 GB ledger at 100,000 trials) would otherwise be
            # written back while the timed run writes its own, throttling it by seconds
            os.sync()
            got = probe(scratch, mode)
            shutil.rmtree(scratch)
            if mode not in best or got["seconds"] < best[mode]["seconds"]:
                best[mode] = got
    return best


def flat_row(what: str, large: dict[str, Any], small: dict[str, Any]) -> str:
    """The table row comparing ``what``'s peak RSS (``"peak"``, bytes) at two ledger sizes."""
    grow = large["peak"] / small["peak"]
    return (
        f"| {what} peak RSS, {large['trials']:,} vs {small['trials']:,} trials | "
        f"{large['peak'] / MIB:.0f} MiB | {small['peak'] / MIB:.0f} MiB | "
        f"{grow:.2f}x (flat: <= 1.30x) |"
    )
