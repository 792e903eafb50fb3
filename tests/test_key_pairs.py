"""Each scored key discriminates: a satisfying and a violating trial per key.

The sweep is driven by the manifest (``schemas.key_manifest.SCORED_KEYS``): a scored key
without its pair here fails the suite. Each pair is a grading config and two small trials
written for the test; the replayed component of the key's block must differ between them.
Keys an offline replay can never score are listed in ``OFFLINE_ONLY`` with the property
their exemption rests on, which the suite asserts instead.
"""

from __future__ import annotations

from typing import Any

import pytest

from replay.grading.components.custom_checks import CheckVerdict, RecordedSuite
from replay.grading.components.judge import CriterionVerdict, RecordedJudge
from replay.grading.grade import GradeInputs, grade_trial
from replay.grading.rules import load_grading_config
from schemas.key_manifest import SCORED_KEYS, component_of
from schemas.timeline import (
    Message,
    RecordedToolCall,
    Role,
    ToolCallDecl,
    ToolExecutionStatus,
    ToolExecutorIdentity,
)

Trial = dict[str, Any]


def trial(*steps: Any, **extra: Any) -> Trial:
    """("say", text) is an assistant message; ("call", tool, args) a call the agent made and
    that succeeded (declared on its own assistant message, recorded in the tool log)."""
    messages = [Message(Role.USER, "please help")]
    records = []
    for i, step in enumerate(steps):
        if step[0] == "say":
            messages.append(Message(Role.ASSISTANT, step[1]))
        else:
            _, tool, args = step
            cid = f"call_{i}"
            messages.append(Message(Role.ASSISTANT, "", (ToolCallDecl(cid, tool, dict(args)),)))
            messages.append(Message(Role.TOOL, "ok", tool_call_id=cid))
            records.append(
                RecordedToolCall(
                    cid, len(records), tool, dict(args), ToolExecutorIdentity.AGENT,
                    ToolExecutionStatus.SUCCESS, "ok",
                )
            )  # fmt: skip
    return {"messages": tuple(messages), "recorded_calls": tuple(records), **extra}


def present(text: str) -> dict[str, Any]:
    return {"present": {"match": {"kind": "assistant_message", "text": {"contains": text}}}}


def call(tool: str) -> dict[str, Any]:
    return {"kind": "tool_call", "tool": {"equals": tool}}


def trace(*constraints: dict[str, Any], **block: Any) -> dict[str, Any]:
    body = {"constraints": [{"id": f"c{i}", "require": r} for i, r in enumerate(constraints)]}
    return {"trace_checks": {**body, **block}, "combine": {"weights": {"trace_checks": 1.0}}}


def transcript(**rules: Any) -> dict[str, Any]:
    return {"transcript_rules": rules, "combine": {"weights": {"transcript_rules": 1.0}}}


DB = {"orders": [{"id": 1, "status": "open"}]}
CHANGED = {"orders": [{"id": 1, "status": "closed"}]}

