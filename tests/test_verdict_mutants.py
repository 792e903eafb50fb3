"""Mutation check for the GVC derivation: the conformance suite must kill every mutant.

Each mutant removes, reorders or bends one piece of replay/verdicts/derive.py — a rank
operation, the only-when-it-lowers rule, the MAX fold's tie-break, one counter — by
monkeypatching the small named function or table that implements it. The 28 fixture
cases are then run; a mutant that survives (every case still passes) means the suite
cannot see that piece, and this test fails.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import replace

import pytest

import replay.verdicts.cases as vc
import replay.verdicts.derive as v
from replay.verdicts.cases import case_mismatches, derive_case
from schemas.gvc import COUNTER_NAMES, Ladder
from tests.gvc_support import case_file, ladder

Mutant = Callable[[pytest.MonkeyPatch], None]


def conformance_failures() -> list[str]:
    lad = ladder()
    failures = []
    for case in case_file().cases:
        try:
            problems = case_mismatches(case, derive_case(case, lad))
        except Exception as exc:  # a crashing mutant is a killed mutant
            problems = [f"raised {exc!r}"]
        failures.extend(f"{case.name}: {p}" for p in problems)
    return failures


def _identity_op(step: v.Step, member: v.Oracle, ctx: v.Context, lad: Ladder) -> v.Step:
    return step


def _late_unrun_cap(step: v.Step, member: v.Oracle, ctx: v.Context, lad: Ladder) -> v.Step:
    return ORIGINAL_UNRUN(step, ctx.declared, lad)


ORIGINAL_UNRUN = v.unrun_declared_cap
ORIGINAL_OPS = v.STEP3_OPS
ORIGINAL_RULES = dict(v.COUNTER_RULES)


def _set_ops(ops: tuple) -> Mutant:
    return lambda mp: mp.setattr(v, "STEP3_OPS", ops)


def _without(index: int) -> Mutant:
    ops = list(ORIGINAL_OPS)
    ops[index] = _identity_op
    return _set_ops(tuple(ops))


def _unrun_moved(position: int) -> Mutant:
    """Remove the step-2 cap and re-insert it at ``position`` among the step-3 ops."""

    def apply(mp: pytest.MonkeyPatch) -> None:
        mp.setattr(v, "unrun_declared_cap", lambda step, declared, lad: step)
        ops = list(ORIGINAL_OPS)
        ops.insert(position, _late_unrun_cap)
        mp.setattr(v, "STEP3_OPS", tuple(ops))

    return apply


def _counter(name: str, rule: Callable) -> Mutant:
    return lambda mp: mp.setitem(v.COUNTER_RULES, name, rule)


def _swap_counters(a: str, b: str) -> Mutant:
    def apply(mp: pytest.MonkeyPatch) -> None:
        mp.setitem(v.COUNTER_RULES, a, ORIGINAL_RULES[b])
        mp.setitem(v.COUNTER_RULES, b, ORIGINAL_RULES[a])

    return apply


def _always_record(step: v.Step, to: str, op: str, lad: Ladder) -> v.Step:
    return v.Step(
        to if lad.rank(to) < lad.rank(step.grade) else step.grade, (*step.ops, op), step.observed
    )


def _first_in_input_order(outcomes, lad):
    return outcomes[0]


def _no_lexicographic_key(outcome, lad):
    return (-lad.rank(outcome.step.grade), bool(outcome.member_ops()))


def _no_survivor_preference(outcome, lad):
    m = outcome.member
    return (m.author.identity, m.content_identity)


def _reversed_lexicographic(outcome, lad):
    m = outcome.member
    return (
        -lad.rank(outcome.step.grade),
        bool(outcome.member_ops()),
        [-ord(c) for c in m.author.identity],
    )


ORIGINAL_DERIVE = v.derive


def _record_bent(**change: Callable) -> Mutant:
    """Bend one field of the finished record (for fields set in one place only)."""

    def bent(ev, lad):
        adm = ORIGINAL_DERIVE(ev, lad)
        return replace(adm, **{k: fn(adm) for k, fn in change.items()})

    return lambda mp: mp.setattr(vc, "derive", bent)


def _mint_admitted(ev, lad):
    adm = ORIGINAL_DERIVE(ev, lad)
    supplied = ev.producer_supplied_grade
    return replace(adm, effective_grade=supplied) if supplied is not None else adm


def _agent_only_cap(step, member, ctx, lad):
    if member.author.kind != "agent":
        return step
    return v.same_chain_cap(step, member, ctx, lad)


def _fold_unbound_into_indeterminate(mp: pytest.MonkeyPatch) -> None:
    both = lambda t: int(  # noqa: E731
        bool({v.OBS_INDETERMINATE, v.OBS_UNBOUND} & t.chosen.step.observed)
    )
    mp.setitem(v.COUNTER_RULES, "same_chain_indeterminate", both)
    mp.setitem(v.COUNTER_RULES, "author_chain_unbound", lambda t: 0)


def _unknown_ranks_above_all(self: Ladder, grade: str) -> int:
    return len(self.grades) - self.grades.index(grade) if grade in self.grades else 99


def _base_min(passing, lad):
    members = [o.tier for o in passing if lad.is_member(o.tier)]
    return min(members, key=lad.rank) if members else lad.floor


MUTANTS: dict[str, Mutant] = {
    # each rank operation removed
    "no_unrun_declared_cap": lambda mp: mp.setattr(v, "unrun_declared_cap", lambda s, d, lad: s),
    "no_same_chain_cap": _without(0),
    "no_conflict_demotion": _without(1),
    "no_staleness_reversion": _without(2),
    # each rank operation reordered
    **{
        f"step3_order_{'_'.join(op.__name__ for op in perm)}": _set_ops(perm)
        for perm in itertools.permutations(ORIGINAL_OPS)
        if perm != ORIGINAL_OPS
    },
    **{f"unrun_cap_moved_to_step3_position_{i}": _unrun_moved(i) for i in range(4)},
    # "recorded only when it lowers the grade"
    "ops_recorded_even_when_not_lowering": lambda mp: mp.setattr(v, "apply_op", _always_record),
    # the MAX fold and its tie-break
    "fold_takes_first_in_input_order": lambda mp: mp.setattr(v, "fold_tied", _first_in_input_order),
    "tie_break_without_lexicographic_order": lambda mp: mp.setattr(
        v, "tie_key", _no_lexicographic_key
    ),
    "tie_break_without_survivor_preference": lambda mp: mp.setattr(
        v, "tie_key", _no_survivor_preference
    ),
    "tie_break_lexicographic_reversed": lambda mp: mp.setattr(
        v, "tie_key", _reversed_lexicographic
    ),
    "fold_takes_min_instead_of_max": lambda mp: mp.setattr(
        v, "fold_tied", lambda outs, lad: max(outs, key=lambda o: v.tie_key(o, lad))
    ),
    # predicates bent
    "kernel_exemption_ignores_kind": lambda mp: mp.setattr(
        v, "kernel_exempt", lambda s, m: s.grade == "proof"
    ),
    "kernel_exemption_removed": lambda mp: mp.setattr(v, "kernel_exempt", lambda s, m: False),
    "conflict_never_detected": lambda mp: mp.setattr(v, "same_tier_conflict", lambda d, b: False),
    "conflict_ignores_tier": lambda mp: mp.setattr(
        v,
        "same_tier_conflict",
        lambda d, b: any(o.ran and o.passed for o in d) and any(o.ran and not o.passed for o in d),
    ),
    "failed_declared_counts_unrun_too": lambda mp: mp.setattr(
        v, "count_failed_declared", lambda d: sum(1 for o in d if not o.passed)
    ),
    "mint_counts_agreement": lambda mp: mp.setattr(v, "mint_rejected", lambda s, e: s is not None),
    "base_ignores_vocabulary": lambda mp: mp.setattr(
        v, "base_grade", lambda passing, lad: passing[0].tier if passing else lad.floor
    ),
    "base_is_min_instead_of_max": lambda mp: mp.setattr(v, "base_grade", _base_min),
    "unknown_grade_ranks_above_all": lambda mp: mp.setattr(
        Ladder, "rank", _unknown_ranks_above_all
    ),
    "demotion_returns_same_tier": lambda mp: mp.setattr(Ladder, "demote", lambda self, g: g),
    "fail_closed_branch_disabled": lambda mp: mp.setattr(
        v, "fail_closed", lambda ev, lad: ORIGINAL_DERIVE(replace(ev, admission_evidence=True), lad)
    ),
    "same_chain_cap_gated_on_agent_kind": _set_ops(
        (_agent_only_cap, v.conflict_demotion, v.staleness_reversion)
    ),
    "unbound_folded_into_indeterminate": _fold_unbound_into_indeterminate,
    # record fields bent
    "oracle_runner_dropped": _record_bent(oracle_runner=lambda a: None),
    "oracle_author_dropped": _record_bent(oracle_author=lambda a: None),
    "failed_flag_hardcoded_true": _record_bent(failed_declared_evidence=lambda a: True),
    "conflict_flag_follows_the_op": _record_bent(
        conflicting_evidence=lambda a: "conflict_demotion" in a.applied_rank_ops
    ),
    "applied_ops_reversed": _record_bent(
        applied_rank_ops=lambda a: tuple(reversed(a.applied_rank_ops))
    ),
    "evidence_kind_follows_effective_grade": _record_bent(
        evidence_kind=lambda a: a.effective_grade
    ),
    "provenance_unlabeled": _record_bent(provenance=lambda a: "derived"),
    "producer_mint_admitted": lambda mp: mp.setattr(vc, "derive", _mint_admitted),
    # each counter removed, and each pair of counters swapped
    **{f"counter_{name}_removed": _counter(name, lambda t: 0) for name in COUNTER_NAMES},
    **{
        f"counters_{a}_and_{b}_swapped": _swap_counters(a, b)
        for a, b in itertools.combinations(COUNTER_NAMES, 2)
    },
}


def test_unmutated_derivation_passes_the_suite() -> None:
    assert conformance_failures() == []


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_mutant_is_killed(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    MUTANTS[name](monkeypatch)
    assert conformance_failures() != [], f"mutant {name!r} survived all 28 conformance cases"
