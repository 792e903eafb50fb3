"""Where a per-trial projection runs: the engine interface retrace (and reconcile) call.

A projection here is a picklable ``fn(events, params) -> result`` over ONE trial stream's
events (``replay.grading.retrace.retrace_trial`` is one). An engine chooses the trials
(:class:`TrialSelection`), runs ``fn`` on each — locally in a process pool
(:class:`ledger.engines.local.LocalEngine`) or as one Ray task per sealed Parquet segment
(:class:`ledger.engines.ray_engine.RayEngine`) — and returns ``(stream, result)`` pairs in
stream order, so the caller's report and digests do not depend on the engine or on the
partitioning. Engines never write the ledger; the caller appends on the driver. An
example: docs/readme/ray.md, "Python API".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ledger.engines.trials import group_trials
from ledger.log.protocol import Store
from schemas.errors import LedgerError

if TYPE_CHECKING:  # `import ledger.engines` stays light (no pyarrow)
    from schemas.envelope import StoredEvent

TrialFn = Callable[[list[Any], Any], Any]
Progress = Callable[[int], None]


class EngineError(LedgerError):
    """A projection job that could not complete: names the segment and what to do."""


@dataclass(frozen=True)
class TrialSelection:
    """Which trial streams a projection reads: registered corpus / task, optionally an
    exact set of streams, and the last seq (inclusive) of the log prefix read — the
    checkpoint a receipt binds."""

    to_seq: int
    corpus: str | None = None
    task: str | None = None
    streams: frozenset[str] | None = None  # exactly these streams (``--source``)

    def group(self, events: Iterable[StoredEvent]) -> dict[str, list[StoredEvent]]:
        """The selected trial streams among ``events`` and their events, in stream order."""
        return group_trials(events, corpus=self.corpus, task=self.task, streams=self.streams)


class Engine(Protocol):
    name: str

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
        """``(stream, fn(events, params))`` for every selected trial, in stream order."""
        ...

    def map_inputs(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        """``fn(item)`` for every item, in input order whatever order they complete in,
        with a bounded number in flight: ingest's reading (``ledger.app.ingest_read``)."""
        ...
