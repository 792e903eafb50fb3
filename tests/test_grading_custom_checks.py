"""custom_checks from recorded per-check results (GRADING.md § Custom Checks)."""

from __future__ import annotations

import re

import pytest
import yaml

from replay.grading.components.custom_checks import (
    NOT_EXECUTED,
    CheckVerdict,
    RecordedSuite,
    evaluate_custom_checks,
)
from replay.grading.rules import load_grading_config
from schemas.grading import CustomChecksConfig
from tests.data_paths import GRADING_PARITY

PACK = GRADING_PARITY / "custom_checks"
ON = CustomChecksConfig(enabled=True)
FAIL = re.compile("fail", re.IGNORECASE)


def test_score_averages_checks_that_reached_a_verdict() -> None:
    suite = RecordedSuite(
        (
            CheckVerdict("a", "passed"),
            CheckVerdict("b", "failed", "off by 3"),
            CheckVerdict("c", "skipped"),
        )
    )
    result = evaluate_custom_checks(ON, suite)
    assert result.score == 0.5
    (sentence,) = result.reasons
    assert sentence.startswith("Custom checks: score=0.50, 1 of 2 checks failed")
    # the losing check is named with its message; the skipped one is counted, not named
    assert sentence.split("failed (1 skipped): ", 1)[1] == "b: off by 3"


def test_all_skipped_is_unscored_and_carries_no_fail() -> None:
    result = evaluate_custom_checks(ON, RecordedSuite((CheckVerdict("a", "skipped"),)))
    assert result.score is None and result.not_measured is None
    assert not FAIL.search(result.reasons[0])
    assert evaluate_custom_checks(ON, RecordedSuite(())).score is None  # no check declared


def test_a_passing_suite_names_no_check() -> None:
    """A check called no_failures_logged cannot manufacture FAIL evidence."""
    result = evaluate_custom_checks(
        ON, RecordedSuite((CheckVerdict("no_failures_logged", "passed"),))
    )
    assert result.score == 1.0 and not FAIL.search(result.reasons[0])


@pytest.mark.parametrize(
    "error", ["checks file not found: checks.py", "Failed to load/run checks: boom"]
)
def test_could_not_run_under_fail_on_error_scores_zero_with_its_own_fail(error: str) -> None:
    result = evaluate_custom_checks(ON, RecordedSuite(error=error))
    assert result.score == 0.0
    assert result.reasons[0].startswith("Custom checks: the suite failed to run: ")
    assert error in result.reasons[0]


def test_could_not_run_without_fail_on_error_is_unscored() -> None:
    cfg = CustomChecksConfig(enabled=True, fail_on_error=False)
    result = evaluate_custom_checks(cfg, RecordedSuite(error="checks file not found: checks.py"))
    assert result.score is None and not FAIL.search(result.reasons[0])


def test_without_recorded_results_it_is_not_measured() -> None:
    result = evaluate_custom_checks(ON, None)
    assert result.score is None and result.not_measured == NOT_EXECUTED


def test_parity_pack_custom_checks() -> None:
    """The pack's checks.py is not shipped and is never executed here: its trials carry no
    recorded results, so the replay reports the component not measured on both; given the
    per-check results a run would record, satisfying scores above violating."""
    cfg = load_grading_config(yaml.safe_load(PACK.joinpath("grading.yaml").read_text()))
    block = CustomChecksConfig.model_validate(cfg.custom_checks)
    trials = yaml.safe_load(PACK.joinpath("trial.yaml").read_text())
    assert set(trials) == {"satisfying", "violating"}
    assert evaluate_custom_checks(block, None).not_measured == NOT_EXECUTED
    sat = evaluate_custom_checks(block, RecordedSuite((CheckVerdict("order_shipped", "passed"),)))
    vio = evaluate_custom_checks(
        block, RecordedSuite((CheckVerdict("order_shipped", "failed", "status pending"),))
    )
    assert sat.score > vio.score


def test_a_check_may_carry_a_partial_score_and_the_component_is_their_mean() -> None:
    """Tolokaforge 0.33.1 scores the component as the mean of the decided
    checks' own scores (CheckFailed may return 0.5), skips excluded; a record without a
    score reads as its status (passed 1.0, failed 0.0)."""
    from replay.grading.grade import recorded_suite
    from replay.grading.recorded_grade import read_recorded_grade as read

    suite = recorded_suite(read(
        {
            "custom_checks_details": [
                {"check_name": "a", "status": "failed", "score": 0.0, "message": "x"},
                {"check_name": "b", "status": "passed", "score": 1.0, "message": ""},
                {"check_name": "c", "status": "failed", "score": 0.5, "message": "half"},
                {"check_name": "d", "status": "skipped", "score": 0.0, "message": ""},
            ]
        }
    ))
    assert evaluate_custom_checks(ON, suite).score == pytest.approx(0.5)  # (0 + 1 + 0.5) / 3
    partial_pass = RecordedSuite((CheckVerdict("a", "passed", score=0.9),))
    assert evaluate_custom_checks(ON, partial_pass).score == pytest.approx(0.9)
    unscored = RecordedSuite((CheckVerdict("a", "passed"), CheckVerdict("b", "failed")))
    assert evaluate_custom_checks(ON, unscored).score == 0.5
    out_of_range = RecordedSuite((CheckVerdict("a", "passed", score=1.5),))
    assert "outside [0, 1]" in (evaluate_custom_checks(ON, out_of_range).not_measured or "")


def test_a_recorded_suite_that_failed_to_run_scores_0_under_fail_on_error() -> None:
    """GRADING.md § Custom Checks: "A suite that could not run ... keeps its 0.0 under
    fail_on_error: true"; the recorder names the error only in its Custom checks: segment,
    with no per-check rows. A file declaring no check "decided nothing" (unscored), though
    Tolokaforge 0.33.1 reports it as a suite that failed to run: the spec wins."""
    from replay.grading.grade import recorded_suite
    from replay.grading.recorded_grade import read_recorded_grade as read

    failed = {
        "custom_checks_details": [],
        "reasons": "Transcript: x | Custom checks: the suite failed to run — Init or "
        "execution failed: notes table grew past its 2 seeded rows",
    }
    suite = recorded_suite(read(failed))
    assert suite is not None and suite.error is not None and "notes table grew" in suite.error
    assert evaluate_custom_checks(ON, suite).score == 0.0
    lenient = CustomChecksConfig(enabled=True, fail_on_error=False)
    assert evaluate_custom_checks(lenient, suite).score is None
    no_check = {
        "custom_checks_details": [],
        "reasons": "Custom checks: the suite failed to run — No @check decorated functions "
        "found in checks.py",
    }
    assert evaluate_custom_checks(ON, recorded_suite(read(no_check))).score is None
    # an empty record with no such sentence: nothing decided, unscored
    quiet = recorded_suite(read({"custom_checks_details": [], "reasons": "Judge: ok"}))
    assert evaluate_custom_checks(ON, quiet).score is None
