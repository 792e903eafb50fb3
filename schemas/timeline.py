"""The trial's two recorded views and the timeline joined from them (GRADING.md § Trial event timeline).

Plain frozen dataclasses rather than pydantic models: timelines are built and read in
hot loops (tens of thousands per second), and the edges that parse untrusted YAML
validate before constructing these.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from schemas.errors import LedgerError


class Role(StrEnum):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class ToolExecutorIdentity(StrEnum):
    AGENT = "agent"
    USER = "user"


class ToolExecutionStatus(StrEnum):
    SUCCESS = "success"
    ERROR = "error"
    TOOL_NOT_FOUND = "tool_not_found"
    INVALID_ARGUMENTS = "invalid_arguments"
    TIMEOUT = "timeout"
    # The environment, not the tool, failed the call (Tolokaforge 0.33.1 records it). A
    # status like any other to a matcher: not success, so `status != success` selects it.
    ENVIRONMENT_ERROR = "environment_error"


class TraceEventKind(StrEnum):
    ASSISTANT_MESSAGE = "assistant_message"
    USER_MESSAGE = "user_message"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"


# The event kinds each view a trace check's ``among`` names (GRADING.md § Trace Checks).
VIEW_KINDS: dict[str, frozenset[TraceEventKind]] = {
    "tool_calls": frozenset({TraceEventKind.TOOL_CALL}),
    "tool_results": frozenset({TraceEventKind.TOOL_RESULT}),
    "messages": frozenset({TraceEventKind.ASSISTANT_MESSAGE, TraceEventKind.USER_MESSAGE}),
    "events": frozenset(TraceEventKind),
}


@dataclass(frozen=True, slots=True)
class ToolCallDecl:
    """One tool call as the message view declares it (the provider's raw id)."""

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Message:
    """One message of trajectory.yaml; ``tool_status`` is the outcome a recorder wrote on a
    ``role: tool`` message (Tolokaforge 0.33.1), None where not recorded."""

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCallDecl, ...] = ()
    tool_call_id: str | None = None
    tool_status: ToolExecutionStatus | None = None
    # the agent that wrote it, where a recorder names one (inspect_ai's agent spans)
    agent: str | None = None


@dataclass(frozen=True, slots=True)
class RecordedToolCall:
    """One entry of tool_log.yaml (GRADING.md § The recorded tool calls both substrates read)."""

    call_id: str
    sequence: int
    tool_name: str
    arguments: dict[str, Any]
    executor: ToolExecutorIdentity
    status: ToolExecutionStatus
    output: str | None = None
    latency_seconds: float | None = None
    timestamp: str | None = None
    agent: str | None = None  # the agent that made the call, where a recorder names one


@dataclass(frozen=True, slots=True)
class TraceEvent:
    """One flat event of the timeline (``None``: inapplicable or unrecorded). Not hashable
    (N7; ``arguments`` is a dict): key on ``position`` or ``call_id``."""

    position: int
    turn_index: int
    kind: TraceEventKind
    text: str | None = None
    call_id: str | None = None
    tool_name: str | None = None
    executor: ToolExecutorIdentity | None = None
    arguments: dict[str, Any] | None = None
    status: ToolExecutionStatus | None = None
    result: str | None = None
    latency_seconds: float | None = None
    # the agent that wrote the message or made the call, where the recorder names one
    # (inspect_ai); an extension beyond GRADING.md's TraceEvent, None for every bundle
    agent: str | None = None

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True, slots=True)
class TrialTimeline:
    """The joined, ordered events plus which views were supplied (never inferred)."""

    events: tuple[TraceEvent, ...]
    message_view_present: bool
    records_present: bool
    termination_reason: str | None = None


class TimelineInconsistencyError(LedgerError, ValueError):
    """The two views disagree about one trial (G6b / G7); names the key and where it occurred."""

    def __init__(self, message: str, *, call_id: str, where: str) -> None:
        self.call_id = call_id
        self.where = where
        super().__init__(message)
