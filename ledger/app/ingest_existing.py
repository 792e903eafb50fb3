"""What the ledger already holds of the streams an ingest read: each one's ingest-written
event ids, to tell a re-ingested input (already present) from a changed one."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ledger.log.rows import ARROW_FROM_ROWS

# The event types ingest writes. Only these are compared on re-ingest, so an event another
# component appends to the same stream later (an annotation, a replay) is not "a change".
INGEST_TYPES = frozenset(
    {
        "trial.registered", "trial.message", "trial.agent_message", "trial.tool_call",
        "trial.ended", "state.recorded",
        "grade.recorded", "timeline.event", "pack.registered", "migration.declared",
        "run.event", "receipt.issued",
    }
)  # fmt: skip


_WINDOW = 1 << 16  # seqs read back per table while comparing with the ledger


def existing_ids(ledger: Any, streams: Sequence[str]) -> dict[str, list[tuple[str, str]]]:
    """``(id, type)`` of the ingest-written events of each of ``streams``, in stream order."""
    wanted = set(streams)
    prefixes = sorted(
        {
            s.rsplit("/", 2)[0] + "/" if s.startswith("trial/") else s.split("/", 1)[0] + "/"
            for s in wanted
        }
    )
    out: dict[str, list[tuple[str, str]]] = {}
    for prefix in prefixes:
        # in seq order, so each stream's rows arrive in stream order
        for s, e, t in _id_rows(ledger, prefix, wanted):
            if s in wanted and t in INGEST_TYPES:
                out.setdefault(s, []).append((e, t))
    return out


def _id_rows(ledger: Any, prefix: str, wanted: set[str]) -> Iterator[tuple[str, str, str]]:
    """``(stream, event_id, type)`` of the events under ``prefix``, in seq order: three
    Arrow columns per bounded window (2.5x faster than whole events over 50k) unless no
    ``wanted`` stream is there, or, for a log too small to earn the pyarrow import
    (ledger.log.rows) or that lookup, from ``read``."""
    if ledger.size() < ARROW_FROM_ROWS:
        yield from ((e.stream, e.event_id, e.type) for e in ledger.read(stream_prefix=prefix))
        return
    if not any(s in wanted for s in ledger.streams(prefix=prefix)):
        return
    for lo in range(0, ledger.size(), _WINDOW):  # bounded tables, never a whole prefix
        table = ledger.read_arrow(stream_prefix=prefix, from_seq=lo, to_seq=lo + _WINDOW - 1)
        cols = table.select(["stream", "event_id", "type"]).to_pydict()
        yield from zip(cols["stream"], cols["event_id"], cols["type"], strict=True)


def held_streams(ledger: Any) -> frozenset[str]:
    """Every stream the ledger holds (names only), read before an ingest appends: a stream
    read that is not among them is new and can be appended as soon as it is read."""
    return frozenset(ledger.streams()) if ledger.size() else frozenset()
