"""``retrace --source``: each new trial's outcome computed where its bundle is read.

A trial the source adds to the log is stored as exactly its planned events, so the worker
that reads its bundle can run the projection on them there (``as_stored``: the events as
the ledger hands them back; ``replay.grading.retrace.retrace_trial`` reads neither seq nor time)
instead of the driver reading them back from the log afterwards: the reading and the
projection overlap. A trial already in the log is read back from it as before — its
stream may hold events this reading does not plan — and so is an inspect_ai log's trial,
whose scores join the stored ones. The outcomes are spilled to disk as they come, so
memory stays flat in the corpus size; the report, digests and appended events are those
of a retrace from the log (``tests/test_ingest_parallel.py`` compares them).
"""

from __future__ import annotations

import pickle
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

from ledger.engines.base import TrialSelection
from ledger.sources.in_memory import as_stored
from replay.grading.retrace import Override, TrialRetrace, retrace_trial


def derive_outcome(unit: Any, params: tuple[Override, TrialSelection]) -> tuple | None:
    """In the reading worker: ``(outcome,)`` for a selected trial, ``()`` for one the
    selection (``--corpus`` / ``--task``) leaves out, None when the log must decide."""
    override, select = params
    if not unit.trial or unit.additive or unit.inconsistent is not None:
        return None
    groups = select.group(as_stored(unit.events))
    if not groups:
        return ()
    (events,) = groups.values()
    return (retrace_trial(events, override),)


class SourceOutcomes:
    """The outcomes the reading computed for the trials it added, spilled to a temporary
    file as they arrive; ``decided`` names every stream they settle."""

    def __init__(self) -> None:
        self.file = tempfile.TemporaryFile(prefix="vledger-source-")  # noqa: SIM115
        self.count = 0
        self.decided: set[str] = set()

    def add(self, stream: str, value: tuple | None) -> None:
        """``ingest_into``'s ``on_derived``: called for each stream the ingest added."""
        if value is None:
            return
        self.decided.add(stream)
        if value:
            pickle.dump((stream, value[0]), self.file, protocol=pickle.HIGHEST_PROTOCOL)
            self.count += 1

    def pairs(self, on_done: Callable[[int], None] | None) -> Iterator[tuple[str, TrialRetrace]]:
        self.file.seek(0)
        for _ in range(self.count):
            pair = pickle.load(self.file)  # noqa: S301 - written by add
            if on_done:
                on_done(1)
            yield pair

    def close(self) -> None:
        self.file.close()
