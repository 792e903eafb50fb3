"""Recorded trace_checks blocks and bundles, read as Tolokaforge 0.33.1 writes them.

One class per test group: a recorded key evaluated, an unknown key degraded, an advisory
rather than a refusal (an authored block still refused), a user-declared call joined,
``messages[].tool_status``, tool-log status ``environment_error``. Every expected value is
reasoned from GRADING.md or, where it is silent, from what the reference evaluates — the
reasoning is in each docstring — never read back from the code under test.
"""

from __future__ import annotations

from typing import Any

import pytest

from replay.timeline.build import build_trial_timeline
from replay.trace_checks import evaluate_trace_checks
from replay.trace_checks.rules import TraceChecksConfigError, load_trace_checks
from schemas.reading import ReadNotes
from schemas.timeline import (
    Message,
    RecordedToolCall,
    Role,
    ToolCallDecl,
    ToolExecutionStatus,
    ToolExecutorIdentity,
    TraceEventKind,
)
from schemas.trace_checks import TraceChecksConfig
from tests.trace_builders import Script, side, tc

K = TraceEventKind


def recorded(block: dict[str, Any]) -> tuple[TraceChecksConfig, ReadNotes]:
    notes = ReadNotes(authored=False)
    return load_trace_checks(block, notes), notes


def block(require: dict[str, Any], **constraint: Any) -> dict[str, Any]:
    return {"constraints": [{"id": "c", "description": "d", "require": require, **constraint}]}


def verdict(cfg: TraceChecksConfig, timeline) -> tuple[bool, bool, bool]:
    """(passed, undecided, withheld) of the block's first constraint."""
    r = evaluate_trace_checks(timeline, cfg).results[0]
    return r.passed, r.undecided, r.withheld


def present_on_arg(pred: dict[str, Any], tool: str = "t") -> dict[str, Any]:
    return block({"present": {"match": tc(tool, args={"a": pred})}})


def one_call(args: dict[str, Any]):
    return Script().user().say().call("t", args).build()


# --------------------------------------------------------------------- recorded key evaluated


@pytest.mark.parametrize(
    ("pred", "args", "holds"),
    [
        # not_contains is the negation of contains (recursive descent, values not keys)
        ({"not_contains": "W1"}, {"a": ["W2", "W3"]}, True),
        ({"not_contains": "W1"}, {"a": ["W1", "W2"]}, False),
        ({"not_contains": "k"}, {"a": {"k": "v"}}, True),  # keys are never searched
        # ... and like every operator but the nullness ones, false on an absent value
        ({"not_contains": "W1"}, {}, False),
        # not_regex: a string no pattern searches; a list is "none of them"
        ({"not_regex": "^adm"}, {"a": "/users"}, True),
        ({"not_regex": ["x", "^/adm"]}, {"a": "/admin"}, False),
        ({"not_regex": "x"}, {"a": 5}, False),  # only a string is read
        # regex as a list: every pattern must search
        ({"regex": ["^/a", "n$"]}, {"a": "/admin"}, True),
        ({"regex": ["^/a", "x"]}, {"a": "/admin"}, False),
        # is_null reads an explicit JSON null; omitted an argument never sent
        ({"is_null": True}, {"a": None}, True),
        ({"is_null": True}, {}, False),
        ({"omitted": True}, {}, True),
        ({"omitted": True}, {"a": None}, False),
        ({"omitted": False}, {"a": 1}, True),
        # date_*: ISO dates / datetimes in UTC; a date is midnight UTC; not-a-date is false
        ({"date_gt": "2026-03-01"}, {"a": "2026-03-01T00:00:01Z"}, True),
        ({"date_gte": "2026-03-01"}, {"a": "2026-03-01T00:00:00+00:00"}, True),
        ({"date_lt": "2026-03-01T12:00:00Z"}, {"a": "2026-03-01T13:00:00+02:00"}, True),
        ({"date_lte": "2026-03-01"}, {"a": "2026-02-28"}, True),
        ({"date_gt": "2026-03-01"}, {"a": "next week"}, False),
        ({"date_gt": "2026-03-01"}, {"a": 20260302}, False),
    ],
)
def test_recorded_operators_evaluate_as_the_reference(
    pred: dict[str, Any], args: dict[str, Any], holds: bool
) -> None:
    cfg, notes = recorded(present_on_arg(pred))
    assert verdict(cfg, one_call(args)) == (holds, False, False)
    assert notes.advisories == [] and notes.unknown_keys == []


