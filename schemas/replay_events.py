"""Payload models for projections' own results: replays and reconciliations."""

from pydantic import BaseModel

from schemas.open_payload import OpenPayload

PAYLOADS: dict[str, type[BaseModel]] = {
    t: OpenPayload
    for t in (
        "grade.replayed",
        "replay.completed",
        "reconcile.completed",
    )
}
