"""The trial event timeline, one test per guarantee / non-guarantee of GRADING.md
§ Trial event timeline (G1–G8, N2–N7), built from small hand-written trajectories.

Expected values are written from the spec text, never from a previous run.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from replay.timeline.build import (
    TIMELINE_VERSION,
    assistant_texts,
    attempted_calls,
    build_trial_timeline,
    call_event,
    message_event,
    result_event,
    timeline_from_payloads,
    timeline_to_payloads,
)
from replay.timeline.views import (
    ERROR_PREFIX,
    NO_MESSAGE_FAILURE_TEXT,
    agent_facing_text,
    exception_failure_text,
    tool_not_found_text,
)
from schemas.canonical import canonical_json, parse_json
from schemas.timeline import (
    Message,
    RecordedToolCall,
    Role,
    TimelineInconsistencyError,
    ToolCallDecl,
    ToolExecutionStatus,
    ToolExecutorIdentity,
    TraceEvent,
    TraceEventKind,
    TrialTimeline,
)
from tests.data_paths import NOTES

AGENT = ToolExecutorIdentity.AGENT
USER_EXEC = ToolExecutorIdentity.USER
S = ToolExecutionStatus
K = TraceEventKind


# --- tiny builders -----------------------------------------------------------------------


def call(raw_id: str, name: str, **arguments) -> ToolCallDecl:
    return ToolCallDecl(raw_id, name, arguments)


def user(text: str = "", *calls: ToolCallDecl) -> Message:
    return Message(Role.USER, text, tuple(calls))


def assistant(text: str = "", *calls: ToolCallDecl) -> Message:
    return Message(Role.ASSISTANT, text, tuple(calls))


def tool(call_id: str | None, text: str) -> Message:
    return Message(Role.TOOL, text, tool_call_id=call_id)


def system(text: str) -> Message:
    return Message(Role.SYSTEM, text)


def rec(
    call_id: str,
    sequence: int,
    name: str,
    status: ToolExecutionStatus = S.SUCCESS,
    output: str | None = "ok",
    executor: ToolExecutorIdentity = AGENT,
    latency: float | None = 0.25,
    **arguments,
) -> RecordedToolCall:
    return RecordedToolCall(call_id, sequence, name, arguments, executor, status, output, latency)


def shape(timeline: TrialTimeline) -> list[tuple]:
    """(kind, turn_index, call_id or text) per event: the order-bearing part of an event."""
    return [
        (e.kind.value, e.turn_index, e.text if e.call_id is None else e.call_id)
        for e in timeline.events
    ]


def only(timeline: TrialTimeline, kind: TraceEventKind) -> list[TraceEvent]:
    return [e for e in timeline.events if e.kind is kind]


# --- G1 ----------------------------------------------------------------------------------


def test_g1_positions_are_dense_and_follow_message_order() -> None:
    messages = [
        system("policy"),
        user("save a note"),
        assistant("", call("c1", "list_notes")),
        tool("c1", "[]"),
        assistant("saved?"),
        user("yes"),
        assistant("done"),
        system("User signaled stop. Dialogue ended."),
    ]
    timeline = build_trial_timeline(messages, [rec("c1", 0, "list_notes", output="[]")], None)
    assert [e.position for e in timeline.events] == list(range(7))
    assert shape(timeline) == [
        ("user_message", 0, "save a note"),
        ("assistant_message", 0, ""),
        ("tool_call", 0, "c1"),
        ("tool_result", 0, "c1"),
        ("assistant_message", 1, "saved?"),
        ("user_message", 1, "yes"),
        ("assistant_message", 2, "done"),
    ]


# --- G2 ----------------------------------------------------------------------------------


def test_g2_turn_index_counts_assistant_generations() -> None:
    """Every event one assistant message emits — the message, its calls, their results and
    the user message that answered it — carries that generation's index; the opening
    prompt carries 0."""
    messages = [
        user("prompt"),
        assistant("a0", call("c1", "t")),
        tool("c1", "r1"),
        assistant("a1"),
        user("reply to a1"),
        assistant("a2", call("c2", "t")),
        tool("c2", "r2"),
        user("reply to a2"),
    ]
    records = [rec("c1", 0, "t"), rec("c2", 1, "t")]
    for recorded in (records, None):
        timeline = build_trial_timeline(messages, recorded, None)
        assert [(e.kind.value, e.turn_index) for e in timeline.events] == [
            ("user_message", 0),
            ("assistant_message", 0),
            ("tool_call", 0),
            ("tool_result", 0),
            ("assistant_message", 1),
            ("user_message", 1),
            ("assistant_message", 2),
            ("tool_call", 2),
            ("tool_result", 2),
            ("user_message", 2),
        ]


def test_g2_messages_before_the_first_assistant_share_turn_0() -> None:
    timeline = build_trial_timeline(
        [user("one"), user("two"), assistant("first"), assistant("second")], None, None
    )
    assert [e.turn_index for e in timeline.events] == [0, 0, 0, 1]


# --- G3 ----------------------------------------------------------------------------------


def test_g3_unique_provider_ids_come_back_byte_for_byte() -> None:
    ids = ["toolu_01AbC", "call_pTuZjSgt8mq5JQgmJdZ8fPRe"]
    messages = [user("go"), assistant("", call(ids[0], "a"), call(ids[1], "b"))]
    messages += [tool(ids[0], "x"), tool(ids[1], "y")]
    timeline = build_trial_timeline(messages, [rec(ids[0], 0, "a"), rec(ids[1], 1, "b")], None)
    assert [e.call_id for e in only(timeline, K.TOOL_CALL)] == ids
    assert [e.call_id for e in only(timeline, K.TOOL_RESULT)] == ids


def test_g3_reused_provider_ids_are_disambiguated_in_observation_order() -> None:
    """A provider numbering calls per turn (<tool>:<index>) repeats ids across turns; the
    k-th occurrence of x is keyed x, x#2, x#3, … and the k-th declaration pairs with the
    k-th record of it — here told apart by their outputs."""
    messages = [
        user("go"),
        assistant("", call("read:0", "read", page=1)),
        tool("read:0", "page one"),
        assistant("", call("read:0", "read", page=2)),
        tool("read:0", "page two"),
        assistant("", call("read:0", "read", page=3)),
        tool("read:0", "page three"),
    ]
    records = [
        rec("read:0", 0, "read", output="page one"),
        rec("read:0", 1, "read", output="page two"),
        rec("read:0", 2, "read", output="page three"),
    ]
    for recorded in (records, None):
        timeline = build_trial_timeline(messages, recorded, None)
        pairs = [(c.call_id, c.arguments["page"], r.result) for c, r in attempted_calls(timeline)]
        assert pairs == [
            ("read:0", 1, "page one"),
            ("read:0#2", 2, "page two"),
            ("read:0#3", 3, "page three"),
        ]


def test_g3_ids_the_runtime_already_disambiguated_are_kept() -> None:
    """A bundle the runtime assigner wrote carries x and x#2 in every view; deriving again
    is the identity on it."""
    messages = [user("go"), assistant("", call("x", "t")), tool("x", "1")]
    messages += [assistant("", call("x#2", "t")), tool("x#2", "2")]
    timeline = build_trial_timeline(messages, [rec("x", 0, "t"), rec("x#2", 1, "t")], None)
    assert [e.call_id for e in only(timeline, K.TOOL_CALL)] == ["x", "x#2"]
    assert [e.status for e in only(timeline, K.TOOL_RESULT)] == [S.SUCCESS, S.SUCCESS]


def test_g3_agent_and_user_calls_share_one_derivation() -> None:
    """Both actors draw from one trial-scoped sequence, so a raw id the user's provider
    also minted is the second occurrence, not a clash."""
    messages = [
        user("go"),
        assistant("", call("c", "lookup")),
        tool("c", "found"),
        assistant("anything else?"),
        user("checking my account", call("c", "my_account")),
    ]
    records = [rec("c", 0, "lookup"), rec("c", 1, "my_account", executor=USER_EXEC)]
    timeline = build_trial_timeline(messages, records, None)
    assert [(c.call_id, c.tool_name, c.executor) for c, _ in attempted_calls(timeline)] == [
        ("c", "lookup", AGENT),
        ("c#2", "my_account", USER_EXEC),
    ]


# --- G4 ----------------------------------------------------------------------------------


def test_g4_terminating_turn_calls_are_tool_calls_without_results() -> None:
    """Termination is decided before a turn's calls execute: they reach the message view,
    never run, and are emitted as tool_calls with no result and status None."""
    messages = [
        user("go"),
        assistant("", call("a", "t")),
        tool("a", "ok"),
        assistant("", call("b", "t"), call("c", "u")),
        system("Maximum turns (2) reached. Dialogue terminated."),
    ]
    timeline = build_trial_timeline(messages, [rec("a", 0, "t")], "max_turns")
    assert shape(timeline)[-3:] == [
        ("assistant_message", 1, ""),
        ("tool_call", 1, "b"),
        ("tool_call", 1, "c"),
    ]
    pairs = attempted_calls(timeline)
    assert [(c.call_id, r is None) for c, r in pairs] == [("a", False), ("b", True), ("c", True)]
    for never_ran, _ in pairs[1:]:
        assert (never_ran.executor, never_ran.status, never_ran.latency_seconds) == (None,) * 3


def test_g4_rejected_calls_emit_a_normal_pair() -> None:
    messages = [
        user("go"),
        assistant("", call("a", "no_such_tool"), call("b", "add", n="x")),
        tool("a", ERROR_PREFIX + tool_not_found_text("no_such_tool")),
        tool("b", "Error: n: not an integer"),
    ]
    records = [
        rec("a", 0, "no_such_tool", S.TOOL_NOT_FOUND, tool_not_found_text("no_such_tool")),
        rec("b", 1, "add", S.INVALID_ARGUMENTS, "n: not an integer"),
    ]
    results = only(build_trial_timeline(messages, records, None), K.TOOL_RESULT)
    assert [(r.call_id, r.status, r.result) for r in results] == [
        ("a", S.TOOL_NOT_FOUND, "Tool 'no_such_tool' not found"),
        ("b", S.INVALID_ARGUMENTS, "n: not an integer"),
    ]


def test_g4_trial_lost_call_has_the_never_executed_shape() -> None:
    """trial_not_found: the call reached no tool, no record, no tool message."""
    messages = [user("go"), assistant("", call("a", "t"))]
    timeline = build_trial_timeline(messages, [], "trial_lost")
    assert shape(timeline) == [
        ("user_message", 0, "go"),
        ("assistant_message", 0, ""),
        ("tool_call", 0, "a"),
    ]
    assert timeline.termination_reason == "trial_lost"
    assert timeline.records_present is True


# --- G5 ----------------------------------------------------------------------------------


def test_g5_the_record_wins_for_result_and_status() -> None:
    messages = [user("go"), assistant("", call("a", "t")), tool("a", "Error: disk full (trunc")]
    records = [rec("a", 0, "t", S.ERROR, "disk full (the whole untruncated text)", latency=0.5)]
    (result,) = only(build_trial_timeline(messages, records, None), K.TOOL_RESULT)
    assert (result.status, result.result, result.executor, result.latency_seconds) == (
        S.ERROR,
        "disk full (the whole untruncated text)",
        AGENT,
        0.5,
    )


def test_g5_the_four_failure_text_forms() -> None:
    assert tool_not_found_text("send_mail") == "Tool 'send_mail' not found"
    assert NO_MESSAGE_FAILURE_TEXT == "Tool returned failure with no error message"
    assert exception_failure_text(ValueError("bad date")) == "bad date"
    assert exception_failure_text(KeyError()) == "KeyError"  # no message: the class name


def test_g5_the_message_view_carries_the_record_text_behind_error_prefix() -> None:
    failed = rec("a", 0, "t", S.ERROR, "boom")
    assert agent_facing_text(failed) == "Error: boom"
    assert agent_facing_text(rec("a", 0, "t", S.SUCCESS, "Error: is data here")) == (
        "Error: is data here"
    )
    messages = [user("go"), assistant("", call("a", "t")), tool("a", agent_facing_text(failed))]
    with_record = only(build_trial_timeline(messages, [failed], None), K.TOOL_RESULT)
    without = only(build_trial_timeline(messages, None, None), K.TOOL_RESULT)
    assert (with_record[0].result, without[0].result) == ("boom", "Error: boom")


# --- G6 ----------------------------------------------------------------------------------


def test_g6_records_only_pairs_in_sequence_order_at_turn_0() -> None:
    """System messages are not events (N3), so a policy-only transcript is records-only."""
    records = [rec("b", 1, "second"), rec("a", 0, "first", S.ERROR, "bad")]
    timeline = build_trial_timeline([system("policy")], records, "agent_done")
    assert (timeline.message_view_present, timeline.records_present) == (False, True)
    assert [(e.kind.value, e.turn_index, e.call_id, e.tool_name) for e in timeline.events] == [
        ("tool_call", 0, "a", "first"),
        ("tool_result", 0, "a", "first"),
        ("tool_call", 0, "b", "second"),
        ("tool_result", 0, "b", "second"),
    ]
    assert timeline.events[1].status is S.ERROR and timeline.events[1].result == "bad"
    assert timeline.events[0].arguments == {}


def test_g6_records_only_keys_derive_in_sequence_order() -> None:
    records = [rec("x", 0, "t"), rec("x", 1, "t"), rec("x", 2, "t")]
    calls = only(build_trial_timeline([], records, None), K.TOOL_CALL)
    assert [e.call_id for e in calls] == ["x", "x#2", "x#3"]


def test_g6_no_view_at_all_is_an_empty_timeline_with_both_flags_false() -> None:
    timeline = build_trial_timeline([system("policy")], None, None)
    assert timeline == TrialTimeline((), False, False, None)


def test_empty_record_view_differs_from_no_record_view() -> None:
    """records_present means "a record view was supplied" (G6b), so an empty tool_log is a
    record view with no calls. Note: Tolokaforge's TRACE_REPLAY.md says
    the upstream timeline reports *no* record view for an empty tool_log (its builder takes
    a plain sequence and cannot tell the two apart). We keep the absent/empty distinction
    the brief and FORMATS.md § 3 draw (absent -> ([], False), [] -> ([], True))."""
    messages = [user("hi"), assistant("hello")]
    assert build_trial_timeline(messages, [], None).records_present is True
    assert build_trial_timeline(messages, None, None).records_present is False
    assert build_trial_timeline([], [], None) == TrialTimeline((), False, True, None)


# --- G6b ---------------------------------------------------------------------------------


def test_g6b_messages_only_results_come_from_tool_messages() -> None:
    messages = [
        user("go"),
        assistant("", call("a", "t"), call("b", "u")),
        tool("a", "fine"),
        tool("b", "Error: boom"),
    ]
    timeline = build_trial_timeline(messages, None, "agent_done")
    assert (timeline.message_view_present, timeline.records_present) == (True, False)
    results = only(timeline, K.TOOL_RESULT)
    assert [(r.call_id, r.tool_name, r.result) for r in results] == [
        ("a", "t", "fine"),
        ("b", "u", "Error: boom"),
    ]
    for e in timeline.events:
        assert (e.executor, e.status, e.latency_seconds) == (None, None, None)


def test_g6b_results_join_by_key_never_by_position() -> None:
    messages = [
        user("go"),
        assistant("", call("a", "t"), call("b", "u")),
        tool("b", "answer to b"),
        tool("a", "answer to a"),
    ]
    pairs = attempted_calls(build_trial_timeline(messages, None, None))
    assert [(c.call_id, r.result) for c, r in pairs] == [("a", "answer to a"), ("b", "answer to b")]


def test_g6b_tool_message_answering_an_undeclared_key_raises() -> None:
    messages = [user("go"), assistant("", call("a", "t")), tool("a", "ok"), tool("zz", "?")]
    with pytest.raises(TimelineInconsistencyError) as caught:
        build_trial_timeline(messages, None, None)
    err = caught.value
    assert (err.call_id, err.where) == ("zz", "messages[3]")
    assert "'zz'" in str(err) and "messages[3]" in str(err)


def test_g6b_answering_an_id_more_times_than_declared_raises() -> None:
    messages = [user("go"), assistant("", call("a", "t")), tool("a", "ok"), tool("a", "again")]
    with pytest.raises(TimelineInconsistencyError) as caught:
        build_trial_timeline(messages, None, None)
    assert (caught.value.call_id, caught.value.where) == ("a#2", "messages[3]")


def test_g6b_tool_message_without_a_call_id_raises() -> None:
    messages = [user("go"), assistant("", call("a", "t")), tool(None, "ok")]
    with pytest.raises(TimelineInconsistencyError) as caught:
        build_trial_timeline(messages, None, None)
    assert caught.value.where == "messages[2]"
    assert "tool_call_id" in str(caught.value)


def test_g6b_a_tool_message_answers_the_kth_declaration_of_its_id_whichever_actor() -> None:
    """GRADING.md G6b joins a role: tool message to "the message view", not to the
    assistant messages, so the k-th answer of raw id x answers the k-th declaration of x,
    user declarations included (Tolokaforge 0.33.1 keys both views the same way). On a
    bundle from before the shared assigner where both actors minted "a", the one answer
    naming "a" is therefore the user's call's, and the agent's "a#2" stays unanswered."""
    messages = [
        user("go"),
        assistant("check your balance"),
        user("it is 5", call("a", "check_balance")),
        assistant("", call("a", "list_notes")),
        tool("a", "[]"),
    ]
    pairs = attempted_calls(build_trial_timeline(messages, None, None))
    assert [(c.call_id, c.tool_name, r and r.result) for c, r in pairs] == [
        ("a", "check_balance", "[]"),
        ("a#2", "list_notes", None),
    ]


