"""The closed event vocabulary and payload validation at the append seam.

Built-in types are validated against their payload model; a user's own types live
under ``ext.`` and carry any JSON object. Each area owns its payload models in its own
module (``trial_events``, ``verdict_events``, ``replay_events``, ``curation``); this module
names which model each type has, and imports an area's module on first use of one of its
types: a command that appends two types does not build forty models (start-up).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from schemas.errors import LedgerError

EXT_PREFIX = "ext."

# type -> (module under schemas/, model class)
MODEL_NAMES: dict[str, tuple[str, str]] = {
    "trial.registered": ("trial_events", "TrialRegistered"),
    "trial.message": ("trial_events", "TrialMessage"),
    "trial.tool_call": ("trial_events", "TrialToolCall"),
    "trial.agent_message": ("trial_events", "TrialAgentMessage"),
    "trial.ended": ("trial_events", "TrialEnded"),
    "timeline.event": ("trial_events", "TimelineEvent"),
    "state.recorded": ("trial_events", "StateRecorded"),
    "grade.recorded": ("trial_events", "GradeRecorded"),
    "migration.declared": ("trial_events", "MigrationDeclared"),
    "pack.registered": ("trial_events", "PackRegistered"),
    "ingest.skipped": ("trial_events", "IngestSkipped"),
    "oracle.declared": ("verdict_events", "OracleDeclared"),
    "oracle.ran": ("verdict_events", "OracleRan"),
    "work.produced": ("verdict_events", "WorkProduced"),
    "verdict.admitted": ("verdict_events", "VerdictAdmitted"),
    "run.event": ("open_payload", "OpenPayload"),
    "receipt.issued": ("open_payload", "OpenPayload"),
    "grade.replayed": ("replay_events", "GradeReplayed"),
    "replay.completed": ("replay_events", "ReplayCompleted"),
    "reconcile.completed": ("replay_events", "ReconcileCompleted"),
    "corpus.curated": ("curation", "CorpusCurated"),
}


class _Models(Mapping[str, type[BaseModel]]):
    """:data:`MODEL_NAMES` as type -> model, each model imported when first looked up."""

    def __getitem__(self, type: str) -> type[BaseModel]:
        module, name = MODEL_NAMES[type]
        return getattr(importlib.import_module(f"schemas.{module}"), name)

    def __iter__(self) -> Iterator[str]:
        return iter(MODEL_NAMES)

    def __len__(self) -> int:
        return len(MODEL_NAMES)

    def __contains__(self, type: object) -> bool:
        return type in MODEL_NAMES


PAYLOAD_MODELS: Mapping[str, type[BaseModel]] = _Models()
EVENT_TYPES: frozenset[str] = frozenset(MODEL_NAMES)

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
