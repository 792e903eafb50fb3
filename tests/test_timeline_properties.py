"""Invariants of the trial event timeline over generated, consistent trials.

The strategy simulates the recording side of GRADING.md § The recorded tool calls: an
agent loop that declares calls, executes them in declaration order with one trial-wide
sequence, answers each with a role: tool message (``Error: `` + recorded text on
failure), stops the episode at a failure or at a terminating turn (so never-executed
declarations are a trailing suffix — the suffix invariant of G3), and a user simulator
whose calls are recorded under ``executor: user`` with no role: tool message (N2).
Providers mint unique ids, per-turn ``<tool>:<index>`` ids, or ids from a tiny pool. The
user's ids never repeat an agent's raw id: both actors draw from one trial-scoped assigner
(G3), so a recorded user id is already distinct; a bundle from before that assigner, where
an answer's raw id names calls of both actors, is read as GRADING.md G6b states (test_timeline.py,
``test_g6b_a_tool_message_answers_the_kth_declaration_of_its_id_whichever_actor``).
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import assume, given, note, settings
from hypothesis import strategies as st

from replay.timeline.build import (
    attempted_calls,
    build_trial_timeline,
    timeline_from_payloads,
    timeline_to_payloads,
)
from replay.timeline.call_ids import derive_call_ids
from replay.timeline.views import agent_facing_text
from schemas.canonical import canonical_json, parse_json
from schemas.timeline import (
    Message,
    RecordedToolCall,
    Role,
    TimelineInconsistencyError,
    ToolCallDecl,
    ToolExecutionStatus,
    ToolExecutorIdentity,
    TraceEventKind,
    TrialTimeline,
)

K = TraceEventKind
S = ToolExecutionStatus
TOOLS = ("list_notes", "add_note", "search", "delete_note", "get_order")
USER_TOOLS = ("check_balance", "read_sms")
FAILURES = (S.ERROR, S.TOOL_NOT_FOUND, S.INVALID_ARGUMENTS, S.TIMEOUT)


@dataclass(frozen=True)
class Trial:
    messages: tuple[Message, ...]
    records: tuple[RecordedToolCall, ...]
    declared: int  # tool calls declared across the message view
    user_calls: int  # of which declared on user messages (all executed)
    agent_answers: int  # role: tool messages


@st.composite
def trials(draw) -> Trial:
    id_style = draw(st.sampled_from(["unique", "per_turn", "pool"]))
    counter = iter(range(10_000))

    def raw_id(tool: str, index: int) -> str:
        if id_style == "unique":
            return f"call_{next(counter)}"
        if id_style == "per_turn":
            return f"{tool}:{index}"
        return draw(st.sampled_from(["a", "b", "toolu_1"]))

    messages: list[Message] = []
    records: list[RecordedToolCall] = []
    declared = user_calls = answers = 0

    def record(decl: ToolCallDecl, executor: ToolExecutorIdentity) -> RecordedToolCall:
        failed = draw(st.integers(0, 5)) == 0
        status = draw(st.sampled_from(FAILURES)) if failed else S.SUCCESS
        output = draw(st.sampled_from(["ok", '{"id": 1}', "", "disk full"]))
        latency = draw(st.floats(0.001, 5.0, allow_nan=False))
        entry = RecordedToolCall(
            decl.id, len(records), decl.name, decl.arguments, executor, status, output, latency
        )
        records.append(entry)
        return entry

    if draw(st.booleans()):
        messages.append(Message(Role.SYSTEM, "policy"))
    messages.append(Message(Role.USER, draw(st.sampled_from(["go", "", "please help"]))))
    for _turn in range(draw(st.integers(0, 6))):
        decls = tuple(
            ToolCallDecl(raw_id(name, i), name, {"i": i, "q": draw(st.sampled_from(["", "x"]))})
            for i, name in enumerate(draw(st.lists(st.sampled_from(TOOLS), max_size=3)))
        )
        messages.append(Message(Role.ASSISTANT, draw(st.sampled_from(["", "ok"])), decls))
        declared += len(decls)
        if decls and draw(st.integers(0, 4)) == 0:
            break  # terminating turn: decided before its calls run (G4)
        stopped = False
        for decl in decls:
            entry = record(decl, ToolExecutorIdentity.AGENT)
            messages.append(Message(Role.TOOL, agent_facing_text(entry), tool_call_id=decl.id))
            answers += 1
            if entry.status is not S.SUCCESS and draw(st.booleans()):
                stopped = True  # the episode stops at the failure; the rest never run
                break
        if stopped:
            break
        if draw(st.booleans()):
            names = draw(st.lists(st.sampled_from(USER_TOOLS), max_size=2))
            user_decls = tuple(
                ToolCallDecl("u_" + raw_id(n, i), n, {}) for i, n in enumerate(names)
            )
            for decl in user_decls:
                record(decl, ToolExecutorIdentity.USER)
            messages.append(Message(Role.USER, "my reply", user_decls))
            declared += len(user_decls)
            user_calls += len(user_decls)
    if draw(st.booleans()):
        messages.append(Message(Role.SYSTEM, "Dialogue ended."))
    return Trial(tuple(messages), tuple(records), declared, user_calls, answers)


def check_common_invariants(timeline: TrialTimeline) -> None:
    events = timeline.events
    assert [e.position for e in events] == list(range(len(events)))  # G1
    turns = [e.turn_index for e in events]
    assert turns == sorted(turns)  # G2: non-decreasing
    calls = [e for e in events if e.kind is K.TOOL_CALL]
    call_ids = [e.call_id for e in calls]
    assert len(set(call_ids)) == len(call_ids)  # G3 / N7: unique per call
    call_position = {e.call_id: e.position for e in calls}
    results_seen: set[str] = set()
    for e in events:
        if e.kind is K.TOOL_RESULT:
            # at most one result per call, always after its own call
            assert e.call_id in call_position and call_position[e.call_id] < e.position
            assert e.call_id not in results_seen
            results_seen.add(e.call_id)
        if e.kind is K.TOOL_CALL:
            assert isinstance(e.arguments, dict)


@settings(max_examples=150, deadline=None)
@given(trials())
def test_records_present_invariants(trial: Trial) -> None:
    timeline = build_trial_timeline(trial.messages, trial.records, "user_stop")
    note(repr(timeline))
    check_common_invariants(timeline)
    assert (timeline.message_view_present, timeline.records_present) == (True, True)
    calls = [e for e in timeline.events if e.kind is K.TOOL_CALL]
    results = [e for e in timeline.events if e.kind is K.TOOL_RESULT]
    assert len(calls) == trial.declared  # G4: an attempted call is never dropped
    assert len(results) == len(trial.records)  # every record linked, none invented
    assert all(r.status is not None and r.executor is not None for r in results)
    # G5: the record's text, never the Error:-prefixed message text
    assert sorted(r.result for r in results) == sorted(rec.output for rec in trial.records)
    # Execution order is declaration order here, so executed calls come out in sequence.
    by_key = dict(
        zip(derive_call_ids(r.call_id for r in trial.records), trial.records, strict=True)
    )
    sequences = [by_key[c.call_id].sequence for c, r in attempted_calls(timeline) if r is not None]
    assert sequences == list(range(len(trial.records)))
    for c, r in attempted_calls(timeline):
        if r is not None:
            assert (r.tool_name, r.executor) == (c.tool_name, c.executor)
            assert r.position == c.position + 1  # a call's own result sits right after it


@settings(max_examples=150, deadline=None)
@given(trials())
def test_messages_only_invariants_and_agreement_with_the_recorded_timeline(trial: Trial) -> None:
    recorded = build_trial_timeline(trial.messages, trial.records, None)
    bare = build_trial_timeline(trial.messages, None, None)
    check_common_invariants(bare)
    assert (bare.message_view_present, bare.records_present) == (True, False)
    for e in bare.events:
        assert (e.executor, e.status, e.latency_seconds) == (None, None, None)
    results = [e for e in bare.events if e.kind is K.TOOL_RESULT]
    assert len(results) == trial.agent_answers  # N2: user calls have no answer to read
    # The same trial read without its record: the same events in the same places, minus
    # the user-executed results only the record carries; failures read "Error: <text>".
    user_results = {
        e.position
        for e in recorded.events
        if e.kind is K.TOOL_RESULT and e.executor is ToolExecutorIdentity.USER
    }
    kept = [e for e in recorded.events if e.position not in user_results]
    assert [(e.kind, e.turn_index, e.call_id, e.tool_name, e.text) for e in kept] == [
        (e.kind, e.turn_index, e.call_id, e.tool_name, e.text) for e in bare.events
    ]
    for with_record, without in zip(kept, bare.events, strict=True):
        if with_record.kind is K.TOOL_RESULT:
            expected = with_record.result
            if with_record.status is not S.SUCCESS:
                expected = "Error: " + expected
            assert without.result == expected


@settings(max_examples=100, deadline=None)
@given(trials())
def test_records_only_invariants(trial: Trial) -> None:
    """Drop the assistant and user turns (hash-only grading): G6's declared state."""
    harness_only = [m for m in trial.messages if m.role in (Role.SYSTEM, Role.TOOL)]
    timeline = build_trial_timeline(harness_only, trial.records, None)
    check_common_invariants(timeline)
    assert (timeline.message_view_present, timeline.records_present) == (False, True)
    assert len(timeline.events) == 2 * len(trial.records)
    assert {e.turn_index for e in timeline.events} <= {0}
    assert [e.tool_name for e in timeline.events[::2]] == [r.tool_name for r in trial.records]