PAIRS: dict[str, tuple[dict[str, Any], Trial, Trial]] = {
    "state_checks.hash.expect_initial_state": (
        {"state_checks": {"hash": {"enabled": True, "expect_initial_state": True}},
         "combine": {"weights": {"state_checks": 1.0}}},
        trial(final_state={"db": DB}, initial_db=DB),
        trial(final_state={"db": CHANGED}, initial_db=DB),
    ),
    "state_checks.jsonpaths": (
        {"state_checks": {"jsonpaths": [{"path": "$.db.orders[0].status", "equals": "open"}]},
         "combine": {"weights": {"state_checks": 1.0}}},
        trial(final_state={"db": DB}),
        trial(final_state={"db": CHANGED}),
    ),
    "transcript_rules.must_contain": (
        transcript(must_contain=["refund"]), trial(("say", "refund issued")), trial(("say", "no"))
    ),
    "transcript_rules.disallow_regex": (
        transcript(disallow_regex=["pass(word)?"]),
        trial(("say", "all done")),
        trial(("say", "your password is x")),
    ),
    "transcript_rules.max_turns": (
        transcript(max_turns=1), trial(("say", "a")), trial(("say", "a"), ("say", "b"))
    ),
    "transcript_rules.min_assistant_turns": (
        transcript(min_assistant_turns=2), trial(("say", "a"), ("say", "b")), trial(("say", "a"))
    ),
    "transcript_rules.required_actions": (
        transcript(required_actions=[{"action_id": "a1", "name": "lookup", "arguments": {"id": 1}}]),
        trial(("call", "lookup", {"id": 1})),
        trial(("call", "lookup", {"id": 2})),
    ),
    "transcript_rules.communicate_info": (
        transcript(communicate_info=[{"info": "R-42"}]),
        trial(("say", "your ticket is R-42")),
        trial(("say", "your ticket is filed")),
    ),
    "transcript_rules.tool_expectations.required_tools": (
        transcript(tool_expectations={"required_tools": ["lookup"]}),
        trial(("call", "lookup", {})),
        trial(("say", "done")),
    ),
    "transcript_rules.tool_expectations.disallowed_tools": (
        transcript(tool_expectations={"disallowed_tools": ["delete"]}),
        trial(("call", "lookup", {})),
        trial(("call", "delete", {})),
    ),
    "trace_checks.constraints.present": (
        trace(present("refund")), trial(("say", "refund ok")), trial(("say", "no"))
    ),
    "trace_checks.constraints.absent": (
        trace({"absent": {"match": call("delete")}}),
        trial(("call", "lookup", {})),
        trial(("call", "delete", {})),
    ),
    "trace_checks.constraints.count": (
        trace({"count": {"match": call("lookup"), "max": 1}}),
        trial(("call", "lookup", {})),
        trial(("call", "lookup", {}), ("call", "lookup", {})),
    ),
    "trace_checks.constraints.before": (
        trace({"before": {"left": {"quantifier": "any", "match": call("lookup")},
                          "right": {"quantifier": "any", "match": call("update")}}}),
        trial(("call", "lookup", {}), ("call", "update", {})),
        trial(("call", "update", {}), ("call", "lookup", {})),
    ),
    "trace_checks.constraints.immediately_before": (
        trace({"immediately_before": {"left": {"quantifier": "any", "match": call("lookup")},
                                      "right": {"quantifier": "any", "match": call("update")},
                                      "among": "tool_calls"}}),
        trial(("call", "lookup", {}), ("call", "update", {})),
        trial(("call", "lookup", {}), ("call", "search", {}), ("call", "update", {})),
    ),
    "trace_checks.constraints.absent_before": (
        trace({"absent_before": {"forbidden": call("delete"),
                                 "anchor": {"quantifier": "first", "match": call("update")}}}),
        trial(("call", "update", {}), ("call", "delete", {})),
        trial(("call", "delete", {}), ("call", "update", {})),
    ),
    "trace_checks.constraints.absent_between": (
        trace({"absent_between": {"forbidden": call("delete"),
                                  "start": {"quantifier": "first", "match": call("lookup")},
                                  "end": {"quantifier": "last", "match": call("update")}}}),
        trial(("call", "lookup", {}), ("call", "update", {}), ("call", "delete", {})),
        trial(("call", "lookup", {}), ("call", "delete", {}), ("call", "update", {})),
    ),
    "trace_checks.constraints.all_of": (
        trace({"all_of": [present("alpha"), present("beta")]}),
        trial(("say", "alpha beta")),
        trial(("say", "alpha")),
    ),
    "trace_checks.constraints.any_of": (
        trace({"any_of": [present("alpha"), present("beta")]}),
        trial(("say", "beta")),
        trial(("say", "gamma")),
    ),
    "trace_checks.constraints.negate": (
        trace({"negate": present("sorry")}), trial(("say", "done")), trial(("say", "sorry"))
    ),
    "trace_checks.alternatives": (
        {"trace_checks": {"alternatives": [
            {"id": "p1", "constraints": [{"id": "a", "require": present("alpha")}]},
            {"id": "p2", "constraints": [{"id": "b", "require": present("beta")}]},
        ]}, "combine": {"weights": {"trace_checks": 1.0}}},
        trial(("say", "beta")),
        trial(("say", "gamma")),
    ),
    "llm_judge.rubric": (
        {"llm_judge": {"rubric": {"criteria": [{"id": "a", "description": "did a"}]}},
         "combine": {"weights": {"llm_judge": 1.0}}},
        trial(judge=RecordedJudge("completed", (CriterionVerdict("a", True, 1.0),))),
        trial(judge=RecordedJudge("completed", (CriterionVerdict("a", False, 0.0),))),
    ),
    "custom_checks.enabled": (
        {"custom_checks": {"enabled": True}, "combine": {"weights": {"custom_checks": 1.0}}},
        trial(custom_suite=RecordedSuite((CheckVerdict("x", "passed"),))),
        trial(custom_suite=RecordedSuite((CheckVerdict("x", "failed", "no"),))),
    ),
}  # fmt: skip

# Scored keys an offline replay never scores, and the property that exemption rests on:
# the replay reports the component not_measured, naming why.
OFFLINE_ONLY: dict[str, tuple[dict[str, Any], str]] = {
    "state_checks.hash.golden_actions": (
        {"state_checks": {"hash": {"enabled": True, "golden_actions": [{"name": "close"}]}},
         "combine": {"weights": {"state_checks": 1.0}}},
        "golden",
    ),
    "state_checks.db_probes": (
        {"state_checks": {"db_probes": [{"name": "p", "dsn": "postgresql://x/y", "query": "SELECT 1"}]},
         "combine": {"weights": {"state_checks": 1.0}}},
        "probe",
    ),
}  # fmt: skip


def _grade(grading: dict[str, Any], t: Trial):
    cfg = load_grading_config(grading)  # authored: every load-time rule applies
    inputs = GradeInputs(trial="t", termination_reason="user_stop", **t)
    return grade_trial(inputs, cfg)


def test_every_scored_key_has_a_pair_or_a_stated_exemption() -> None:
    assert set(PAIRS) | set(OFFLINE_ONLY) == set(SCORED_KEYS)
    assert not set(PAIRS) & set(OFFLINE_ONLY)


@pytest.mark.parametrize("key", sorted(PAIRS))
def test_the_pair_moves_the_keys_component(key: str) -> None:
    grading, good, bad = PAIRS[key]
    component = component_of(key)
    sat, vio = _grade(grading, good), _grade(grading, bad)
    assert sat.components[component] is not None and vio.components[component] is not None
    assert sat.components[component] > vio.components[component], (key, sat, vio)
    # and the key is the one the accounting says was read
    for g in (sat, vio):
        assert {"key": key, "outcome": "evaluated", "reason": ""} in g.accounting


@pytest.mark.parametrize("key", sorted(OFFLINE_ONLY))
def test_a_key_no_offline_replay_scores_is_named_not_measured(key: str) -> None:
    grading, word = OFFLINE_ONLY[key]
    g = _grade(grading, trial(final_state={"db": DB}, initial_db=DB))
    component = component_of(key)
    assert g.components[component] is None
    assert word in g.not_measured[component]
    (row,) = [r for r in g.accounting if r["key"] == key]
    assert row["outcome"] == "skipped" and row["reason"] == g.not_measured[component]
