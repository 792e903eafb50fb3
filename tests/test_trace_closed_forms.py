"""The closed forms of the leaf kinds against brute force over every completion.

GRADING.md § Quantifiers, and the closed form: the table reduces every before combination
to one comparison of extremes. § When a constraint cannot be decided: a leaf is decided
only where every completion of the undecidable evidence agrees. The oracles below are the
definitions written the slow way: quantifiers over all pairs, and every subset X ⊆ U of
each side's undecidable events enumerated.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable

from hypothesis import given, settings
from hypothesis import strategies as st

from replay.trace_checks import kinds
from replay.trace_checks.kleene import Truth
from replay.trace_checks.matching import Resolution
from schemas.trace_checks import CountPayload

QS = ("any", "all", "first", "last")
positions = st.sets(st.integers(0, 9), max_size=5)


def res(d: Iterable[int] = (), u: Iterable[int] = ()) -> Resolution:
    d, u = sorted(set(d)), sorted(set(u) - set(d))
    return Resolution(tuple(d), tuple(u), tuple((p, "status", "test") for p in u))


def completions(r: Resolution) -> Iterable[frozenset[int]]:
    u = r.undecidable
    for n in range(len(u) + 1):
        for xs in itertools.combinations(u, n):
            yield frozenset(r.matched) | frozenset(xs)


def reduce(side: frozenset[int], q: str) -> tuple[frozenset[int], str]:
    if q == "first":
        return frozenset({min(side)}), "any"
    if q == "last":
        return frozenset({max(side)}), "any"
    return side, q


def quantified(
    rel: Callable[[int, int], bool], left: frozenset[int], ql: str, right: frozenset[int], qr: str
) -> bool:
    L, ql = reduce(left, ql)
    R, qr = reduce(right, qr)
    inner = all if qr == "all" else any
    outer = all if ql == "all" else any
    return outer(inner(rel(a, b) for b in R) for a in L)


def fold(outcomes: set[bool]) -> Truth:
    if outcomes == {True}:
        return Truth.TRUE
    if outcomes == {False}:
        return Truth.FALSE
    return Truth.UNKNOWN


def brute_two_sided(
    rel, left: Resolution, ql: str, right: Resolution, qr: str, on_missing: str
) -> Truth:
    outcomes = set()
    for L in completions(left):
        for R in completions(right):
            if not L or not R:
                outcomes.add(on_missing == "pass")
            else:
                outcomes.add(quantified(rel, L, ql, R, qr))
    return fold(outcomes)


# --- the closed-form table, row by row (decided evidence) ----------------------------------

L_SET, R_SET = {2, 6}, {4, 8}  # min(L)=2 max(L)=6 min(R)=4 max(R)=8


def test_before_closed_form_table() -> None:
    """left any/any: min(L)<max(R); any/all: min(L)<min(R); all/any: max(L)<max(R);
    all/all: max(L)<min(R); first as any with L={min L}; last as all with L={max L};
    right first R={min R}, right last R={max R}."""
    rows = {
        ("any", "any"): 2 < 8,
        ("any", "all"): 2 < 4,
        ("all", "any"): 6 < 8,
        ("all", "all"): 6 < 4,
        ("first", "any"): 2 < 8,
        ("first", "all"): 2 < 4,
        ("last", "any"): 6 < 8,
        ("last", "all"): 6 < 4,
        ("any", "first"): 2 < 4,
        ("any", "last"): 2 < 8,
        ("all", "first"): 6 < 4,
        ("all", "last"): 6 < 8,
    }
    for (ql, qr), expected in rows.items():
        v = kinds.before(res(L_SET), ql, res(R_SET), qr, "fail")
        assert v.truth is (Truth.TRUE if expected else Truth.FALSE), (ql, qr)


@settings(max_examples=100, deadline=None)
@given(positions.filter(bool), positions.filter(bool), st.sampled_from(QS), st.sampled_from(QS))
def test_after_reduces_to_before_with_sides_swapped(left, right, ql, qr) -> None:
    """after(left=L:qL, right=R:qR) ≡ before(left=R:qR, right=L:qL): the sides swap and each
    quantifier rides with its own matcher. 'after' is the quantified reading with the
    relation reversed, outer quantifier over L."""
    after = quantified(lambda a, b: a > b, frozenset(left), ql, frozenset(right), qr)
    swapped = kinds.before(res(right), qr, res(left), ql, "fail").truth is Truth.TRUE
    assert after == swapped


def test_an_unmatched_side_is_decided_by_on_missing() -> None:
    for om, truth in (("fail", Truth.FALSE), ("pass", Truth.TRUE)):
        v = kinds.before(res(), "any", res({3}), "first", om)
        assert v.truth is truth
    v = kinds.before(res(), "any", res({3}), "first", "fail")
    assert v.message == "before is unmatched: left selected no event"


@st.composite
def sides(draw) -> Resolution:
    d = draw(positions)
    u = draw(st.sets(st.integers(0, 9), max_size=4)) - d
    return res(d, u)


@settings(max_examples=200, deadline=None)
@given(
    sides(), sides(), st.sampled_from(QS), st.sampled_from(QS), st.sampled_from(("fail", "pass"))
)
def test_before_agrees_with_brute_force_over_pairs_and_completions(left, right, ql, qr, om) -> None:
    got = kinds.before(left, ql, right, qr, om).truth
    assert got is brute_two_sided(lambda a, b: a < b, left, ql, right, qr, om)


class _View:
    def __init__(self, view: list[int]) -> None:
        self.nxt = dict(zip(view, view[1:], strict=False))

    def next_in_view(self, among: str) -> dict[int, int]:
        return self.nxt


@settings(max_examples=200, deadline=None)
@given(
    sides(),
    sides(),
    st.sampled_from(QS),
    st.sampled_from(QS),
    st.sampled_from(("fail", "pass")),
    st.sets(st.integers(0, 9), min_size=1).map(sorted),
)
def test_immediately_before_agrees_with_brute_force(left, right, ql, qr, om, view) -> None:
    idx = _View(view)
    got = kinds.immediately_before(idx, left, ql, right, qr, "events", om).truth  # type: ignore[arg-type]
    assert got is brute_two_sided(lambda a, b: idx.nxt.get(a) == b, left, ql, right, qr, om)


def brute_absent_before(forbidden: Resolution, anchor: Resolution, qa: str, om: str) -> Truth:
    outcomes = set()
    for A in completions(anchor):
        for F in completions(forbidden):
            if not A:
                outcomes.add(om == "pass")
                continue
            a = min(A) if qa == "first" else max(A)
            outcomes.add(not any(f < a for f in F))
    return fold(outcomes)


@settings(max_examples=200, deadline=None)
@given(sides(), sides(), st.sampled_from(("first", "last")), st.sampled_from(("fail", "pass")))
def test_absent_before_agrees_with_brute_force(forbidden, anchor, qa, om) -> None:
    assert kinds.absent_before(forbidden, anchor, qa, om).truth is brute_absent_before(
        forbidden, anchor, qa, om
    )


def brute_absent_between(forbidden, start, qs, end, qe, om) -> Truth:
    outcomes = set()
    for S in completions(start):
        for E in completions(end):
            for F in completions(forbidden):
                if not S or not E:
                    outcomes.add(om == "pass")
                    continue
                s = min(S) if qs == "first" else max(S)
                e = min(E) if qe == "first" else max(E)
                if s >= e:
                    outcomes.add(om == "pass")
                else:
                    outcomes.add(not any(s < f < e for f in F))
    return fold(outcomes)


@settings(max_examples=200, deadline=None)
@given(
    sides(),
    sides(),
    sides(),
    st.sampled_from(("first", "last")),
    st.sampled_from(("first", "last")),
    st.sampled_from(("fail", "pass")),
)
def test_absent_between_agrees_with_brute_force(forbidden, start, end, qs, qe, om) -> None:
    got = kinds.absent_between(forbidden, start, qs, end, qe, om).truth
    assert got is brute_absent_between(forbidden, start, qs, end, qe, om)


def test_an_inverted_or_empty_window_is_unmatched() -> None:
    inverted = kinds.absent_between(res(), res({5}), "first", res({3}), "first", "fail")
    assert inverted.truth is Truth.FALSE and "empty or inverted" in inverted.message
    same = kinds.absent_between(res(), res({4}), "first", res({4}), "first", "fail")
    assert same.truth is Truth.FALSE
    assert (
        kinds.absent_between(res(), res({5}), "first", res({3}), "first", "pass").truth
        is Truth.TRUE
    )
    # start 4, end 5: a valid window holding no position — nothing forbidden inside it.
    assert (
        kinds.absent_between(res({4, 5}), res({4}), "first", res({5}), "first", "fail").truth
        is Truth.TRUE
    )


# --- the d/u table ------------------------------------------------------------------------


def test_present_over_d_and_u() -> None:
    """passes at d >= 1 even with undecidables present; fails at d = u = 0; undecided at d = 0 < u."""
    assert kinds.present(res({1}, {2, 3})).truth is Truth.TRUE
    assert kinds.present(res()).truth is Truth.FALSE
    v = kinds.present(res((), {2}))
    assert v.truth is Truth.UNKNOWN
    assert "status at positions [2]" in v.message


def test_absent_over_d_and_u() -> None:
    """fails at d >= 1; passes at d = u = 0; undecided at d = 0 < u."""
    assert kinds.absent(res({1}, {2})).truth is Truth.FALSE
    assert kinds.absent(res()).truth is Truth.TRUE
    assert kinds.absent(res((), {2})).truth is Truth.UNKNOWN


def test_count_reads_the_whole_interval_d_to_d_plus_u() -> None:
    """passes when every count in [d, d+u] is within the bounds, fails when none is."""
    exactly_one = CountPayload.model_validate({"match": {"kind": "tool_call"}, "min": 1, "max": 1})
    assert kinds.count(res({1}), exactly_one).truth is Truth.TRUE
    assert kinds.count(res({1}, {2}), exactly_one).truth is Truth.UNKNOWN  # [1, 2]
    assert kinds.count(res({1, 2}, {3}), exactly_one).truth is Truth.FALSE  # [2, 3]
    assert kinds.count(res((), {3}), exactly_one).truth is Truth.UNKNOWN  # [0, 1]
    at_most_two = CountPayload.model_validate({"match": {"kind": "tool_call"}, "max": 2})
    assert kinds.count(res((), {1, 2}), at_most_two).truth is Truth.TRUE  # [0, 2]


@settings(max_examples=200, deadline=None)
@given(sides(), st.one_of(st.none(), st.integers(0, 5)), st.one_of(st.none(), st.integers(0, 5)))
def test_count_agrees_with_every_completion(side, lo, hi) -> None:
    if lo is None and hi is None:
        hi = 2
    if lo is not None and hi is not None and lo > hi:
        lo, hi = hi, lo
    payload = CountPayload.model_validate({"match": {"kind": "tool_call"}, "min": lo, "max": hi})
    outcomes = {
        (lo is None or len(c) >= lo) and (hi is None or len(c) <= hi) for c in completions(side)
    }
    assert kinds.count(side, payload).truth is fold(outcomes)


@settings(max_examples=100, deadline=None)
@given(sides())
def test_present_and_absent_agree_with_every_completion(side) -> None:
    assert kinds.present(side).truth is fold({bool(c) for c in completions(side)})
    assert kinds.absent(side).truth is fold({not c for c in completions(side)})
