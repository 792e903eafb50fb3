"""The trial event timeline: the message view and the tool-call record joined (GRADING.md G1–G8).

Pure and hot (retrace over whole corpora): each event is built once, at its final position.
The event order, and the shapes GRADING.md does not name (a *user tool step*; messages-only,
a role: tool message answering either actor), are docs/readme/timeline.md's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from operator import itemgetter
from typing import Any

from replay.timeline.call_ids import CallIdDeriver
from replay.timeline.views import (
    in_sequence_order,
    link_records,
    message_result_text,
    read_answers,
    read_message_view,
    user_tool_steps,
)
from schemas.timeline import (
    Message,
    RecordedToolCall,
    Role,
    ToolCallDecl,
    ToolExecutionStatus,
    ToolExecutorIdentity,
    TraceEvent,
    TraceEventKind,
    TrialTimeline,
)

# Bump when the projection's output for some input changes; ingest tags every
# ``timeline.event`` with it and ``verify --deep`` recomputes under the running version.
TIMELINE_VERSION = "timeline/1"

_ASSISTANT = Role.ASSISTANT
_USER = Role.USER
_ASSISTANT_MESSAGE = TraceEventKind.ASSISTANT_MESSAGE
_USER_MESSAGE = TraceEventKind.USER_MESSAGE
_TOOL_CALL = TraceEventKind.TOOL_CALL
_TOOL_RESULT = TraceEventKind.TOOL_RESULT
_first = itemgetter(0)

# TraceEvent is a frozen slots dataclass; its generated __init__ routes every field through
# object.__setattr__, which is half the cost of a timeline. Setting the slots through
# their descriptors directly builds an equal object in half the time (pinned by
# test_fast_constructors_equal_dataclass_init). Valid only while TraceEvent has no
# __post_init__; that test fails if one is added.
_new = object.__new__
_slot = TraceEvent.__dict__
_set_position = _slot["position"].__set__
_set_turn_index = _slot["turn_index"].__set__
_set_kind = _slot["kind"].__set__
_set_text = _slot["text"].__set__
_set_call_id = _slot["call_id"].__set__
_set_tool_name = _slot["tool_name"].__set__
_set_executor = _slot["executor"].__set__
_set_arguments = _slot["arguments"].__set__
_set_status = _slot["status"].__set__
_set_result = _slot["result"].__set__
_set_latency_seconds = _slot["latency_seconds"].__set__
_set_agent = _slot["agent"].__set__


def message_event(
    position: int, turn: int, kind: TraceEventKind, text: str, agent: str | None = None
) -> TraceEvent:
    """An assistant_message / user_message event: call fields None."""
    e = _new(TraceEvent)
    _set_position(e, position)
    _set_turn_index(e, turn)
    _set_kind(e, kind)
    _set_text(e, text)
    _set_call_id(e, None)
    _set_tool_name(e, None)
    _set_executor(e, None)
    _set_arguments(e, None)
    _set_status(e, None)
    _set_result(e, None)
    _set_latency_seconds(e, None)
    _set_agent(e, agent)
    return e


def call_event(
    position: int,
    turn: int,
    call_id: str,
    tool_name: str,
    executor: ToolExecutorIdentity | None,
    arguments: dict[str, Any],
    agent: str | None = None,
) -> TraceEvent:
    """A tool_call event: text, status, result and latency None."""
    e = _new(TraceEvent)
    _set_position(e, position)
    _set_turn_index(e, turn)
    _set_kind(e, _TOOL_CALL)
    _set_text(e, None)
    _set_call_id(e, call_id)
    _set_tool_name(e, tool_name)
    _set_executor(e, executor)
    _set_arguments(e, arguments)
    _set_status(e, None)
    _set_result(e, None)
    _set_latency_seconds(e, None)
    _set_agent(e, agent)
    return e


def result_event(
    position: int,
    turn: int,
    call_id: str,
    tool_name: str,
    executor: ToolExecutorIdentity | None,
    status: ToolExecutionStatus | None,
    result: str | None,
    latency_seconds: float | None,
    agent: str | None = None,
) -> TraceEvent:
    """A tool_result event: text and arguments None."""
    e = _new(TraceEvent)
    _set_position(e, position)
    _set_turn_index(e, turn)
    _set_kind(e, _TOOL_RESULT)
    _set_text(e, None)
    _set_call_id(e, call_id)
    _set_tool_name(e, tool_name)
    _set_executor(e, executor)
    _set_arguments(e, None)
    _set_status(e, status)
    _set_result(e, result)
    _set_latency_seconds(e, latency_seconds)
    _set_agent(e, agent)
    return e


# --- the join --------------------------------------------------------------------------


def build_trial_timeline(
    messages: Sequence[Message],
    recorded_calls: Sequence[RecordedToolCall] | None,
    termination_reason: str | None,
) -> TrialTimeline:
    """Join the message view and the tool-call record into one ordered timeline.

    ``recorded_calls=None`` is no record view (results from role: tool messages, G6b), not
    an empty one; with no assistant or user message the records alone make it (G6).
    Raises TimelineInconsistencyError where the views do not join (G6b, G7).
    """
    records_present = recorded_calls is not None
    message_view_present, declared, calls_of, tool_messages = read_message_view(
        messages, records_present
    )
    records_by_key: dict[str, RecordedToolCall] = {}
    if recorded_calls:
        ordered = in_sequence_order(recorded_calls)
        if not message_view_present:
            return TrialTimeline(_records_only_events(ordered), False, True, termination_reason)
        records_by_key = link_records(ordered, declared)
    answers = {} if records_present else read_answers(messages, tool_messages, declared)
    steps = user_tool_steps(messages)
    events = _emit(messages, calls_of, records_present, records_by_key, answers, steps)
    return TrialTimeline(tuple(events), message_view_present, records_present, termination_reason)


def _records_only_events(ordered: Sequence[RecordedToolCall]) -> tuple[TraceEvent, ...]:
    """G6: call + result pairs in sequence order, all at turn_index 0."""
    events: list[TraceEvent] = []
    append = events.append
    deriver = CallIdDeriver()
    position = 0
    for r in ordered:
        key = deriver.derive(r.call_id)
        name = r.tool_name
        append(call_event(position, 0, key, name, r.executor, r.arguments, r.agent))
        append(
            result_event(
                position + 1, 0, key, name, r.executor, r.status, r.output, r.latency_seconds,
                r.agent,
            )
        )  # fmt: skip
        position += 2
    return tuple(events)


def _emit(
    messages: Sequence[Message],
    calls_of: Mapping[int, list[tuple[str, ToolCallDecl]]],
    records_present: bool,
    records_by_key: Mapping[str, RecordedToolCall],
    answers: Mapping[str, Message],
    steps: frozenset[int] = frozenset(),
) -> list[TraceEvent]:
    """Walk the messages once, emitting each event at its final position (G1, G2, G8).

    A user tool step (``steps``) emits its calls and not its message."""
    events: list[TraceEvent] = []
    generations = 0  # assistant messages seen so far
    for i, message in enumerate(messages):
        role = message.role
        if role == _ASSISTANT:
            turn = generations
            generations += 1
            kind = _ASSISTANT_MESSAGE
        elif role == _USER:
            # A user message answers the latest generation; the opening prompt is turn 0.
            turn = generations - 1 if generations else 0
            kind = _USER_MESSAGE
        else:
            continue  # N3: system messages are not events; tool text joins its call
        # N4: the wire text; a screenshot-only turn carries "".
        agent = message.agent
        if i not in steps:
            events.append(message_event(len(events), turn, kind, message.content or "", agent))
        keyed = calls_of.get(i)
        if keyed is None:
            continue
        if records_present:
            _emit_recorded_calls(events, turn, keyed, records_by_key, agent)
        else:
            _emit_answered_calls(events, turn, keyed, answers, agent)
    return events


def _emit_recorded_calls(
    events: list[TraceEvent],
    turn: int,
    keyed: list[tuple[str, ToolCallDecl]],
    records_by_key: Mapping[str, RecordedToolCall],
    agent: str | None = None,
) -> None:
    """G8: executed calls in ascending sequence, each followed by its result (G5: status
    and output from the record); then the never-executed ones in declaration order, with
    no result and executor None (G4). Arguments are the declaration's, verbatim."""
    append = events.append
    executed, pending = [], []
    for key, decl in keyed:
        record = records_by_key.get(key)
        if record is None:
            pending.append((key, decl))
        else:
            executed.append((record.sequence, key, decl, record))
    if len(executed) > 1:
        executed.sort(key=_first)
    position = len(events)
    for _, key, decl, r in executed:
        name = decl.name
        append(call_event(position, turn, key, name, r.executor, decl.arguments, agent))
        append(
            result_event(
                position + 1, turn, key, name, r.executor, r.status, r.output, r.latency_seconds,
                agent,
            )
        )  # fmt: skip
        position += 2
    for key, decl in pending:
        append(call_event(position, turn, key, decl.name, None, decl.arguments, agent))
        position += 1