@settings(max_examples=100, deadline=None)
@given(trials(), st.booleans())
def test_payload_round_trip(trial: Trial, with_records: bool) -> None:
    timeline = build_trial_timeline(
        trial.messages, trial.records if with_records else None, "max_turns"
    )
    payloads = parse_json(canonical_json(timeline_to_payloads(timeline)))
    rebuilt = timeline_from_payloads(
        payloads,
        termination_reason="max_turns",
        message_view_present=timeline.message_view_present,
        records_present=timeline.records_present,
    )
    assert rebuilt == timeline
    assert canonical_json(timeline_to_payloads(rebuilt)) == canonical_json(payloads)


@settings(max_examples=60, deadline=None)
@given(trials(), st.data())
def test_g7_a_record_nothing_declared_is_refused_wherever_it_lands(trial: Trial, data) -> None:
    """Insert a record for an id no message declares at a random sequence."""
    at = data.draw(st.integers(0, len(trial.records)))
    ghost = RecordedToolCall("ghost", at, "delete_all", {}, ToolExecutorIdentity.AGENT, S.SUCCESS)
    shifted = [
        RecordedToolCall(
            r.call_id, r.sequence + (r.sequence >= at), r.tool_name, r.arguments, r.executor,
            r.status, r.output, r.latency_seconds,
        )
        for r in trial.records
    ]  # fmt: skip
    try:
        build_trial_timeline(trial.messages, [*shifted, ghost], None)
    except TimelineInconsistencyError as err:
        assert (err.call_id, err.where) == ("ghost", f"tool_log sequence {at}")
    else:
        raise AssertionError("an unlinkable record was accepted")


