"""A trial's grading inputs, read back from its stream of events (pure, no I/O).

Grading, retrace and reconcile all read a trial through :func:`trial_inputs`, so they see
one reading of the raw events. Ingest builds the timeline it stores with the same
converters (:func:`message_from_payload`, :func:`recorded_call_from_payload`), so
``verify --deep`` recomputes it from exactly what ingest saw.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from replay.grading.recorded_grade import RecordedGradeRead, read_recorded_grade, recorded_grade_of
from schemas.canonical import parse_json
from schemas.envelope import StoredEvent
from schemas.errors import LedgerError
from schemas.timeline import (
    Message,
    RecordedToolCall,
    Role,
    ToolCallDecl,
    ToolExecutionStatus,
    ToolExecutorIdentity,
)


class TrialInputsError(LedgerError, ValueError):
    """The events do not form one readable trial; names the stream, seq and what is wrong."""


@dataclass(frozen=True, slots=True)
class RegisteredInfo:
    """The ``trial.registered`` facts graders need, plus the payload verbatim."""

    stream: str
    task_id: str
    trial: str
    corpus: str
    trial_index: int | None
    met: bool | None
    record_view: bool
    models: Mapping[str, str | None]
    task: Mapping[str, Any] | None
    grading: Mapping[str, Any] | None  # task["grading_config"], the recorded grading snapshot
    tool_schemas: Sequence[Any] | None
    schema_version_stamp: int | None
    redacted: bool
    payload: Mapping[str, Any] = field(repr=False)
    # keys of trajectory.yaml / tool_log.yaml a newer recorder wrote and ingest kept unread
    unknown_keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TrialInputs:
    registered: RegisteredInfo
    messages: tuple[Message, ...]
    recorded_calls: tuple[RecordedToolCall, ...] | None  # None = no record view
    termination_reason: str | None
    status: str | None
    grading_error: str | None
    ended: bool  # a trial.ended event was read
    states: Mapping[str, Any]  # "initial" / "final" -> state, where recorded
    recorded_grade: Mapping[str, Any] | None
    timeline_version: str | None  # of the stored timeline.events, None if none stored
    timeline_inconsistency: Mapping[str, Any] | None  # stored G6b/G7 record, if any
    # the conversation as its agents executed it (``trial.agent_message``), where a recorder
    # logs more than the top-level conversation (inspect_ai: every agent's model calls)
    agent_messages: tuple[Message, ...] | None = None

    @property
    def stream(self) -> str:
        return self.registered.stream

    @property
    def grade_read(self) -> RecordedGradeRead | None:
        """The recorded grade, read by the one parser (None: the trial records none)."""
        return None if self.recorded_grade is None else read_recorded_grade(self.recorded_grade)

    @property
    def timeline_messages(self) -> tuple[Message, ...]:
        """The message view the timeline joins the records to: the executed conversation
        where one was recorded, else the recorded messages."""
        return self.messages if self.agent_messages is None else self.agent_messages


def message_from_payload(p: Mapping[str, Any]) -> Message:
    """A ``trial.message`` payload as the timeline's :class:`Message` (wire text, N4)."""
    calls = p.get("tool_calls") or ()
    status = p.get("tool_status")
    return Message(
        role=Role(p["role"]),
        content=p.get("content") or "",
        tool_calls=tuple(
            ToolCallDecl(id=c["id"], name=c["name"], arguments=c.get("arguments") or {})
            for c in calls
        ),
        tool_call_id=p.get("tool_call_id"),
        tool_status=None if status is None else ToolExecutionStatus(status),
        agent=p.get("agent"),
    )


def recorded_call_from_payload(p: Mapping[str, Any]) -> RecordedToolCall:
    """A ``trial.tool_call`` payload as a :class:`RecordedToolCall`."""
    return RecordedToolCall(
        call_id=p["call_id"],
        sequence=p["sequence"],
        tool_name=p["tool_name"],
        arguments=p.get("arguments") or {},
        executor=ToolExecutorIdentity(p["executor"]),
        status=ToolExecutionStatus(p["status"]),
        output=p.get("output"),
        latency_seconds=p.get("latency_seconds"),
        timestamp=p.get("timestamp"),
        agent=p.get("agent"),
    )


