"""Payload models for verdict grades (GVC) and imported verdict-core runs."""

from pydantic import BaseModel

from schemas.open_payload import OpenPayload

PAYLOADS: dict[str, type[BaseModel]] = {
    t: OpenPayload
    for t in (
        "oracle.declared",
        "oracle.ran",
        "work.produced",
        "verdict.admitted",
        "run.event",
        "receipt.issued",
    )
}