def test_g6b_a_tool_message_answering_a_user_declared_call_is_joined() -> None:
    """Not a TimelineInconsistencyError (GRADING.md G6b): the answer is joined to the call
    the user message declared, and (a user tool step: the message declares calls that the
    run of role: tool messages right after it answers) the step's message is no event."""
    messages = [user("go"), assistant("check"), user("", call("u1", "confirm_identity"))]
    messages.append(tool("u1", "identity confirmed"))
    timeline = build_trial_timeline(messages, None, None)
    assert [(e.kind, e.call_id, e.result) for e in timeline.events] == [
        (K.USER_MESSAGE, None, None),
        (K.ASSISTANT_MESSAGE, None, None),
        (K.TOOL_CALL, "u1", None),
        (K.TOOL_RESULT, "u1", "identity confirmed"),
    ]
    assert [e.turn_index for e in timeline.events] == [0, 0, 0, 0]


def test_g6b_a_tool_message_answering_no_declaration_still_raises() -> None:
    messages = [user("go"), assistant("check"), user("5", call("u1", "check_balance"))]
    messages.append(tool("u2", "5"))
    with pytest.raises(TimelineInconsistencyError) as caught:
        build_trial_timeline(messages, None, None)
    assert (caught.value.call_id, caught.value.where) == ("u2", "messages[3]")


