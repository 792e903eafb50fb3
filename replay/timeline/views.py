"""The two views of a trial the timeline joins, read and checked (GRADING.md G3, G5–G7):
what does not join is raised, never dropped."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from operator import attrgetter

from replay.timeline.call_ids import CallIdDeriver
from schemas.timeline import (
    Message,
    RecordedToolCall,
    Role,
    TimelineInconsistencyError,
    ToolCallDecl,
    ToolExecutionStatus,
)

_ASSISTANT = Role.ASSISTANT
_USER = Role.USER
_TOOL = Role.TOOL


# --- failure text (G5) ---------------------------------------------------------------
# The record carries one of four forms; the agent-facing role: tool message carries the
# same text behind ERROR_PREFIX. The timeline only reads them; these name the forms so
# the views can be related (tests, generated corpora) without respelling them.

ERROR_PREFIX = "Error: "
NO_MESSAGE_FAILURE_TEXT = "Tool returned failure with no error message"


def tool_not_found_text(tool_name: str) -> str:
    """The recorded failure text for a call naming a tool the trial does not have."""
    return f"Tool '{tool_name}' not found"


def exception_failure_text(exc: BaseException) -> str:
    """A raised exception's message, or its class name where it carries none."""
    return str(exc) or type(exc).__name__


def agent_facing_text(record: RecordedToolCall) -> str:
    """The role: tool message text the agent saw for ``record`` (G5: ``Error: <text>``)."""
    output = record.output or ""
    if record.status is ToolExecutionStatus.SUCCESS:
        return output
    return ERROR_PREFIX + output


def read_message_view(
    messages: Sequence[Message], records_present: bool
) -> tuple[bool, dict[str, tuple[int, ToolCallDecl]], dict[int, list], list[int]]:
    """Derive every declaration's key in declaration order, both actors sharing one
    derivation (G3, N2); note the role: tool messages."""
    present = False
    declared: dict[str, tuple[int, ToolCallDecl]] = {}
    calls_of: dict[int, list[tuple[str, ToolCallDecl]]] = {}
    tool_messages: list[int] = []
    deriver = CallIdDeriver()

    for i, message in enumerate(messages):
        role = message.role
        if role in (_ASSISTANT, _USER):
            present = True
            if message.tool_calls:
                keyed = []
                for decl in message.tool_calls:
                    key = deriver.derive(decl.id)
                    declared[key] = (i, decl)
                    keyed.append((key, decl))
                calls_of[i] = keyed
        elif role == _TOOL and not records_present:
            # With records present these are the shadowed view: neither read nor
            # validated (G6b, last sentence).
            tool_messages.append(i)
    return present, declared, calls_of, tool_messages


def in_sequence_order(recorded_calls: Sequence[RecordedToolCall]) -> Sequence[RecordedToolCall]:
    """The records in ascending sequence; a repeated sequence is a recorder bug, raised."""
    previous = -1
    for record in recorded_calls:
        if record.sequence <= previous:
            break
        previous = record.sequence
    else:
        return recorded_calls
    ordered = sorted(recorded_calls, key=attrgetter("sequence"))
    for before, record in zip(ordered, ordered[1:], strict=False):
        if record.sequence == before.sequence:
            raise TimelineInconsistencyError(
                f"two tool_log records carry sequence {record.sequence} (call ids "
                f"{before.call_id!r} and {record.call_id!r}); the trial's recorder stamps "
                "each sequence once, so this record cannot be ordered against the other",
                call_id=record.call_id,
                where=f"tool_log sequence {record.sequence}",
            )
    return ordered


def link_records(
    ordered: Sequence[RecordedToolCall], declared: Mapping[str, tuple[int, ToolCallDecl]]
) -> dict[str, RecordedToolCall]:
    """Join each record to its declaration by derived key (G3), loudly (G7)."""
    records_by_key: dict[str, RecordedToolCall] = {}
    deriver = CallIdDeriver()
    for record in ordered:
        key = deriver.derive(record.call_id)
        hit = declared.get(key)
        if hit is None:
            raise TimelineInconsistencyError(
                f"tool_log record at sequence {record.sequence} (tool_name "
                f"{record.tool_name!r}, raw call id {record.call_id!r}) derives call id "
                f"{key!r}, which no assistant or user message declares; a record can only "
                "answer a declared call (G7), so the two views disagree about this trial",
                call_id=key,
                where=f"tool_log sequence {record.sequence}",
            )
        index, decl = hit
        if decl.name != record.tool_name:
            raise TimelineInconsistencyError(
                f"tool_log record at sequence {record.sequence} names tool "
                f"{record.tool_name!r} for call id {key!r}, but messages[{index}] declares "
                f"that call as {decl.name!r}; a call and the result paired with it must "
                "describe one call (G7)",
                call_id=key,
                where=f"tool_log sequence {record.sequence}",
            )
        records_by_key[key] = record
    return records_by_key


def read_answers(
    messages: Sequence[Message],
    tool_messages: Sequence[int],
    declared: Mapping[str, tuple[int, ToolCallDecl]],
) -> dict[str, Message]:
    """Messages-only results (G6b): each role: tool message keyed by its own view's
    derivation (G3), so the k-th result naming x answers the k-th declaration of x."""
    answers: dict[str, Message] = {}
    deriver = CallIdDeriver()
    for i in tool_messages:
        message = messages[i]
        raw = message.tool_call_id
        if raw is None:
            raise TimelineInconsistencyError(
                f"role: tool message messages[{i}] carries no tool_call_id, so its result "
                "cannot be joined to any call (G6b); a bundle predating call-id threading "
                "cannot be graded — supply its tool_log.yaml or re-record the trial",
                call_id="",
                where=f"messages[{i}]",
            )
        key = deriver.derive(raw)
        if key not in declared:
            raise TimelineInconsistencyError(
                f"role: tool message messages[{i}] answers call id {key!r} (raw id {raw!r}), "
                "but no assistant or user message declares a call under that key; with no "
                "tool_log its text is the only evidence of that call, so it can be neither "
                "joined nor dropped (G6b)",
                call_id=key,
                where=f"messages[{i}]",
            )
        answers[key] = message
    return answers


def user_tool_steps(messages: Sequence[Message]) -> frozenset[int]:
    """Indexes of the user tool steps (docs/readme/timeline.md), read from the transcript's
    shape alone as the recorder reads it: a role: user message whose raw ids the following
    role: tool run answers, and any message declaring one of those ids."""
    step_ids: set[str] = set()
    n = len(messages)
    for i, message in enumerate(messages):
        if message.role != _USER or not message.tool_calls:
            continue
        ids = {decl.id for decl in message.tool_calls}
        answered: set[str] = set()
        j = i + 1
        while j < n and messages[j].role == _TOOL:
            answered.add(messages[j].tool_call_id or "")
            j += 1
        if ids <= answered:
            step_ids |= ids
    if not step_ids:
        return frozenset()
    return frozenset(
        i
        for i, m in enumerate(messages)
        if m.role == _USER and any(decl.id in step_ids for decl in m.tool_calls)
    )


def message_result_text(message: Message) -> str:
    """A role: tool message's text as a messages-only result: verbatim, the agent-facing
    rendering with any ``Error: `` prefix (G6b; docs/readme/timeline.md says why the
    recorder's stripping is not followed)."""
    return message.content or ""
