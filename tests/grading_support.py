"""Test-side helpers for grading tests: hand-built timelines and the parity-pack reader.

``timeline_of`` builds a TrialTimeline straight from a compact script so the transcript
rules are tested in isolation from the timeline projection (which has its own suite).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from schemas.timeline import (
    Message,
    RecordedToolCall,
    ToolExecutionStatus,
    ToolExecutorIdentity,
    TraceEvent,
    TraceEventKind,
    TrialTimeline,
)
from tests.data_paths import GRADING_PARITY
from tests.parity_loader import parity_views

PARITY = GRADING_PARITY


def read_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def timeline_of(script: list[Any], *, records_present: bool = True) -> TrialTimeline:
    """``script`` items: ("assistant"|"user", text) or ("call", tool, args, executor, status)
    where status None means the call never ran (no tool_result)."""
    events: list[TraceEvent] = []
    turn = 0
    seen_assistant = False
    for n, item in enumerate(script):
        pos = len(events)
        if item[0] == "assistant":
            if seen_assistant:
                turn += 1
            seen_assistant = True
            events.append(TraceEvent(pos, turn, TraceEventKind.ASSISTANT_MESSAGE, text=item[1]))
        elif item[0] == "user":
            events.append(TraceEvent(pos, turn, TraceEventKind.USER_MESSAGE, text=item[1]))
        else:
            _, tool, args, executor, status = item
            who = ToolExecutorIdentity(executor) if records_present else None
            cid = f"c{n}"
            events.append(
                TraceEvent(
                    pos,
                    turn,
                    TraceEventKind.TOOL_CALL,
                    call_id=cid,
                    tool_name=tool,
                    executor=who,
                    arguments=dict(args),
                )
            )
            if status is not None or not records_present:
                events.append(
                    TraceEvent(
                        len(events),
                        turn,
                        TraceEventKind.TOOL_RESULT,
                        call_id=cid,
                        tool_name=tool,
                        executor=who,
                        status=ToolExecutionStatus(status) if records_present else None,
                        result="",
                    )
                )
    return TrialTimeline(tuple(events), message_view_present=True, records_present=records_present)


def pack_case_timeline(case: dict[str, Any]) -> TrialTimeline:
    """A parity-pack trial case as a timeline. Message-level ``tool_calls`` follow their
    message; the older case-level ``tool_calls:`` list (the README: "in
    transcript_rules_required_actions, the calls themselves") is attached to the last
    assistant message, which is where those calls were declared."""
    script: list[Any] = []
    for m in case.get("messages") or []:
        script.append((m["role"], m.get("content") or ""))
        for c in m.get("tool_calls") or []:
            script.append(
                ("call", c["tool_name"], c.get("arguments") or {}, c["executor"], c["status"])
            )
    for c in case.get("tool_calls") or []:
        script.append(
            ("call", c["tool_name"], c.get("arguments") or {}, c["executor"], c["status"])
        )
    return timeline_of(script)


def pack_case_views(
    case: dict[str, Any],
) -> tuple[tuple[Message, ...], tuple[RecordedToolCall, ...]]:
    """A parity-pack trial case as the two recorded views build_trial_timeline joins, read
    by the shared pack loader (tests/parity_loader.py). The older case-level
    ``tool_calls:`` list (README: "in transcript_rules_required_actions, the calls
    themselves") is declared on the last assistant message, where those calls were made."""
    raw_messages = [dict(m) for m in case.get("messages") or []]
    if case.get("tool_calls"):
        last = max(i for i, m in enumerate(raw_messages) if m["role"] == "assistant")
        declared = list(raw_messages[last].get("tool_calls") or [])
        raw_messages[last]["tool_calls"] = declared + list(case["tool_calls"])
    messages, records = parity_views({"messages": raw_messages})
    return tuple(messages), tuple(records)


def write_yaml(path: Path, doc: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


def write_bundle(
    directory: Path,
    task_id: str,
    grading: dict[str, Any] | None,
    grade: dict[str, Any] | None,
    messages: list[dict[str, Any]],
) -> Path:
    """A minimal recorded bundle: task.yaml (with its grading snapshot, if any), a completed
    trajectory.yaml, and grade.yaml when ``grade`` is given."""
    task: dict[str, Any] = {"task_id": task_id, "trial_index": 0}
    if grading is not None:
        task["grading_config"] = grading
    write_yaml(directory / "task.yaml", task)
    write_yaml(
        directory / "trajectory.yaml",
        {
            "task_id": task_id,
            "trial_index": 0,
            "status": "completed",
            "termination_reason": "agent_done",
            "messages": messages,
        },
    )
    if grade is not None:
        write_yaml(directory / "grade.yaml", grade)
    return directory
