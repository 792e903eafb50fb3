"""``timeline.event`` payloads (DESIGN.md): a timeline as JSON-safe dicts, and back."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from replay.timeline import TIMELINE_VERSION
from schemas.timeline import (
    ToolExecutionStatus,
    ToolExecutorIdentity,
    TraceEvent,
    TraceEventKind,
    TrialTimeline,
)

_EVENT_FIELDS = tuple(f.name for f in dataclasses.fields(TraceEvent))
_FLAG_FIELDS = ("timeline_version", "message_view_present", "records_present")
_PAYLOAD_FIELDS = frozenset(_EVENT_FIELDS + _FLAG_FIELDS)


def timeline_to_payloads(timeline: TrialTimeline) -> list[dict[str, Any]]:
    """One JSON-safe dict per event, enums as their string values, every field present.

    Each payload also carries the projection version and the two view flags: a
    ``timeline.event`` read on its own must still say whether a None status is a fact or
    an absent view ("both degenerate states are reported on the timeline, never
    inferred"). ``termination_reason`` is not repeated; it travels on ``trial.ended``.
    ``arguments`` is passed through as recorded (JSON-safe when the source was).
    """
    view, records = timeline.message_view_present, timeline.records_present
    return [
        {
            "timeline_version": TIMELINE_VERSION,
            "message_view_present": view,
            "records_present": records,
            "position": e.position,
            "turn_index": e.turn_index,
            "kind": e.kind.value,
            "text": e.text,
            "call_id": e.call_id,
            "tool_name": e.tool_name,
            "executor": None if e.executor is None else e.executor.value,
            "arguments": e.arguments,
            "status": None if e.status is None else e.status.value,
            "result": e.result,
            "latency_seconds": e.latency_seconds,
        }
        for e in timeline.events
    ]


def timeline_from_payloads(
    payloads: Sequence[Mapping[str, Any]],
    *,
    termination_reason: str | None = None,
    message_view_present: bool | None = None,
    records_present: bool | None = None,
) -> TrialTimeline:
    """Inverse of :func:`timeline_to_payloads`.

    The view flags are read from the payloads; pass them explicitly for a timeline with
    no events (there is nothing to read them from). Raises ValueError naming the payload
    index and key for an unknown or missing key, a foreign projection version, flags that
    disagree, or positions that are not dense.
    """
    events = []
    flags = {"message_view_present": message_view_present, "records_present": records_present}
    for index, payload in enumerate(payloads):
        keys = payload.keys()
        if keys != _PAYLOAD_FIELDS:
            unknown = sorted(set(keys) - _PAYLOAD_FIELDS)
            missing = sorted(_PAYLOAD_FIELDS - set(keys))
            raise ValueError(
                f"timeline.event payload #{index}: unknown keys {unknown}, missing keys "
                f"{missing}; expected exactly {sorted(_PAYLOAD_FIELDS)}"
            )
        if payload["timeline_version"] != TIMELINE_VERSION:
            raise ValueError(
                f"timeline.event payload #{index}: timeline_version "
                f"{payload['timeline_version']!r} is not {TIMELINE_VERSION!r}; recompute "
                "the timeline from the trial's raw events instead"
            )
        for name in flags:
            if not isinstance(payload[name], bool):
                raise ValueError(
                    f"timeline.event payload #{index}: {name} must be true or false, "
                    f"not {payload[name]!r}"
                )
            if flags[name] is None:
                flags[name] = payload[name]
            elif payload[name] != flags[name]:
                raise ValueError(
                    f"timeline.event payload #{index}: {name}={payload[name]!r} disagrees "
                    f"with {flags[name]!r} on the same timeline"
                )
        if payload["position"] != index:
            raise ValueError(
                f"timeline.event payload #{index}: position {payload['position']!r} "
                f"should be {index} (positions are dense, G1)"
            )
        try:
            events.append(_event_from_payload(payload))
        except ValueError as exc:  # an enum field holding a value outside its vocabulary
            raise ValueError(f"timeline.event payload #{index}: {exc}") from None
    for name, value in flags.items():
        if value is None:
            raise ValueError(f"timeline with no events: pass {name}= explicitly")
    return TrialTimeline(
        tuple(events), flags["message_view_present"], flags["records_present"], termination_reason
    )


def _event_from_payload(p: Mapping[str, Any]) -> TraceEvent:
    executor = p["executor"]
    status = p["status"]
    return TraceEvent(
        p["position"],
        p["turn_index"],
        TraceEventKind(p["kind"]),
        p["text"],
        p["call_id"],
        p["tool_name"],
        None if executor is None else ToolExecutorIdentity(executor),
        p["arguments"],
        None if status is None else ToolExecutionStatus(status),
        p["result"],
        p["latency_seconds"],
    )
