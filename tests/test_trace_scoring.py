"""Component score, gates and alternative paths (GRADING.md § Weighting the constraints,
§ severity, § Alternative paths, § How a multi-path block scores), and the grade shapes
(FORMATS.md § 4)."""

from __future__ import annotations

from typing import Any

from replay.trace_checks import evaluate_trace_checks
from replay.trace_checks.results import ConstraintResult
from replay.trace_checks.rules import load_trace_checks
from replay.trace_checks.scoring import SetScore, choose_winner, score_decision_set
from schemas.timeline import TrialTimeline
from tests.trace_builders import Script, calls, tc


def present(id: str, tool: str, **kw: Any) -> dict[str, Any]:
    return {"id": id, "require": {"present": {"match": tc(tool)}}, **kw}


def absent(id: str, tool: str, **kw: Any) -> dict[str, Any]:
    return {"id": id, "require": {"absent": {"match": tc(tool)}}, **kw}


def run(timeline: TrialTimeline, block: dict[str, Any]):
    return evaluate_trace_checks(timeline, load_trace_checks(block))


def test_score_is_the_weighted_fraction_of_scored_constraints() -> None:
    block = {"constraints": [present("a", "verify", weight=3.0), present("b", "note")]}
    assert run(calls("verify"), block).component == 0.75
    assert run(calls("note"), block).component == 0.25
    unweighted = {"constraints": [present("a", "verify"), present("b", "note"), present("c", "x")]}
    assert run(calls("verify"), unweighted).component == 1 / 3


def test_a_gate_leaves_the_average_and_a_tripped_gate_zeroes_the_component() -> None:
    block = {
        "constraints": [
            absent("g", "delete", severity="gate"),
            present("a", "read"),
            present("b", "verify"),
        ]
    }
    ok = run(calls("read"), block)
    assert ok.component == 0.5 and ok.summary.gate_failed is False
    tripped = run(calls("read", "verify", "delete"), block)
    assert tripped.component == 0.0
    assert tripped.summary.gate_failed is True and tripped.summary.failed_gate_ids == ("g",)
    assert "FAILED trace gates: g" in tripped.reason_segments()


def test_an_undecided_gate_trips() -> None:
    block = {
        "constraints": [
            present("a", "read"),
            {
                **absent("g", "x"),
                "require": {"absent": {"match": tc("write", status={"equals": "success"})}},
                "severity": "gate",
            },
        ]
    }
    t = Script().user().say().call("read").call("write", executed=False).build()
    res = run(t, block)
    g = res.results[1]
    assert (g.passed, g.undecided, g.severity) == (False, True, "gate")
    assert res.component == 0.0 and res.summary.failed_gate_ids == ("g",)


def test_undecided_forfeits_a_scored_weight() -> None:
    block = {
        "constraints": [
            present("a", "read"),
            {
                "id": "u",
                "require": {"present": {"match": tc("write", status={"equals": "success"})}},
            },
        ]
    }
    t = Script().user().say().call("read").call("write", executed=False).build()
    assert run(t, block).component == 0.5


def test_a_block_of_only_gates_scores_the_gate_verdict() -> None:
    block = {
        "constraints": [
            absent("g1", "delete", severity="gate"),
            absent("g2", "reset", severity="gate"),
        ]
    }
    assert run(calls("read"), block).component == 1.0
    assert run(calls("reset"), block).component == 0.0


def test_an_empty_timeline_leaves_the_component_unscored() -> None:
    empty = TrialTimeline((), message_view_present=True, records_present=True)
    res = evaluate_trace_checks(empty, load_trace_checks({"constraints": [absent("a", "x")]}))
    assert res.component is None and res.results == ()
    assert res.to_grade_dict() == {
        "trace_checks": None,
        "trace_check_results": [],
        "trace_checks_summary": {
            "winning_path": "",
            "gate_failed": False,
            "failed_gate_ids": [],
            "paths": [],
        },
    }


def test_grade_dict_shapes_match_formats() -> None:
    res = run(
        calls("read"),
        {"constraints": [present("a", "read", weight=2.0), absent("g", "read", severity="gate")]},
    )
    d = res.to_grade_dict()
    assert list(d["trace_check_results"][0]) == [
        "id",
        "kind",
        "passed",
        "weight",
        "severity",
        "message",
        "matched_positions",
        "undecided",
        "withheld",
    ]
    assert d["trace_check_results"][0] == {
        "id": "a",
        "kind": "present",
        "passed": True,
        "weight": 2.0,
        "severity": "scored",
        "message": "",
        "matched_positions": [2],
        "undecided": False,
        "withheld": False,
    }
    assert d["trace_checks_summary"] == {
        "winning_path": "",
        "gate_failed": True,
        "failed_gate_ids": ["g"],
        "paths": [],
    }
    assert d["trace_checks"] == 0.0


