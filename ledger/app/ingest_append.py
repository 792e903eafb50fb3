"""Ingest's append, overlapped with its reading: one transaction that the reading feeds.

An ingest must leave the ledger unchanged when any input is bad, changed or inconsistent,
and that is known only once every input is read. Rather than wait for the last input
before the first insert (the inserts, Merkle leaves and commit then ran after the reading,
on one core, while the reading workers idled), each new stream's events go into the store
as soon as the stream is read and admitted, in parts of about ``ingest_spool.BATCH_BYTES``, all
inside ONE store transaction (``Store.append_parts``): a refusal raised by the reading
rolls the transaction back, and nothing of the ingest is ever visible before its commit.
A killed ingest therefore leaves the log as it was before it; the same ingest run again
appends everything, once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ledger.app import ingest_spool
from ledger.app.ingest_spool import Row, payload_bytes, rows_batch
from ledger.log.batch import Batch


def append_streamed(ledger: Any, groups: Iterable[Iterable[Row]]) -> tuple[int | None, int | None]:
    """Append every group's rows, in order, as one atomic batch inserted a part at a time
    while ``groups`` is still being produced; an exception ``groups`` raises rolls all of
    it back. Returns the first and last seq appended (None when none)."""
    result = ledger.append_parts(_parts(groups))
    return result.first_seq, result.last_seq


def _parts(groups: Iterable[Iterable[Row]]) -> Iterator[Batch]:
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
