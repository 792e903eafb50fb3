"""Key accounting on every replayed grade (GRADING.md § The runtime ledger).

Each test grades a small config and reads the grade's ``accounting`` rows: per populated
scored key, ``evaluated`` or ``skipped`` with a reason an author can act on. Expected rows
are written from the section's rules, not read off the code.
"""

from __future__ import annotations

from typing import Any

from replay.grading.components.judge import RecordedJudge
from replay.grading.components.result import ComponentResult
from replay.grading.grade import GradeInputs, grade_trial
from replay.grading.rules import load_grading_config
from schemas.timeline import TrialTimeline
from tests.grading_support import timeline_of

EMPTY = TrialTimeline((), False, False, "user_stop")
TALK = timeline_of([("user", "hi"), ("assistant", "Your refund is approved.")])


def _inputs(**kw: Any) -> GradeInputs:
    return GradeInputs(
        trial="t", messages=(), recorded_calls=(), termination_reason="user_stop", **kw
    )


def _rows(grading: dict[str, Any], timeline: TrialTimeline = TALK, *, authored: bool = False, **kw):
    cfg = load_grading_config(grading, authored=authored)
    grade = grade_trial(_inputs(**kw), cfg, timeline=timeline)
    return grade, {r["key"]: (r["outcome"], r["reason"]) for r in grade.accounting}


def test_an_empty_list_is_not_populated() -> None:
    rules = {"must_contain": ["refund"], "tool_expectations": {"disallowed_tools": []}}
    _, rows = _rows({"transcript_rules": rules, "combine": {"weights": {"transcript_rules": 1.0}}})
    assert rows == {"transcript_rules.must_contain": ("evaluated", "")}


def test_on_an_events_less_timeline_only_the_floor_is_read() -> None:
    rules = {"must_contain": ["refund"], "max_turns": 3, "min_assistant_turns": 1}
    grade, rows = _rows(
        {"transcript_rules": rules, "combine": {"weights": {"transcript_rules": 1.0}}}, EMPTY
    )
    assert grade.components["transcript_rules"] == 0.0  # § Turn bounds: the floor scores it
    assert rows["transcript_rules.min_assistant_turns"] == ("evaluated", "")
    for key in ("transcript_rules.must_contain", "transcript_rules.max_turns"):
        assert rows[key][0] == "skipped" and "no events" in rows[key][1]


def test_trace_kinds_on_an_events_less_timeline_are_skipped() -> None:
    block = {
        "constraints": [
            {"id": "a", "require": {"all_of": [
                {"present": {"match": {"kind": "assistant_message"}}},
                {"absent": {"match": {"kind": "tool_call"}}},
            ]}}
        ]
    }  # fmt: skip
    _, rows = _rows({"trace_checks": block, "combine": {"weights": {"trace_checks": 1.0}}}, EMPTY)
    assert set(rows) == {
        "trace_checks.constraints.all_of",
        "trace_checks.constraints.present",
        "trace_checks.constraints.absent",
    }
    assert all(outcome == "skipped" and reason for outcome, reason in rows.values())


def test_a_kind_written_only_inside_a_route_counts_under_alternatives() -> None:
    present = {"present": {"match": {"kind": "assistant_message"}}}
    block = {
        "constraints": [{"id": "s", "require": {"absent": {"match": {"kind": "tool_call"}}}}],
        "alternatives": [
            {"id": "p1", "constraints": [{"id": "c1", "require": present}]},
            {"id": "p2", "constraints": [{"id": "c2", "require": {"count": {
                "match": {"kind": "assistant_message"}, "min": 1}}}]},
        ],
    }  # fmt: skip
    _, rows = _rows({"trace_checks": block, "combine": {"weights": {"trace_checks": 1.0}}})
    assert rows == {
        "trace_checks.constraints.absent": ("evaluated", ""),
        "trace_checks.alternatives": ("evaluated", ""),
    }


def test_an_unbound_binder_skips_the_kinds_nested_in_its_tree_only() -> None:
    """ "a constraint whose binder yielded no assignment skips the kinds nested inside its
    require tree ... the tree's own kind is evaluated ... A kind another constraint in the
    block scored is evaluated too." """
    bound = {
        "id": "b",
        "bind": {"match": {"kind": "tool_call", "tool": {"equals": "lookup"}},
                 "values": {"rid": {"field": "args.record_id"}}},
        "require": {"all_of": [
            {"present": {"match": {"kind": "tool_call", "args": {"record_id": {"equals_binding": "rid"}}}}},
            {"count": {"match": {"kind": "tool_call", "args": {"record_id": {"equals_binding": "rid"}}}, "max": 3}},
        ]},
    }  # fmt: skip
    other = {"id": "o", "require": {"present": {"match": {"kind": "assistant_message"}}}}
    _, rows = _rows(
        {"trace_checks": {"constraints": [bound, other]},
         "combine": {"weights": {"trace_checks": 1.0}}}
    )  # fmt: skip
    assert rows["trace_checks.constraints.all_of"] == ("evaluated", "")
    assert rows["trace_checks.constraints.present"] == ("evaluated", "")  # constraint o read it
    outcome, reason = rows["trace_checks.constraints.count"]
    assert outcome == "skipped" and "binder selected no value" in reason and "b" in reason