# --- alternative paths ---------------------------------------------------------------------

ROUTES = {
    "alternatives": [
        {
            "id": "ledger",
            "constraints": [
                present("read_ledger", "read_ledger"),
                present("recompute", "recompute"),
            ],
        },
        {
            "id": "statement",
            "constraints": [
                present("fetch", "fetch_statement"),
                present("closing", "read_closing"),
            ],
        },
    ]
}


def test_half_of_one_route_plus_half_of_another_scores_the_best_single_route() -> None:
    res = run(calls("read_ledger", "read_closing"), ROUTES)
    assert res.component == 0.5
    assert res.summary.winning_path == "ledger"  # tie: first declared
    assert [r.id for r in res.results] == ["read_ledger", "recompute"]
    assert [p.to_grade_dict() for p in res.summary.paths] == [
        {"id": "ledger", "score": 0.5, "gate_failed": False},
        {"id": "statement", "score": 0.5, "gate_failed": False},
    ]


def test_a_route_walked_in_full_wins() -> None:
    res = run(calls("fetch_statement", "read_closing", "read_ledger"), ROUTES)
    assert (res.component, res.summary.winning_path) == (1.0, "statement")
    assert set(res.route_results) == {"", "ledger", "statement"}


def test_each_path_carries_the_shared_constraints_normalised_within_its_own_set() -> None:
    block = {
        "constraints": [present("note", "write_note")],
        "alternatives": [
            {"id": "short", "constraints": [present("s1", "a")]},
            {
                "id": "long",
                "constraints": [present("l1", "b"), present("l2", "c"), present("l3", "d")],
            },
        ],
    }
    res = run(calls("write_note", "b", "c", "d"), block)
    assert [(p.id, p.score) for p in res.summary.paths] == [("short", 0.5), ("long", 1.0)]
    assert [r.id for r in res.results] == ["note", "l1", "l2", "l3"]


def test_a_tie_goes_to_the_path_whose_gate_shut() -> None:
    block = {
        "alternatives": [
            {"id": "clean", "constraints": [present("c1", "a")]},
            {
                "id": "gated",
                "constraints": [present("g1", "a"), absent("forbid", "b", severity="gate")],
            },
        ]
    }
    res = run(calls("a", "b"), block)
    assert res.summary.winning_path == "gated"
    assert res.summary.gate_failed is True and res.component == 0.0
    # A path's recorded score is never zeroed by a gate; only the component is.
    assert [(p.id, p.score, p.gate_failed) for p in res.summary.paths] == [
        ("clean", 1.0, False),
        ("gated", 1.0, True),
    ]


def test_a_path_gate_is_escapable_by_scoring_strictly_below_a_clean_route() -> None:
    block = {
        "alternatives": [
            {"id": "clean", "constraints": [present("c1", "a"), present("c2", "z")]},
            {
                "id": "gated",
                "constraints": [
                    present("g1", "a"),
                    present("g2", "z"),
                    absent("forbid", "b", severity="gate"),
                ],
            },
        ]
    }
    res = run(calls("a", "b"), block)
    assert (
        res.summary.winning_path == "gated"
    )  # the scoring level does not escape: ties go to the gate
    block["alternatives"][1]["constraints"][1] = present("g2", "y")
    res = run(calls("a", "b", "z"), block)
    assert (res.summary.winning_path, res.summary.gate_failed, res.component) == (
        "clean",
        False,
        1.0,
    )


def test_the_argmax_runs_over_paths_whose_gates_failed() -> None:
    block = {
        "alternatives": [
            {"id": "clean", "constraints": [present("c1", "a"), present("c2", "z")]},
            {
                "id": "gated",
                "constraints": [present("g1", "a"), absent("forbid", "b", severity="gate")],
            },
        ]
    }
    res = run(calls("a", "b"), block)
    assert res.summary.winning_path == "gated" and res.component == 0.0


