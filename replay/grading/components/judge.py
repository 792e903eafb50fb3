"""The llm_judge component re-aggregated from recorded criterion verdicts, no judge called
(GRADING.md § LLM Judge: Required-gate semantics, The two weighting layers, Pass
semantics, Fail-loud: the ERRORED status; § Score Combination, compose_runner_trial_verdict;
when it is not measurable or unscored: docs/readme/grading.md § What is measurable offline).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from replay.grading.accounting import evaluated, judge_populated, skipped
from replay.grading.components.result import ComponentResult
from schemas.grading import LlmJudgeConfig, RubricCriterion

GRADED_MET_THRESHOLD = 0.5
NO_RECORDED_VERDICTS = (
    "llm_judge needs a live judge call; the bundle recorded no criterion results to re-aggregate"
)


@dataclass(frozen=True, slots=True)
class CriterionVerdict:
    """One recorded ``criterion_results`` row."""

    id: str
    met: bool | None
    score: float | None


@dataclass(frozen=True, slots=True)
class RecordedJudge:
    """What grade.yaml recorded about the judge run."""

    status: str  # unspecified | completed | errored
    criterion_results: tuple[CriterionVerdict, ...] | None


@dataclass(frozen=True, slots=True)
class RubricAggregate:
    """``score`` is the weighted mean (or the collapsed gate verdict); ``gated`` is what
    the grade carries — 0.0 wherever a required criterion failed."""

    score: float
    gate_failed: bool
    failed_required: tuple[str, ...]

    @property
    def gated(self) -> float:
        return 0.0 if self.gate_failed else self.score


def criterion_score(criterion: RubricCriterion, verdict: CriterionVerdict) -> float:
    """binary: 1.0 when met else 0.0; graded: the recorded score in [0, 1]."""
    if criterion.kind == "binary":
        if verdict.met is None:
            raise ValueError(f"criterion {criterion.id!r} is binary but its result records no met")
        return 1.0 if verdict.met else 0.0
    if verdict.score is None or not 0.0 <= verdict.score <= 1.0:
        raise ValueError(
            f"criterion {criterion.id!r} is graded but its recorded score {verdict.score!r} "
            "is not a number in [0, 1]"
        )
    return float(verdict.score)


def criterion_met(criterion: RubricCriterion, verdict: CriterionVerdict) -> bool:
    """A graded criterion is met iff its score clears 0.5; a binary one as recorded."""
    if criterion.kind == "graded":
        return criterion_score(criterion, verdict) >= GRADED_MET_THRESHOLD
    return criterion_score(criterion, verdict) == 1.0


def aggregate_rubric(
    criteria: Sequence[RubricCriterion], verdicts: Sequence[CriterionVerdict]
) -> RubricAggregate:
    """Required criteria are pure gates; the rest fold as Σ(w·s)/Σ(w). All-required (or
    zero non-required weight) collapses to the gate verdict."""
    by_id = {v.id: v for v in verdicts}
    failed = tuple(c.id for c in criteria if c.required and not criterion_met(c, by_id[c.id]))
    scored = [c for c in criteria if not c.required]
    total = sum(c.weight for c in scored)
    if not scored or total == 0:
        score = 0.0 if failed else 1.0
    else:
        score = sum(c.weight * criterion_score(c, by_id[c.id]) for c in scored) / total
    return RubricAggregate(score=score, gate_failed=bool(failed), failed_required=failed)


def evaluate_judge(config: LlmJudgeConfig, recorded: RecordedJudge | None) -> ComponentResult:
    """The gated judge component, as compose-trial-verdict hands it to the fold."""
    if recorded is not None and recorded.status == "errored":
        return ComponentResult(
            score=None,
            reasons=("Judge: errored; the llm_judge component is unscored",),
            accounted=skipped("the recorded judge run errored", judge_populated(config)),
        )
    if recorded is None or recorded.criterion_results is None:
        return ComponentResult.unmeasurable(NO_RECORDED_VERDICTS)
    criteria = config.rubric.criteria if config.rubric else []
    if not criteria:
        return ComponentResult(score=None, reasons=("Judge: the rubric declares no criterion",))
    recorded_ids = {v.id for v in recorded.criterion_results}
    missing = [c.id for c in criteria if c.id not in recorded_ids]
    if missing:
        return ComponentResult.unmeasurable(
            f"llm_judge: no recorded verdict for criteria {', '.join(missing)}; re-judging "
            "needs a live judge call"
        )
    agg = aggregate_rubric(criteria, recorded.criterion_results)
    reasons = [f"Judge: score={agg.gated:.2f}"]
    if agg.gate_failed:
        reasons.append(f"FAILED required criteria: {', '.join(agg.failed_required)}")
    return ComponentResult(
        score=agg.gated,
        reasons=tuple(reasons),
        gate_failed=agg.gate_failed,
        accounted=evaluated(judge_populated(config)),
    )