def _emit_answered_calls(
    events: list[TraceEvent],
    turn: int,
    keyed: list[tuple[str, ToolCallDecl]],
    answers: Mapping[str, Message],
    agent: str | None = None,
) -> None:
    """G6b: declaration order; an answered call's result right after it; executor and
    latency stay None (no record view), status is the message's recorded ``tool_status``
    (None where it carries none). A user call inlined into its reply has no answer (N2)."""
    append = events.append
    position = len(events)
    for key, decl in keyed:
        name = decl.name
        append(call_event(position, turn, key, name, None, decl.arguments, agent))
        position += 1
        answer = answers.get(key)
        if answer is not None:
            text = message_result_text(answer)
            status = answer.tool_status
            append(result_event(position, turn, key, name, None, status, text, None, agent))
            position += 1


# --- shared accessors ------------------------------------------------------------------


def attempted_calls(timeline: TrialTimeline) -> tuple[tuple[TraceEvent, TraceEvent | None], ...]:
    """Every tool_call with the tool_result sharing its call_id, or None (G4: never ran,
    or no record view). The one call/result join every reader uses."""
    results = {e.call_id: e for e in timeline.events if e.kind is _TOOL_RESULT}
    return tuple((e, results.get(e.call_id)) for e in timeline.events if e.kind is _TOOL_CALL)


