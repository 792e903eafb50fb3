"""Which trials count towards pass@k: the ones that measured the agent (GRADING.md §
Infrastructure aborts produce no grade). pass@k itself is one SQL macro,
``pass_at_k_value`` (ledger/analytics/views_metrics.py); its Python oracle is a test's.

Exclusion is earned by typed evidence: only rate_limit, api_timeout and provision_error
leave the denominator. Everything else counts — an unrecognised reason included — and a
trial whose grading refused (grading_error set) is ungradeable whatever its reason: that
is read before the reason, so a refusal is never traded for an exclusion.
"""

from __future__ import annotations

from enum import StrEnum


class TrialOutcomeClass(StrEnum):
    MEASURED = "measured"
    HARNESS_ERROR = "harness_error"
    UNGRADEABLE = "ungradeable"
    INFRASTRUCTURE_ABORT = "infrastructure_abort"


INFRASTRUCTURE_ABORTS = frozenset({"rate_limit", "api_timeout", "provision_error"})
HARNESS_ERRORS = frozenset({"error", "trial_lost"})


def classify_trial_outcome(
    termination_reason: str | None, grading_error: str | None
) -> TrialOutcomeClass:
    if grading_error:
        return TrialOutcomeClass.UNGRADEABLE
    if termination_reason in INFRASTRUCTURE_ABORTS:
        return TrialOutcomeClass.INFRASTRUCTURE_ABORT
    if termination_reason in HARNESS_ERRORS:
        return TrialOutcomeClass.HARNESS_ERROR
    return TrialOutcomeClass.MEASURED


def is_counted(outcome: TrialOutcomeClass) -> bool:
    """In the measured denominator: everything but an infrastructure abort."""
    return outcome is not TrialOutcomeClass.INFRASTRUCTURE_ABORT


def outcome_key(termination_reason: str | None, grading_error: str | None) -> str:
    """The outcomes_by_reason key: ungradeable_<reason> keeps one key per class."""
    reason = termination_reason or "none"
    return f"ungradeable_{reason}" if grading_error else reason
