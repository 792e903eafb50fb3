"""Composites and three-valued folding (GRADING.md § When a constraint cannot be decided), and
invariants of decided verdicts."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from replay.trace_checks import evaluate_trace_checks
from replay.trace_checks.kleene import Truth, Verdict, kleene_and, kleene_not, kleene_or
from tests.trace_builders import Script, calls, one, tc

T, F, U = Truth.TRUE, Truth.FALSE, Truth.UNKNOWN


def test_kleene_tables() -> None:
    """A conjunction with a failing branch fails whatever the undecided branch would have said,
    a disjunction with a holding branch passes, otherwise undecided spreads."""
    v = {t: Verdict(t, "" if t is T else "m") for t in (T, F, U)}
    assert kleene_and([v[F], v[U]]).truth is F
    assert kleene_and([v[T], v[U]]).truth is U
    assert kleene_and([v[T], v[T]]).truth is T
    assert kleene_or([v[T], v[U]]).truth is T
    assert kleene_or([v[F], v[U]]).truth is U
    assert kleene_or([v[F], v[F]]).truth is F
    assert kleene_not(v[U], "present").truth is U
    assert kleene_not(v[T], "present").truth is F


@st.composite
def trees(draw, depth: int = 0) -> Any:
    """('leaf', truth) | ('and'|'or', [trees]) | ('not', tree); each U leaf is its own variable."""
    if depth >= 3 or draw(st.booleans()):
        return ("leaf", draw(st.sampled_from((T, F, U))))
    op = draw(st.sampled_from(("and", "or", "not")))
    if op == "not":
        return ("not", draw(trees(depth + 1)))
    return (op, draw(st.lists(trees(depth + 1), min_size=1, max_size=3)))


def kleene(tree: Any) -> Truth:
    kind, body = tree
    if kind == "leaf":
        return body
    if kind == "not":
        return kleene_not(Verdict(kleene(body)), "x").truth
    parts = [Verdict(kleene(b)) for b in body]
    return (kleene_and if kind == "and" else kleene_or)(parts).truth


def unknown_leaves(tree: Any) -> int:
    kind, body = tree
    if kind == "leaf":
        return int(body is U)
    if kind == "not":
        return unknown_leaves(body)
    return sum(unknown_leaves(b) for b in body)


def classical(tree: Any, values: list[bool]) -> bool:
    kind, body = tree
    if kind == "leaf":
        return values.pop() if body is U else body is T
    if kind == "not":
        return not classical(body, values)
    results = [classical(b, values) for b in body]
    return all(results) if kind == "and" else any(results)


@settings(max_examples=200, deadline=None)
@given(trees())
def test_kleene_folds_agree_with_every_completion_of_the_undecidable_evidence(tree) -> None:
    outcomes = {
        classical(tree, list(c))
        for c in itertools.product((False, True), repeat=unknown_leaves(tree))
    }
    expected = T if outcomes == {True} else F if outcomes == {False} else U
    assert kleene(tree) is expected


def test_all_of_stops_at_no_branch() -> None:
    """The pack's violating trial satisfies the first sub-term and fails the second."""
    cfg = one(
        {
            "all_of": [
                {"present": {"match": tc("write_report")}},
                {"present": {"match": tc("close_case")}},
            ]
        }
    )
    r = evaluate_trace_checks(calls("write_report"), cfg).results[0]
    assert r.passed is False and r.message.startswith("all_of[1] failed: present: no event matched")


def test_any_of_reads_every_branch() -> None:
    cfg = one(
        {"any_of": [{"present": {"match": tc("escalate")}}, {"present": {"match": tc("resolve")}}]}
    )
    assert evaluate_trace_checks(calls("resolve"), cfg).results[0].passed is True


def test_composites_fold_undecided_leaves_over_a_real_timeline() -> None:
    t = Script().user().say().call("write", executed=False).call("read").build()
    undecided = {"present": {"match": tc("write", status={"equals": "success"})}}
    failing = {"present": {"match": tc("delete")}}
    holding = {"present": {"match": tc("read")}}
    cases = [
        ({"all_of": [undecided, failing]}, (False, False)),
        ({"all_of": [undecided, holding]}, (False, True)),
        ({"any_of": [undecided, holding]}, (True, False)),
        ({"any_of": [undecided, failing]}, (False, True)),
        ({"negate": undecided}, (False, True)),
        ({"negate": failing}, (True, False)),
    ]
    for require, expected in cases:
        r = evaluate_trace_checks(t, one(require)).results[0]
        assert (r.passed, r.undecided) == expected, require