def assistant_texts(timeline: TrialTimeline) -> tuple[str, ...]:
    """The text of each assistant generation in order; index k is turn_index k (G2)."""
    return tuple(e.text or "" for e in timeline.events if e.kind is _ASSISTANT_MESSAGE)


# --- payloads (timeline.event) ---------------------------------------------------------

# ``agent`` is written only where a recorder named one, so a bundle's payloads (and the
# projection version) are what they were before the field existed
_OPTIONAL_FIELDS = frozenset({"agent"})
_EVENT_FIELDS = tuple(f.name for f in dataclasses.fields(TraceEvent))
_FLAG_FIELDS = ("timeline_version", "message_view_present", "records_present")
_PAYLOAD_FIELDS = frozenset(_EVENT_FIELDS + _FLAG_FIELDS) - _OPTIONAL_FIELDS


def timeline_to_payloads(timeline: TrialTimeline) -> list[dict[str, Any]]:
    """One JSON-safe dict per event, every field present, plus the projection version and
    the view flags: a ``timeline.event`` read alone must still say whether a None status is
    a fact or an absent view ("never inferred"). termination_reason travels on trial.ended.
    """
    view, records = timeline.message_view_present, timeline.records_present
    out = [
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
    for payload, e in zip(out, timeline.events, strict=True):
        if e.agent is not None:
            payload["agent"] = e.agent
    return out


def timeline_from_payloads(
    payloads: Sequence[Mapping[str, Any]],
    *,
    termination_reason: str | None = None,
    message_view_present: bool | None = None,
    records_present: bool | None = None,
) -> TrialTimeline:
    """Inverse of :func:`timeline_to_payloads` (pass the view flags for a timeline with no
    events); raises ValueError naming the payload index and key of any inconsistency."""
    events = []
    flags = {"message_view_present": message_view_present, "records_present": records_present}
    for index, payload in enumerate(payloads):
        keys = payload.keys() - _OPTIONAL_FIELDS
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
        p.get("agent"),
    )