def test_g6b_with_records_present_tool_messages_are_shadowed_and_not_validated() -> None:
    """Neither read nor validated: a stray answer does not fail a records-present build."""
    messages = [user("go"), assistant("", call("a", "t")), tool("a", "ok"), tool("zz", "?")]
    timeline = build_trial_timeline(messages, [rec("a", 0, "t", output="recorded")], None)
    assert [r.result for r in only(timeline, K.TOOL_RESULT)] == ["recorded"]


# --- G7 ----------------------------------------------------------------------------------


def test_g7_unlinkable_record_raises_naming_key_sequence_and_tool() -> None:
    messages = [user("go"), assistant("", call("a", "t")), tool("a", "ok")]
    records = [rec("a", 0, "t"), rec("ghost", 1, "delete_all")]
    with pytest.raises(TimelineInconsistencyError) as caught:
        build_trial_timeline(messages, records, None)
    err = caught.value
    assert (err.call_id, err.where) == ("ghost", "tool_log sequence 1")
    assert "'ghost'" in str(err) and "sequence 1" in str(err) and "'delete_all'" in str(err)


def test_g7_a_surplus_occurrence_of_an_id_is_unlinkable() -> None:
    """The record holds x twice, the message view declares it once: the surplus record's
    key is x#2, which names a call nothing asked for."""
    messages = [user("go"), assistant("", call("x", "t")), tool("x", "ok")]
    with pytest.raises(TimelineInconsistencyError) as caught:
        build_trial_timeline(messages, [rec("x", 0, "t"), rec("x", 1, "t")], None)
    assert (caught.value.call_id, caught.value.where) == ("x#2", "tool_log sequence 1")


