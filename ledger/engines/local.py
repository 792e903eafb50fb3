"""The local engine: read trials from the store, run the projection in a process pool.

Trials are the unit (a trial is never split); chunks of them go to ``workers`` processes
and come back in stream order, so results are identical for any ``workers``.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from ledger.engines import Progress, TrialFn, TrialSelection
from ledger.engines.trials import TRIAL_PREFIX, group_trials
from schemas.envelope import StoredEvent


def _run_chunk(
    chunk: Sequence[tuple[str, list[StoredEvent]]], fn: TrialFn, params: Any
) -> list[tuple[str, Any]]:
    return [(stream, fn(evs, params)) for stream, evs in chunk]


def run_groups(
    groups: dict[str, list[StoredEvent]],
    fn: TrialFn,
    params: Any,
    *,
    workers: int = 1,
    on_done: Progress | None = None,
) -> list[tuple[str, Any]]:
    """``fn`` over every trial group, in stream order whatever ``workers`` is."""
    items = sorted(groups.items())
    if workers <= 1 or len(items) < 2:
        out = []
        for stream, evs in items:
            out.append((stream, fn(evs, params)))
            if on_done:
                on_done(1)
        return out
    size = max(1, min(256, len(items) // (workers * 4) or 1))
    chunks = [items[i : i + size] for i in range(0, len(items), size)]
    results: list[tuple[str, Any]] = []
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for part in pool.map(_run_chunk, chunks, [fn] * len(chunks), [params] * len(chunks)):
            results.extend(part)
            if on_done:
                on_done(len(part))
    return results


class LocalEngine:
    name = "local"

    def __init__(self, workers: int = 1) -> None:
        self.workers = workers

    def map_trials(
        self,
        lg: Any,
        select: TrialSelection,
        fn: TrialFn,
        params: Any,
        *,
        on_total: Progress | None = None,
        on_done: Progress | None = None,
    ) -> list[tuple[str, Any]]:
        groups = group_trials(
            lg.read(stream_prefix=TRIAL_PREFIX, to_seq=select.to_seq) if select.to_seq >= 0 else [],
            corpus=select.corpus,
            task=select.task,
            streams=select.streams,
        )
        if groups and on_total:
            on_total(len(groups))
        return run_groups(groups, fn, params, workers=self.workers, on_done=on_done)