def test_a_predicate_names_its_own_engine() -> None:
    """A lookahead RE2 refuses compiles under a predicate's own regex_engine: backtracking,
    inside a block left at the linear default (the reference's per-predicate override)."""
    pred = {"regex": "^(?=.*adm)", "regex_engine": "backtracking"}
    cfg, _ = recorded(present_on_arg(pred))
    assert verdict(cfg, one_call({"a": "/admin"}))[0] is True
    with pytest.raises(TraceChecksConfigError, match="does not compile"):
        recorded(present_on_arg({"regex": "^(?=.*adm)"}))  # linear: still a refusal


def test_the_null_expanded_shape_reads_as_the_sparse_one() -> None:
    """The reference serialises every field, defaults and nulls included (weight 1.0,
    on_missing null, every operator null): that reads as the block with them omitted."""
    null_ops = dict.fromkeys(
        ["equals_ci", "contains", "not_contains", "regex", "not_regex", "is_null", "omitted",
         "gt", "date_gt", "in_", "not_in", "len_gt", "exists", "equals_binding"]
    )  # fmt: skip
    kinds = dict.fromkeys(["absent", "count", "before", "all_of", "any_of", "negate"])
    expanded = {
        "constraints": [
            {
                "id": "c",
                "description": "d",
                "weight": 1.0,
                "on_missing": None,
                "severity": "scored",
                "within": None,
                "bind": None,
                "require": {
                    "present": {
                        "match": {
                            "kind": "tool_call",
                            "tool": {"equals": "t", **null_ops},
                            "executor": None,
                            "args": None,
                            "status": None,
                            "result": None,
                            "text": None,
                        }
                    },
                    **kinds,
                },
            }
        ],
        "alternatives": None,
        "regex_engine": "linear",
    }
    cfg, notes = recorded(expanded)
    assert notes.advisories == [] and notes.unknown_keys == []
    assert verdict(cfg, one_call({})) == (True, False, False)
    assert verdict(cfg, Script().user().say().call("u").build()) == (False, False, False)


def test_withhold_on_present_leaves_the_score_alone() -> None:
    """on_missing: withhold (recorded-only): a present whose matcher selected no event is
    withheld — out of both numerator and denominator — so the block scores 1/1 on the one
    scored constraint that passed, not 1/2."""
    cfg, _ = recorded(
        {
            "constraints": [
                {"id": "w", "description": "d", "on_missing": "withhold",
                 "require": {"present": {"match": tc("never")}}},
                {"id": "p", "description": "d", "require": {"present": {"match": tc("t")}}},
            ]
        }
    )  # fmt: skip
    result = evaluate_trace_checks(one_call({}), cfg)
    w = result.results[0]
    assert (w.passed, w.undecided, w.withheld) == (False, False, True)
    assert result.component == 1.0


def test_withhold_on_an_unmatched_ordering_side_and_its_fold() -> None:
    """before with an empty side is unmatched: withhold withholds it (fail would fail it).
    Under all_of a failing branch still fails; a holding branch does not beat withheld
    (conjunction); under any_of a holding branch passes; negate keeps it withheld. The
    failing branch is an absent that matched: the policy reaches every kind in the tree,
    and a present that selected nothing would itself be withheld."""
    timeline = Script().user().say().call("a").say().call("b").build()
    unmatched = {"before": {"left": side("any", tc("a")), "right": side("any", tc("zz"))}}
    holds = {"present": {"match": tc("a")}}
    fails = {"absent": {"match": tc("a")}}
    cases = [
        (unmatched, (False, False, True)),
        ({"all_of": [unmatched, holds]}, (False, False, True)),
        ({"all_of": [unmatched, fails]}, (False, False, False)),
        ({"any_of": [unmatched, holds]}, (True, False, False)),
        ({"negate": unmatched}, (False, False, True)),
    ]
    for require, expected in cases:
        cfg, _ = recorded(block(require, on_missing="withhold"))
        assert verdict(cfg, timeline) == expected, require


def test_a_withheld_gate_neither_holds_nor_shuts() -> None:
    """A withheld gate enters no failed_gate_ids, so the component is the scored one's."""
    cfg, _ = recorded(
        {
            "constraints": [
                {"id": "g", "description": "d", "severity": "gate", "on_missing": "withhold",
                 "require": {"before": {"left": side("any", tc("zz")),
                                        "right": side("any", tc("t"))}}},
                {"id": "s", "description": "d", "require": {"present": {"match": tc("t")}}},
            ]
        }
    )  # fmt: skip
    result = evaluate_trace_checks(one_call({}), cfg)
    assert (result.summary.gate_failed, result.component) == (False, 1.0)


