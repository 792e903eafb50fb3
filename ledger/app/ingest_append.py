"""Ingest's append, overlapped with its reading: one transaction that the reading feeds.

An ingest must leave the ledger unchanged when any input is bad, changed or inconsistent,
and that is known only once every input is read. Rather than wait for the last input
before the first insert (the inserts, Merkle leaves and commit then ran after the reading,
on one core, while the reading workers idled), each new stream's events go into the store
as soon as the stream is read and admitted, in parts of about ``ingest_spool.BATCH_BYTES``,
all inside ONE store transaction (``Store.append_parts``) that commits only after the last
input: a refusal raised by the reading rolls it back, and nothing of the ingest is visible
before its commit. A killed ingest therefore leaves the log as it was before it; the same
ingest run again appends everything, once.

The store's side runs on a writer thread: DuckDB's insert, commit and checkpoint and the
native leaf hashing release the GIL, so with the reading in this process (one worker) they
run on another core while the next inputs are parsed. The reading thread never touches the
store while the writer holds its transaction; what must read the ledger after the last
input (comparing streams it already held) is handed to the writer as ``tail``.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ledger.app import ingest_spool
from ledger.app.ingest_spool import Row, payload_bytes, rows_batch
from ledger.log.batch import Batch

Groups = Iterable[Iterable[Row]]
# parts prepared ahead of the writer: enough that it never waits on the reading while
# there is work, few enough that memory holds a handful of parts
AHEAD = 2


class _Aborted(Exception):
    """The reading failed: the writer's transaction is to roll back."""


_ABORT = object()


def append_streamed(
    ledger: Any, groups: Groups, tail: Callable[[], Groups] | None = None
) -> tuple[int | None, int | None]:
    """Append every group's rows, then ``tail()``'s (called on the writer, after the last
    group), in order, as one atomic batch inserted a part at a time while ``groups`` is
    still being produced; an exception from either rolls all of it back and is raised
    here. Returns the first and last seq appended (None when none)."""
    channel: queue.Queue[Any] = queue.Queue(maxsize=AHEAD)
    outcome: dict[str, Any] = {}

    def received() -> Iterator[Batch]:
        while (item := channel.get()) is not None:
            if item is _ABORT:
                raise _Aborted
            yield item
        if tail is not None:
            yield from _parts(tail())

    def write() -> None:
        try:
            outcome["result"] = ledger.append_parts(received())
        except BaseException as exc:  # noqa: BLE001 - handed to the reading thread
            outcome["error"] = exc

    writer = threading.Thread(target=write, name="vledger-ingest-append", daemon=True)
    writer.start()
    try:
        for part in _parts(groups):
            _hand(channel, part, writer, outcome)
        _hand(channel, None, writer, outcome)
    except BaseException:
        if writer.is_alive():
            _hand(channel, _ABORT, writer, outcome, failing=True)
        writer.join()
        raise
    writer.join()
    if "error" in outcome:
        raise outcome["error"]
    result = outcome["result"]
    return result.first_seq, result.last_seq


def _hand(
    channel: queue.Queue[Any], item: Any, writer: threading.Thread, outcome: dict[str, Any],
    *, failing: bool = False,
) -> None:  # fmt: skip
    """Put ``item`` for the writer, or raise the writer's error once it has stopped."""
    while True:
        try:
            channel.put(item, timeout=0.05)
            return
        except queue.Full:
            if writer.is_alive():
                continue
        if failing:
            return
        raise outcome.get("error") or RuntimeError("the ingest's writer stopped")


def _parts(groups: Groups) -> Iterator[Batch]:
    batch: list[Row] = []
    size = 0
    for group in groups:
        taken = list(group)
        batch += taken
        size += payload_bytes(taken)
        if size >= ingest_spool.BATCH_BYTES:
            yield rows_batch(batch)
            batch, size = [], 0
    if batch:
        yield rows_batch(batch)
