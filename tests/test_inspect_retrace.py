"""`vledger retrace --source LOGDIR --constraints FILE` over imported inspect_ai samples.

The expected verdicts are read off the stored timeline (the `timeline` view), not off the
evaluator: a constraint asking for a successful lookup passes exactly where the timeline
holds a `tool_result` of `lookup` with status `success`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from ledger.analytics.sql import query
from ledger.cli import main
from replay.timeline.unrecorded import fields_read, unmeasured_constraints
from replay.trace_checks.rules import load_trace_checks
from tests.inspect_support import EPOCHS, SAMPLES, TASK, InspectLogs
from tests.inspect_support import inspect_logs as _session_logs

# one xdist worker builds this module's shared fixture once (make test: --dist loadgroup)
pytestmark = pytest.mark.xdist_group("inspect")


inspect_logs = _session_logs  # the session-scoped fixture, under the name the tests ask for

CONSTRAINTS = {
    "constraints": [
        {
            "id": "looked_up_before_answering",
            "require": {
                "before": {
                    "left": {"quantifier": "any", "match": {"kind": "tool_call",
                                                            "tool": {"equals": "lookup"}}},
                    "right": {"quantifier": "last", "match": {"kind": "assistant_message"}},
                }
            },
        },
        {
            "id": "lookup_succeeded",
            "require": {"present": {"match": {"kind": "tool_result", "tool": {"equals": "lookup"},
                                              "status": {"equals": "success"}}}},
        },
        {
            "id": "ran_by_the_agent",
            "require": {"present": {"match": {"kind": "tool_call",
                                              "executor": {"equals": "agent"}}}},
        },
    ]
}  # fmt: skip


def _retrace(tmp_path: Path, logs: Path) -> tuple[dict, Path]:
    cfile = tmp_path / "constraints.yaml"
    cfile.write_text(yaml.safe_dump(CONSTRAINTS))
    led = tmp_path / "L"
    args = ["retrace", "--source", str(logs), "--constraints", str(cfile), "--ledger", str(led)]
    res = CliRunner().invoke(main, [*args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout), led


def test_constraints_are_classified_as_the_timeline_says(
    tmp_path: Path, inspect_logs: InspectLogs
) -> None:
    report, led = _retrace(tmp_path, inspect_logs.logs)
    n = len(SAMPLES) * EPOCHS
    succeeded = query(
        led,
        "SELECT count(DISTINCT trial) AS n FROM timeline WHERE kind = 'tool_result' "
        "AND tool_name = 'lookup' AND status = 'success'",
    ).to_pylist()[0]["n"]
    rows = {c["id"]: c for c in report["constraints"]}
    assert rows["lookup_succeeded"]["task_id"] == TASK
    assert (rows["lookup_succeeded"]["passed"], rows["lookup_succeeded"]["failed"]) == (
        succeeded,
        n - succeeded,
    )
    assert rows["lookup_succeeded"]["class"] == "discriminating"  # s1 succeeds, s2 errors
    assert rows["looked_up_before_answering"]["class"] == "always_true"
    assert rows["looked_up_before_answering"]["evaluated"] == n
    assert [t["status"] for t in report["trials"]] == ["agreed"] * n
    assert report["evidence"]["with_tool_call_record"] == n


def test_a_constraint_on_a_field_inspect_does_not_record_is_not_measured_naming_it(
    tmp_path: Path, inspect_logs: InspectLogs
) -> None:
    report, _ = _retrace(tmp_path, inspect_logs.logs)
    (row,) = [c for c in report["constraints"] if c["id"] == "ran_by_the_agent"]
    assert (row["class"], row["evaluated"]) == ("not_measured", 0)
    assert row["not_measured_trials"] == len(SAMPLES) * EPOCHS
    assert "executor" in row["not_measured_reason"] and "inspect_ai" in row["not_measured_reason"]
    for trial in report["trials"]:
        assert [c["id"] for c in trial["not_measured_constraints"]] == ["ran_by_the_agent"]
        assert "ran_by_the_agent" not in {c["id"] for c in trial["constraints"]}
    others = [c for c in report["constraints"] if c["id"] != "ran_by_the_agent"]
    assert all(c["not_measured_reason"] is None for c in others)


def test_fields_read_covers_require_trees_and_binders() -> None:
    block = load_trace_checks(
        {
            "constraints": [
                {"id": "a", "require": {"present": {"match": {"kind": "tool_call",
                                                              "executor": {"equals": "user"}}}}},
                {"id": "b", "require": {"all_of": [
                    {"present": {"match": {"kind": "tool_call", "tool": {"equals": "x"}}}},
                    {"negate": {"present": {"match": {"kind": "tool_result",
                                                      "status": {"equals": "error"}}}}},
                ]}},
            ]
        }
    )  # fmt: skip
    (a, b) = block.constraints
    assert set(fields_read(a)) == {"executor"}
    assert set(fields_read(b)) == {"tool", "status"}
    assert unmeasured_constraints(block, frozenset({"executor"})) == {"a": ("executor",)}
    assert unmeasured_constraints(block, frozenset()) == {}
