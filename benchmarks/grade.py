"""Full re-grade throughput: ``grade_trial`` (timeline + every measurable component +
combine) over a generated corpus, one core.

Printed beside a baseline measured in the same run: building each trial's timeline and
nothing else — the floor any re-grade pays before a component runs.

    PYTHONPATH=. python -m benchmarks.grade [--trials 2000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import random

from benchmarks.timing import rate
from replay.grading.components.custom_checks import CheckVerdict, RecordedSuite
from replay.grading.components.judge import CriterionVerdict, RecordedJudge
from replay.grading.components.state_checks import _compiled_path
from replay.grading.grade import GradeInputs, grade_trial
from replay.grading.patterns import compile_regex
from replay.grading.rules import load_grading_config
from replay.timeline.build import build_trial_timeline
from schemas.timeline import (
    Message,
    RecordedToolCall,
    Role,
    ToolCallDecl,
    ToolExecutionStatus,
    ToolExecutorIdentity,
)

TOOLS = ("list_notes", "add_note", "get_order", "cancel_order", "refund")

CONFIG = load_grading_config(
    {
        "combine": {
            "weights": {
                "state_checks": 0.3,
                "transcript_rules": 0.2,
                "trace_checks": 0.2,
                "llm_judge": 0.3,
                "custom_checks": 0.2,
            },
            "pass_threshold": 0.75,
        },
        "state_checks": {
            "hash": {"enabled": True, "expect_initial_state": True, "weight": 0.5},
            "jsonpaths": [
                {"path": "$.db.orders[0].status", "equals": "cancelled"},
                {"path": "$.db.notes[*].title", "contains_ci": "standup"},
            ],
            "numeric_string_fields": ["amount"],
        },
        "transcript_rules": {
            "must_contain": ["done", "order"],
            "disallow_regex": [r"password:\s*\S+"],
            "max_turns": 12,
            "min_assistant_turns": 1,
            "tool_expectations": {
                "required_tools": ["cancel_order"],
                "disallowed_tools": ["refund"],
            },
            "required_actions": [
                {
                    "action_id": "c",
                    "name": "cancel_order",
                    "arguments": {"order_id": "O1"},
                    "compare_args": ["order_id"],
                }
            ],
            "communicate_info": [{"info": "cancelled"}],
        },
        "llm_judge": {
            "rubric": {
                "criteria": [
                    {"id": "policy", "kind": "binary", "required": True},
                    {"id": "saved", "kind": "graded", "weight": 1.0},
                    {"id": "clarity", "kind": "graded", "weight": 0.5},
                ]
            }
        },
        "custom_checks": {"enabled": True},
        "trace_checks": {
            "constraints": [
                {
                    "id": "looked_up_before_cancelling",
                    "require": {
                        "before": {
                            "left": {
                                "quantifier": "first",
                                "match": {"kind": "tool_call", "tool": {"equals": "get_order"}},
                            },
                            "right": {
                                "quantifier": "first",
                                "match": {"kind": "tool_call", "tool": {"equals": "cancel_order"}},
                            },
                        }
                    },
                },
                {
                    "id": "never_refunded",
                    "severity": "gate",
                    "require": {
                        "absent": {"match": {"kind": "tool_call", "tool": {"equals": "refund"}}}
                    },
                },
            ]
        },
    },
    authored=False,
)

INITIAL = {
    "orders": [
        {"id": "O1", "status": "open", "amount": "130.00"},
        {"id": "O2", "status": "open", "amount": "9.5"},
    ],
    "notes": [{"id": f"N{i}", "title": f"note {i}", "body": "x" * 40} for i in range(20)],
}


def make_trial(rng: random.Random, i: int) -> GradeInputs:
    """A ~30-event trial with a recorded final state, judge verdicts and check results."""
    messages = [Message(Role.USER, "Please cancel order O1 and note the standup.")]
    records = []
    for turn in range(rng.randint(3, 6)):
        decls = []
        for k in range(2):
            tool = rng.choice(TOOLS)
            args = {"order_id": "O1"} if tool == "cancel_order" else {"q": turn}
            decls.append(ToolCallDecl(f"{tool}:{k}", tool, args))
        messages.append(Message(Role.ASSISTANT, f"working on the order, step {turn}", tuple(decls)))
        for d in decls:
            status = (
                ToolExecutionStatus.SUCCESS if rng.random() < 0.9 else ToolExecutionStatus.ERROR
            )
            records.append(
                RecordedToolCall(
                    d.id,
                    len(records),
                    d.name,
                    d.arguments,
                    ToolExecutorIdentity.AGENT,
                    status,
                    "ok",
                )
            )
    messages.append(Message(Role.ASSISTANT, "Order O1 is cancelled; all done."))
    final = {
        "orders": [dict(o) for o in INITIAL["orders"]],
        "notes": [dict(n) for n in INITIAL["notes"]],
    }
    if rng.random() < 0.5:
        final["orders"][0]["status"] = "cancelled"
        final["orders"][0]["amount"] = "130.0"
    final["notes"].append({"id": "N99", "title": "Team standup", "body": "9:30"})
    judge = RecordedJudge(
        "completed",
        (
            CriterionVerdict("policy", rng.random() < 0.7, None),
            CriterionVerdict("saved", True, round(rng.random(), 2)),
            CriterionVerdict("clarity", True, round(rng.random(), 2)),
        ),
    )
    suite = RecordedSuite(
        tuple(CheckVerdict(f"c{k}", rng.choice(("passed", "failed", "skipped"))) for k in range(4))
    )
    return GradeInputs(
        f"t{i}",
        tuple(messages),
        tuple(records),
        "user_stop",
        None,
        INITIAL,
        {"db": final},
        judge,
        suite,
    )




def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(11)
    trials = [make_trial(rng, i) for i in range(args.trials)]
    grades = [grade_trial(t, CONFIG) for t in trials]
    assert all(g.score is not None for g in grades), "every generated trial must be decidable"
    passed = sum(bool(g.binary_pass) for g in grades)
    rows = [
        (
            "baseline: build_trial_timeline only",
            rate(
                lambda t: build_trial_timeline(t.messages, t.recorded_calls, t.termination_reason),
                trials,
                args.repeat,
            ),
        ),
        (
            "grade_trial: timeline + 5 components + combine",
            rate(lambda t: grade_trial(t, CONFIG), trials, args.repeat),
        ),
    ]

    def uncached(t: GradeInputs) -> object:
        _compiled_path.cache_clear()
        compile_regex.cache_clear()
        return grade_trial(t, CONFIG)

    rows.append(
        (
            "grade_trial, JSONPath/regex parse caches cleared per trial",
            rate(uncached, trials, args.repeat),
        )
    )
    print(f"{args.trials} generated trials ({passed} pass), best of {args.repeat}, one core\n")
    print("| what | trials/s |")
    print("|---|---:|")
    for name, value in rows:
        print(f"| {name} | {value:,.0f} |")


if __name__ == "__main__":
    main()