# --- adding an unrelated event never changes a decided present/absent verdict -------------------

TOOLS = ("read", "write", "delete")


@st.composite
def scripts(draw) -> list[tuple[str, bool, str]]:
    return draw(
        st.lists(
            st.tuples(st.sampled_from(TOOLS), st.booleans(), st.sampled_from(("success", "error"))),
            max_size=6,
        )
    )


def build(steps: list[tuple[str, bool, str]], records: bool) -> Any:
    s = Script(records=records).user()
    for tool, executed, status in steps:
        s.say().call(tool, executed=executed, status=status)
    return s.build()


@settings(max_examples=150, deadline=None)
@given(
    scripts(),
    st.booleans(),
    st.sampled_from(("present", "absent")),
    st.sampled_from(TOOLS[:2]),
    st.booleans(),
    st.integers(0, 6),
    st.booleans(),
)
def test_an_unrelated_event_never_changes_a_decided_present_or_absent(
    steps, records, kind, tool, with_status, at, executed
) -> None:
    matcher = tc(tool, status={"equals": "success"}) if with_status else tc(tool)
    cfg = one({kind: {"match": matcher}})
    before = evaluate_trace_checks(build(steps, records), cfg).results[0]
    if before.undecided:
        return
    # An unrelated event: a call to a tool the matcher does not name, executed or not,
    # or a message, inserted anywhere.
    unrelated = [*steps]
    unrelated.insert(min(at, len(steps)), ("unrelated_tool", executed, "error"))
    after = evaluate_trace_checks(build(unrelated, records), cfg).results[0]
    assert (after.passed, after.undecided) == (before.passed, before.undecided)


# --- end to end: a quantified before over a generated trial, against the definition --------------


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(("a", "b", "c")), st.booleans(), st.sampled_from(("success", "error"))
        ),
        max_size=7,
    ),
    st.booleans(),
    st.sampled_from(("any", "all", "first", "last")),
    st.sampled_from(("any", "all", "first", "last")),
    st.sampled_from(("fail", "pass")),
)
def test_before_over_a_trial_agrees_with_the_definition(steps, records, ql, qr, on_missing) -> None:
    """left: calls to a whose status is success (undecidable where the call never ran or no
    record exists); right: every call to b. The oracle derives the two sets from the script
    itself and folds the quantified definition over every completion."""
    t = build(steps, records)
    calls_at = [e.position for e in t.events if e.kind.value == "tool_call"]
    left_d, left_u, right = [], [], []
    for pos, (tool, executed, status) in zip(calls_at, steps, strict=True):
        if tool == "a":
            if executed and records:
                if status == "success":
                    left_d.append(pos)
            else:
                left_u.append(pos)
        elif tool == "b":
            right.append(pos)
    outcomes = set()
    for n in range(len(left_u) + 1):
        for extra in itertools.combinations(left_u, n):
            L = sorted(left_d + list(extra))
            if not L or not right:
                outcomes.add(on_missing == "pass")
                continue
            Lr = [L[0]] if ql == "first" else [L[-1]] if ql == "last" else L
            Rr = [right[0]] if qr == "first" else [right[-1]] if qr == "last" else right
            inner = all if qr == "all" else any
            outer = all if ql == "all" else any
            outcomes.add(outer(inner(x < y for y in Rr) for x in Lr))
    expected = (
        (True, False)
        if outcomes == {True}
        else (False, False)
        if outcomes == {False}
        else (False, True)
    )
    req = {
        "before": {
            "left": {"quantifier": ql, "match": tc("a", status={"equals": "success"})},
            "right": {"quantifier": qr, "match": tc("b")},
        }
    }
    r = evaluate_trace_checks(t, one(req, on_missing=on_missing)).results[0]
    assert (r.passed, r.undecided) == expected
