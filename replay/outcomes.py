"""Which trials count, and pass@k over the ones that measured the agent
(GRADING.md § Infrastructure aborts produce no grade, § pass@k Metrics).

Exclusion is earned by typed evidence: only rate_limit, api_timeout and provision_error
leave the denominator. Everything else counts — an unrecognised reason included — and a
trial whose grading refused (grading_error set) is ungradeable whatever its reason: that
is read before the reason, so a refusal is never traded for an exclusion.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from math import comb


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


def pass_at_k(n: int, c: int, k: int) -> float | None:
    """1 − C(n−c, k) / C(n, k) over n measured trials with c passes; None where n < k."""
    if k < 1:
        raise ValueError(f"pass@k needs k ≥ 1, got k={k}")
    if not 0 <= c <= n:
        raise ValueError(f"pass@k needs 0 ≤ c ≤ n, got n={n}, c={c}")
    if n < k:
        return None
    return 1.0 - comb(n - c, k) / comb(n, k)


@dataclass(frozen=True, slots=True)
class TrialVerdict:
    """One trial as pass@k reads it: how it ended and whether it passed."""

    task_id: str
    termination_reason: str | None
    grading_error: str | None
    binary_pass: bool | None  # None: no grade (ungradeable, harness error, abort)


@dataclass(frozen=True, slots=True)
class PassAtK:
    k: int
    per_task: Mapping[str, float | None]
    macro: float | None  # mean over the tasks where pass@k is defined
    micro: float | None  # pass@k over all measured trials pooled


def tally(trials: Iterable[TrialVerdict]) -> dict[str, tuple[int, int]]:
    """task → (n measured, c passed); aborts leave n, every other non-pass counts as a fail."""
    out: dict[str, list[int]] = {}
    for t in trials:
        cell = out.setdefault(t.task_id, [0, 0])
        if not is_counted(classify_trial_outcome(t.termination_reason, t.grading_error)):
            continue
        cell[0] += 1
        cell[1] += bool(t.binary_pass) and not t.grading_error
    return {task: (n, c) for task, (n, c) in out.items()}


def pass_at_k_report(trials: Sequence[TrialVerdict], k: int) -> PassAtK:
    counts = tally(trials)
    per_task = {task: pass_at_k(n, c, k) for task, (n, c) in sorted(counts.items())}
    defined = [v for v in per_task.values() if v is not None]
    macro = sum(defined) / len(defined) if defined else None
    n_all = sum(n for n, _ in counts.values())
    c_all = sum(c for _, c in counts.values())
    return PassAtK(k=k, per_task=per_task, macro=macro, micro=pass_at_k(n_all, c_all, k))
