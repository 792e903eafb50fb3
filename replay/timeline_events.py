"""``TraceEvent`` constructors for the timeline's hot path (``replay.timeline``).

TraceEvent is a frozen slots dataclass; its generated __init__ routes every field through
object.__setattr__, which is half the cost of a timeline. Setting the slots through
their descriptors directly builds an equal object in half the time (pinned by
test_fast_constructors_equal_dataclass_init). Valid only while TraceEvent has no
__post_init__; that test fails if one is added.
"""

from __future__ import annotations

from typing import Any

from schemas.timeline import (
    ToolExecutionStatus,
    ToolExecutorIdentity,
    TraceEvent,
    TraceEventKind,
)

_TOOL_CALL = TraceEventKind.TOOL_CALL
_TOOL_RESULT = TraceEventKind.TOOL_RESULT
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


def message_event(position: int, turn: int, kind: TraceEventKind, text: str) -> TraceEvent:
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
    return e


def call_event(
    position: int,
    turn: int,
    call_id: str,
    tool_name: str,
    executor: ToolExecutorIdentity | None,
    arguments: dict[str, Any],
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
    return e
