"""Reconciliation: one declared claim against the recorded judge verdicts of its corpus
(RUBRIC_MIGRATION.md § The bar, § Which trials contribute an observation; FORMATS.md § 8).

Pure. Per trial, in the order of FORMATS.md § 8 "Labels and exclusions", a pair of labels
(the judge's recorded ``met`` is the *reference*) or a named exclusion; then the 2×2 table,
κ, the disagreements, the refusals and the verdict (:func:`verdict_of`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from reconcile.counterfactual import Counterfactual, Migration, counterfactual
from reconcile.inputs import (
    CandidateEvaluation,
    ConstraintDecl,
    CriterionShape,
    TrialObservation,
    Unavailable,
    words,
)
from reconcile.kappa import Table, accuracy, cohen_kappa
from schemas.migration import MigrationEntry

Direction = Literal["strict", "permissive"]
VerdictName = Literal["no_counter_evidence", "insufficient_evidence", "refused"]

# Which disagreement directions each mode tolerates (RUBRIC_MIGRATION.md § The bar).
TOLERATED: Mapping[str, frozenset[str]] = {
    "candidate": frozenset({"permissive"}),
    "narrowed": frozenset({"permissive"}),
    "retired": frozenset(),
}

POST_MIGRATION = (
    "the corpus records the post-migration rubric; evidence for a migration must come from "
    "bundles recorded before it"
)


@dataclass(frozen=True, slots=True)
class Claim:
    """One (possibly pooled) declared entry and what the pack resolves its ``by`` to."""

    entry: MigrationEntry
    task_ids: tuple[str, ...]
    constraints: Mapping[str, ConstraintDecl]
    current_criterion: CriterionShape | None = None


@dataclass(frozen=True, slots=True)
class Disagreement:
    trial: str
    direction: Direction
    judge_met: bool
    constraint_passed: bool
    justification: str
    acknowledged_reason: str | None
    tolerated: bool


@dataclass(frozen=True, slots=True)
class Exclusion:
    trial: str
    exclusion: str
    reason: str


@dataclass(frozen=True, slots=True)
class Refusal:
    kind: str
    detail: str


@dataclass(frozen=True, slots=True)
class EntryResult:
    criterion: str
    task_ids: tuple[str, ...]
    mode: str
    by: tuple[str, ...]
    residual: tuple[str, str] | None
    observations: int
    table: Table
    accuracy: float | None
    kappa: float | None
    disagreements: tuple[Disagreement, ...]
    exclusions: tuple[Exclusion, ...]
    refusals: tuple[Refusal, ...]
    verdict: VerdictName
    tolerated_directions: tuple[str, ...]
    counterfactual: Counterfactual
    declared_evidence: tuple[int, float | None] | None = None
    contributing: tuple[str, ...] = field(default=())

    @property
    def gates(self) -> bool:
        """A candidate converts nothing, so its verdict gates nothing."""
        return self.mode != "candidate"

    @property
    def blocks(self) -> bool:
        return self.gates and self.verdict != "no_counter_evidence"


@dataclass(frozen=True, slots=True)
class _Labelled:
    obs: TrialObservation
    candidate: CandidateEvaluation
    judge_met: bool
    constraint_passed: bool
    justification: str
    recorded: CriterionShape | None


def reconcile_entry(
    claim: Claim, observations: Sequence[TrialObservation], *, sweep: bool
) -> EntryResult:
    """Reconcile ``claim`` over the observations of its task ids; ``sweep`` (the whole corpus
    the entry names, no ``--source``) turns the declared-observations bound into an equality."""
    entry = claim.entry
    labelled, exclusions = _label_all(claim, observations)
    table = Table.of((item.judge_met, item.constraint_passed) for item in labelled)
    kappa = cohen_kappa(table)
    # strict ones first, then permissive, each in trial order (the report's two lists)
    disagreements = tuple(
        sorted(_disagreements(entry, labelled), key=lambda d: d.direction != "strict")
    )
    refusals = (
        _rubric_refusals(claim, labelled)
        + _disagreement_refusals(entry, disagreements)
        + _stale_acknowledgements(entry, labelled)
        + _evidence_refusals(entry, table.n, kappa, sweep=sweep)
    )
    return EntryResult(
        criterion=entry.criterion,
        task_ids=claim.task_ids,
        mode=entry.mode,
        by=tuple(entry.by),
        residual=(entry.residual.kind, entry.residual.reason) if entry.residual else None,
        observations=table.n,
        table=table,
        accuracy=accuracy(table),
        kappa=kappa,
        disagreements=disagreements,
        exclusions=tuple(exclusions),
        refusals=tuple(refusals),
        verdict=verdict_of(refusals, kappa),
        tolerated_directions=tuple(sorted(TOLERATED[entry.mode])),
        counterfactual=_counterfactual(claim, labelled),
        declared_evidence=(
            (entry.evidence.observations, entry.evidence.kappa) if entry.evidence else None
        ),
        contributing=tuple(i.obs.trial for i in labelled),
    )


def verdict_of(refusals: Sequence[Refusal], kappa: float | None) -> VerdictName:
    """The precedence: any refusal, then an undefined κ, then absence of counter-evidence."""
    if refusals:
        return "refused"
    if kappa is None:
        return "insufficient_evidence"
    return "no_counter_evidence"


def _label_all(
    claim: Claim, observations: Sequence[TrialObservation]
) -> tuple[list[_Labelled], list[Exclusion]]:
    # another task's trial is not this claim's, and not an exclusion either
    outcomes = [_label(claim, obs) for obs in observations if obs.task_id in claim.task_ids]
    labelled = [o for o in outcomes if isinstance(o, _Labelled)]
    return labelled, [o for o in outcomes if isinstance(o, Exclusion)]


def _counterfactual(claim: Claim, labelled: Sequence[_Labelled]) -> Counterfactual:
    entry = claim.entry
    migration = Migration(
        entry.criterion,
        entry.mode,
        tuple(entry.by),
        claim.constraints,
        dict(entry.combine_weights) if entry.combine_weights is not None else None,
    )
    return counterfactual(migration, [(i.obs, i.candidate) for i in labelled])


def _label(claim: Claim, obs: TrialObservation) -> _Labelled | Exclusion:
    entry = claim.entry
    rubric = {c.id: c for c in (obs.grading.rubric or ())}
    recorded = rubric.get(entry.criterion)
    if entry.evidence is not None and recorded is None:
        return Exclusion(
            obs.trial,
            "criterion_absent_from_recorded_rubric",
            f"the rubric this bundle recorded holds no {entry.criterion!r} (criteria: "
            f"{', '.join(rubric) or 'none'})",
        )
    grade = obs.grade
    if grade.judge_status != "completed":
        return Exclusion(
            obs.trial, "judge_did_not_complete", f"judge_status is {grade.judge_status!r}"
        )
    if grade.criterion_results is None:
        return Exclusion(
            obs.trial, "no_criterion_results", "the recorded grade has no criterion_results"
        )
    row = next((r for r in grade.criterion_results if r.id == entry.criterion), None)
    if row is None:
        judged = ", ".join(r.id for r in grade.criterion_results) or "none"
        return Exclusion(
            obs.trial,
            "no_verdict_for_criterion",
            f"criterion_results holds no {entry.criterion!r} (criteria judged: {judged})",
        )
    candidate = obs.evaluate()
    passed = _constraint_label(claim, obs.trial, candidate)
    if isinstance(passed, Exclusion):
        return passed
    return _Labelled(obs, candidate, row.met, passed, row.justification, recorded)


def _constraint_label(
    claim: Claim, trial: str, candidate: CandidateEvaluation | Unavailable
) -> bool | Exclusion:
    """The conjunction of ``by`` over the decision set, or why it has no value."""
    if isinstance(candidate, Unavailable):
        return Exclusion(trial, "constraint_verdict_unavailable", candidate.reason)
    passed = True
    for cid in claim.entry.by:
        if cid not in candidate.verdicts:
            route = claim.constraints[cid].route if cid in claim.constraints else "?"
            return Exclusion(
                trial,
                "constraint_verdict_unavailable",
                f"{cid!r} sits in route {route!r}, which did not win (winning path "
                f"{candidate.winning_path!r})",
            )
        verdict = candidate.verdicts[cid]
        if verdict is None:
            return Exclusion(trial, "constraint_verdict_unavailable", f"{cid!r} was undecided")
        passed = passed and verdict
    return passed


def _acknowledgement(entry: MigrationEntry, obs: TrialObservation) -> str | None:
    return next((ack.reason for ack in entry.acknowledged if obs.answers_to(ack.trial)), None)


def _disagreements(entry: MigrationEntry, labelled: Sequence[_Labelled]) -> Iterator[Disagreement]:
    for item in labelled:
        if item.judge_met == item.constraint_passed:
            continue
        direction: Direction = "strict" if item.judge_met else "permissive"
        yield Disagreement(
            trial=item.obs.trial,
            direction=direction,
            judge_met=item.judge_met,
            constraint_passed=item.constraint_passed,
            justification=item.justification,
            acknowledged_reason=_acknowledgement(entry, item.obs),
            tolerated=direction in TOLERATED[entry.mode],
        )


def _shape_diffs(was: CriterionShape, recorded: CriterionShape) -> list[str]:
    diffs = [
        f"{name} (recorded {getattr(recorded, name)!r}, was declares {getattr(was, name)!r})"
        for name in ("kind", "required", "weight")
        if getattr(was, name) != getattr(recorded, name)
    ]
    if words(was.description) != words(recorded.description):
        diffs.append("description (the recorded text differs from was.description)")
    return diffs


def _rubric_refusals(claim: Claim, labelled: Sequence[_Labelled]) -> list[Refusal]:
    entry = claim.entry
    if entry.evidence is None:
        return []
    w = entry.was
    was = CriterionShape(entry.criterion, w.kind, w.required, w.weight, w.description)
    out: list[Refusal] = []
    contradicted = []
    post_migration = False
    for item in labelled:
        recorded = item.recorded
        if recorded is None:
            continue
        diffs = _shape_diffs(was, recorded)
        if diffs:
            contradicted.append(f"{item.obs.trial}: {'; '.join(diffs)}")
            current = claim.current_criterion
            # the bundle records what the pack holds *now*: regenerated after the migration
            if current is not None and not _shape_diffs(current, recorded):
                post_migration = True
    if contradicted:
        detail = "the recorded rubric contradicts was — " + " | ".join(contradicted)
        if post_migration:
            detail += f". {POST_MIGRATION}"
        out.append(Refusal("recorded_rubric_contradicts_was", detail))

    shapes: dict[tuple, str] = {}
    for r, trial in ((i.recorded, i.obs.trial) for i in labelled if i.recorded is not None):
        shapes.setdefault((r.kind, r.required, r.weight, words(r.description)), trial)
    if len(shapes) > 1:
        first, second = list(shapes.values())[:2]
        out.append(
            Refusal(
                "corpus_straddles_a_pack_revision",
                f"{first} and {second} record different shapes for {entry.criterion!r} "
                f"({len(shapes)} shapes in all) — curate the corpus from one pack revision",
            )
        )
    return out


def _disagreement_refusals(
    entry: MigrationEntry, disagreements: Sequence[Disagreement]
) -> list[Refusal]:
    out = []
    for direction, meaning in (
        ("strict", "judge met, constraint failed"),
        ("permissive", "judge not met, constraint passed"),
    ):
        open_ = [
            d.trial
            for d in disagreements
            if d.direction == direction and not d.tolerated and d.acknowledged_reason is None
        ]
        if open_:
            out.append(
                Refusal(
                    "unacknowledged_disagreement",
                    f"{len(open_)} {direction} disagreement(s) ({meaning}), which mode "
                    f"{entry.mode} does not tolerate: {', '.join(open_)} — fix the constraint, or "
                    "waive each with acknowledged: [{trial: <bundle>, reason: <why the judge was "
                    "wrong>}]",
                )
            )
    return out


def _stale_acknowledgements(entry: MigrationEntry, labelled: Sequence[_Labelled]) -> list[Refusal]:
    disagreeing = [i.obs for i in labelled if i.judge_met != i.constraint_passed]
    return [
        Refusal(
            "stale_acknowledgement",
            f"acknowledged trial {ack.trial!r} contributed no disagreement in this run "
            "(it agrees now, or is not under the source), so the waiver would wave "
            "through the next disagreement on it unread — remove the waiver",
        )
        for ack in entry.acknowledged
        if not any(obs.answers_to(ack.trial) for obs in disagreeing)
    ]


def format_kappa(kappa: float | None) -> str:
    """κ at the three decimals the report prints — the number an author copies."""
    return "undefined" if kappa is None else f"{kappa:.3f}"


def _evidence_refusals(
    entry: MigrationEntry, n: int, kappa: float | None, *, sweep: bool
) -> list[Refusal]:
    declared = entry.evidence
    if declared is None:
        return []
    problem = None
    if n > declared.observations:
        problem = (
            f"measured {n} observations where the declaration counts {declared.observations}: "
            "it under-counts its corpus"
        )
    elif n < declared.observations and sweep:
        problem = (
            f"measured {n} observations over the corpus the entry names, where the declaration "
            f"counts {declared.observations}: bundles went missing"
        )
    elif n == declared.observations and format_kappa(kappa) != format_kappa(declared.kappa):
        problem = (
            f"measured kappa {format_kappa(kappa)} over the declared {n} observations, where the "
            f"declaration says {format_kappa(declared.kappa)}"
        )
    if problem is None:
        return []
    return [
        Refusal(
            "declared_evidence_contradicts_measurement",
            f"{problem} — write evidence: {{observations: {n}, kappa: "
            f"{'null' if kappa is None else format_kappa(kappa)}}} if this corpus is the evidence",
        )
    ]
