"""The GVC derivation: a unit's effective grade from its declared and observed oracles.

Graded Verdict Custody spec § 5–8 as a pure function (``derive``, steps in spec order).
Grades state evidence strength, never correctness; a rank operation is recorded only when
it lowers the grade. The pieces are small module-level functions (and the ``STEP3_OPS`` /
``COUNTER_RULES`` tables) so the mutation tests can remove or reorder each one. Where the
spec leaves room, the choices are docs/readme/verdict.md's, each pinned by a test in
tests/test_gvc_properties.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from schemas.gvc import (
    CONFLICT_DEMOTION,
    COUNTER_NAMES,
    PROVENANCE_DERIVED,
    PROVENANCE_MISSING_ADMISSION,
    SAME_CHAIN_CAP,
    STALENESS_REVERSION,
    UNRUN_DECLARED_CAP,
    Ladder,
    Party,
)

CONSTRUCTED_CHECK = "constructed_check"
PROOF = "proof"

# Step-3 operations whose predicate depends on which tied oracle is the base (§ 5.1).
MEMBER_OPS = frozenset({SAME_CHAIN_CAP, STALENESS_REVERSION})

# Observability flags a member's pipeline can raise (each a counted population).
OBS_INDETERMINATE = "same_chain_indeterminate"
OBS_UNBOUND = "author_chain_unbound"
OBS_KERNEL_EXEMPT = "proof_kernel_exempt"
OBS_UNBINDABLE = "unbindable_content_identity"


@dataclass(frozen=True, slots=True)
class Oracle:
    """A declared oracle with its observed run/pass state."""

    oracle_id: str
    tier: str
    ran: bool
    passed: bool
    author: Party
    runner: Party | None = None
    content_identity: str = ""
    command: str | None = None


@dataclass(frozen=True, slots=True)
class UnitEvidence:
    """Everything the derivation reads about one unit."""

    declared: tuple[Oracle, ...]
    work_producer: Party | None
    current_content_identity: str = ""
    producer_supplied_grade: str | None = None
    admission_evidence: bool = True


@dataclass(frozen=True, slots=True)
class Admission:
    """The verdict custody record (spec § 1, § 3, § 5) plus its counted populations."""

    effective_grade: str
    evidence_kind: str
    applied_rank_ops: tuple[str, ...]
    conflicting_evidence: bool
    failed_declared_evidence: bool
    provenance: str
    oracle_author: Party | None
    oracle_runner: Party | None
    work_producer: Party | None
    content_identity: str | None
    current_content_identity: str
    declared_count: int
    unrun_count: int
    counters: Mapping[str, int]

    def record(self) -> dict[str, Any]:
        """The record as plain JSON values (the ``verdict.admitted`` payload body)."""

        out = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in ("oracle_author", "oracle_runner", "work_producer"):
            out[name] = None if out[name] is None else out[name].model_dump()
        out["applied_rank_ops"] = list(self.applied_rank_ops)
        out["counters"] = {name: self.counters[name] for name in COUNTER_NAMES}
        return out


@dataclass(frozen=True, slots=True)
class Step:
    """The running state of one tied oracle's step-3 pipeline."""

    grade: str
    ops: tuple[str, ...] = ()
    observed: frozenset[str] = frozenset()

    def observe(self, flag: str) -> Step:
        return replace(self, observed=self.observed | {flag})


@dataclass(frozen=True, slots=True)
class Context:
    """What the step-3 predicates read besides the tied oracle itself."""

    producer: Party | None
    current_content_identity: str
    conflict: bool
    declared: tuple[Oracle, ...] = ()


@dataclass(frozen=True, slots=True)
class Outcome:
    """One tied oracle's surviving outcome (``member`` is None when nothing passed)."""

    member: Oracle | None
    step: Step

    def member_ops(self) -> frozenset[str]:
        return frozenset(self.step.ops) & MEMBER_OPS


@dataclass(frozen=True, slots=True)
class Trace:
    """Everything the counters are computed from."""

    unrun_capped: bool
    chosen: Outcome
    outcomes: tuple[Outcome, ...]
    failed_declared: int
    mint_rejected: bool


def apply_op(step: Step, to: str, op: str, ladder: Ladder) -> Step:
    """Move to ``to`` and record ``op`` — only when that lowers the grade (§ 5)."""
    if ladder.rank(to) < ladder.rank(step.grade):
        return replace(step, grade=to, ops=(*step.ops, op))
    return step


