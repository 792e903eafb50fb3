"""Reconciliation: one declared claim against the recorded judge verdicts of its corpus
(RUBRIC_MIGRATION.md § The bar, § Which trials contribute an observation; FORMATS.md § 8).

Pure. Per trial, in the order of FORMATS.md § 8 "Labels and exclusions", a pair of labels
(the judge's recorded ``met`` is the *reference*) or a named exclusion; then the 2×2 table,
κ, the disagreements, the refusals and the verdict (:func:`verdict_of`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from reconcile.counterfactual import Counterfactual, CounterfactualFold, Migration
from reconcile.inputs import (
    CandidateEvaluation,
    ConstraintDecl,
    CriterionShape,
    RecordedGrading,
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
    claim: Claim, observations: Iterable[TrialObservation], *, sweep: bool
) -> EntryResult:
    """Reconcile ``claim`` over the observations of its task ids; ``sweep`` (the whole corpus
    the entry names, no ``--source``) turns the declared-observations bound into an equality."""
    fold = EntryFold(claim)
    for obs in observations:
        fold.add(obs)
    return fold.result(sweep=sweep)


class EntryFold:
    """:func:`reconcile_entry` a trial at a time (add them in trial order): each observation
    is labelled and counted as it comes and let go, so a caller need not hold them all; what
    is kept is what the report lists (its rows, disagreements, exclusions, trial names)."""

    def __init__(self, claim: Claim) -> None:
        self.claim = claim
        self._pairs: Counter[tuple[bool, bool]] = Counter()
        self._disagreements: tuple[list[Disagreement], list[Disagreement]] = ([], [])
        self._exclusions: list[Exclusion] = []
        self._contributing: list[str] = []
        self._answered: set[int] = set()  # the waivers a disagreement answers to, by index
        self._counterfactual = CounterfactualFold(_migration(claim))
        self._rubric = _RubricFold(claim)
        # by the grading's identity (held, so no id is reused): its recorded criterion
        self._recorded: dict[int, tuple[RecordedGrading, CriterionShape | None]] = {}

    def add(self, obs: TrialObservation) -> None:
        """One observation (another task's trial is not this claim's, nor an exclusion)."""
        if obs.task_id not in self.claim.task_ids:
            return
        grading = obs.grading  # gradings are shared: each one's rubric looked up once
        hit = self._recorded.get(id(grading))
        if hit is None:
            hit = self._recorded[id(grading)] = (grading, _recorded(self.claim, grading))
        item = _label(self.claim, obs, hit[1])
        if isinstance(item, Exclusion):
            self._exclusions.append(item)
            return
        self._pairs[(item.judge_met, item.constraint_passed)] += 1
        self._contributing.append(obs.trial)
        self._counterfactual.add(obs, item.candidate)
        self._rubric.add(item)
        if item.judge_met != item.constraint_passed:
            entry = self.claim.entry
            strict, permissive = self._disagreements
            (strict if item.judge_met else permissive).append(_disagreement(entry, item))
            self._answered.update(
                i for i, ack in enumerate(entry.acknowledged) if obs.answers_to(ack.trial)
            )

    def result(self, *, sweep: bool) -> EntryResult:
        claim, entry = self.claim, self.claim.entry
        table = Table.of(self._pairs.elements())
        kappa = cohen_kappa(table)
        # strict ones first, then permissive, each in trial order (the report's two lists)
        disagreements = (*self._disagreements[0], *self._disagreements[1])
        stale = [
            Refusal(
                "stale_acknowledgement",
                f"acknowledged trial {ack.trial!r} contributed no disagreement in this run "
                "(it agrees now, or is not under the source), so the waiver would wave "
                "through the next disagreement on it unread — remove the waiver",
            )
            for i, ack in enumerate(entry.acknowledged)
            if i not in self._answered
        ]
        refusals = (
            self._rubric.refusals()
            + _disagreement_refusals(entry, disagreements)
            + stale
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
            exclusions=tuple(self._exclusions),
            refusals=tuple(refusals),
            verdict=verdict_of(refusals, kappa),
            tolerated_directions=tuple(sorted(TOLERATED[entry.mode])),
            counterfactual=self._counterfactual.result(),
            declared_evidence=(
                (entry.evidence.observations, entry.evidence.kappa) if entry.evidence else None
            ),
            contributing=tuple(self._contributing),
        )


def verdict_of(refusals: Sequence[Refusal], kappa: float | None) -> VerdictName:
    """The precedence: any refusal, then an undefined κ, then absence of counter-evidence."""
    if refusals:
        return "refused"
    if kappa is None:
        return "insufficient_evidence"
    return "no_counter_evidence"


def _migration(claim: Claim) -> Migration:
    entry = claim.entry
    return Migration(
        entry.criterion,
        entry.mode,
        tuple(entry.by),
        claim.constraints,
        dict(entry.combine_weights) if entry.combine_weights is not None else None,
    )


def _recorded(claim: Claim, grading: RecordedGrading) -> CriterionShape | None:
    """The claim's criterion as ``grading``'s rubric records it, if it does (the last of
    that id, as a mapping by id keeps it)."""
    found = None
    for c in grading.rubric or ():
        if c.id == claim.entry.criterion:
            found = c
    return found


def _label(
    claim: Claim, obs: TrialObservation, recorded: CriterionShape | None
) -> _Labelled | Exclusion:
    """``recorded``: :func:`_recorded` of the observation's grading."""
    entry = claim.entry
    if entry.evidence is not None and recorded is None:
        rubric = dict.fromkeys(c.id for c in obs.grading.rubric or ())
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


