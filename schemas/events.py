"""The closed event vocabulary and payload validation at the append seam.

Built-in types are validated against their payload model; a user's own types live
under ``ext.`` and carry any JSON object. Each area owns its payload models in its own
module (``trial_events``, ``verdict_events``, ``replay_events``); this module only
assembles them.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from schemas import curation, replay_events, trial_events, verdict_events
from schemas.errors import LedgerError

EXT_PREFIX = "ext."

PAYLOAD_MODELS: dict[str, type[BaseModel]] = {
    **trial_events.PAYLOADS,
    **verdict_events.PAYLOADS,
    **replay_events.PAYLOADS,
    **curation.PAYLOADS,  # corpus.curated (issue 21)
}

EVENT_TYPES: frozenset[str] = frozenset(PAYLOAD_MODELS)

# Event types only a projection writes (derived from the log, never recorded by hand):
# type -> (the command that writes it, the stream prefix it writes it on). `vledger append`
# refuses them, and the views count only those on their projection's own streams, so a
# hand-written grade.replayed can neither become a trial's current grade nor move pass@k.
PROJECTION_WRITERS: dict[str, tuple[str, str]] = {
    "grade.replayed": ("vledger retrace", "replay/"),
    "replay.completed": ("vledger retrace", "replay/"),
    "reconcile.completed": ("vledger reconcile", "reconcile/"),
    "verdict.admitted": ("vledger verdict admit", "unit/"),
}


class PayloadError(LedgerError, ValueError):
    """A payload that does not fit its event type; names the type and the offending field."""

    def __init__(self, type: str, detail: str) -> None:
        self.type = type
        self.detail = detail
        super().__init__(f"event type {type!r}: {detail}")


def validate_payload(type: str, payload: Any) -> None:
    """Refuse an unknown type or a payload its model rejects; return nothing on success."""
    if not isinstance(payload, dict):
        raise PayloadError(type, f"payload must be a JSON object, got {_shape(payload)}")
    if type.startswith(EXT_PREFIX):
        if len(type) == len(EXT_PREFIX):
            raise PayloadError(
                type, "an extension type needs a name after 'ext.' (e.g. 'ext.note')"
            )
        return
    model = PAYLOAD_MODELS.get(type)
    if model is None:
        known = ", ".join(sorted(EVENT_TYPES))
        raise PayloadError(
            type, f"unknown event type; use one of {known}, or 'ext.<name>' for your own"
        )
    try:
        model.model_validate(payload)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "<payload>"
        raise PayloadError(type, f"field {where!r}: {first['msg']}") from None


def _shape(value: Any) -> str:
    return type(value).__name__
