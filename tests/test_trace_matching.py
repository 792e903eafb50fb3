"""Operators and matcher resolution over a timeline (GRADING.md § Operators, § What a matcher
resolves to: matched, and undecidable)."""

from __future__ import annotations

from typing import Any

import pytest

from replay.grading.patterns import compile_regex
from replay.trace_checks import evaluate_trace_checks
from replay.trace_checks.operators import apply_operator, can_ever_hold, contains, json_type
from tests.trace_builders import Script, one, tc


def verdict(timeline, require: dict[str, Any], **kw: Any) -> tuple[bool, bool, str]:
    r = evaluate_trace_checks(timeline, one(require, **kw)).results[0]
    return r.passed, r.undecided, r.message


PASS, FAIL, UNDECIDED = (True, False), (False, False), (False, True)


def pv(timeline, require, **kw) -> tuple[bool, bool]:
    return verdict(timeline, require, **kw)[:2]


# --- the type table -------------------------------------------------------------------------


def test_contains_type_table() -> None:
    """GRADING.md § The bound value's type is load-bearing, measured rows."""
    assert contains("http://api/deliveries/4021", 4021) is False
    assert contains("http://api/deliveries/4021", "4021") is True
    assert contains(4021, "http://api/deliveries/4021") is False
    assert contains(["W1", "W2"], "W1") is True
    assert contains(["W1", "W2"], ["W1"]) is False
    assert (1 == 1.0) and (1.0 == True)  # noqa: E712 — three JSON types, one value
    assert apply_operator("equals", True, 1) and apply_operator("equals", 1.0, 1)


def test_contains_recurses_into_dict_values_never_keys() -> None:
    assert contains({"a": {"b": ["x", "W1"]}}, "W1") is True
    assert contains({"W1": "y"}, "W1") is False
    assert contains(5, 5) is True and contains(5, "5") is False
    assert contains([[1, 2]], 2) is True and contains([[1, 2]], [1, 2]) is False
    assert contains("Already Refunded", "already refunded") is False
    assert contains("Already Refunded", "already refunded", ci=True) is True


@pytest.mark.parametrize(
    ("op", "value", "operand", "holds"),
    [
        ("gt", True, 0, False),  # a bool is not a number
        ("gt", "5", 0, False),  # nor is a numeric string
        ("gt", 5, 0, True),
        ("gte", 0.0, 0, True),
        ("lt", -1, 0, True),
        ("lte", 1, 0, False),
        ("len_gt", 5, 0, False),  # a number has no length
        ("len_gt", "", 0, False),
        ("len_gt", "q", 0, True),
        ("len_gte", [], 0, True),
        ("len_gte", {"a": 1}, 2, False),
        ("equals_ci", "DENIED", "denied", True),
        ("equals_ci", 1, "1", False),
        ("in_", "b", ["a", "b"], True),
        ("not_in", "c", ["a", "b"], True),
        ("not_in", "a", ["a", "b"], False),
        ("not_equals", "R-2", "R-1", True),
        ("exists", 0, True, True),
        ("exists", "", False, False),
    ],
)
def test_operator_table(op: str, value: Any, operand: Any, holds: bool) -> None:
    assert apply_operator(op, value, operand) is holds


def test_regex_is_unanchored_and_only_a_string_matches() -> None:
    pat = compile_regex(r"ref \d+", "linear")
    assert apply_operator("regex", "see ref 42 here", pat.pattern, pat)
    assert not apply_operator("regex", 42, pat.pattern, pat)


def test_the_linear_engine_reads_digit_as_ascii_and_backtracking_as_unicode() -> None:
    arabic_three = "reference \u0663"
    assert compile_regex(r"reference \d", "linear").search(arabic_three) is None
    assert compile_regex(r"reference \d", "backtracking").search(arabic_three) is not None