def base_grade(passing: Sequence[Oracle], ladder: Ladder) -> str:
    """§ 5.1: rank-max over ``{floor}`` and the passing tiers. Out-of-vocabulary tiers
    rank below the floor, so they never win and the base is always a member."""
    return max([ladder.floor, *(o.tier for o in passing)], key=ladder.rank)


def same_tier_conflict(declared: Sequence[Oracle], base: str) -> bool:
    """§ 5.3.2: among declared oracles at the base tier, ≥2 ran, ≥1 passed, ≥1 failed.
    Computed here from the declared set; no caller can supply it."""
    at_tier = [o for o in declared if o.tier == base and o.ran]
    return (
        len(at_tier) >= 2 and any(o.passed for o in at_tier) and any(not o.passed for o in at_tier)
    )


def count_failed_declared(declared: Sequence[Oracle]) -> int:
    """§ 5.1: one per declared oracle that ran and did not pass."""
    return sum(1 for o in declared if o.ran and not o.passed)


def count_unrun(declared: Sequence[Oracle]) -> int:
    """§ 5.2: one per declared oracle that never ran (the record's ``unrun_count``)."""
    return sum(1 for o in declared if not o.ran)


def unrun_declared_cap(step: Step, declared: Sequence[Oracle], ladder: Ladder) -> Step:
    """§ 5.2: any declared oracle that never ran caps the grade at the floor."""
    if any(not o.ran for o in declared):
        return apply_op(step, ladder.floor, UNRUN_DECLARED_CAP, ladder)
    return step


def kernel_exempt(step: Step, member: Oracle) -> bool:
    """§ 5.3.1: only a ``proof`` grade whose base author is kernel-kind escapes the cap."""
    return step.grade == PROOF and member.author.kind == "kernel"


def same_chain_cap(step: Step, member: Oracle, ctx: Context, ladder: Ladder) -> Step:
    """§ 5.3.1: a judge authored in the producer's own chain caps at constructed_check,
    whatever the author's kind; empty chains are counted, never guessed."""
    producer_chain = ctx.producer.chain_id if ctx.producer is not None else ""
    author_chain = member.author.chain_id
    same_chain = bool(producer_chain) and producer_chain == author_chain
    if kernel_exempt(step, member):
        return step.observe(OBS_KERNEL_EXEMPT) if same_chain else step
    if ladder.rank(step.grade) <= ladder.rank(CONSTRUCTED_CHECK):
        return step  # the cap could not lower it: nothing to decide, nothing counted
    if not producer_chain:
        step = step.observe(OBS_INDETERMINATE)
    if not author_chain:
        step = step.observe(OBS_UNBOUND)
    if same_chain:
        return apply_op(step, ladder.cap(step.grade, CONSTRUCTED_CHECK), SAME_CHAIN_CAP, ladder)
    return step


def conflict_demotion(step: Step, member: Oracle, ctx: Context, ladder: Ladder) -> Step:
    """§ 5.3.2: a same-tier disagreement demotes one ordinal tier (the floor to itself)."""
    if ctx.conflict:
        return apply_op(step, ladder.demote(step.grade), CONFLICT_DEMOTION, ladder)
    return step


def staleness_reversion(step: Step, member: Oracle, ctx: Context, ladder: Ladder) -> Step:
    """§ 5.3.3: content changed since it was judged → revert to the floor. An absent side
    of the binding is counted (only while there is still a grade to protect)."""
    if ladder.rank(step.grade) <= ladder.rank(ladder.floor):
        return step
    judged, current = member.content_identity, ctx.current_content_identity
    if not judged or not current:
        return step.observe(OBS_UNBINDABLE)
    if judged != current:
        return apply_op(step, ladder.floor, STALENESS_REVERSION, ladder)
    return step


StepOp = Callable[[Step, Oracle, Context, Ladder], Step]

# Application order of § 5 step 3; ``derive`` reads this table at call time.
STEP3_OPS: tuple[StepOp, ...] = (same_chain_cap, conflict_demotion, staleness_reversion)


def run_step3(start: Step, member: Oracle, ctx: Context, ladder: Ladder) -> Outcome:
    step = start
    for op in STEP3_OPS:
        step = op(step, member, ctx, ladder)
    return Outcome(member, step)


def tie_key(outcome: Outcome, ladder: Ladder) -> tuple[Any, ...]:
    """§ 5.1 tie selection: best surviving grade, uncapped first, then the least
    ``(author.identity, content_identity)``; the rest makes the order total."""
    m = outcome.member
    assert m is not None
    runner = m.runner.model_dump() if m.runner is not None else {}
    return (
        -ladder.rank(outcome.step.grade),
        bool(outcome.member_ops()),
        m.author.identity,
        m.content_identity,
        m.author.kind,
        m.author.chain_id,
        sorted(runner.items()),
        m.oracle_id,
    )


