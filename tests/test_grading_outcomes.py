"""Outcome classes and pass@k (GRADING.md § Infrastructure aborts, § pass@k Metrics)."""

from __future__ import annotations

from fractions import Fraction
from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.grading.outcomes import (
    TrialOutcomeClass,
    classify_trial_outcome,
    is_counted,
    outcome_key,
)
from tests.pass_at_k_oracle import TrialVerdict, pass_at_k, pass_at_k_report


@pytest.mark.parametrize(
    ("reason", "error", "expected"),
    [
        ("rate_limit", None, TrialOutcomeClass.INFRASTRUCTURE_ABORT),
        ("api_timeout", None, TrialOutcomeClass.INFRASTRUCTURE_ABORT),
        ("provision_error", None, TrialOutcomeClass.INFRASTRUCTURE_ABORT),
        ("timeout", None, TrialOutcomeClass.MEASURED),
        ("api_error", None, TrialOutcomeClass.MEASURED),
        ("stuck_detected", None, TrialOutcomeClass.MEASURED),
        ("agent_done", None, TrialOutcomeClass.MEASURED),
        ("something_new", None, TrialOutcomeClass.MEASURED),
        ("error", None, TrialOutcomeClass.HARNESS_ERROR),
        ("trial_lost", None, TrialOutcomeClass.HARNESS_ERROR),
        # grading_error is read before the reason: a refusal never buys an exclusion
        ("rate_limit", "Trial 't' cannot be graded as authored: …", TrialOutcomeClass.UNGRADEABLE),
        ("agent_done", "boom", TrialOutcomeClass.UNGRADEABLE),
    ],
)
def test_outcome_classes(reason: str, error: str | None, expected: TrialOutcomeClass) -> None:
    assert classify_trial_outcome(reason, error) is expected
    assert is_counted(expected) is (expected is not TrialOutcomeClass.INFRASTRUCTURE_ABORT)


def test_ungradeable_rows_keep_their_reason_legible() -> None:
    assert outcome_key("agent_done", "x") == "ungradeable_agent_done"
    assert outcome_key("agent_done", None) == "agent_done"


def test_the_eight_trial_example() -> None:
    assert pass_at_k(8, 5, 1) == pytest.approx(0.625)
    assert pass_at_k(8, 5, 4) == 1.0
    assert pass_at_k(8, 5, 8) == 1.0


def test_null_where_n_below_k() -> None:
    assert pass_at_k(4, 4, 5) is None


def _brute(n: int, c: int, k: int) -> Fraction:
    """Probability that a uniformly drawn k-subset holds at least one pass."""
    outcomes = [True] * c + [False] * (n - c)
    subsets = list(combinations(range(n), k))
    hits = sum(any(outcomes[i] for i in s) for s in subsets)
    return Fraction(hits, len(subsets))


@settings(max_examples=120)
@given(
    st.integers(1, 9).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n)))
)
def test_closed_form_matches_the_subset_definition(nck: tuple[int, int, int]) -> None:
    n, c, k = nck
    assert pass_at_k(n, c, k) == pytest.approx(float(_brute(n, c, k)))


@settings(max_examples=120)
@given(st.integers(1, 30).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_monotone_in_k(nc: tuple[int, int]) -> None:
    n, c = nc
    values = [pass_at_k(n, c, k) for k in range(1, n + 1)]
    assert all(a <= b + 1e-12 for a, b in zip(values, values[1:], strict=False))


def test_aborts_leave_the_denominator_and_ungradeable_counts_as_a_fail() -> None:
    trials = [TrialVerdict("t1", "agent_done", None, True)] * 5 + [
        TrialVerdict("t1", "agent_done", None, False),
        TrialVerdict("t1", "trial_lost", None, None),  # counted, not graded: a non-pass
        TrialVerdict("t1", "agent_done", "refused", None),  # ungradeable: a non-pass
        TrialVerdict("t1", "rate_limit", None, None),  # excluded
        TrialVerdict("t2", "agent_done", None, True),
        TrialVerdict("t2", "rate_limit", None, None),
    ]
    report = pass_at_k_report(trials, 1)
    assert report.per_task == {"t1": pytest.approx(5 / 8), "t2": 1.0}
    assert report.macro == pytest.approx((5 / 8 + 1.0) / 2)
    assert report.micro == pytest.approx(6 / 9)
    # one lost sample turns pass@2 of t2 into null; macro averages the defined tasks
    report2 = pass_at_k_report(trials, 2)
    assert report2.per_task["t2"] is None
    assert report2.macro == pytest.approx(report2.per_task["t1"])