@pytest.mark.parametrize(
    "op", ["equals", "not_equals", "contains", "in_", "not_in", "gt", "len_gte", "equals_ci"]
)
def test_no_operator_but_exists_holds_over_none(op: str) -> None:
    operand = {"in_": ["x"], "not_in": ["x"], "gt": 0, "len_gte": 0}.get(op, "x")
    assert apply_operator(op, None, operand) is False
    assert apply_operator("exists", None, False) is True


def test_comparability_table() -> None:
    assert can_ever_hold("equals_binding", "integer", "boolean")
    assert can_ever_hold("equals_binding", "array", "array")
    assert not can_ever_hold("equals_binding", "string", "integer")
    assert not can_ever_hold("equals_binding", "array", "object")
    assert can_ever_hold("contains_binding", "array", "integer")
    assert can_ever_hold("contains_binding", "object", "string")
    assert not can_ever_hold("contains_binding", "array", "array")
    assert not can_ever_hold("contains_binding", "string", "integer")
    assert not can_ever_hold("contains_binding", "integer", "string")
    assert can_ever_hold("contains_binding", "integer", "number")
    assert json_type(True) == "boolean" and json_type(1) == "integer"


# --- matchers over a timeline ---------------------------------------------------------------


def test_an_absent_argument_satisfies_no_negative_predicate() -> None:
    t = Script().user().say().call("refund", {}).build()
    assert (
        pv(t, {"present": {"match": tc("refund", args={"refund_id": {"not_equals": "R-1"}})}})
        == FAIL
    )
    assert (
        pv(t, {"present": {"match": tc("refund", args={"refund_id": {"exists": False}})}}) == PASS
    )


def test_args_reach_nested_paths_by_dotted_segments() -> None:
    t = Script().user().say().call("http", {"json": {"q": "lost parcel"}}).build()
    assert pv(t, {"present": {"match": tc("http", args={"json.q": {"len_gt": 0}})}}) == PASS
    assert (
        pv(t, {"present": {"match": tc("http", args={"json.q.deeper": {"exists": True}})}}) == FAIL
    )


def test_a_predicate_is_the_conjunction_of_its_operators() -> None:
    t = Script().user().say().call("pay", {"amount": 50}).build()
    assert pv(t, {"present": {"match": tc("pay", args={"amount": {"gt": 0, "lt": 100}})}}) == PASS
    assert pv(t, {"present": {"match": tc("pay", args={"amount": {"gt": 0, "lt": 10}})}}) == FAIL


def test_tool_call_reads_status_and_result_through_its_paired_result() -> None:
    t = (
        Script()
        .user()
        .say()
        .call("refund", {"id": "O-1"}, status="error", result="already refunded")
        .build()
    )
    m = tc(
        "refund",
        args={"id": {"equals": "O-1"}},
        status={"equals": "error"},
        result={"contains": "already"},
    )
    r = evaluate_trace_checks(t, one({"present": {"match": m}})).results[0]
    assert (r.passed, r.matched_positions) == (True, (2,))  # the call event's position


def test_a_call_that_never_executed_is_undecidable_for_a_status_matcher() -> None:
    t = Script().user().say().call("update_case", executed=False).build()
    passed, undecided, msg = verdict(
        t, {"present": {"match": tc("update_case", status={"equals": "success"})}}
    )
    assert (passed, undecided) == UNDECIDED
    assert "status at positions [2] (the call never executed)" in msg


def test_undecidability_is_scoped_to_the_matcher() -> None:
    """An event whose other predicates already fail is decided; an unexecuted call to a tool
    the matcher does not name changes nothing."""
    t = Script().user().say().call("update_case", executed=False).build()
    assert pv(t, {"absent": {"match": tc("delete_row", status={"equals": "success"})}}) == PASS
    assert (
        pv(t, {"absent": {"match": tc("update_case", status={"equals": "success"})}}) == UNDECIDED
    )


