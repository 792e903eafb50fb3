"""The local engine: read trials from the store, run the projection in a process pool.

Trials are the unit (a trial is never split); chunks of them go to ``workers`` processes
and come back in stream order, so results are identical for any ``workers``.

With one worker, trials are read in seq windows and each is projected as soon as its
last event arrives (:func:`complete_trials`), so memory is flat in corpus size. With
several workers the driver does not build Python event objects at all: it reads the
trial events as one Arrow table, sorts it by stream, cuts it at stream boundaries and ships
each slice as Arrow IPC bytes. Building events, grouping and projecting happen in the
workers — measured, pickling per-event objects from the driver made two workers slower
than one.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import pyarrow as pa

from ledger.engines import Progress, TrialFn, TrialSelection
from ledger.engines.trials import TRIAL_PREFIX, group_trials
from schemas.envelope import StoredEvent

READ_WINDOW = 4096  # seqs read at once: the driver holds one window plus the trials still open


def trial_ends(lg: Any, to_seq: int) -> set[int]:
    """The seq of each trial stream's last event up to ``to_seq``: where a trial is complete."""
    spans = getattr(lg, "trial_spans", None)  # the DuckDB store answers in one query
    if spans is not None:
        return {last for _, last in spans(0, to_seq + 1)}
    last_of = {ev.stream: ev.seq for ev in lg.read(stream_prefix=TRIAL_PREFIX, to_seq=to_seq)}
    return set(last_of.values())


def complete_trials(
    lg: Any, select: TrialSelection, ends: set[int]
) -> Iterator[tuple[str, list[StoredEvent]]]:
    """Each selected trial and its events as soon as its last event (one of ``ends``) is
    read, in seq order: memory holds the trials still open, never the corpus."""
    pending: dict[str, list[StoredEvent]] = {}
    for lo in range(0, select.to_seq + 1, READ_WINDOW):
        hi = min(lo + READ_WINDOW - 1, select.to_seq)
        for ev in lg.read(stream_prefix=TRIAL_PREFIX, from_seq=lo, to_seq=hi):
            if select.streams is not None and ev.stream not in select.streams:
                continue
            pending.setdefault(ev.stream, []).append(ev)
            if ev.seq in ends:
                evs = pending.pop(ev.stream)
                yield from group_trials(evs, corpus=select.corpus, task=select.task).items()


def run_streaming(
    lg: Any, select: TrialSelection, fn: TrialFn, params: Any, on_done: Progress | None = None
) -> list[tuple[str, Any]]:
    """``fn`` over every selected trial as it completes; results in stream order."""
    out = []
    for stream, evs in complete_trials(lg, select, trial_ends(lg, select.to_seq)):
        out.append((stream, fn(evs, params)))
        if on_done:
            on_done(1)
    return sorted(out, key=lambda pair: pair[0])


def _table_bytes(table: pa.Table) -> bytes:
    # IPC writes only the slice's own ranges of the buffers, never the parent table's.
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _run_slice(data: bytes, select: TrialSelection, fn: TrialFn, params: Any) -> list[tuple[str, Any]]:
    """Worker side: Arrow IPC bytes of whole trial streams -> ``(stream, fn(events))``."""
    table = pa.ipc.open_stream(data).read_all()
    groups = group_trials(
        (StoredEvent(**row) for row in table.to_pylist()),
        corpus=select.corpus,
        task=select.task,
        streams=select.streams,
    )
    return [(stream, fn(evs, params)) for stream, evs in groups.items()]


def stream_cuts(streams: pa.ChunkedArray | pa.Array, parts: int) -> list[tuple[int, int]]:
    """``(offset, length)`` slices of a stream-sorted column, about ``parts`` of them, each
    cut only where the stream changes (a trial is never split)."""
    import pyarrow.compute as pc  # noqa: PLC0415 - slow to import, only the pool needs it

    n = len(streams)
    if n == 0:
        return []
    col = streams.combine_chunks() if isinstance(streams, pa.ChunkedArray) else streams
    changes = pc.indices_nonzero(pc.not_equal(col.slice(1), col.slice(0, n - 1))).to_pylist()
    starts = [0] + [i + 1 for i in changes]
    step = max(1, len(starts) // max(1, parts))
    chosen = starts[::step]
    ends = chosen[1:] + [n]
    return [(a, b - a) for a, b in zip(chosen, ends, strict=True)]


def run_arrow(
    table: pa.Table,
    select: TrialSelection,
    fn: TrialFn,
    params: Any,
    *,
    workers: int,
    on_done: Progress | None = None,
) -> list[tuple[str, Any]]:
    """``fn`` over every trial of ``table`` in a process pool, results in stream order."""
    import pyarrow.compute as pc  # noqa: PLC0415

    if select.streams is not None:
        table = table.filter(pc.is_in(table["stream"], pa.array(sorted(select.streams))))
    table = table.sort_by([("stream", "ascending"), ("seq", "ascending")])
    cuts = stream_cuts(table["stream"], workers * 4)
    results: list[tuple[str, Any]] = []
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [
            pool.submit(_run_slice, _table_bytes(table.slice(a, k)), select, fn, params)
            for a, k in cuts
        ]
        for fut in futures:
            part = fut.result()
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
        if self.workers > 1 and select.to_seq >= 0:
            table = lg.read_arrow(stream_prefix=TRIAL_PREFIX, to_seq=select.to_seq)
            if on_total:
                on_total(len(table["stream"].unique()))
            return run_arrow(table, select, fn, params, workers=self.workers, on_done=on_done)
        if select.to_seq < 0:
            return []
        if on_total and select.corpus is None and select.task is None and select.streams is None:
            on_total(len(trial_ends(lg, select.to_seq)))  # with a filter the bar counts up
        return run_streaming(lg, select, fn, params, on_done)
