"""Every trace_checks_* grading-parity pack, through the timeline builder and the evaluator.

The satisfying case must score strictly higher than the violating one on trace_checks
(a build ignoring the key would score both alike), and where a pack's comments state exact
scores those exact scores. Each "ignored key" claim is checked too: the pack with the key
stripped must stop separating the two cases the way its comment says.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from replay.timeline.build import build_trial_timeline
from replay.trace_checks import TraceChecksResult, evaluate_trace_checks
from replay.trace_checks.rules import load_trace_checks
from schemas.timeline import (
    Message,
    RecordedToolCall,
    Role,
    ToolCallDecl,
    ToolExecutionStatus,
    ToolExecutorIdentity,
)
from tests.parity_loader import PARITY_ROOT, load_pack, parity_timeline

PACKS = sorted(
    p.name
    for p in PARITY_ROOT.iterdir()
    if p.name.startswith("trace_checks") and (p / "trial.yaml").exists()
)


def score(block: dict[str, Any], case: dict[str, Any]) -> TraceChecksResult:
    return evaluate_trace_checks(parity_timeline(case), load_trace_checks(block))


def both(name: str, mutate=None) -> tuple[TraceChecksResult, TraceChecksResult]:
    grading, trials = load_pack(name)
    block = copy.deepcopy(grading["trace_checks"])
    if mutate is not None:
        mutate(block)
    return score(block, trials["satisfying"]), score(block, trials["violating"])


def test_every_trace_checks_pack_with_trials_is_covered() -> None:
    assert len(PACKS) == 19
    assert (PARITY_ROOT / "trace_checks_undecided").is_dir()


@pytest.mark.parametrize("name", PACKS)
def test_satisfying_scores_strictly_higher_than_violating(name: str) -> None:
    sat, vio = both(name)
    assert sat.component is not None and vio.component is not None
    assert sat.component > vio.component, (sat.results, vio.results)


def test_weight_pack_scores_three_quarters_against_one_quarter() -> None:
    sat, vio = both("trace_checks_constraints_weight")
    assert (sat.component, vio.component) == (0.75, 0.25)

    def unweighted(block: dict[str, Any]) -> None:
        for c in block["constraints"]:
            c.pop("weight", None)

    sat, vio = both("trace_checks_constraints_weight", unweighted)
    assert (sat.component, vio.component) == (0.5, 0.5)


def test_severity_pack_scores_one_half_against_zero() -> None:
    sat, vio = both("trace_checks_constraints_severity")
    assert (sat.component, vio.component) == (0.5, 0.0)
    assert vio.summary.failed_gate_ids == ("no_row_was_deleted",)
    assert [r.severity for r in sat.results] == ["gate", "scored", "scored"]

    def scored(block: dict[str, Any]) -> None:
        block["constraints"][0].pop("severity")

    sat, vio = both("trace_checks_constraints_severity", scored)
    assert (sat.component, vio.component) == (2 / 3, 2 / 3)


def test_alternatives_pack_violating_scores_the_best_single_route() -> None:
    sat, vio = both("trace_checks_alternatives")
    assert vio.component == 0.5 and sat.component == 1.0
    assert len(vio.summary.paths) == 2


def test_gate_pack_the_gate_alone_moves_the_score() -> None:
    sat, vio = both("trace_checks_gate")
    assert (sat.component, vio.component) == (1.0, 0.0)
    assert (sat.summary.gate_failed, vio.summary.gate_failed) == (False, True)
    assert vio.summary.failed_gate_ids == ("the_meter_was_not_reset",)
    assert vio.results[0].passed is True  # the scored constraint holds in both trials
    assert "FAILED trace gates: the_meter_was_not_reset" in vio.reason_segments()

    def no_gate(block: dict[str, Any]) -> None:
        block["constraints"][1].pop("severity")

    _, vio = both("trace_checks_gate", no_gate)
    assert vio.component == 0.5


def test_negate_pack_dropping_the_negation_flips_the_order() -> None:
    sat, vio = both("trace_checks_constraints_negate")
    assert (sat.component, vio.component) == (1.0, 0.0)

    def dropped(block: dict[str, Any]) -> None:
        c = block["constraints"][0]
        c["require"] = c["require"]["negate"]

    sat, vio = both("trace_checks_constraints_negate", dropped)
    assert (sat.component, vio.component) == (0.0, 1.0)


def test_on_missing_pack_under_the_default_both_score_zero() -> None:
    def default(block: dict[str, Any]) -> None:
        block["constraints"][0].pop("on_missing")

    sat, vio = both("trace_checks_constraints_on_missing", default)
    assert (sat.component, vio.component) == (0.0, 0.0)


def test_bind_pack_ignoring_bind_scores_both_alike() -> None:
    def literal(block: dict[str, Any]) -> None:
        c = block["constraints"][0]
        c.pop("bind")
        for s in ("left", "right"):
            c["require"]["before"][s]["match"].pop("args")

    sat, vio = both("trace_checks_constraints_bind", literal)
    assert sat.component == vio.component


def test_within_pack_without_the_window_both_score_zero() -> None:
    sat, vio = both("trace_checks_constraints_within", lambda b: b["constraints"][0].pop("within"))
    assert (sat.component, vio.component) == (0.0, 0.0)


def test_regex_engine_pack_the_linear_default_separates_nothing() -> None:
    sat, vio = both("trace_checks_regex_engine", lambda b: b.pop("regex_engine"))
    assert sat.component == vio.component == 0.0


def test_before_pack_violating_satisfies_the_any_first_reading() -> None:
    def any_first(block: dict[str, Any]) -> None:
        block["constraints"][0]["require"]["before"]["left"]["quantifier"] = "any"

    _, vio = both("trace_checks_constraints_before", any_first)
    assert vio.component == 1.0


def test_immediately_before_pack_among_events_is_unsatisfiable_for_both() -> None:
    def events(block: dict[str, Any]) -> None:
        block["constraints"][0]["require"]["immediately_before"]["among"] = "events"

    sat, vio = both("trace_checks_constraints_immediately_before", events)
    assert (sat.component, vio.component) == (0.0, 0.0)


def test_all_of_and_any_of_packs_read_the_second_branch() -> None:
    def first_only(block: dict[str, Any]) -> None:
        c = block["constraints"][0]
        kind = next(iter(c["require"]))
        c["require"] = c["require"][kind][0]

    for name in ("trace_checks_constraints_all_of", "trace_checks_constraints_any_of"):
        sat, vio = both(name, first_only)
        assert sat.component == vio.component, name


def test_records_less_replay_of_the_packs_keeps_every_verdict() -> None:
    """None of these packs reads status or executor, so a bundle re-graded without its
    tool-call record reaches the same scores (results come from the role: tool messages)."""
    for name in PACKS:
        grading, trials = load_pack(name)
        cfg = load_trace_checks(grading["trace_checks"])
        for case in ("satisfying", "violating"):
            with_rec = evaluate_trace_checks(parity_timeline(trials[case]), cfg)
            without = evaluate_trace_checks(parity_timeline(trials[case], with_records=False), cfg)
            assert with_rec.to_grade_dict() == without.to_grade_dict(), (name, case)


# --- trace_checks_undecided: the two trials live beside the lock, not in a trial.yaml ------------


def _update_case_trial(executed: bool, status: ToolExecutionStatus) -> Any:
    decl = ToolCallDecl("call_1", "servicenow_csm_update_case", {"case": "CS-1"})
    messages = [
        Message(Role.USER, "Deny the duplicate refund."),
        Message(Role.ASSISTANT, "Denying the case.", (decl,)),
    ]
    records = []
    if executed:
        records.append(
            RecordedToolCall(
                "call_1",
                0,
                "servicenow_csm_update_case",
                {"case": "CS-1"},
                ToolExecutorIdentity.AGENT,
                status,
                "rejected",
            )
        )
        messages.append(Message(Role.TOOL, "Error: rejected", (), "call_1"))
    return build_trial_timeline(messages, records, "agent_done")


def test_undecided_pack_a_call_that_never_ran_is_undecided_and_one_that_failed_is_false() -> None:
    grading, _ = load_pack("trace_checks_undecided")
    cfg = load_trace_checks(grading["trace_checks"])
    never_ran = evaluate_trace_checks(_update_case_trial(False, ToolExecutionStatus.SUCCESS), cfg)
    (r,) = never_ran.results
    assert (r.passed, r.undecided) == (False, True)
    assert "the call never executed" in r.message
    failed = evaluate_trace_checks(_update_case_trial(True, ToolExecutionStatus.ERROR), cfg)
    (r,) = failed.results
    assert (r.passed, r.undecided) == (False, False)
    ok = evaluate_trace_checks(_update_case_trial(True, ToolExecutionStatus.SUCCESS), cfg)
    assert ok.results[0].passed is True


def test_all_keys_pack_loads_and_evaluates() -> None:
    grading, _ = load_pack("all_keys")
    cfg = load_trace_checks(grading["trace_checks"])
    case = {
        "messages": [
            {"role": "user", "content": "Close widget W1 and write the report."},
            {
                "role": "assistant",
                "content": "Writing, then closing.",
                "tool_calls": [
                    {
                        "tool_name": "write_file",
                        "executor": "agent",
                        "status": "success",
                        "arguments": {"path": "reports/W1.md"},
                    },
                    {
                        "tool_name": "close_widget",
                        "executor": "agent",
                        "status": "success",
                        "arguments": {"widget_id": "W1"},
                    },
                ],
            },
        ]
    }
    res = evaluate_trace_checks(parity_timeline(case), cfg)
    assert res.summary.winning_path in {
        "closed_after_writing_the_report",
        "closed_after_telling_the_customer",
    }
    shared = {r.id: r.passed for r in res.results if r.route == ""}
    assert shared == {
        "wrote_the_file_before_closing": True,
        "closed_the_widget_exactly_once": True,
        "never_deleted_a_widget_unannounced": True,
        "closed_straight_after_writing_and_told_nobody_meanwhile": True,
    }