@settings(max_examples=60, deadline=None)
@given(trials(), st.data())
def test_g7_a_record_naming_another_tool_is_refused(trial: Trial, data) -> None:
    assume(trial.records)
    index = data.draw(st.integers(0, len(trial.records) - 1))
    r = trial.records[index]
    records = list(trial.records)
    records[index] = RecordedToolCall(
        r.call_id, r.sequence, r.tool_name + "_v2", r.arguments, r.executor, r.status, r.output
    )
    key = derive_call_ids(x.call_id for x in trial.records)[index]
    try:
        build_trial_timeline(trial.messages, records, None)
    except TimelineInconsistencyError as err:
        assert (err.call_id, err.where) == (key, f"tool_log sequence {r.sequence}")
    else:
        raise AssertionError("a tool_name mismatch was accepted")


@settings(max_examples=60, deadline=None)
@given(trials(), st.data())
def test_g6b_a_stray_answer_is_refused_without_records(trial: Trial, data) -> None:
    at = data.draw(st.integers(0, len(trial.messages)))
    messages = list(trial.messages)
    messages.insert(at, Message(Role.TOOL, "?", tool_call_id="ghost"))
    try:
        build_trial_timeline(messages, None, None)
    except TimelineInconsistencyError as err:
        assert (err.call_id, err.where) == ("ghost", f"messages[{at}]")
    else:
        raise AssertionError("an answer to an undeclared call was accepted")
    # With records present the same message is the shadowed view: not validated.
    build_trial_timeline(messages, trial.records, None)
