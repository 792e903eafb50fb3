"""Small builders for trace-check tests: timelines written as a script, configs as dicts.

The timeline is constructed directly (TraceEvent / TrialTimeline), following GRADING.md
§ Trial event timeline: every call emits a tool_call and, when it ran, its tool_result
right after it; turn_index counts assistant generations, the opening user prompt sharing
turn 0; on a records-less timeline executor and status are None while result keeps the
tool message's text.
"""

from __future__ import annotations

from typing import Any

from replay.trace_checks.rules import load_trace_checks
from schemas.timeline import (
    ToolExecutionStatus,
    ToolExecutorIdentity,
    TraceEvent,
    TraceEventKind,
    TrialTimeline,
)
from schemas.trace_checks import TraceChecksConfig


class Script:
    def __init__(self, *, records: bool = True) -> None:
        self.records = records
        self.events: list[TraceEvent] = []
        self.turn = -1
        self.calls = 0

    @property
    def _turn(self) -> int:
        return max(self.turn, 0)

    def _add(self, **kw: Any) -> Script:
        self.events.append(TraceEvent(position=len(self.events), turn_index=self._turn, **kw))
        return self

    def user(self, text: str = "hi") -> Script:
        return self._add(kind=TraceEventKind.USER_MESSAGE, text=text)

    def say(self, text: str = "ok") -> Script:
        self.turn += 1
        return self._add(kind=TraceEventKind.ASSISTANT_MESSAGE, text=text)

    def call(
        self,
        tool: str,
        args: dict[str, Any] | None = None,
        *,
        status: str = "success",
        result: str | None = "ok",
        executed: bool = True,
        executor: str = "agent",
    ) -> Script:
        self.calls += 1
        cid = f"call_{self.calls}"
        ex = ToolExecutorIdentity(executor) if (self.records and executed) else None
        self._add(
            kind=TraceEventKind.TOOL_CALL,
            call_id=cid,
            tool_name=tool,
            executor=ex,
            arguments=dict(args or {}),
        )
        if executed:
            self._add(
                kind=TraceEventKind.TOOL_RESULT,
                call_id=cid,
                tool_name=tool,
                executor=ex,
                status=ToolExecutionStatus(status) if self.records else None,
                result=result,
            )
        return self

    def build(self) -> TrialTimeline:
        return TrialTimeline(
            tuple(self.events), message_view_present=True, records_present=self.records
        )


def calls(*tools: str | tuple[str, dict[str, Any]], records: bool = True) -> TrialTimeline:
    """One assistant turn per call: ``calls("read", ("write", {"id": "X"}))``."""
    s = Script(records=records).user()
    for t in tools:
        name, args = (t, {}) if isinstance(t, str) else t
        s.say().call(name, args)
    return s.build()


def tc(tool: str, **extra: Any) -> dict[str, Any]:
    """A tool_call matcher on one tool name, plus extra matcher fields."""
    return {"kind": "tool_call", "tool": {"equals": tool}, **extra}


def one(require: dict[str, Any], **constraint: Any) -> TraceChecksConfig:
    """A block of one constraint with id ``c``."""
    return load_trace_checks({"constraints": [{"id": "c", "require": require, **constraint}]})


def side(q: str, matcher: dict[str, Any]) -> dict[str, Any]:
    return {"quantifier": q, "match": matcher}
