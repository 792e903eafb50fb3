"""Payload models for recorded trials: registration, messages, tool calls, end, state, grade."""

from pydantic import BaseModel

from schemas.open_payload import OpenPayload

PAYLOADS: dict[str, type[BaseModel]] = {
    t: OpenPayload
    for t in (
        "trial.registered",
        "trial.message",
        "trial.tool_call",
        "trial.ended",
        "timeline.event",
        "state.recorded",
        "grade.recorded",
        "migration.declared",
        "pack.registered",
        "ingest.skipped",
    )
}