def test_g7_record_naming_another_tool_than_its_declaration_raises() -> None:
    messages = [user("go"), assistant("", call("a", "read_file")), tool("a", "ok")]
    with pytest.raises(TimelineInconsistencyError) as caught:
        build_trial_timeline(messages, [rec("a", 4, "delete_file")], None)
    err = caught.value
    assert (err.call_id, err.where) == ("a", "tool_log sequence 4")
    assert "'delete_file'" in str(err) and "'read_file'" in str(err) and "messages[1]" in str(err)


def test_g7_records_only_has_nothing_to_link_and_never_raises() -> None:
    timeline = build_trial_timeline([], [rec("ghost", 0, "delete_all")], None)
    assert [e.call_id for e in timeline.events] == ["ghost", "ghost"]


def test_two_records_with_one_sequence_raise() -> None:
    """Not a G7 case but the same posture: the recorder stamps each sequence once, so two
    records at one sequence cannot be put in execution order (G8) and are refused loudly."""
    messages = [user("go"), assistant("", call("a", "t"), call("b", "t"))]
    with pytest.raises(TimelineInconsistencyError) as caught:
        build_trial_timeline(messages, [rec("b", 3, "t"), rec("a", 3, "t")], None)
    assert caught.value.where == "tool_log sequence 3"


