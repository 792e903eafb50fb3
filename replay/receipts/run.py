"""A verdict-core run directory as read, and its event log (verdict-core FORMAT.md § 1, § 5)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from schemas.errors import LedgerError


class RebuildError(LedgerError, ValueError):
    """The evidence cannot be projected into a receipt (§ 7 step 6)."""


@dataclass(frozen=True, slots=True)
class VEvent:
    """One parsed line of ``events.jsonl`` (§ 1 'Reading')."""

    seq: int
    at: str
    type: str
    node_id: str
    data: dict[str, Any]


@dataclass(frozen=True, slots=True)
class RunFiles:
    """A run directory's contents as the reader found them: ``None`` absent, a ``*_error``
    string a read failure already phrased as § 7 phrases it."""

    name: str
    receipt: bytes | None
    events: bytes | None
    graph: bytes | None = None
    graph_error: str | None = None
    review: bytes | None = None
    review_error: str | None = None
    events_label: str = "events.jsonl"
    receipt_error: str | None = None


def events_digest(raw: bytes) -> str:
    """§ 5: SHA-256 of the file's exact bytes, no decoding or normalisation."""
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def parse_events(raw: bytes, label: str = "events.jsonl") -> list[VEvent]:
    """§ 1: UTF-8, ``splitlines()``, blank lines skipped, seq strictly increasing; unknown
    event types accepted (§ 1 allows it; ``events_digest`` covers them)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RebuildError(f"{label}: corrupt event: {exc}") from None
    events: list[VEvent] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            v = json.loads(line)
            ev = VEvent(
                seq=int(v["seq"]),
                at=str(v["at"]),
                type=str(v["type"]),
                node_id=str(v.get("node_id", "")),
                data=dict(v.get("data") or {}),
            )
        except Exception as exc:  # the reference reader reports any parse failure alike
            raise RebuildError(f"{label}:{lineno}: corrupt event: {exc}") from None
        if events and ev.seq <= events[-1].seq:
            raise RebuildError(f"{label}:{lineno}: seq {ev.seq} not greater than {events[-1].seq}")
        events.append(ev)
    return events