def test_a_shared_gate_applies_whichever_route_wins() -> None:
    block = {
        "constraints": [absent("no_write", "post_status", severity="gate")],
        "alternatives": ROUTES["alternatives"],
    }
    res = run(calls("read_ledger", "recompute", "post_status"), block)
    assert res.summary.winning_path == "ledger" and res.summary.failed_gate_ids == ("no_write",)
    assert res.component == 0.0


def test_winner_choice_is_exact_not_float_rounded() -> None:
    third = SetScore(score_decision_set([_r("a", True), _r("b", False), _r("c", False)]).score, ())
    assert choose_winner(["p", "q"], [third, third]) == 0


def _r(id: str, passed: bool, severity: str = "scored", weight: float = 1.0) -> ConstraintResult:
    return ConstraintResult(id, "present", passed, False, weight, severity, "", ())


def test_cache_debug_charge_once_reading_scores_three_quarters() -> None:
    """GRADING.md § Four worked packs, cache_debug: a trajectory that writes the note and
    nothing else scores 3/4 — the ordering check carries on_missing: pass, the grounded-claim
    check on_unbound: pass, so only the presence check fails."""
    block = {
        "constraints": [present("the_note_was_written", "write_note")],
        "alternatives": [
            {
                "id": "divergence_against_the_cache",
                "constraints": [
                    {
                        "id": "read",
                        "require": {
                            "all_of": [
                                {"present": {"match": tc("cache_inspect")}},
                                {"present": {"match": tc("api_read")}},
                            ]
                        },
                    },
                    {
                        "id": "precedes",
                        "on_missing": "pass",
                        "require": {
                            "before": {
                                "left": {"quantifier": "all", "match": tc("cache_inspect")},
                                "right": {"quantifier": "first", "match": tc("write_note")},
                            }
                        },
                    },
                    {
                        "id": "quotes",
                        "bind": {
                            "match": tc("cache_inspect"),
                            "values": {
                                "status": {"field": "result", "pattern": r'"status": "(\w+)"'}
                            },
                            "on_unbound": "pass",
                        },
                        "require": {
                            "any_of": [
                                {"absent": {"match": tc("write_note")}},
                                {
                                    "present": {
                                        "match": tc(
                                            "write_note",
                                            args={"body": {"contains_binding": "status"}},
                                        )
                                    }
                                },
                            ]
                        },
                    },
                ],
            },
            {
                "id": "divergence_between_the_api_layers",
                "constraints": [
                    {
                        "id": "both_reads",
                        "require": {
                            "all_of": [
                                {"present": {"match": tc("served_read")}},
                                {"present": {"match": tc("source_read")}},
                            ]
                        },
                    },
                    {
                        "id": "reads_precede",
                        "on_missing": "pass",
                        "require": {
                            "before": {
                                "left": {"quantifier": "all", "match": tc("source_read")},
                                "right": {"quantifier": "first", "match": tc("write_note")},
                            }
                        },
                    },
                    {
                        "id": "quotes_served",
                        "bind": {
                            "match": tc("served_read"),
                            "values": {
                                "status": {"field": "result", "pattern": r"'status': '(\w+)'"}
                            },
                            "on_unbound": "pass",
                        },
                        "require": {
                            "any_of": [
                                {"absent": {"match": tc("write_note")}},
                                {
                                    "present": {
                                        "match": tc(
                                            "write_note",
                                            args={"body": {"contains_binding": "status"}},
                                        )
                                    }
                                },
                            ]
                        },
                    },
                ],
            },
        ],
    }
    only_note = run(calls(("write_note", {"body": "it is stale"})), block)
    assert only_note.component == 0.75
    s = (
        Script()
        .user()
        .say()
        .call("cache_inspect", result='{"status": "processing"}')
        .call("api_read")
    )
    s.say().call("write_note", {"body": "cache holds processing"})
    full = run(s.build(), block)
    assert (full.component, full.summary.winning_path) == (1.0, "divergence_against_the_cache")
    s = (
        Script()
        .user()
        .say()
        .call("cache_inspect", result='{"status": "processing"}')
        .call("api_read")
    )
    s.say().call("write_note", {"body": "cache holds shipped"})
    assert run(s.build(), block).component == 0.75


# --- the same-matcher survivors table, read at zero to four matching calls ---------------------

POLL = tc("poll")


