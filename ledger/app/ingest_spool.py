"""Ingest's plan parked on disk, and appended in bounded batches.

Ingest reads and checks every input before it appends anything (an unreadable or changed
input must leave the ledger unchanged), so the whole plan exists before the first append.
Held in memory, and appended as one batch the store decodes at once, that plan grew with
the corpus (issue 17: 793 MiB peak at 10,000 trials, 294 MiB at 1,000). Here each input's
planned events are pickled to an anonymous temporary file as they are read, and read back
one input at a time into batches of about :data:`BATCH_BYTES` of payload.
"""

from __future__ import annotations

import pickle
import tempfile
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import Any

from ledger.sources.plan import PlannedEvent
from schemas.envelope import NewEvent

# payload bytes per append: large enough that commits (each one fsync) stay few, small
# enough that the decoded batch (several times its canonical bytes) stays a few dozen MiB
BATCH_BYTES = 4 << 20


class Spool:
    """Objects written once and read back by offset; the file vanishes when closed."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile(prefix="vledger-ingest-")  # noqa: SIM115 - see __exit__

    def put(self, value: Any) -> int:
        offset = self._file.seek(0, 2)
        pickle.dump(value, self._file, protocol=pickle.HIGHEST_PROTOCOL)
        return offset

    def get(self, offset: int) -> Any:
        self._file.seek(offset)
        return pickle.load(self._file)  # noqa: S301 - this process wrote it, just now

    def __enter__(self) -> Spool:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._file.close()


def append_in_batches(
    ledger: Any, groups: Iterable[Sequence[PlannedEvent | NewEvent]]
) -> tuple[int | None, int | None]:
    """Append ``groups`` in order, each group whole in one batch (a crash between batches
    leaves whole streams); returns the first and last seq appended (None when none)."""
    first: int | None = None
    last: int | None = None
    batch: list[NewEvent] = []
    size = 0

    def flush() -> None:
        nonlocal first, last, size
        result = ledger.append(batch)
        if getattr(result, "first_seq", None) is not None:
            first = result.first_seq if first is None else first
            last = result.last_seq
        batch.clear()
        size = 0

    for group in groups:
        if batch and size >= BATCH_BYTES:
            flush()
        for e in group:
            if isinstance(e, PlannedEvent):
                size += len(e.body)
                e = e.new_event()
            batch.append(e)
    if batch:
        flush()
    return first, last