def test_authored_blocks_keep_gradings_vocabulary() -> None:
    """GRADING.md § Operators: "there is no not_contains / not_regex"; § on_missing names
    fail | pass. A block a user writes is still refused every recorded-only key."""
    for pred in ({"not_contains": "x"}, {"is_null": True}, {"date_gt": "2026-01-01"},
                 {"regex": "x", "regex_engine": "backtracking"}):  # fmt: skip
        with pytest.raises(TraceChecksConfigError, match="unknown key"):
            load_trace_checks(present_on_arg(pred))
    with pytest.raises(TraceChecksConfigError, match="one pattern"):
        load_trace_checks(present_on_arg({"regex": ["a", "b"]}))
    with pytest.raises(TraceChecksConfigError, match="withhold"):
        load_trace_checks(block({"before": {"left": side("any", tc("a")),
                                            "right": side("any", tc("b"))}},
                                on_missing="withhold"))  # fmt: skip


# ------------------------------------------------------------------- unknown key degraded


def test_an_unknown_key_is_listed_and_dropped_not_refused() -> None:
    """A key a newer recorder wrote: the recorded read lists it (addressed) and drops it;
    the rest of the block still evaluates."""
    data = block({"present": {"match": tc("t", tool_group={"equals": "x"})}})
    data["constraints"][0]["priority"] = 3
    cfg, notes = recorded(data)
    assert sorted(notes.unknown_keys) == [
        "trace_checks.constraints[0].priority",
        "trace_checks.constraints[0].require.present.match.tool_group",
    ]
    assert verdict(cfg, one_call({}))[0] is True
    with pytest.raises(TraceChecksConfigError, match="unknown key 'priority'"):
        load_trace_checks(data)  # authored: still a refusal


# ------------------------------------------------------------ advisory, not a refusal


def test_weight_beside_a_gate_is_an_advisory_and_reads_nothing() -> None:
    """The reference writes weight: 1.0 on every gate. Recorded: an advisory; the gate's
    weight still enters no fold, so a failing gate zeroes the component as any gate does."""
    data = {
        "constraints": [
            {"id": "g", "description": "d", "severity": "gate", "weight": 1.0,
             "require": {"present": {"match": tc("zz")}}},
            {"id": "s", "description": "d", "require": {"present": {"match": tc("t")}}},
        ]
    }  # fmt: skip
    cfg, notes = recorded(data)
    assert any("g.weight" in a and "severity: gate" in a for a in notes.advisories)
    result = evaluate_trace_checks(one_call({}), cfg)
    assert (result.summary.failed_gate_ids, result.component) == (("g",), 0.0)
    with pytest.raises(TraceChecksConfigError, match="weight"):
        load_trace_checks(data)


def test_a_side_outside_its_among_view_never_holds() -> None:
    """A tool_call side in the messages view is adjacent to nothing (the reference's
    adjacency): both sides matched, so the verdict is a definite failure, not on_missing."""
    data = block(
        {
            "immediately_before": {
                "left": side("any", tc("a")),
                "right": side("any", {"kind": "assistant_message"}),
                "among": "messages",
            }
        }
    )
    cfg, notes = recorded(data)
    assert len(notes.advisories) == 1 and "among: messages" in notes.advisories[0]
    timeline = Script().user().say().call("a").say("next").build()
    assert verdict(cfg, timeline) == (False, False, False)
    with pytest.raises(TraceChecksConfigError, match="among"):
        load_trace_checks(data)


def test_an_anchor_quantified_any_reads_as_first() -> None:
    """GRADING.md § Quantifiers: over a window any collapses onto first. Recorded: an
    advisory and read as first — here the first b at position 2 has the forbidden a at 4
    after it, so absent_before holds (with last, the anchor at 6 would see a at 4)."""
    data = block(
        {
            "absent_before": {
                "forbidden": tc("a"),
                "anchor": side("any", tc("b")),
            }
        }
    )
    cfg, notes = recorded(data)
    assert len(notes.advisories) == 1
    timeline = Script().user().say().call("b").say().call("a").say().call("b").build()
    assert verdict(cfg, timeline) == (True, False, False)
    with pytest.raises(TraceChecksConfigError, match="first or last"):
        load_trace_checks(data)


def test_count_with_min_above_max_is_never_within() -> None:
    cfg, notes = recorded(block({"count": {"match": tc("t"), "min": 3, "max": 1}}))
    assert len(notes.advisories) == 1
    # two completions: 0 or 1 event (an unexecuted call is undecidable on status) — none
    # of them is within an empty interval, so the verdict is a definite failure
    timeline = Script().user().say().call("t").build()
    assert verdict(cfg, timeline) == (False, False, False)


