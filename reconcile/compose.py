"""The runner-side trial verdict, recomposed offline (GRADING.md § Score Combination,
§ Required-gate semantics; FORMATS.md § 4 Fold rules).

Two steps, as ``compose_runner_trial_verdict`` takes them:

1. the judge component from the rubric and the recorded criterion verdicts — the weighted
   mean of the non-required criteria, zeroed when a required criterion is not met (and
   1.0 / 0.0 on the gate alone when every criterion is required);
2. the fold of the components under ``combine.weights`` (weighted / all / any), after which
   a failed judge or trace gate forces ``binary_pass`` false whatever the threshold.

A component the fold cannot weight, a criterion with no recorded verdict, or a weighted
mean over zero weight is not guessed: :class:`NotRecomposable` names the gap.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from reconcile.inputs import CriterionResult, CriterionShape


class NotRecomposable(ValueError):
    """The recorded evidence cannot be routed through the fold; ``gap`` names which way."""

    def __init__(self, gap: str, reason: str) -> None:
        self.gap = gap
        self.reason = reason
        super().__init__(f"{gap}: {reason}")


@dataclass(frozen=True, slots=True)
class JudgeComponent:
    value: float | None  # None: the rubric holds no criterion, so the judge scores nothing
    gate_failed: bool


def judge_component(
    rubric: Sequence[CriterionShape], results: Sequence[CriterionResult]
) -> JudgeComponent:
    """The gated judge component of ``rubric`` over the recorded ``results``."""
    if not rubric:
        return JudgeComponent(None, False)
    by_id = {r.id: r for r in results}
    gate_failed = False
    numerator = 0.0
    denominator = 0.0
    scored = 0
    for criterion in rubric:
        result = by_id.get(criterion.id)
        if result is None:
            raise NotRecomposable(
                "criterion_has_no_recorded_verdict",
                f"the rubric holds {criterion.id!r} and criterion_results has no row for it",
            )
        if criterion.required:
            gate_failed = gate_failed or not result.met
            continue
        numerator += criterion.weight * _criterion_score(criterion, result)
        denominator += criterion.weight
        scored += 1
    if gate_failed:
        return JudgeComponent(0.0, True)
    if scored == 0:
        return JudgeComponent(1.0, False)
    if denominator == 0:
        raise NotRecomposable(
            "judge_weights_sum_to_zero", "the non-required criteria's weights sum to 0"
        )
    return JudgeComponent(numerator / denominator, False)


def _criterion_score(criterion: CriterionShape, result: CriterionResult) -> float:
    """binary: 1.0 when met else 0.0; graded: the recorded score."""
    if criterion.kind == "binary":
        return 1.0 if result.met else 0.0
    if result.score is None:
        raise NotRecomposable(
            "criterion_has_no_recorded_score",
            f"criterion {criterion.id!r} is graded but its recorded score is null",
        )
    return result.score


@dataclass(frozen=True, slots=True)
class Verdict:
    score: float
    binary_pass: bool


def fold(
    components: Mapping[str, float | None],
    weights: Mapping[str, float],
    *,
    method: str,
    pass_threshold: float,
    gate_failed: bool,
) -> Verdict:
    """Combine the evaluated components, then let a failed gate force the trial to fail."""
    scored = {k: v for k, v in components.items() if v is not None}
    unweighted = sorted(k for k in scored if k not in weights)
    if unweighted:
        raise NotRecomposable(
            "folded_component_has_no_declared_weight",
            f"{', '.join(unweighted)} scored but the map {dict(sorted(weights.items()))} "
            "declares no weight for it — declare combine_weights with a share for it",
        )
    if not scored:
        verdict = Verdict(1.0, True) if not weights else Verdict(0.0, False)
    elif method == "weighted":
        total = sum(weights[k] for k in scored)
        if total == 0:
            verdict = Verdict(0.0, False)
        else:
            score = sum(weights[k] * v for k, v in scored.items()) / total
            verdict = Verdict(score, score >= pass_threshold)
    elif method == "all":
        verdict = Verdict(min(scored.values()), all(v >= pass_threshold for v in scored.values()))
    elif method == "any":
        verdict = Verdict(max(scored.values()), any(v >= pass_threshold for v in scored.values()))
    else:
        raise NotRecomposable(
            "unknown_combine_method", f"combine.method {method!r}; want weighted, all or any"
        )
    if gate_failed:
        return Verdict(verdict.score, False)
    return verdict
