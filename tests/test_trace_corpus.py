"""The narrowed notes pack's gate over the 17 recorded notes trials (FORMATS.md § 8, § 9):
the policy half (met/, tool_log.yaml carried) passes 12/12, the gated half (not_met/, no
record — schema_version 1) fails 5/5, decided on every trial because the constraint reads
only which tools were called and in which order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from replay.timeline.build import build_trial_timeline
from replay.trace_checks import evaluate_trace_checks
from replay.trace_checks.rules import load_trace_checks
from schemas.timeline import (
    Message,
    RecordedToolCall,
    Role,
    ToolCallDecl,
    ToolExecutionStatus,
    ToolExecutorIdentity,
)
from tests.data_paths import NARROWED, NOTES

PACK = NARROWED


def _read(path: Path) -> Any:
    return yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)


def bundle_timeline(directory: Path):
    trajectory = _read(directory / "trajectory.yaml")
    messages = [
        Message(
            Role(m["role"]),
            m["content"] or "",
            tuple(
                ToolCallDecl(c["id"], c["name"], c["arguments"] or {})
                for c in m["tool_calls"] or ()
            ),
            m["tool_call_id"],
        )
        for m in trajectory["messages"]
    ]
    log = directory / "tool_log.yaml"
    records = None
    if log.exists():
        records = [
            RecordedToolCall(
                r["call_id"],
                r["sequence"],
                r["tool_name"],
                r["arguments"] or {},
                ToolExecutorIdentity(r["executor"]),
                ToolExecutionStatus(r["status"]),
                r["output"],
                r.get("latency_seconds"),
                r.get("timestamp"),
            )
            for r in _read(log) or []
        ]
    return build_trial_timeline(messages, records, trajectory.get("termination_reason"))


@pytest.mark.parametrize(
    ("part", "n", "passed", "records"), [("met", 12, True, True), ("not_met", 5, False, False)]
)
def test_the_narrowed_gate_splits_the_notes_corpus(
    part: str, n: int, passed: bool, records: bool
) -> None:
    cfg = load_trace_checks(_read(PACK)["trace_checks"])
    bundles = sorted(p.parent for p in (NOTES / part).glob("*/trajectory.yaml"))
    assert len(bundles) == n
    for directory in bundles:
        timeline = bundle_timeline(directory)
        assert timeline.records_present is records
        res = evaluate_trace_checks(timeline, cfg)
        (r,) = res.results
        assert (r.passed, r.undecided, r.severity) == (passed, False, "gate"), directory.name
        assert res.summary.gate_failed is (not passed)
        # a block of nothing but gates scores the gate verdict
        assert res.component == (1.0 if passed else 0.0)


def test_recorded_grades_carry_the_shape_we_emit() -> None:
    """The met/ grades record the empty trace block; ours has the same keys."""
    grade = _read(next((NOTES / "met").glob("*/grade.yaml")))
    assert grade["trace_check_results"] == []
    assert set(grade["trace_checks_summary"]) == {
        "winning_path",
        "gate_failed",
        "failed_gate_ids",
        "paths",
    }
    cfg = load_trace_checks(_read(PACK)["trace_checks"])
    ours = evaluate_trace_checks(
        bundle_timeline(next((NOTES / "met").glob("*/trajectory.yaml")).parent), cfg
    ).to_grade_dict()
    assert set(ours["trace_checks_summary"]) == set(grade["trace_checks_summary"])