def _registered(stream: str, p: Mapping[str, Any]) -> RegisteredInfo:
    task = p.get("task")
    grading = task.get("grading_config") if isinstance(task, Mapping) else None
    return RegisteredInfo(
        stream=stream,
        task_id=p["task_id"],
        trial=p["trial"],
        corpus=p["corpus"],
        trial_index=p.get("trial_index"),
        met=p.get("met"),
        record_view=bool(p["record_view"]),
        models=dict(p.get("models") or {}),
        task=task,
        grading=grading,
        tool_schemas=p.get("tool_schemas"),
        schema_version_stamp=p.get("schema_version_stamp"),
        redacted=bool(p.get("redacted", False)),
        payload=p,
        unknown_keys=tuple(p.get("unknown_keys") or ()),
    )


def trial_inputs(events: Sequence[StoredEvent]) -> TrialInputs:
    """Fold one trial stream's events (any order) into its grading inputs, or raise
    :class:`TrialInputsError` naming what does not hold together."""
    if not events:
        raise TrialInputsError("no events: a trial needs at least its trial.registered event")
    ordered = sorted(events, key=lambda e: e.stream_version)
    stream = ordered[0].stream
    registered: RegisteredInfo | None = None
    messages: list[tuple[int, Message]] = []
    calls: list[tuple[int, RecordedToolCall]] = []
    executed: list[tuple[int, Message]] = []
    ended: Mapping[str, Any] | None = None
    states: dict[str, Any] = {}
    grades: list[Mapping[str, Any]] = []  # grade.recorded payloads, in stream order
    tl_version: str | None = None
    inconsistency: Mapping[str, Any] | None = None
    for ev in ordered:
        if ev.stream != stream:
            raise TrialInputsError(
                f"events span two streams: {stream!r} and {ev.stream!r} (seq {ev.seq}); "
                "pass one trial's events"
            )
        p = parse_json(ev.payload)
        t = ev.type
        if t == "trial.registered":
            registered = _registered(stream, p)
        elif t == "trial.message":
            messages.append((p["index"], message_from_payload(p)))
        elif t == "trial.tool_call":
            calls.append((p["index"], recorded_call_from_payload(p)))
        elif t == "trial.agent_message":
            executed.append((p["index"], message_from_payload(p)))
        elif t == "trial.ended":
            ended = p
        elif t == "state.recorded":
            states[p["which"]] = p["state"]
        elif t == "grade.recorded":
            grades.append(p)
        elif t == "timeline.event":
            tl_version = p["timeline_version"]
            if p.get("inconsistency") is not None:
                inconsistency = p["inconsistency"]
    if registered is None:
        raise TrialInputsError(f"stream {stream!r} has no trial.registered event")
    if calls and not registered.record_view:
        raise TrialInputsError(
            f"stream {stream!r}: trial.registered says record_view: false "
            f"but {len(calls)} trial.tool_call event(s) follow"
        )
    messages.sort(key=lambda im: im[0])
    calls.sort(key=lambda ic: ic[0])
    return TrialInputs(
        registered=registered,
        messages=tuple(m for _, m in messages),
        recorded_calls=tuple(c for _, c in calls) if registered.record_view else None,
        termination_reason=ended.get("termination_reason") if ended else None,
        status=ended.get("status") if ended else None,
        grading_error=ended.get("grading_error") if ended else None,
        ended=ended is not None,
        states=states,
        recorded_grade=recorded_grade_of(grades),
        timeline_version=tl_version,
        timeline_inconsistency=inconsistency,
        agent_messages=tuple(m for _, m in sorted(executed, key=lambda im: im[0]))
        if executed
        else None,
    )