# --- G8 ----------------------------------------------------------------------------------


def test_g8_executed_calls_follow_recorded_sequence_within_a_turn() -> None:
    """Declared a, b, c; recorded as executed c, a, b. The calls come out in execution
    order, each followed by its own result ("a call's own result sits between it and the
    next call", GRADING.md § Trace Checks, among)."""
    messages = [user("go"), assistant("", call("a", "t"), call("b", "t"), call("c", "t"))]
    records = [rec("c", 0, "t"), rec("a", 1, "t"), rec("b", 2, "t")]
    timeline = build_trial_timeline(messages, records, None)
    assert shape(timeline)[2:] == [
        ("tool_call", 0, "c"),
        ("tool_result", 0, "c"),
        ("tool_call", 0, "a"),
        ("tool_result", 0, "a"),
        ("tool_call", 0, "b"),
        ("tool_result", 0, "b"),
    ]


def test_g8_never_executed_calls_follow_executed_ones_in_declaration_order() -> None:
    messages = [
        user("go"),
        assistant("", call("a", "t"), call("b", "t"), call("c", "t"), call("d", "t")),
    ]
    timeline = build_trial_timeline(messages, [rec("c", 0, "t")], None)
    assert shape(timeline)[2:] == [
        ("tool_call", 0, "c"),
        ("tool_result", 0, "c"),
        ("tool_call", 0, "a"),
        ("tool_call", 0, "b"),
        ("tool_call", 0, "d"),
    ]


