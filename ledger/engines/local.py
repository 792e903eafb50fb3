"""The local engine: read trials from the store, run the projection here or in a process pool.

Trials are the unit (a trial is never split). They are read in seq windows and each is
handed on as soon as its last event arrives (:func:`complete_trials`), so the driver holds
one window plus the trials still open — memory is flat in corpus size. With several
workers, chunks of complete trials go to the pool with a bounded number in flight; results
come back sorted by stream, so they are identical for any ``workers``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ledger.defaults import DEFAULT_WORKERS
from ledger.engines.base import Progress, TrialFn, TrialSelection
from ledger.engines.ordered import main_left_alone, pool_map, process_pool
from ledger.log.layout import TRIAL_PREFIX
from ledger.log.protocol import Store
from schemas.envelope import StoredEvent, stored_events

if TYPE_CHECKING:
    from concurrent.futures import Future

READ_WINDOW = 4096  # seqs read at once: the driver holds one window plus the trials still open
CHUNK = 64  # trials per pool task: large enough to amortise a task, small enough to stay flat

Trial = tuple[str, list[StoredEvent]]


def trial_ends(lg: Store, to_seq: int) -> set[int]:
    """The seq of each trial stream's last event up to ``to_seq``: where a trial is complete."""
    spans = getattr(lg, "trial_spans", None)  # the DuckDB store answers in one query
    if spans is not None:
        return {last for _, last in spans(0, to_seq + 1)}
    last_of = {ev.stream: ev.seq for ev in lg.read(stream_prefix=TRIAL_PREFIX, to_seq=to_seq)}
    return set(last_of.values())


def complete_trials(lg: Store, select: TrialSelection, ends: set[int]) -> Iterator[Trial]:
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
                yield from select.group(evs).items()


def _partitions(spans: list[tuple[int, int]]) -> Iterator[tuple[int, int, frozenset[int]]]:
    """``(lo, hi, ends)`` per pool task: CHUNK trials, each in the one task whose ``ends``
    hold its last seq; every event of those trials lies in ``[lo, hi]``."""
    spans = sorted(spans, key=lambda span: span[1])
    for i in range(0, len(spans), CHUNK):
        part = spans[i : i + CHUNK]
        yield min(first for first, _ in part), part[-1][1], frozenset(last for _, last in part)


def _ipc(table: Any) -> bytes:
    import pyarrow as pa  # noqa: PLC0415 - the pool path only

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _run_window(
    data: bytes, ends: frozenset[int], select: TrialSelection, fn: TrialFn, params: Any
) -> list[tuple[str, Any]]:
    """Worker side: the window's rows decoded here (in parallel), and the trials whose last
    event is one of ``ends`` (those are whole in the window) projected."""
    import pyarrow as pa  # noqa: PLC0415

    events = list(stored_events(pa.ipc.open_stream(data).read_all()))
    last = {ev.stream: ev.seq for ev in events}
    mine = [ev for ev in events if last[ev.stream] in ends]
    return [(stream, fn(evs, params)) for stream, evs in select.group(mine).items()]


def run_pool(
    lg: Any,
    select: TrialSelection,
    fn: TrialFn,
    params: Any,
    workers: int,
    on_done: Progress | None,
) -> Iterator[tuple[str, Any]]:
    """``fn`` over the log's trials in ``workers`` processes: the driver reads Arrow windows
    (no decoding), the workers decode and project; at most two windows per worker in flight."""
    spans = lg.trial_spans(0, select.to_seq + 1)
    with process_pool(workers) as pool:
        flight: deque[Future] = deque()
        for lo, hi, ends in _partitions(spans):
            window = lg.read_arrow(stream_prefix=TRIAL_PREFIX, from_seq=lo, to_seq=hi)
            data = _ipc(window)
            with main_left_alone():  # processes start in submit: not re-running __main__
                flight.append(pool.submit(_run_window, data, ends, select, fn, params))
            while len(flight) > 2 * workers or (flight and flight[0].done()):
                yield from _collect(flight.popleft(), on_done)
        while flight:
            yield from _collect(flight.popleft(), on_done)


def _collect(fut: Future, on_done: Progress | None) -> list[tuple[str, Any]]:
    part = fut.result()
    if on_done:
        on_done(len(part))
    return part


class LocalEngine:
    name = "local"

    def __init__(self, workers: int = DEFAULT_WORKERS) -> None:
        self.workers = workers

    def map_inputs(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        """``fn`` over ``items``, results in input order: here with one worker, else in a
        process pool with a bounded window (``ledger.engines.ordered``)."""
        if self.workers <= 1:
            return map(fn, items)
        return pool_map(fn, items, self.workers)

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
        pairs = self.iter_trials(lg, select, fn, params, on_total=on_total, on_done=on_done)
        return sorted(pairs, key=lambda pair: pair[0])

    def iter_trials(
        self,
        lg: Store,
        select: TrialSelection,
        fn: TrialFn,
        params: Any,
        *,
        on_total: Progress | None = None,
        on_done: Progress | None = None,
    ) -> Iterator[tuple[str, Any]]:
        """:meth:`map_trials`' pairs as they are computed, in no set order: a caller that
        parks each result (retrace) never holds them all, which the sorted list does."""
        if select.to_seq < 0:
            return
        ends = trial_ends(lg, select.to_seq)
        if (
            on_total
            and ends
            and all(v is None for v in (select.corpus, select.task, select.streams))
        ):
            on_total(len(ends))  # with a filter the total is unknown until the end
        if self.workers > 1 and hasattr(lg, "trial_spans"):  # Arrow windows (SealedStore)
            yield from run_pool(lg, select, fn, params, self.workers, on_done)
            return
        for stream, evs in complete_trials(lg, select, ends):
            yield stream, fn(evs, params)
            if on_done:
                on_done(1)
