"""The local engine: read trials from the store, run the projection in a process pool.

Trials are the unit (a trial is never split); chunks of them go to ``workers`` processes
and come back in stream order, so results are identical for any ``workers``.

With several workers the driver does not build Python event objects at all: it reads the
trial events as one Arrow table, sorts it by stream, cuts it at stream boundaries and ships
each slice as Arrow IPC bytes. Building events, grouping and projecting happen in the
workers — measured, pickling per-event objects from the driver made two workers slower
than one.
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ledger.engines.base import Progress, TrialFn, TrialSelection
from ledger.log.layout import TRIAL_PREFIX
from ledger.log.protocol import Store
from schemas.envelope import StoredEvent


def _table_bytes(table: pa.Table) -> bytes:
    # IPC writes only the slice's own ranges of the buffers, never the parent table's.
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _run_slice(data: bytes, select: TrialSelection, fn: TrialFn, params: Any) -> list[tuple[str, Any]]:
    """Worker side: Arrow IPC bytes of whole trial streams -> ``(stream, fn(events))``."""
    table = pa.ipc.open_stream(data).read_all()
    groups = select.group(StoredEvent(**row) for row in table.to_pylist())
    return [(stream, fn(evs, params)) for stream, evs in groups.items()]


def stream_cuts(streams: pa.ChunkedArray | pa.Array, parts: int) -> list[tuple[int, int]]:
    """``(offset, length)`` slices of a stream-sorted column, about ``parts`` of them, each
    cut only where the stream changes (a trial is never split)."""
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
        lg: Store,
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
                on_total(len(pc.unique(table["stream"])))
            return run_arrow(table, select, fn, params, workers=self.workers, on_done=on_done)
        read = select.to_seq >= 0
        groups = select.group(lg.read(stream_prefix=TRIAL_PREFIX, to_seq=select.to_seq) if read else [])
        if groups and on_total:
            on_total(len(groups))
        out = []  # one worker: in this process, without building a pool
        for stream, evs in sorted(groups.items()):
            out.append((stream, fn(evs, params)))
            if on_done:
                on_done(1)
        return out
