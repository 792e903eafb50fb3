"""The one timing helper the benchmark scripts share."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any


def rate(fn: Callable[[Any], object], items: Sequence[Any], repeat: int) -> float:
    """Best-of-``repeat`` items per second of ``fn`` over ``items``."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for item in items:
            fn(item)
        best = min(best, time.perf_counter() - start)
    return len(items) / best
