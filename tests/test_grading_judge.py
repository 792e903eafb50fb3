"""llm_judge re-aggregation from recorded verdicts (GRADING.md § LLM Judge)."""

from __future__ import annotations

import pytest

from replay.grading.components.judge import (
    NO_RECORDED_VERDICTS,
    CriterionVerdict,
    RecordedJudge,
    aggregate_rubric,
    evaluate_judge,
)
from schemas.grading import LlmJudgeConfig, RubricCriterion

NOTES_RUBRIC = [
    RubricCriterion(id="checked_duplicates_first", kind="binary", required=True, weight=1.0),
    RubricCriterion(id="note_saved", kind="graded", weight=1.0),
    RubricCriterion(id="clarity", kind="graded", weight=0.5),
]


def _v(i: str, met: bool, score: float) -> CriterionVerdict:
    return CriterionVerdict(id=i, met=met, score=score)


def test_required_gate_zeroes_the_component_the_aggregate_alone_reads_1() -> None:
    """The not_met/ bundles: aggregate 1.0, gated component 0.0 (§ Where the gate is applied)."""
    verdicts = [
        _v("checked_duplicates_first", False, 0.0),
        _v("note_saved", True, 1.0),
        _v("clarity", True, 1.0),
    ]
    agg = aggregate_rubric(NOTES_RUBRIC, verdicts)
    assert (agg.score, agg.gate_failed, agg.gated) == (1.0, True, 0.0)
    result = evaluate_judge(
        LlmJudgeConfig(rubric={"criteria": NOTES_RUBRIC}),
        RecordedJudge("completed", tuple(verdicts)),
    )
    assert result.score == 0.0 and result.gate_failed
    assert result.reasons == (
        "Judge: score=0.00",
        "FAILED required criteria: checked_duplicates_first",
    )


def test_required_criteria_are_excluded_from_the_weighted_mean() -> None:
    verdicts = [
        _v("checked_duplicates_first", True, 1.0),
        _v("note_saved", True, 0.6),
        _v("clarity", False, 0.0),
    ]
    agg = aggregate_rubric(NOTES_RUBRIC, verdicts)
    assert agg.score == pytest.approx((1.0 * 0.6 + 0.5 * 0.0) / 1.5)
    assert not agg.gate_failed


def test_all_required_collapses_to_the_gate_verdict() -> None:
    rubric = [
        RubricCriterion(id="a", required=True),
        RubricCriterion(id="b", required=True, kind="graded"),
    ]
    assert aggregate_rubric(rubric, [_v("a", True, 1.0), _v("b", True, 0.5)]).gated == 1.0
    assert aggregate_rubric(rubric, [_v("a", True, 1.0), _v("b", False, 0.49)]).gated == 0.0


def test_graded_met_is_score_at_least_half() -> None:
    rubric = [
        RubricCriterion(id="g", kind="graded", required=True),
        RubricCriterion(id="x", kind="graded"),
    ]
    # the recorded met flag is indicative; the gate reads the score against 0.5
    assert aggregate_rubric(rubric, [_v("g", True, 0.4), _v("x", True, 1.0)]).gate_failed
    assert aggregate_rubric(rubric, [_v("g", False, 0.5), _v("x", True, 1.0)]).gate_failed is False


def test_errored_judge_is_unscored_never_zero() -> None:
    result = evaluate_judge(
        LlmJudgeConfig(rubric={"criteria": NOTES_RUBRIC}), RecordedJudge("errored", None)
    )
    assert result.score is None and result.not_measured is None


def test_no_recorded_results_is_not_measurable() -> None:
    cfg = LlmJudgeConfig(rubric={"criteria": NOTES_RUBRIC})
    for recorded in (None, RecordedJudge("unspecified", None)):
        result = evaluate_judge(cfg, recorded)
        assert result.score is None and result.not_measured == NO_RECORDED_VERDICTS


def test_a_criterion_without_a_recorded_row_is_not_measurable_naming_it() -> None:
    result = evaluate_judge(
        LlmJudgeConfig(rubric={"criteria": NOTES_RUBRIC}),
        RecordedJudge("completed", (_v("checked_duplicates_first", True, 1.0),)),
    )
    assert result.score is None and "note_saved, clarity" in result.not_measured
