"""Mutation check for the GVC derivation: the conformance suite must kill every mutant.

Each mutant removes, reorders or bends one piece of replay/verdict.py — a rank
operation, the only-when-it-lowers rule, the MAX fold's tie-break, one counter — by
monkeypatching the small named function or table that implements it. The 28 fixture
cases are then run; a mutant that survives (every case still passes) means the suite
cannot see that piece, and this test fails.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

import replay.verdict as v
from replay.verdict_cases import case_mismatches, derive_case
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