def test_judge_without_recorded_verdicts_and_custom_checks_not_enabled_are_skipped() -> None:
    grading = {
        "llm_judge": {"rubric": {"criteria": [{"id": "a", "description": "a"}]}},
        "custom_checks": {"enabled": False, "file": "checks.py"},
        "combine": {"weights": {"llm_judge": 1.0}},
    }
    _, rows = _rows(grading, judge=RecordedJudge("unspecified", None))
    assert (
        rows["llm_judge.rubric"][0] == "skipped"
        and "criterion results" in rows["llm_judge.rubric"][1]
    )
    assert rows["custom_checks.enabled"][0] == "skipped"
    assert "enabled is off" in rows["custom_checks.enabled"][1]


def test_a_hash_source_under_a_hash_that_is_off_is_skipped() -> None:
    state = {"hash": {"enabled": False, "expect_initial_state": True},
             "jsonpaths": [{"path": "$.db.a", "equals": 1}]}  # fmt: skip
    _, rows = _rows(
        {"state_checks": state, "combine": {"weights": {"state_checks": 1.0}}},
        final_state={"db": {"a": 1}},
    )
    assert rows["state_checks.jsonpaths"] == ("evaluated", "")
    outcome, reason = rows["state_checks.hash.expect_initial_state"]
    assert outcome == "skipped" and "enabled is off" in reason


def _silent(_timeline, _block) -> ComponentResult:
    return ComponentResult(score=1.0)  # scores, and accounts for nothing


def test_an_authored_key_no_evaluator_accounts_for_refuses_the_grade() -> None:
    block = {"constraints": [{"id": "x", "require": {"absent": {"match": {"kind": "tool_call"}}}}]}
    grading = {"trace_checks": block, "combine": {"weights": {"trace_checks": 1.0}}}
    authored = load_grading_config(grading)
    grade = grade_trial(_inputs(), authored, timeline=TALK, trace_evaluator=_silent)
    assert grade.score is None and grade.binary_pass is None  # never a 0.0 or 1.0 folded in
    message = grade.not_measured["accounting"]
    assert "trace_checks.constraints.absent" in message and "evaluate_trace_checks" in message
    # recorded: the same remainder is the component not measured, the trial still read
    recorded = load_grading_config(grading, authored=False)
    grade = grade_trial(_inputs(), recorded, timeline=TALK, trace_evaluator=_silent)
    assert grade.components["trace_checks"] is None
    assert "trace_checks.constraints.absent" in grade.not_measured["trace_checks"]


def test_the_key_accounting_view_and_report_name_keys_that_never_scored(tmp_path) -> None:
    """A corpus whose snapshot writes a hash source under a hash that is off: the source
    never scores, and the README's query and the report's list say so."""
    import json

    import yaml
    from click.testing import CliRunner

    from ledger.cli import main

    grading = {
        "combine": {"weights": {"state_checks": 1.0}},
        "state_checks": {
            "hash": {"enabled": False, "expect_initial_state": True},
            "jsonpaths": [{"path": "$.db.a", "equals": 1}],
        },
    }
    for i in range(2):
        b = tmp_path / "src" / f"t_ka_trial{i}"
        b.mkdir(parents=True)
        (b / "task.yaml").write_text(yaml.safe_dump({"task_id": "t_ka", "grading_config": grading}))
        (b / "trajectory.yaml").write_text(
            yaml.safe_dump(
                {"task_id": "t_ka", "status": "completed", "termination_reason": "agent_done",
                 "messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]}
            )
        )  # fmt: skip
        (b / "env.yaml").write_text(yaml.safe_dump({"db": {"a": 1}}))
    ledger = str(tmp_path / "l")
    run = CliRunner()
    assert run.invoke(main, ["init", "--ledger", ledger]).exit_code == 0
    res = run.invoke(main, ["retrace", "--source", str(tmp_path / "src"), "--ledger", ledger])
    assert res.exit_code == 0, res.output
    query = run.invoke(main, ["sql", README_QUERY, "--format", "json", "--ledger", ledger])
    assert query.exit_code == 0, query.output
    rows = json.loads(query.output)
    assert [(r["task_id"], r["key"], r["skipped"]) for r in rows] == [
        ("t_ka", "state_checks.hash.expect_initial_state", 2)
    ]
    out = tmp_path / "report.html"
    assert run.invoke(main, ["report", "--out", str(out), "--ledger", ledger]).exit_code == 0
    page = out.read_text()
    assert "Keys that never scored" in page and "state_checks.hash.expect_initial_state" in page


# The query the README documents for "keys declared in this corpus that never scored".
README_QUERY = (
    "select task_id, key, skipped, reasons from key_accounting where evaluated = 0 "
    "order by task_id, key"
)


def test_the_readme_documents_that_query() -> None:
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert f'vledger sql "{README_QUERY}"' in readme