def test_messages_only_calls_keep_declaration_order_with_results_interleaved() -> None:
    """No record, no execution order: declaration order (G1), same interleaving as G8."""
    messages = [
        user("go"),
        assistant("", call("a", "t"), call("b", "t"), call("c", "t")),
        tool("a", "1"),
        tool("b", "2"),
    ]
    assert shape(build_trial_timeline(messages, None, None))[2:] == [
        ("tool_call", 0, "a"),
        ("tool_result", 0, "a"),
        ("tool_call", 0, "b"),
        ("tool_result", 0, "b"),
        ("tool_call", 0, "c"),
    ]


# --- N2 … N7 -----------------------------------------------------------------------------


def test_n2_user_executed_call_gets_its_result_from_the_record() -> None:
    """The user turn inlines its results into its text and emits no role: tool message."""
    messages = [
        user("go"),
        assistant("please check your balance"),
        user("my balance is 5", call("u1", "check_balance", account="me")),
        assistant("thanks"),
    ]
    records = [rec("u1", 0, "check_balance", output="5", executor=USER_EXEC, account="me")]
    timeline = build_trial_timeline(messages, records, None)
    assert [(e.kind.value, e.turn_index) for e in timeline.events] == [
        ("user_message", 0),
        ("assistant_message", 0),
        ("user_message", 0),
        ("tool_call", 0),
        ("tool_result", 0),
        ("assistant_message", 1),
    ]
    call_event, result_event = timeline.events[3:5]
    assert (call_event.executor, call_event.arguments) == (USER_EXEC, {"account": "me"})
    assert (result_event.executor, result_event.status, result_event.result) == (
        USER_EXEC,
        S.SUCCESS,
        "5",
    )


def test_n2_user_call_on_a_records_less_timeline_has_no_result() -> None:
    messages = [user("go"), assistant("check"), user("5", call("u1", "check_balance"))]
    pairs = attempted_calls(build_trial_timeline(messages, None, None))
    assert [(c.call_id, c.executor, r) for c, r in pairs] == [("u1", None, None)]


def test_n3_system_messages_are_not_events() -> None:
    messages = [
        system("You are a helpful agent. Policy: …"),
        user("hi"),
        assistant("hello"),
        system("Maximum turns (1) reached. Dialogue terminated."),
    ]
    timeline = build_trial_timeline(messages, None, "max_turns")
    assert [e.text for e in timeline.events] == ["hi", "hello"]
    assert timeline.termination_reason == "max_turns"  # the typed channel for that notice


def test_n3_tool_calls_on_a_system_message_are_not_events() -> None:
    stray = Message(Role.SYSTEM, "notice", (call("s", "t"),))
    assert build_trial_timeline([user("hi"), stray], None, None).events[1:] == ()


def test_n4_text_is_the_wire_text_and_screenshot_only_turns_are_empty() -> None:
    messages = [user("  spaced\n"), assistant(""), user("")]
    timeline = build_trial_timeline(messages, None, None)
    assert [e.text for e in timeline.events] == ["  spaced\n", "", ""]


