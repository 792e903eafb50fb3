"""Cohen's κ over the 2×2 table (FORMATS.md § 8 Table and statistics).

The oracle is the textbook definition over rationals, written independently of the
implementation's integer rearrangement: p_o, the two marginal rates r and c,
p_e = r·c + (1−r)(1−c), κ = (p_o − p_e) / (1 − p_e).
"""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from reconcile.kappa import Table, accuracy, cohen_kappa

counts = st.integers(min_value=0, max_value=60)
tables = st.builds(Table, counts, counts, counts, counts)


def definition(t: Table) -> Fraction | None:
    """κ by its definition; ``None`` exactly where 1 − p_e is zero (or N < 2)."""
    n = t.n
    if n < 2:
        return None
    p_o = Fraction(t.met_passed + t.not_met_failed, n)
    r = Fraction(t.met_passed + t.met_failed, n)
    c = Fraction(t.met_passed + t.not_met_passed, n)
    p_e = r * c + (1 - r) * (1 - c)
    if 1 - p_e == 0:
        return None
    return (p_o - p_e) / (1 - p_e)


@settings(max_examples=200)
@given(tables)
@example(Table(12, 0, 0, 5))
@example(Table(0, 0, 0, 5))
@example(Table(12, 0, 0, 0))
@example(Table(0, 10, 0, 0))
@example(Table(1, 0, 0, 0))
@example(Table(0, 0, 0, 0))
@example(Table(1, 1, 0, 0))
def test_kappa_matches_its_definition(t: Table) -> None:
    want = definition(t)
    got = cohen_kappa(t)
    if want is None:
        assert got is None, f"cohen_kappa({t}) = {got}, want undefined"
    else:
        assert got is not None and got == pytest.approx(float(want), abs=1e-12), (
            f"cohen_kappa({t}) = {got}, want {float(want)}"
        )


@settings(max_examples=200)
@given(tables)
def test_kappa_is_symmetric_in_the_two_raters(t: Table) -> None:
    swapped = Table(t.met_passed, t.not_met_passed, t.met_failed, t.not_met_failed)
    assert cohen_kappa(t) == cohen_kappa(swapped)


@settings(max_examples=200)
@given(tables)
def test_kappa_is_undefined_exactly_where_the_formula_divides_by_zero(t: Table) -> None:
    n = t.n
    r = t.met_passed + t.met_failed
    c = t.met_passed + t.not_met_passed
    # 1 - p_e = 0  <=>  N² = R·C + (N−R)(N−C), independently: both raters constant and equal
    divides_by_zero = n == 0 or (r, c) in {(0, 0), (n, n)}
    assert (cohen_kappa(t) is None) == (n < 2 or divides_by_zero)


@settings(max_examples=100)
@given(tables, st.randoms(use_true_random=False), st.integers(0, 10**6))
def test_cells_sum_to_observations_and_accuracy_is_agreement(
    t: Table, rnd: random.Random, cut: int
) -> None:
    pairs = [(judge_met, passed) for judge_met, passed, k in (
        (True, True, t.met_passed),
        (True, False, t.met_failed),
        (False, True, t.not_met_passed),
        (False, False, t.not_met_failed),
    ) for _ in range(k)]  # fmt: skip
    rnd.shuffle(pairs)  # in any order, and counted on from any table built before
    cut %= len(pairs) + 1
    rebuilt = Table.of(pairs[cut:], Table.of(pairs[:cut]))
    assert rebuilt == t == Table.of(pairs)
    assert rebuilt.n == t.met_passed + t.met_failed + t.not_met_passed + t.not_met_failed
    if t.n:
        assert accuracy(t) == pytest.approx(float(Fraction(t.met_passed + t.not_met_failed, t.n)))
    else:
        assert accuracy(t) is None


def test_published_tables() -> None:
    """RUBRIC_MIGRATION.md: the union is κ 1.0; one half alone is undefined; lot_ops is 0."""
    assert cohen_kappa(Table(12, 0, 0, 5)) == 1.0
    assert accuracy(Table(12, 0, 0, 5)) == 1.0
    assert cohen_kappa(Table(0, 0, 0, 5)) is None
    assert accuracy(Table(0, 0, 0, 5)) == 1.0
    assert cohen_kappa(Table(0, 10, 0, 0)) == 0.0
    assert accuracy(Table(0, 10, 0, 0)) == 0.0


def test_a_negative_cell_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="met_failed = -1"):
        Table(0, -1, 0, 0)