def fold_tied(outcomes: Sequence[Outcome], ladder: Ladder) -> Outcome:
    """MAX over the tied set: the most favourable surviving outcome wins."""
    return min(outcomes, key=lambda o: tie_key(o, ladder))


def is_tied_uncap(chosen: Outcome, outcomes: Sequence[Outcome]) -> bool:
    """§ 5.1: the fold left the grade uncapped while some tied oracle would be capped."""
    return not chosen.member_ops() and any(o.member_ops() for o in outcomes if o is not chosen)


def _observed(flag: str) -> Callable[[Trace], int]:
    return lambda t: int(flag in t.chosen.step.observed)


COUNTER_RULES: dict[str, Callable[[Trace], int]] = {
    "unverified_from_unrun_declared": lambda t: int(t.unrun_capped),
    "degraded": lambda t: sum(1 for op in t.chosen.step.ops if op != UNRUN_DECLARED_CAP),
    "producer_mint_rejected": lambda t: int(t.mint_rejected),
    "unbindable_content_identity": _observed(OBS_UNBINDABLE),
    "same_chain_indeterminate": _observed(OBS_INDETERMINATE),
    "author_chain_unbound": _observed(OBS_UNBOUND),
    "failed_declared": lambda t: t.failed_declared,
    "proof_kernel_exempt": _observed(OBS_KERNEL_EXEMPT),
    "tied_uncap": lambda t: int(is_tied_uncap(t.chosen, t.outcomes)),
}


def count_populations(trace: Trace) -> dict[str, int]:
    return {name: COUNTER_RULES[name](trace) for name in COUNTER_NAMES}


def mint_rejected(supplied: str | None, effective: str) -> bool:
    """§ 6: a producer-supplied grade is never admitted; only a disagreeing one counts."""
    return supplied is not None and supplied != effective


def fail_closed(evidence: UnitEvidence, ladder: Ladder) -> Admission:
    """§ 8: no admission evidence surfaces as the floor with its provenance labeled."""
    return Admission(
        effective_grade=ladder.floor,
        evidence_kind=ladder.floor,
        applied_rank_ops=(),
        conflicting_evidence=False,
        failed_declared_evidence=False,
        provenance=PROVENANCE_MISSING_ADMISSION,
        oracle_author=None,
        oracle_runner=None,
        work_producer=evidence.work_producer,
        content_identity=None,
        current_content_identity=evidence.current_content_identity,
        declared_count=len(evidence.declared),
        unrun_count=count_unrun(evidence.declared),
        counters=dict.fromkeys(COUNTER_NAMES, 0),
    )


def derive(evidence: UnitEvidence, ladder: Ladder) -> Admission:
    """The effective grade and custody record of one unit (spec § 5–8)."""
    if not evidence.admission_evidence:
        return fail_closed(evidence, ladder)
    declared = evidence.declared
    passing = tuple(o for o in declared if o.ran and o.passed)
    base = base_grade(passing, ladder)
    ctx = Context(
        producer=evidence.work_producer,
        current_content_identity=evidence.current_content_identity,
        conflict=same_tier_conflict(declared, base),
        declared=declared,
    )
    capped = unrun_declared_cap(Step(base), declared, ladder)
    outcomes = tuple(run_step3(capped, m, ctx, ladder) for m in passing if m.tier == base)
    chosen = fold_tied(outcomes, ladder) if outcomes else Outcome(None, capped)
    effective = chosen.step.grade
    failed = count_failed_declared(declared)
    trace = Trace(
        unrun_capped=UNRUN_DECLARED_CAP in capped.ops,
        chosen=chosen,
        outcomes=outcomes,
        failed_declared=failed,
        mint_rejected=mint_rejected(evidence.producer_supplied_grade, effective),
    )
    member = chosen.member
    return Admission(
        effective_grade=effective,
        evidence_kind=base,
        applied_rank_ops=chosen.step.ops,
        conflicting_evidence=ctx.conflict,
        failed_declared_evidence=failed > 0,
        provenance=PROVENANCE_DERIVED,
        oracle_author=member.author if member else None,
        oracle_runner=member.runner if member else None,
        work_producer=evidence.work_producer,
        content_identity=member.content_identity if member else None,
        current_content_identity=evidence.current_content_identity,
        declared_count=len(declared),
        unrun_count=count_unrun(declared),
        counters=count_populations(trace),
    )