def test_n5_timeout_status_passes_through_from_the_record() -> None:
    messages = [user("go"), assistant("", call("a", "slow"))]
    records = [rec("a", 0, "slow", S.TIMEOUT, "Tool 'slow' timed out")]
    (result,) = only(build_trial_timeline(messages, records, None), K.TOOL_RESULT)
    assert result.status is S.TIMEOUT


def test_n7_trace_event_is_not_hashable_and_equality_is_unaffected() -> None:
    timeline = build_trial_timeline([user("go"), assistant("", call("a", "t"))], [], None)
    for event in timeline.events:  # a message event fails like a tool_call does
        with pytest.raises(TypeError):
            hash(event)
    again = build_trial_timeline([user("go"), assistant("", call("a", "t"))], [], None)
    assert timeline.events == again.events


def test_arguments_are_a_dict_on_every_tool_call_even_empty() -> None:
    messages = [user("go"), assistant("", call("a", "t"))]
    for recorded in ([], None, [rec("a", 0, "t")]):
        (c,) = only(build_trial_timeline(messages, recorded, None), K.TOOL_CALL)
        assert c.arguments == {}
    (c,) = only(build_trial_timeline([], [rec("a", 0, "t")], None), K.TOOL_CALL)
    assert c.arguments == {}


# --- accessors ---------------------------------------------------------------------------


def test_attempted_calls_pairs_each_call_with_its_result_or_none() -> None:
    messages = [
        user("go"),
        assistant("", call("a", "t")),
        tool("a", "ok"),
        assistant("", call("b", "t")),
    ]
    timeline = build_trial_timeline(messages, [rec("a", 0, "t", output="A")], None)
    pairs = attempted_calls(timeline)
    assert [(c.position, None if r is None else r.position) for c, r in pairs] == [
        (2, 3),
        (5, None),
    ]


def test_assistant_texts_are_indexed_by_turn() -> None:
    messages = [user("u"), assistant("zero"), user("v"), assistant(""), assistant("two")]
    timeline = build_trial_timeline(messages, None, None)
    texts = assistant_texts(timeline)
    assert texts == ("zero", "", "two")
    for e in only(timeline, K.ASSISTANT_MESSAGE):
        assert texts[e.turn_index] == e.text


# --- payloads ----------------------------------------------------------------------------


def _sample_timeline() -> TrialTimeline:
    messages = [
        user("go"),
        assistant("", call("a", "t", q=[1, {"k": None}]), call("b", "u")),
        tool("a", "ok"),
    ]
    return build_trial_timeline(messages, [rec("a", 0, "t", latency=0.1)], "max_turns")


def test_payloads_round_trip_through_canonical_json() -> None:
    timeline = _sample_timeline()
    payloads = parse_json(canonical_json(timeline_to_payloads(timeline)))
    assert payloads[2] == {
        "timeline_version": TIMELINE_VERSION,
        "message_view_present": True,
        "records_present": True,
        "position": 2,
        "turn_index": 0,
        "kind": "tool_call",
        "text": None,
        "call_id": "a",
        "tool_name": "t",
        "executor": "agent",
        "arguments": {"q": [1, {"k": None}]},
        "status": None,
        "result": None,
        "latency_seconds": None,
    }
    assert payloads[3]["status"] == "success" and payloads[3]["latency_seconds"] == 0.1
    assert timeline_from_payloads(payloads, termination_reason="max_turns") == timeline


def test_from_payloads_needs_flags_for_an_empty_timeline() -> None:
    with pytest.raises(ValueError, match="message_view_present"):
        timeline_from_payloads([])
    empty = timeline_from_payloads([], message_view_present=True, records_present=False)
    assert empty == TrialTimeline((), True, False, None)


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda p: p[1].update(colour="red"), r"payload #1: unknown keys \['colour'\]"),
        (lambda p: p[0].pop("text"), r"payload #0: .*missing keys \['text'\]"),
        (lambda p: p[2].update(timeline_version="timeline/0"), "payload #2: timeline_version"),
        (lambda p: p[3].update(records_present=False), "payload #3: records_present"),
        (lambda p: p[1].update(position=7), "payload #1: position 7 should be 1"),
        (lambda p: p[3].update(status="fine"), "payload #3: 'fine' is not a valid"),
        (lambda p: p[0].update(message_view_present=None), "payload #0: message_view_present"),
    ],
)
def test_from_payloads_refuses_malformed_payloads_by_index_and_key(edit, match) -> None:
    payloads = timeline_to_payloads(_sample_timeline())
    edit(payloads)
    with pytest.raises(ValueError, match=match):
        timeline_from_payloads(payloads)