def test_a_fully_recorded_call_is_decided() -> None:
    t = Script().user().say().call("update_case", status="error").build()
    assert pv(t, {"present": {"match": tc("update_case", status={"equals": "success"})}}) == FAIL


def test_records_less_timelines_leave_status_and_executor_undecidable_but_result_readable() -> None:
    t = Script(records=False).user().say().call("refund", result="Error: already refunded").build()
    assert pv(t, {"present": {"match": tc("refund", status={"equals": "error"})}}) == UNDECIDED
    assert pv(t, {"present": {"match": tc("refund", executor={"equals": "agent"})}}) == UNDECIDED
    assert (
        pv(t, {"present": {"match": {"kind": "tool_result", "result": {"contains": "already"}}}})
        == PASS
    )
    passed, undecided, msg = verdict(
        t, {"present": {"match": tc("refund", status={"equals": "error"})}}
    )
    assert "no tool-call record was supplied" in msg


def test_status_not_success_matches_nothing_it_cannot_read() -> None:
    """status != success is undecided, never a silent match, on a records-less timeline."""
    t = Script(records=False).user().say().call("a").say().call("b").build()
    assert (
        pv(t, {"absent": {"match": {"kind": "tool_result", "status": {"not_equals": "success"}}}})
        == UNDECIDED
    )


def test_result_on_an_unanswered_call_is_undecidable() -> None:
    t = Script().user().say().call("lookup", executed=False).build()
    assert pv(t, {"present": {"match": tc("lookup", result={"contains": "x"})}}) == UNDECIDED


def test_executor_is_matchable() -> None:
    t = Script().user().say().call("ship", executor="user").build()
    assert pv(t, {"present": {"match": tc("ship", executor={"equals": "user"})}}) == PASS
    assert (
        pv(t, {"present": {"match": {"kind": "tool_result", "executor": {"equals": "agent"}}}})
        == FAIL
    )


def test_message_matchers_read_text() -> None:
    t = Script().user("where is my parcel").say("Your reference 42 is lost").build()
    assert (
        pv(
            t,
            {
                "present": {
                    "match": {"kind": "assistant_message", "text": {"regex": r"reference \d"}}
                }
            },
        )
        == PASS
    )
    assert (
        pv(t, {"present": {"match": {"kind": "user_message", "text": {"contains_ci": "PARCEL"}}}})
        == PASS
    )
    assert (
        pv(t, {"present": {"match": {"kind": "user_message", "text": {"equals_ci": "WHERE"}}}})
        == FAIL
    )


def test_within_restricts_every_matcher() -> None:
    """The opening user prompt shares turn 0, so first_turn: 0, last_turn: 1 covers two
    assistant turns."""
    t = Script().user().say().call("a").say().call("b").say().call("email").build()
    req = {"absent": {"match": tc("email")}}
    assert pv(t, req, within={"first_turn": 0, "last_turn": 1}) == PASS
    assert pv(t, req, within={"first_turn": 2}) == FAIL
    assert pv(t, {"present": {"match": {"kind": "user_message"}}}, within={"last_turn": 0}) == PASS


def test_one_compiler_with_one_bounded_cache() -> None:
    """Trace checks and transcript rules compile through one cached function; a pattern
    seen twice is compiled once, and the cache has a bound."""
    from replay.grading.patterns import COMPILED_CACHE

    compile_regex.cache_clear()
    first = compile_regex(r"ref \d+", "linear")
    assert compile_regex(r"ref \d+", "linear") is first
    folded = compile_regex(r"REF \d+", "linear", ignore_case=True)
    assert folded.search("ref 7") and not compile_regex(r"REF \d+", "linear").search("ref 7")
    info = compile_regex.cache_info()
    assert (info.hits, info.misses, info.maxsize) == (1, 3, COMPILED_CACHE)
    with pytest.raises(ValueError, match="missing"):  # the engine's complaint, as text
        compile_regex("(a", "linear", ignore_case=True)