def _disagreement(entry: MigrationEntry, item: _Labelled) -> Disagreement:
    direction: Direction = "strict" if item.judge_met else "permissive"
    return Disagreement(
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


class _RubricFold:
    """What the recorded rubrics say against the claim, a labelled trial at a time: each
    shape that contradicts ``was`` (named with its trial) and the distinct shapes seen."""

    def __init__(self, claim: Claim) -> None:
        self.claim = claim
        entry = claim.entry
        w = entry.was
        self._was = (
            None if entry.evidence is None
            else CriterionShape(entry.criterion, w.kind, w.required, w.weight, w.description)
        )  # fmt: skip
        self._contradicted: list[str] = []
        self._post_migration = False
        self._shapes: dict[tuple, str] = {}  # each distinct shape, with the first trial

    def add(self, item: _Labelled) -> None:
        recorded = item.recorded
        if self._was is None or recorded is None:
            return
        diffs = _shape_diffs(self._was, recorded)
        if diffs:
            self._contradicted.append(f"{item.obs.trial}: {'; '.join(diffs)}")
            current = self.claim.current_criterion
            # the bundle records what the pack holds *now*: regenerated after the migration
            if current is not None and not _shape_diffs(current, recorded):
                self._post_migration = True
        r = recorded
        self._shapes.setdefault((r.kind, r.required, r.weight, words(r.description)),
                                item.obs.trial)  # fmt: skip

    def refusals(self) -> list[Refusal]:
        out: list[Refusal] = []
        criterion = self.claim.entry.criterion
        if self._contradicted:
            detail = "the recorded rubric contradicts was — " + " | ".join(self._contradicted)
            if self._post_migration:
                detail += f". {POST_MIGRATION}"
            out.append(Refusal("recorded_rubric_contradicts_was", detail))
        if len(self._shapes) > 1:
            first, second = list(self._shapes.values())[:2]
            out.append(
                Refusal(
                    "corpus_straddles_a_pack_revision",
                    f"{first} and {second} record different shapes for {criterion!r} "
                    f"({len(self._shapes)} shapes in all) — curate the corpus from one pack "
                    "revision",
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
