"""Ingest's events as rows for the store, and the streams it holds back parked on disk.

A stream the ledger does not hold yet goes into the store as soon as it is read
(``ledger.app.ingest_append``). One the ledger already holds is compared with it only once
every input is read; held in memory, those plans grew with the corpus (793 MiB peak at
10,000 trials, 294 MiB at 1,000: benchmarks/memory_flat.py). Instead their planned
events are pickled to an anonymous temporary file as they are read, and read back one
input at a time when compared or appended.
"""

from __future__ import annotations

import dataclasses
import operator
import pickle
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from typing import IO, Any

from ledger.log.batch import Batch, checked_batch, prepare_batch, prepare_decoded
from ledger.sources.plan import PlannedEvent
from schemas.canonical import parse_json
from schemas.envelope import NewEvent

# payload bytes per inserted part: large enough that per-insert costs stay few, small
# enough that the decoded part (several times its canonical bytes) stays a few dozen MiB
BATCH_BYTES = 4 << 20
# a PlannedEvent as its constructor's positional arguments
_FIELDS = [f.name for f in dataclasses.fields(PlannedEvent)]
_ROW = operator.attrgetter(*_FIELDS)
_BODY = _FIELDS.index("body")
# An event on its way to the store: PlannedEvent's fields, in order, its body the payload
# as the store's preparation gives it (:func:`prepared_rows`).
Row = tuple[Any, ...]
_BODY_OF = operator.itemgetter(_BODY)


def spool() -> IO[bytes]:
    """The file :func:`park` writes to; it vanishes when closed."""
    return tempfile.TemporaryFile(prefix="vledger-ingest-")


def parked(*groups: Sequence[PlannedEvent]) -> bytes:
    """``groups`` as the spool stores them (made where an input is read, a worker process
    included). Plain tuples: pickling those is several times faster than the dataclass."""
    return pickle.dumps([list(map(_ROW, g)) for g in groups], protocol=pickle.HIGHEST_PROTOCOL)


def prepared_rows(events: Sequence[PlannedEvent]) -> list[Row]:
    """``events`` as :data:`Row` s, each first prepared by the store's own rule
    (:func:`~ledger.log.batch.prepare_decoded`: payload validated, canonical bytes) where
    the events were made — a reading worker — and its body replaced by the payload bytes
    that rule gives, so the writer appends them as they are
    (:func:`~ledger.log.batch.checked_batch`): byte for byte what preparing them in the
    writer would store. Raises :class:`~ledger.errors.InvalidEvent` (index into ``events``)."""
    if not events:
        return []
    cols = {f: list(map(operator.attrgetter(f), events)) for f in _FIELDS}
    batch = prepare_decoded(
        cols["stream"], cols["type"], cols["schema_version"], cols["event_id"],
        list(map(parse_json, cols["body"])), cols["expected_version"],
    )  # fmt: skip
    cols["body"] = batch.payloads.to_list()
    return list(zip(*(cols[f] for f in _FIELDS), strict=True))


def parked_rows(*groups: Sequence[Row]) -> bytes:
    """:func:`parked` of groups already as rows (:func:`prepared_rows`)."""
    return pickle.dumps([list(g) for g in groups], protocol=pickle.HIGHEST_PROTOCOL)


def park(file: IO[bytes], *groups: Sequence[PlannedEvent]) -> int:
    """Append ``groups`` to ``file``; their offset, for :func:`unpark`."""
    return park_bytes(file, parked(*groups))


def park_bytes(file: IO[bytes], record: bytes) -> int:
    """Append one :func:`parked` record to ``file``; its offset, for :func:`unpark`."""
    offset = file.seek(0, 2)
    file.write(record)
    return offset


def unparked(record: bytes) -> list[list[PlannedEvent]]:
    """The groups of one :func:`parked` record."""
    return [[PlannedEvent(*r) for r in g] for g in pickle.loads(record)]  # noqa: S301 - ours


def park_value(file: IO[bytes], value: Any) -> int:
    """Append any picklable ``value`` to ``file``; its offset, for :func:`unpark_value`."""
    return park_bytes(file, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))


def unpark_value(file: IO[bytes], offset: int) -> Any:
    file.seek(offset)
    return pickle.load(file)  # noqa: S301 - written by park_value


def unpark(file: IO[bytes], offset: int) -> list[list[PlannedEvent]]:
    return [[PlannedEvent(*r) for r in g] for g in _rows(file, offset)]


def unpark_new(file: IO[bytes], offset: int) -> Iterator[Row]:
    """Every parked event at ``offset`` as its :data:`Row`, with no PlannedEvent in
    between: a frozen dataclass each is a measured 2 % of an ingest."""
    for g in _rows(file, offset):
        yield from g


def _rows(file: IO[bytes], offset: int) -> list[list[tuple[Any, ...]]]:
    file.seek(offset)
    return pickle.load(file)  # noqa: S301 - written by park


def rows_of(events: Iterable[PlannedEvent | NewEvent]) -> Iterator[Row]:
    """Planned events read back from the spool (prepared where they were read), or events
    made here (ingest's own skip events), prepared here."""
    for e in events:
        if isinstance(e, NewEvent):
            one = prepare_batch([e])
            body = one.payloads.to_list()[0]
            e = PlannedEvent(e.stream, e.type, one.event_ids[0], body, e.expected_version, e.schema_version)  # fmt: skip
        yield _ROW(e)


def rows_batch(batch: Sequence[Row]) -> Batch:
    """The store's batch of :data:`Row` s, their payloads taken as already prepared."""
    c = dict(zip(_FIELDS, zip(*batch, strict=True), strict=True))
    return checked_batch(
        c["stream"], c["type"], c["schema_version"], c["event_id"], c["body"],
        c["expected_version"],
    )  # fmt: skip


def payload_bytes(rows: Sequence[Row]) -> int:
    """The payload bytes of ``rows``, counted in C."""
    return sum(map(len, map(_BODY_OF, rows)))


def record_rows(record: bytes) -> Iterator[Row]:
    """Every event of one :func:`parked` record as its :data:`Row`, never parked."""
    for g in pickle.loads(record):  # noqa: S301 - made by parked_rows (a reading worker)
        yield from g