def test_fast_constructors_equal_dataclass_init() -> None:
    """The builder sets TraceEvent slots directly (speed); that must build the very object
    TraceEvent(...) builds, and stays valid only while TraceEvent has no __post_init__."""
    assert not hasattr(TraceEvent, "__post_init__")
    assert [f.name for f in dataclasses.fields(TraceEvent)] == [
        "position",
        "turn_index",
        "kind",
        "text",
        "call_id",
        "tool_name",
        "executor",
        "arguments",
        "status",
        "result",
        "latency_seconds",
        "agent",
    ]
    assert message_event(3, 1, K.USER_MESSAGE, "hi") == TraceEvent(3, 1, K.USER_MESSAGE, "hi")
    assert message_event(3, 1, K.USER_MESSAGE, "hi", "a/b") == TraceEvent(
        3, 1, K.USER_MESSAGE, "hi", agent="a/b"
    )
    assert call_event(4, 1, "c", "t", AGENT, {}, "a") == TraceEvent(
        4, 1, K.TOOL_CALL, call_id="c", tool_name="t", executor=AGENT, arguments={}, agent="a"
    )
    assert call_event(4, 1, "c", "t", AGENT, {"a": 1}) == TraceEvent(
        4, 1, K.TOOL_CALL, call_id="c", tool_name="t", executor=AGENT, arguments={"a": 1}
    )
    assert result_event(5, 1, "c", "t", AGENT, S.ERROR, "boom", 0.5) == TraceEvent(
        5,
        1,
        K.TOOL_RESULT,
        call_id="c",
        tool_name="t",
        executor=AGENT,
        status=S.ERROR,
        result="boom",
        latency_seconds=0.5,
    )


# --- the notes corpus ---------------------------------------------------------------------


def _load_bundle(directory: Path) -> tuple[list[Message], list[RecordedToolCall] | None, dict]:
    trajectory = yaml.load((directory / "trajectory.yaml").read_text(), Loader=yaml.CSafeLoader)
    messages = [
        Message(
            Role(m["role"]),
            m["content"] or "",
            tuple(ToolCallDecl(c["id"], c["name"], c["arguments"]) for c in m["tool_calls"] or ()),
            m["tool_call_id"],
        )
        for m in trajectory["messages"]
    ]
    log = directory / "tool_log.yaml"
    if not log.exists():
        return messages, None, trajectory
    records = [
        RecordedToolCall(
            r["call_id"],
            r["sequence"],
            r["tool_name"],
            r["arguments"],
            ToolExecutorIdentity(r["executor"]),
            ToolExecutionStatus(r["status"]),
            r["output"],
            r["latency_seconds"],
            r["timestamp"],
        )
        for r in yaml.load(log.read_text(), Loader=yaml.CSafeLoader)
    ]
    return messages, records, trajectory


@pytest.mark.parametrize(("part", "expected_bundles"), [("met", 12), ("not_met", 5)])
def test_notes_corpus_bundles_build_with_counts_matching_the_files(part, expected_bundles) -> None:
    bundles = sorted(p.parent for p in (NOTES / part).glob("*/trajectory.yaml"))
    assert len(bundles) == expected_bundles
    for directory in bundles:
        messages, records, trajectory = _load_bundle(directory)
        timeline = build_trial_timeline(messages, records, trajectory["termination_reason"])
        assert timeline.records_present is (part == "met"), directory.name  # FORMATS.md § 1
        assert timeline.message_view_present
        counts = {kind: len(only(timeline, kind)) for kind in K}
        roles = [m.role for m in messages]
        assert counts[K.ASSISTANT_MESSAGE] == roles.count(Role.ASSISTANT)
        assert counts[K.USER_MESSAGE] == roles.count(Role.USER)
        assert counts[K.TOOL_CALL] == sum(len(m.tool_calls) for m in messages)
        answered = len(records) if records is not None else roles.count(Role.TOOL)
        assert counts[K.TOOL_RESULT] == answered, directory.name
        assert len(timeline.events) == sum(counts.values())
        assert (
            assistant_texts(timeline)[-1]
            == [m.content for m in messages if m.role is Role.ASSISTANT][-1]
        )
