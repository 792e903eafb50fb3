"""Read a grading-parity pack's compact trial.yaml into the two views a trial records.

Tolokaforge's grading_parity README § Reading trial.yaml: each case is
``messages`` in order, each assistant (or user) message optionally carrying ``tool_calls``
with ``tool_name``, ``executor``, ``status``, ``arguments`` and ``output`` (default "").
The compact shape carries no call ids, so ids are minted here in declaration order; every
declared call is also a record (the shared loader's rule: a declared call always carries
one), and an agent-executed call is answered by a role: tool message, as a bundle keeps it.
The timeline itself is built by replay.timeline.build.build_trial_timeline, so a pack's trials
reach the evaluator through the same join every recorded bundle does.
"""

from __future__ import annotations

from typing import Any

import yaml

from replay.timeline.build import build_trial_timeline
from schemas.timeline import (
    Message,
    RecordedToolCall,
    Role,
    ToolCallDecl,
    ToolExecutionStatus,
    ToolExecutorIdentity,
    TrialTimeline,
)
from tests.data_paths import GRADING_PARITY

PARITY_ROOT = GRADING_PARITY


def parity_views(case: dict[str, Any]) -> tuple[list[Message], list[RecordedToolCall]]:
    messages: list[Message] = []
    records: list[RecordedToolCall] = []
    for m in case.get("messages") or []:
        decls: list[ToolCallDecl] = []
        answers: list[Message] = []
        for call in m.get("tool_calls") or []:
            cid = f"call_{len(records) + 1}"
            args = dict(call.get("arguments") or {})
            output = call.get("output", "")
            executor = ToolExecutorIdentity(call.get("executor", "agent"))
            status = ToolExecutionStatus(call.get("status", "success"))
            decls.append(ToolCallDecl(cid, call["tool_name"], args))
            records.append(
                RecordedToolCall(
                    cid, len(records), call["tool_name"], args, executor, status, output
                )
            )
            if executor is ToolExecutorIdentity.AGENT:
                text = output if status is ToolExecutionStatus.SUCCESS else f"Error: {output}"
                answers.append(Message(Role.TOOL, text, (), cid))
        messages.append(Message(Role(m["role"]), m.get("content") or "", tuple(decls)))
        messages.extend(answers)
    return messages, records


def parity_timeline(case: dict[str, Any], *, with_records: bool = True) -> TrialTimeline:
    messages, records = parity_views(case)
    return build_trial_timeline(messages, records if with_records else None, None)


def load_pack(name: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(grading.yaml, trial.yaml or None) of one pack."""
    root = PARITY_ROOT / name
    grading = yaml.safe_load((root / "grading.yaml").read_text(encoding="utf-8"))
    trial_path = root / "trial.yaml"
    trials = yaml.safe_load(trial_path.read_text(encoding="utf-8")) if trial_path.exists() else None
    return grading, trials