def _survivor(kind: str, a: str, b: str) -> dict[str, Any]:
    if kind == "absent_before":
        return {"absent_before": {"forbidden": POLL, "anchor": {"quantifier": a, "match": POLL}}}
    if kind == "absent_between":
        return {
            "absent_between": {
                "forbidden": POLL,
                "start": {"quantifier": a, "match": POLL},
                "end": {"quantifier": b, "match": POLL},
            }
        }
    payload: dict[str, Any] = {
        "left": {"quantifier": a, "match": POLL},
        "right": {"quantifier": b, "match": POLL},
    }
    if kind == "immediately_before":
        payload["among"] = "tool_calls"
    return {kind: payload}


SURVIVORS = [
    *[("before", a, b, lambda k: k >= 2) for a in ("first", "any") for b in ("last", "any")],
    *[
        (
            "immediately_before",
            a,
            b,
            (lambda k: k == 2) if (a, b) == ("first", "last") else (lambda k: k >= 2),
        )
        for a in ("first", "any")
        for b in ("last", "any")
    ],
    ("absent_before", "last", "", lambda k: k == 1),
    ("absent_between", "first", "last", lambda k: k == 2),
]


def test_same_matcher_survivors_read_as_the_table_says() -> None:
    """before: at least twice; immediately_before: at least twice, first/last exactly twice;
    absent_before anchored last: once; absent_between first/last: exactly twice — measured
    at zero to four matching calls under the default on_missing."""
    assert len(SURVIVORS) == 10
    for kind, a, b, reads in SURVIVORS:
        block = {"constraints": [{"id": "c", "require": _survivor(kind, a, b)}]}
        for k in range(5):
            passed = run(calls(*(["poll"] * k), "other"), block).results[0].passed
            assert passed is reads(k), (kind, a, b, k)


def test_the_refused_same_matcher_shapes_are_constants_bar_one() -> None:
    """Twenty-seven of the 28 refused shapes are false at every trajectory; the 28th
    (absent_before anchored first) reads 'the events occurred at all'. Evaluated by building
    the constraint past the block-level refusal."""
    from replay.trace_checks import evaluate_constraint
    from replay.trace_checks.matching import TimelineIndex
    from schemas.trace_checks import Constraint

    qs = ("any", "all", "first", "last")
    shapes = [(k, a, b) for k in ("before", "immediately_before") for a in qs for b in qs]
    shapes += [("absent_before", a, "") for a in ("first", "last")]
    shapes += [("absent_between", a, b) for a in ("first", "last") for b in ("first", "last")]
    survivors = {(k, a, b) for k, a, b, _ in SURVIVORS}
    refused = [s for s in shapes if s not in survivors]
    assert len(refused) == 28
    for kind, a, b in refused:
        con = Constraint.model_validate({"id": "c", "require": _survivor(kind, a, b)})
        for k in range(5):
            t = calls(*(["poll"] * k), "other")
            passed = evaluate_constraint(TimelineIndex(t), con, "linear").passed
            expected = k >= 1 if (kind, a) == ("absent_before", "first") else False
            assert passed is expected, (kind, a, b, k)


def test_all_gate_only_routes_score_their_gate_verdict() -> None:
    """Routes with nothing scored score 1.0 where their gates held, 0.0 otherwise — so the
    clean route wins outright rather than tying with the shut one."""
    block = {
        "alternatives": [
            {"id": "shut", "constraints": [absent("no_b", "b", severity="gate")]},
            {"id": "clean", "constraints": [absent("no_c", "c", severity="gate")]},
        ]
    }
    res = run(calls("b"), block)
    assert [(p.id, p.score, p.gate_failed) for p in res.summary.paths] == [
        ("shut", 0.0, True),
        ("clean", 1.0, False),
    ]
    assert (res.summary.winning_path, res.component) == ("clean", 1.0)


def test_the_result_reads_as_a_component_result_and_a_raw_block_is_validated() -> None:
    block = {"constraints": [present("a", "read"), absent("g", "read", severity="gate")]}
    res = evaluate_trace_checks(calls("read"), block)  # the mapping, as parsed YAML
    assert (res.score, res.gate_failed, res.not_measured, res.evaluated) == (0.0, True, None, True)
    assert res.reasons == ("FAILED trace gates: g", "Trace checks: score=0.00")
    empty = TrialTimeline((), message_view_present=True, records_present=True)
    unscored = evaluate_trace_checks(empty, block)
    assert (unscored.score, unscored.evaluated, unscored.not_measured) == (None, False, None)
    import pytest

    from replay.trace_checks.rules import TraceChecksConfigError

    with pytest.raises(TraceChecksConfigError):
        evaluate_trace_checks(calls("read"), {"constraints": [present("a", "read", weight=0)]})
