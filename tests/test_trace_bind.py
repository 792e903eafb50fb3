"""Correlating arguments across matchers (GRADING.md § Correlating arguments across matchers),
from the section's own worked tables."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from replay.trace_checks import evaluate_trace_checks
from replay.trace_checks.bind import collect_candidates
from replay.trace_checks.matching import TimelineIndex, prepare, resolve
from tests.trace_builders import Script, calls, one, side, tc

READ_BEFORE_WRITE = {
    "before": {
        "left": side("any", tc("read_record", args={"record_id": {"equals_binding": "rec"}})),
        "right": side("any", tc("write_record", args={"record_id": {"equals_binding": "rec"}})),
    }
}


def bound(binder: str = "write_record", **bind: Any) -> Any:
    return one(
        READ_BEFORE_WRITE,
        bind={"match": tc(binder), "values": {"rec": {"field": "args.record_id"}}, **bind},
    )


def r(*ops: str) -> Any:
    """read X / write Y -> a timeline, one assistant turn per call."""
    steps = []
    for op in ops:
        verb, value = op.split()
        steps.append((f"{verb}_record", {"record_id": value}))
    return calls(*steps)


def result(timeline, cfg):
    return evaluate_trace_checks(timeline, cfg).results[0]


def test_binder_site_table() -> None:
    """read X, read Y, write X: binding at the write passes, binding at the read fails."""
    t = r("read X", "read Y", "write X")
    assert result(t, bound("write_record")).passed is True
    at_read = result(t, bound("read_record"))
    assert (at_read.passed, at_read.undecided) == (False, False)
    assert at_read.failing_bindings == ({"rec": "Y"},)


def test_several_candidates_table_universal_column() -> None:
    rows = [
        (("read X", "write X"), True),
        (("read X", "write Y"), False),
        (("read X", "read Y", "write X"), True),
        (("read X", "write X", "write Y"), False),  # any-satisfying would pass this row
        (("read X", "read X", "write X"), True),
    ]
    for ops, universal in rows:
        assert result(r(*ops), bound()).passed is universal, ops


def test_per_candidate_column_is_writing_the_value_out_as_a_literal() -> None:
    """Each candidate scores as the same constraint with its value written out."""
    t = r("read X", "write X", "write Y")
    for value, expected in (("X", True), ("Y", False)):
        literal = {
            "before": {
                "left": side("any", tc("read_record", args={"record_id": {"equals": value}})),
                "right": side("any", tc("write_record", args={"record_id": {"equals": value}})),
            }
        }
        assert result(t, one(literal)).passed is expected


def test_several_candidates_row_with_no_candidate_reads_on_unbound() -> None:
    t = r("read X")
    fail = result(t, bound())
    assert (fail.passed, fail.undecided) == (False, False)
    assert "bind selected no candidate" in fail.message and "on_unbound: fail" in fail.message
    assert result(t, bound(on_unbound="pass")).passed is True


def test_the_failure_names_the_set_of_values_that_failed() -> None:
    t = r("read X", "write X", "write Y")
    res = result(t, bound())
    assert res.message == "before is unmatched: left selected no event; failed under (rec='Y')"
    assert res.failing_bindings == ({"rec": "Y"},)


def test_first_match_table_universal_is_invariant_under_the_order_of_reads() -> None:
    a = result(r("read X", "read Y", "write X"), bound("read_record"))
    b = result(r("read Y", "read X", "write X"), bound("read_record"))
    assert (a.passed, b.passed) == (False, False)
    assert a.message == b.message and a.failing_bindings == b.failing_bindings == ({"rec": "Y"},)


def test_candidates_are_distinct_values_not_events() -> None:
    t = r(*(["read X"] + ["write X"] * 10))
    res = result(t, bound())
    assert res.passed is True
    t = r(*(["read Y"] + ["write X"] * 10))
    assert result(t, bound()).message.endswith("failed under (rec='X')")


def test_true_and_1_are_two_candidates() -> None:
    cfg = one(
        {"present": {"match": tc("read", args={"v": {"equals_binding": "v"}})}},
        bind={"match": tc("write"), "values": {"v": {"field": "args.v"}}},
    )
    t = calls(("write", {"v": True}), ("write", {"v": 1}), ("read", {"v": 1}))
    res = result(t, cfg)
    # 1 == True, so the read matches under both candidates — two readings, both passing.
    assert res.passed is True
    t = calls(("write", {"v": True}), ("write", {"v": 2}), ("read", {"v": 1}))
    res = result(t, cfg)
    assert res.failing_bindings == ({"v": 2},)


def test_a_regex_capture_binds_one_candidate_per_match() -> None:
    cfg = one(
        {"present": {"match": tc("quote_lookup", args={"amount": {"equals_binding": "amt"}})}},
        bind={
            "match": {"kind": "assistant_message"},
            "values": {"amt": {"field": "text", "pattern": r"\$([0-9][0-9,]*\.[0-9]{2})"}},
        },
    )
    t = (
        Script()
        .user()
        .say("refund $1,000.00 and $3.50")
        .call("quote_lookup", {"amount": "1,000.00"})
        .build()
    )
    res = result(t, cfg)
    assert res.failing_bindings == ({"amt": "3.50"},)


def test_an_omitted_argument_binds_nothing() -> None:
    t = calls(("write_record", {}), ("read_record", {"record_id": "X"}))
    res = result(t, bound())
    assert "bind selected no candidate" in res.message


def test_within_restricts_the_binder() -> None:
    s = Script().user().say().call("read_record", {"record_id": "X"})
    s.say().call("write_record", {"record_id": "X"}).say().call("write_record", {"record_id": "Y"})
    t = s.build()
    assert result(t, bound()).passed is False
    # turn 2 holds the write of Y; a window ending at turn 1 removes that candidate.
    cfg = one(
        READ_BEFORE_WRITE,
        within={"last_turn": 1},
        bind={"match": tc("write_record"), "values": {"rec": {"field": "args.record_id"}}},
    )
    assert result(t, cfg).passed is True


def test_negate_under_bind_reads_for_all_v_not_p() -> None:
    """negate: {present: …} over a binder on write_record fails as soon as one written
    record was read."""
    cfg = one(
        {
            "negate": {
                "present": {
                    "match": tc("read_record", args={"record_id": {"equals_binding": "rec"}})
                }
            }
        },
        bind={"match": tc("write_record"), "values": {"rec": {"field": "args.record_id"}}},
    )
    assert result(r("read X", "write X", "write Y"), cfg).passed is False  # ¬∀ would pass
    assert result(r("read Z", "write X", "write Y"), cfg).passed is True


# --- the undecidable candidate set ------------------------------------------------------------


def undecidable_binder(on_unbound: str = "fail") -> Any:
    """Binder reads status, so on a call that never ran the candidate is undecidable."""
    return one(
        {"present": {"match": tc("read_record", args={"record_id": {"equals_binding": "rec"}})}},
        bind={
            "match": tc("write_record", status={"equals": "success"}),
            "values": {"rec": {"field": "args.record_id"}},
            "on_unbound": on_unbound,
        },
    )


def two_unexecuted_writes() -> Any:
    """D = {}, U = {u0 = A (read, so holds), u1 = B (never read, fails)}."""
    s = Script().user().say().call("read_record", {"record_id": "A"})
    s.say().call("write_record", {"record_id": "A"}, executed=False)
    s.call("write_record", {"record_id": "B"}, executed=False)
    return s.build()


def test_undecidable_candidate_set_table() -> None:
    """{} fails (on_unbound), {u0} passes, {u1} fails, {u0, u1} fails: the two ends agree on
    fail, but a singleton completion passes, so the constraint is undecided."""
    res = result(two_unexecuted_writes(), undecidable_binder("fail"))
    assert (res.passed, res.undecided) == (False, True)
    assert "status at positions" in res.message and "the call never executed" in res.message


def test_completions_that_agree_leave_the_constraint_decided() -> None:
    # Both undecidable candidates fail: every reading fails (the empty one by on_unbound).
    s = Script().user().say().call("write_record", {"record_id": "A"}, executed=False)
    s.call("write_record", {"record_id": "B"}, executed=False)
    res = result(s.build(), undecidable_binder("fail"))
    assert (res.passed, res.undecided) == (False, False)


def test_a_definite_value_absorbs_its_undecidable_reading() -> None:
    s = Script().user().say().call("read_record", {"record_id": "A"})
    s.say().call("write_record", {"record_id": "A"})  # executed: definite candidate A
    s.call("write_record", {"record_id": "A"}, executed=False)  # undecidable, same value
    t = s.build()
    res = result(t, undecidable_binder())
    assert (res.passed, res.undecided) == (True, False)
    # The value is in the set whatever the missing evidence says: no undecidable candidate.
    bind = undecidable_binder().shared[0].bind
    idx = TimelineIndex(t)
    binder = resolve(idx, prepare(idx, bind.match, None, "linear"), {})
    assert len(binder.undecidable) == 1
    cands = collect_candidates(idx, binder, bind, "linear")
    assert [c.env for c in cands.definite] == [{"rec": "A"}] and cands.undecidable == ()


def test_a_definite_failing_candidate_decides_despite_undecidable_ones() -> None:
    s = Script().user().say().call("write_record", {"record_id": "B"})  # definite, never read
    s.call("write_record", {"record_id": "C"}, executed=False)
    res = result(s.build(), undecidable_binder())
    assert (res.passed, res.undecided) == (False, False)
    assert res.failing_bindings[0] == {"rec": "B"}


def test_a_result_extraction_on_an_unanswered_call_is_an_unread_candidate() -> None:
    cfg = one(
        {"present": {"match": {"kind": "assistant_message", "text": {"contains_binding": "out"}}}},
        bind={"match": tc("lookup"), "values": {"out": {"field": "result"}}},
    )
    t = Script().user().say("status is processing").call("lookup", executed=False).build()
    res = result(t, cfg)
    assert (res.passed, res.undecided) == (False, True)


# --- the type diagnostic ------------------------------------------------------------------------

SENTENCE = (
    "the args.code comparison was not made: binding 'delivery' holds 4021, a JSON integer,"
    " and no candidate carried a value at that field which equals_binding can ever satisfy"
    " against it — two JSON types the operator cannot pair are false on every trajectory,"
    " whichever of the two holds the text. Reference the binding from an args predicate whose"
    " arguments the tools type the same way, or extract a regex capture off a field that"
    " holds text"
)


def diag_cfg(kind: str = "present") -> Any:
    return one(
        {kind: {"match": tc("annotate", args={"code": {"equals_binding": "delivery"}})}},
        bind={"match": tc("get_delivery"), "values": {"delivery": {"field": "args.id"}}},
    )


def test_a_never_satisfiable_binding_comparison_fails_with_the_sentence() -> None:
    t = calls(("get_delivery", {"id": 4021}), ("annotate", {"code": "4021"}))
    res = result(t, diag_cfg())
    assert res.passed is False
    assert res.message.startswith(SENTENCE)


def test_the_sentence_fails_an_absent_that_would_otherwise_pass_vacuously() -> None:
    t = calls(("get_delivery", {"id": 4021}), ("annotate", {"code": "4021"}))
    assert result(t, diag_cfg("absent")).passed is False


def test_one_comparable_sibling_is_proof_the_reference_is_reachable() -> None:
    t = calls(
        ("get_delivery", {"id": 4021}), ("annotate", {"code": "4021"}), ("annotate", {"code": 7})
    )
    res = result(t, diag_cfg())
    assert res.passed is False and "comparison was not made" not in res.message
    assert res.message.startswith("present: no event matched")


def test_events_carrying_no_such_argument_speak_for_no_comparison() -> None:
    t = calls(("get_delivery", {"id": 4021}), ("annotate", {}))
    res = result(t, diag_cfg())
    assert res.message.startswith("present: no event matched")


def test_the_reverse_direction_earns_the_same_report() -> None:
    cfg = one(
        {"present": {"match": tc("annotate", args={"code": {"equals_binding": "delivery"}})}},
        bind={"match": tc("get_delivery"), "values": {"delivery": {"field": "args.id"}}},
    )
    t = calls(("get_delivery", {"id": "4021"}), ("annotate", {"code": 4021}))
    res = result(t, cfg)
    assert "binding 'delivery' holds '4021', a JSON string" in res.message


# --- permutation invariance (hypothesis) --------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.sampled_from("XYZ"), min_size=1, max_size=5),
    st.lists(st.sampled_from("XYZ"), min_size=0, max_size=4),
    st.randoms(use_true_random=False),
)
def test_bind_verdicts_are_invariant_under_permuting_the_binders_events(reads, writes, rnd) -> None:
    """Binding at the read: permuting the block of reads (which precedes every write) changes
    no candidate's own verdict, so verdict, message and failing bindings must not move —
    first-match would."""
    cfg = bound("read_record")
    shuffled = list(reads)
    rnd.shuffle(shuffled)
    a = result(r(*(f"read {v}" for v in reads), *(f"write {v}" for v in writes)), cfg)
    b = result(r(*(f"read {v}" for v in shuffled), *(f"write {v}" for v in writes)), cfg)
    assert (a.passed, a.undecided, a.message, a.failing_bindings) == (
        b.passed,
        b.undecided,
        b.message,
        b.failing_bindings,
    )
    assert a.passed == (set(reads) <= set(writes))


def test_multiple_names_bind_tuples() -> None:
    cfg = one(
        {
            "present": {
                "match": tc(
                    "read", args={"a": {"equals_binding": "a"}, "b": {"equals_binding": "b"}}
                )
            }
        },
        bind={"match": tc("write"), "values": {"a": {"field": "args.a"}, "b": {"field": "args.b"}}},
    )
    t = calls(("read", {"a": 1, "b": 2}), ("write", {"a": 1, "b": 2}), ("write", {"a": 1, "b": 3}))
    assert result(t, cfg).failing_bindings == ({"a": 1, "b": 3},)
    for perm in itertools.permutations([("write", {"a": 1, "b": 2}), ("write", {"a": 1, "b": 3})]):
        assert result(calls(("read", {"a": 1, "b": 2}), *perm), cfg).message.endswith(
            "failed under (a=1, b=3)"
        )


@st.composite
def binder_trials(draw) -> tuple[list[tuple[str, str, bool]], str]:
    """Writes (value, executed?) and reads of values; the binder reads status on the writes."""
    steps = draw(
        st.lists(
            st.tuples(
                st.sampled_from(("read_record", "write_record")),
                st.sampled_from("ABC"),
                st.booleans(),
            ),
            max_size=6,
        )
    )
    return steps, draw(st.sampled_from(("fail", "pass")))


@settings(max_examples=150, deadline=None)
@given(binder_trials())
def test_bound_verdicts_agree_with_every_completion_of_the_candidate_set(trial) -> None:
    """Brute force: each unexecuted write may or may not be a candidate; the constraint
    (∀ candidate v: some read of v exists, on_unbound for none) is decided only where every
    completion agrees."""
    steps, on_unbound = trial
    s = Script().user()
    for tool, value, executed in steps:
        s.say().call(tool, {"record_id": value}, executed=executed or tool == "read_record")
    t = s.build()
    reads = {v for tool, v, _ in steps if tool == "read_record"}
    definite = [v for tool, v, ex in steps if tool == "write_record" and ex]
    maybe = [v for tool, v, ex in steps if tool == "write_record" and not ex]
    outcomes = set()
    for n in range(len(maybe) + 1):
        for chosen in itertools.combinations(maybe, n):
            cands = set(definite) | set(chosen)
            outcomes.add(on_unbound == "pass" if not cands else cands <= reads)
    res = result(t, undecidable_binder(on_unbound))
    expected = (
        (True, False)
        if outcomes == {True}
        else (False, False)
        if outcomes == {False}
        else (False, True)
    )
    assert (res.passed, res.undecided) == expected
