"""What the migration would have done to each contributing trial's verdict
(RUBRIC_MIGRATION.md § The counterfactual; FORMATS.md § 8 Counterfactual).

*Before* must reproduce the recorded ``llm_judge``, ``score`` and ``binary_pass`` (to 1e-9)
before any *after* column is believed. *After* drops the criterion in every mode (the bound
of a full retirement); only the veto sets are mode-aware. Nothing reads the counterfactual:
no verdict, exit code or refusal depends on it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from reconcile.compose import JudgeComponent, NotRecomposable, Verdict, fold, judge_component
from reconcile.inputs import (
    CandidateEvaluation,
    ConstraintDecl,
    CriterionShape,
    TrialObservation,
)
from schemas.views import Mapped

TOLERANCE = 1e-9


@dataclass(frozen=True, slots=True)
class CounterfactualRow:
    trial: str
    judge_component_before: float | None
    judge_component_after: float | None
    score_before: float
    score_after: float
    binary_pass_before: bool
    binary_pass_after: bool
    weights_before: Mapping[str, float]
    weights_after: Mapping[str, float]
    vetoes_before: tuple[str, ...]
    vetoes_after: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Unrecomputed:
    trial: str
    gap: str
    reason: str


@dataclass(frozen=True, slots=True)
class Counterfactual:
    weights_declared: Mapping[str, float] | None
    rows: Sequence[CounterfactualRow]  # a view: each built when read (schemas.views)
    unrecomputed: tuple[Unrecomputed, ...]
    passed: tuple[int, int] = (0, 0)  # the rows passing before, and after

    @property
    def pass_rate_before(self) -> tuple[int, int]:
        return self.passed[0], len(self.rows)

    @property
    def pass_rate_after(self) -> tuple[int, int]:
        return self.passed[1], len(self.rows)


@dataclass(frozen=True, slots=True)
class Migration:
    """What the counterfactual needs of an entry."""

    criterion: str
    mode: str
    by: tuple[str, ...]
    constraints: Mapping[str, ConstraintDecl]
    combine_weights: Mapping[str, float] | None


def counterfactual(
    migration: Migration,
    trials: Iterable[tuple[TrialObservation, CandidateEvaluation]],
) -> Counterfactual:
    """Rows for the trials that recompose, and each other trial named with its gap."""
    fold = CounterfactualFold(migration)
    for obs, candidate in trials:
        fold.add(obs, candidate)
    return fold.result()


class CounterfactualFold:
    """:func:`counterfactual` a trial at a time (in trial order)."""

    def __init__(self, migration: Migration) -> None:
        self.migration = migration
        self._rows: list[tuple[str, tuple[Any, ...]]] = []  # (trial, the values it shares)
        self._gaps: list[Unrecomputed] = []
        self._passed = [0, 0]  # rows passing before, after
        # A row is a function of the trial's grade, grading and candidate (its name aside),
        # and trials carried forward share equal parts as one object
        # (ledger.app.reconcile_extend): each such combination is recomposed once. The memo
        # holds the parts its key names by identity, so no id is reused while it lives.
        self._memo: dict[tuple[Any, ...], tuple[Any, tuple[Any, ...] | NotRecomposable]] = {}

    def add(self, obs: TrialObservation, candidate: CandidateEvaluation) -> None:
        key = _parts_key(obs, candidate)
        hit = self._memo.get(key)
        if hit is None:
            try:
                got: CounterfactualRow | NotRecomposable = _row(self.migration, obs, candidate)
            except NotRecomposable as exc:
                got = exc
            values = got if isinstance(got, NotRecomposable) else _values(got)
            hit = self._memo[key] = ((obs.grade, obs.grading, candidate), values)
        values = hit[1]
        if isinstance(values, NotRecomposable):
            self._gaps.append(Unrecomputed(obs.trial, values.gap, values.reason))
        else:
            self._rows.append((obs.trial, values))
            self._passed[0] += values[_PASS_BEFORE]
            self._passed[1] += values[_PASS_AFTER]

    def result(self) -> Counterfactual:
        m = self.migration
        weights = dict(m.combine_weights) if m.combine_weights is not None else None
        return Counterfactual(weights, Mapped(self._rows, _as_row), tuple(self._gaps),
                              (self._passed[0], self._passed[1]))  # fmt: skip


def _as_row(pair: tuple[str, tuple[Any, ...]]) -> CounterfactualRow:
    """A row from its trial's name and the values it shares with equal trials (half the
    memory of a row held as its own object, at a row per trial)."""
    return CounterfactualRow(pair[0], *pair[1])


def _values(row: CounterfactualRow) -> tuple[Any, ...]:
    """A row's fields after its trial's name (the first), in order."""
    return tuple(getattr(row, f.name) for f in _ROW_FIELDS[1:])


_ROW_FIELDS = fields(CounterfactualRow)
assert _ROW_FIELDS[0].name == "trial"
# where each pass is among a row's values (its fields after the trial's name)
_PASS_BEFORE, _PASS_AFTER = (
    [f.name for f in _ROW_FIELDS[1:]].index(name) for name in ("binary_pass_before", "binary_pass_after")
)


def _parts_key(obs: TrialObservation, candidate: CandidateEvaluation) -> tuple[int, int, int]:
    """What a row depends on, by identity: trials read back from a kept file share each
    equal grade as one object (``ledger.app.reconcile_kept.KeptReader``), as they share
    gradings and candidates."""
    return id(obs.grade), id(obs.grading), id(candidate)


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return abs(a - b) <= TOLERANCE


@dataclass(frozen=True, slots=True)
class _Side:
    judge: float | None
    components: Mapping[str, float | None]
    verdict: Verdict


def _judge(obs: TrialObservation, rubric: Sequence[CriterionShape]) -> JudgeComponent | None:
    """The judge component over ``rubric``; ``None`` for a judge that did not complete."""
    if obs.grade.judge_status != "completed":
        return None
    return judge_component(rubric, obs.grade.criterion_results or ())


def _before(obs: TrialObservation) -> _Side:
    """The recorded trial recomposed; it must reproduce the recorded verdict to be believed."""
    grade, grading = obs.grade, obs.grading
    if grade.components.get("state_checks") is not None:
        raise NotRecomposable(
            "composed_component_has_no_runner_field",
            "the recorded grade carries a state_checks component, which the runner folds from "
            "several sources and no single recorded field holds",
        )
    judge = _judge(obs, grading.rubric or ())
    components = dict(grade.components)
    if judge is not None:
        components["llm_judge"] = judge.value
    verdict = fold(
        components,
        grading.weights,
        method=grading.method,
        pass_threshold=grading.pass_threshold,
        gate_failed=(judge is not None and judge.gate_failed) or grade.trace_gate_failed,
    )
    value = judge.value if judge is not None else None
    recorded = grade.components.get("llm_judge")
    if not (
        _close(value, recorded)
        and _close(verdict.score, grade.score)
        and verdict.binary_pass == grade.binary_pass
    ):
        raise NotRecomposable(
            "recomputed_verdict_diverges",
            f"recomposed llm_judge {value}, score {verdict.score}, pass {verdict.binary_pass}; "
            f"recorded llm_judge {recorded}, score {grade.score}, pass {grade.binary_pass}",
        )
    return _Side(value, components, verdict)


def _after(
    m: Migration,
    obs: TrialObservation,
    before: _Side,
    candidate: CandidateEvaluation,
    weights: Mapping[str, float],
) -> _Side:
    """The criterion dropped (mode-blind), the recomputed trace component folded in."""
    reduced = tuple(c for c in obs.grading.rubric or () if c.id != m.criterion)
    judge = _judge(obs, reduced)
    components = dict(before.components)
    components["llm_judge"] = judge.value if judge is not None else None
    components["trace_checks"] = candidate.component
    verdict = fold(
        components,
        weights,
        method=obs.grading.method,
        pass_threshold=obs.grading.pass_threshold,
        gate_failed=(judge is not None and judge.gate_failed) or candidate.gate_failed,
    )
    return _Side(judge.value if judge is not None else None, components, verdict)


def _row(m: Migration, obs: TrialObservation, candidate: CandidateEvaluation) -> CounterfactualRow:
    before = _before(obs)
    recorded_weights = dict(obs.grading.weights)
    weights = dict(m.combine_weights) if m.combine_weights is not None else recorded_weights
    after = _after(m, obs, before, candidate, weights)
    rubric = obs.grading.rubric or ()
    return CounterfactualRow(
        trial=obs.trial,
        judge_component_before=before.judge,
        judge_component_after=after.judge,
        score_before=before.verdict.score,
        score_after=after.verdict.score,
        binary_pass_before=before.verdict.binary_pass,
        binary_pass_after=after.verdict.binary_pass,
        weights_before=recorded_weights,
        weights_after=weights,
        vetoes_before=tuple(sorted(c.id for c in rubric if c.required)),
        vetoes_after=_vetoes_after(m, rubric),
    )


def _vetoes_after(m: Migration, rubric: Sequence[CriterionShape]) -> tuple[str, ...]:
    kept = {c.id for c in rubric if c.required and (c.id != m.criterion or m.mode == "narrowed")}
    gates = {cid for cid in m.by if cid in m.constraints and m.constraints[cid].severity == "gate"}
    return tuple(sorted(kept | gates))
