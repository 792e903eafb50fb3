"""The runner-side trial verdict, recomposed offline through the project's one fold
(GRADING.md § Score Combination, § Required-gate semantics; FORMATS.md § 4 Fold rules).

No grading rule of its own: "recomposed by the same function the runner folds a live trial
through" (RUBRIC_MIGRATION.md § The counterfactual), it adapts reconciliation's values to
``aggregate_rubric`` and ``combine_components``, and names every way the recorded evidence
cannot be routed through them (:class:`NotRecomposable`) instead of guessing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from pydantic import ValidationError

from reconcile.inputs import CriterionResult, CriterionShape
from replay.grading.components.combine import MissingWeightError, combine_components
from replay.grading.components.judge import CriterionVerdict, aggregate_rubric
from schemas.errors import LedgerError
from schemas.grading import CombineConfig, RubricCriterion


class NotRecomposable(LedgerError, ValueError):
    """The recorded evidence cannot be routed through the fold; ``gap`` names which way."""

    def __init__(self, gap: str, reason: str) -> None:
        self.gap = gap
        self.reason = reason
        super().__init__(f"{gap}: {reason}")


@dataclass(frozen=True, slots=True)
class JudgeComponent:
    value: float | None  # None: the rubric holds no criterion, so the judge scores nothing
    gate_failed: bool


@dataclass(frozen=True, slots=True)
class Verdict:
    score: float
    binary_pass: bool


@lru_cache(maxsize=1024)
def _criterion(shape: CriterionShape) -> RubricCriterion:
    # Cached: a corpus records a handful of distinct rubrics over thousands of trials.
    try:
        return RubricCriterion(
            id=shape.id,
            description=shape.description,
            weight=shape.weight,
            kind=shape.kind,
            required=shape.required,
        )
    except ValidationError as exc:
        raise NotRecomposable(
            "recorded_rubric_does_not_load",
            f"criterion {shape.id!r}: {exc.errors()[0]['msg']}",
        ) from None


@lru_cache(maxsize=256)
def _combine(
    method: str, weights: tuple[tuple[str, float], ...], threshold: float
) -> CombineConfig:
    try:
        return CombineConfig(method=method, weights=dict(weights), pass_threshold=threshold)
    except ValidationError as exc:
        raise NotRecomposable(
            "recorded_combine_does_not_load",
            f"combine {{method: {method}, weights: {dict(weights)}, pass_threshold: {threshold}}}: "
            f"{exc.errors()[0]['msg']}",
        ) from None


def judge_component(
    rubric: Sequence[CriterionShape], results: Sequence[CriterionResult]
) -> JudgeComponent:
    """The gated judge component of ``rubric`` over the recorded ``results``."""
    if not rubric:
        return JudgeComponent(None, False)
    recorded = {r.id for r in results}
    missing = [c.id for c in rubric if c.id not in recorded]
    if missing:
        raise NotRecomposable(
            "criterion_has_no_recorded_verdict",
            f"the rubric holds {', '.join(missing)} and criterion_results has no row for it",
        )
    verdicts = [CriterionVerdict(r.id, r.met, r.score) for r in results]
    try:
        agg = aggregate_rubric([_criterion(c) for c in rubric], verdicts)
    except ValueError as exc:  # a graded verdict whose score is not a number in [0, 1]
        raise NotRecomposable("criterion_verdict_unreadable", str(exc)) from None
    return JudgeComponent(agg.gated, agg.gate_failed)


def fold(
    components: Mapping[str, float | None],
    weights: Mapping[str, float],
    *,
    method: str,
    pass_threshold: float,
    gate_failed: bool,
) -> Verdict:
    """Combine the evaluated components, then let a failed gate force the trial to fail."""
    combine = _combine(method, tuple(sorted(weights.items())), pass_threshold)
    try:
        result = combine_components(
            components,
            configured=tuple(weights),
            combine=combine,
            trace_gate_failed=gate_failed,
        )
    except MissingWeightError as exc:
        raise NotRecomposable(
            "folded_component_has_no_declared_weight",
            f"{', '.join(exc.components)} scored but the map {dict(sorted(weights.items()))} "
            "declares no weight for it — declare combine_weights with a share for it",
        ) from None
    return Verdict(result.score, result.binary_pass)