def test_what_cannot_be_run_is_refused_even_when_recorded() -> None:
    """A reference to a name nothing binds has no value to compare: not an advisory."""
    data = block({"present": {"match": tc("t", args={"a": {"equals_binding": "nobody"}})}})
    with pytest.raises(TraceChecksConfigError, match="nobody"):
        recorded(data)


# ------------------------------------------------------------- views: messages-only bundles


def _decl(raw: str, name: str) -> ToolCallDecl:
    return ToolCallDecl(raw, name, {})


def test_a_user_declared_call_is_joined_and_its_step_is_no_event() -> None:
    """GRADING.md G6b: the role: tool message answering the user's call is its result;
    the user message that is only a tool step (every call answered by the tool messages
    right after it) is not a dialogue turn, so only its calls are events."""
    messages = [
        Message(Role.USER, "hi"),
        Message(Role.ASSISTANT, "", (_decl("c1", "read"),)),
        Message(Role.TOOL, "r", tool_call_id="c1"),
        Message(Role.USER, "", (_decl("u1", "confirm"),)),
        Message(Role.TOOL, "confirmed", tool_call_id="u1"),
        Message(Role.USER, "done on my side"),
    ]
    timeline = build_trial_timeline(messages, None, None)
    assert [(e.kind, e.call_id, e.result) for e in timeline.events] == [
        (K.USER_MESSAGE, None, None),
        (K.ASSISTANT_MESSAGE, None, None),
        (K.TOOL_CALL, "c1", None),
        (K.TOOL_RESULT, "c1", "r"),
        (K.TOOL_CALL, "u1", None),
        (K.TOOL_RESULT, "u1", "confirmed"),
        (K.USER_MESSAGE, None, None),
    ]


def test_tool_status_is_the_messages_only_result_status() -> None:
    """messages[].tool_status is the completed outcome the recorder knew, so a status
    matcher over a messages-only bundle is decided where it is written and undecided
    (GRADING.md § When a constraint cannot be decided) where it is not. The result text
    keeps its Error: prefix: G6b ("the recorded text behind an Error: prefix") is followed
    where the reference strips it — GRADING.md wins on that rule."""
    messages = [
        Message(Role.USER, "hi"),
        Message(Role.ASSISTANT, "", (_decl("c1", "t"), _decl("c2", "t"))),
        Message(Role.TOOL, "Error: boom", tool_call_id="c1", tool_status=ToolExecutionStatus.ERROR),
        Message(Role.TOOL, "ok", tool_call_id="c2"),
    ]
    timeline = build_trial_timeline(messages, None, None)
    results = [e for e in timeline.events if e.kind is K.TOOL_RESULT]
    assert [(r.status, r.result, r.executor) for r in results] == [
        (ToolExecutionStatus.ERROR, "Error: boom", None),
        (None, "ok", None),
    ]
    failed, _ = recorded(block({"count": {"match": tc("t", status={"equals": "error"}), "min": 1}}))
    # c1 definitely matches (status recorded); c2 is undecidable — the count is ≥ 1 anyway
    assert verdict(failed, timeline) == (True, False, False)
    exactly_one, _ = recorded(
        block({"count": {"match": tc("t", status={"equals": "error"}), "min": 1, "max": 1}})
    )
    # 1 or 2 matches over the completions: [1, 1] holds for one reading only → undecided
    assert verdict(exactly_one, timeline) == (False, True, False)


# ----------------------------------------------------------------- environment_error


def test_environment_error_is_a_status_a_matcher_reads() -> None:
    """The tool-log status environment_error (Tolokaforge 0.33.1's ToolExecutionStatus) is
    read from the record like any status: it equals itself and is not success."""
    messages = [
        Message(Role.USER, "hi"),
        Message(Role.ASSISTANT, "", (_decl("c1", "t"),)),
        Message(Role.TOOL, "Error: environment unavailable", tool_call_id="c1"),
    ]
    record = RecordedToolCall(
        "c1", 0, "t", {}, ToolExecutorIdentity.AGENT,
        ToolExecutionStatus("environment_error"), "environment unavailable", 0.1,
    )  # fmt: skip
    timeline = build_trial_timeline(messages, [record], None)
    for pred, holds in (
        ({"equals": "environment_error"}, True),
        ({"not_equals": "success"}, True),
        ({"in_": ["error", "timeout"]}, False),
    ):
        cfg, _ = recorded(block({"present": {"match": tc("t", status=pred)}}))
        assert verdict(cfg, timeline)[0] is holds, pred
