"""pass@k in plain Python (GRADING.md § pass@k Metrics): the oracle the SQL macro
``pass_at_k_value`` and the ``pass_at_k`` view are tested against. The product computes
pass@k in SQL only; this closed form with exact binomials lives with the tests."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from math import comb

from replay.grading.outcomes import classify_trial_outcome, is_counted


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
