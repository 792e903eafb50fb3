"""Load-time refusals of the trace_checks model (GRADING.md § Trace Checks, § What is validated
before a run). Each refusal must name the key it is about and what to write instead."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from replay.trace_checks.rules import TraceChecksConfigError, load_trace_checks
from tests.trace_builders import side, tc

PRESENT = {"present": {"match": tc("read")}}
BEFORE = {"before": {"left": side("any", tc("read")), "right": side("first", tc("write"))}}


def refused(block: dict[str, Any]) -> str:
    with pytest.raises(TraceChecksConfigError) as exc:
        load_trace_checks(block)
    return str(exc.value)


def c(require: dict[str, Any] = PRESENT, id: str = "c", **kw: Any) -> dict[str, Any]:
    return {"id": id, "require": require, **kw}


def test_a_minimal_block_loads_with_defaults() -> None:
    cfg = load_trace_checks({"constraints": [c()]})
    (con,) = cfg.shared
    assert (con.effective_weight, con.severity, con.effective_on_missing) == (1.0, "scored", "fail")
    assert cfg.regex_engine == "linear"


def test_a_block_declaring_nothing_is_refused() -> None:
    assert "neither constraints nor alternatives" in refused({})
    assert "neither constraints nor alternatives" in refused({"constraints": []})


def test_unknown_keys_are_refused_everywhere() -> None:
    assert "unknown key 'wieght'" in refused({"constraints": [c(wieght=2)]})
    msg = refused(
        {"constraints": [c({"present": {"match": {"kind": "tool_call", "tool": {"equal": "x"}}}})]}
    )
    assert "unknown key 'equal'" in msg
    assert "unknown key 'colour'" in refused({"constraints": [c()], "colour": 1})


def test_kind_is_required_on_every_matcher() -> None:
    msg = refused({"constraints": [c({"present": {"match": {"tool": {"equals": "x"}}}})]})
    assert "needs kind:" in msg and "nothing is inferred" in msg


@pytest.mark.parametrize(
    ("kind", "field", "carrier"),
    [
        ("assistant_message", "tool", "tool_call or tool_result"),
        ("user_message", "status", "tool_call or tool_result"),
        ("tool_result", "args", "tool_call"),
        ("tool_call", "text", "assistant_message or user_message"),
    ],
)
def test_a_predicate_on_a_field_the_kind_never_carries_is_refused(
    kind: str, field: str, carrier: str
) -> None:
    pred = {"x": {"exists": True}} if field == "args" else {"exists": True}
    msg = refused({"constraints": [c({"present": {"match": {"kind": kind, field: pred}}})]})
    assert f"kind: {kind} matcher cannot carry a {field} predicate" in msg
    assert f"Write kind: {carrier}" in msg


def test_the_matchable_fields_of_each_kind_load() -> None:
    for m in (
        {
            "kind": "tool_call",
            "tool": {"equals": "t"},
            "executor": {"equals": "agent"},
            "args": {"a.b": {"exists": True}},
            "status": {"equals": "error"},
            "result": {"contains": "x"},
        },
        {
            "kind": "tool_result",
            "tool": {"equals": "t"},
            "executor": {"equals": "user"},
            "status": {"equals": "error"},
            "result": {"contains": "x"},
        },
        {"kind": "assistant_message", "text": {"contains": "x"}},
        {"kind": "user_message", "text": {"regex": "x"}},
    ):
        load_trace_checks({"constraints": [c({"present": {"match": m}})]})


def test_latency_is_not_matchable() -> None:
    assert "unknown key 'latency_seconds'" in refused(
        {
            "constraints": [
                c({"present": {"match": {"kind": "tool_result", "latency_seconds": {"gt": 1}}}})
            ]
        }
    )


def test_a_predicate_declaring_no_operator_is_refused_and_null_is_undeclared() -> None:
    for pred in ({}, {"equals": None}):
        msg = refused({"constraints": [c({"present": {"match": tc("x", args={"a": pred})}})]})
        assert "declares no operator" in msg and "exists: false" in msg


def test_there_is_no_absent_operator_and_no_not_contains() -> None:
    for op in ("absent", "not_contains", "not_regex"):
        assert f"unknown key '{op}'" in refused(
            {"constraints": [c({"present": {"match": tc("x", args={"a": {op: "v"}})}})]}
        )


def test_numeric_operators_take_a_real_number_only() -> None:
    for bad in ("5", True):
        refused({"constraints": [c({"present": {"match": tc("x", args={"a": {"gt": bad}})}})]})
    load_trace_checks(
        {"constraints": [c({"present": {"match": tc("x", args={"a": {"gt": 0, "lt": 100.5}})}})]}
    )


def test_require_carries_exactly_one_kind() -> None:
    assert "exactly one constraint kind (found present, absent)" in refused(
        {"constraints": [c({**PRESENT, "absent": {"match": tc("y")}})]}
    )
    assert "all_of over two expressions" in refused({"constraints": [c({})]})


def test_there_is_no_after() -> None:
    msg = refused({"constraints": [c({"after": BEFORE["before"]})]})
    assert "there is no after: write before with the two sides swapped" in msg


@pytest.mark.parametrize("q", ["any", "all"])
def test_anchor_sides_refuse_any_and_all(q: str) -> None:
    msg = refused(
        {"constraints": [c({"absent_before": {"forbidden": tc("w"), "anchor": side(q, tc("r"))}})]}
    )
    instead = "first" if q == "any" else "last"
    assert f"not {q}" in msg and f"write quantifier: {instead}" in msg


def test_forbidden_is_a_bare_matcher() -> None:
    msg = refused(
        {
            "constraints": [
                c(
                    {
                        "absent_before": {
                            "forbidden": side("any", tc("w")),
                            "anchor": side("first", tc("r")),
                        }
                    }
                )
            ]
        }
    )
    assert "absent_before.forbidden: a bare matcher carries no quantifier" in msg


def test_immediately_before_requires_an_explicit_among() -> None:
    msg = refused({"constraints": [c({"immediately_before": BEFORE["before"]})]})
    assert (
        "requires an explicit among" in msg and "tool_calls, tool_results, messages, events" in msg
    )
    refused({"constraints": [c({"immediately_before": {**BEFORE["before"], "among": "turns"}})]})


def test_weight_must_be_positive() -> None:
    for w in (0, -1.5):
        msg = refused({"constraints": [c(weight=w)]})
        assert "trace_checks.c.weight" in msg and "severity: gate" in msg


def test_weight_beside_a_gate_is_refused() -> None:
    msg = refused({"constraints": [c(severity="gate", weight=2.0)]})
    assert "trace_checks.c.weight: a severity: gate constraint" in msg and "drop weight" in msg


def test_on_missing_pass_beside_a_gate_is_refused_but_fail_loads() -> None:
    msg = refused({"constraints": [c(BEFORE, severity="gate", on_missing="pass")]})
    assert "trace_checks.c.on_missing: pass beside severity: gate" in msg
    load_trace_checks({"constraints": [c(BEFORE, severity="gate", on_missing="fail")]})


def test_on_unbound_pass_beside_a_gate_is_refused() -> None:
    bind = {"match": tc("write"), "values": {"r": {"field": "args.id"}}, "on_unbound": "pass"}
    req = {"present": {"match": tc("read", args={"id": {"equals_binding": "r"}})}}
    msg = refused({"constraints": [c(req, severity="gate", bind=bind)]})
    assert "trace_checks.c.bind.on_unbound: pass beside severity: gate" in msg


@pytest.mark.parametrize(
    "require",
    [
        PRESENT,
        {"absent": {"match": tc("x")}},
        {"count": {"match": tc("x"), "max": 1}},
        {"all_of": [BEFORE, PRESENT]},
        {"negate": {"any_of": [BEFORE, {"all_of": [{"absent": {"match": tc("x")}}]}]}},
    ],
)
def test_on_missing_is_refused_over_a_tree_holding_present_absent_or_count(
    require: dict[str, Any],
) -> None:
    for value in ("fail", "pass"):
        msg = refused({"constraints": [c(require, on_missing=value)]})
        assert (
            "trace_checks.c.on_missing: the require tree holds" in msg and "drop on_missing" in msg
        )


def test_on_missing_loads_where_every_kind_anchors_something() -> None:
    anchored = {
        "all_of": [
            BEFORE,
            {"absent_before": {"forbidden": tc("w"), "anchor": side("first", tc("r"))}},
            {
                "negate": {
                    "absent_between": {
                        "forbidden": tc("n"),
                        "start": side("first", tc("o")),
                        "end": side("last", tc("c")),
                    }
                }
            },
        ]
    }
    load_trace_checks({"constraints": [c(anchored, on_missing="pass")]})


def test_count_bounds() -> None:
    assert "neither min nor max" in refused({"constraints": [c({"count": {"match": tc("x")}})]})
    assert "min: 3 exceeds max: 1" in refused(
        {"constraints": [c({"count": {"match": tc("x"), "min": 3, "max": 1}})]}
    )


def test_within_bounds() -> None:
    assert "swap the bounds" in refused(
        {"constraints": [c(within={"first_turn": 3, "last_turn": 1})]}
    )
    load_trace_checks({"constraints": [c(within={"first_turn": 0, "last_turn": 1})]})


def test_single_path_alternatives_are_refused_pointing_at_constraints() -> None:
    msg = refused({"alternatives": [{"id": "p", "constraints": [c()]}]})
    assert "two is the floor" in msg and "constraints:" in msg


def test_ids_share_one_space_across_paths_and_constraints() -> None:
    block = {
        "constraints": [c(id="a")],
        "alternatives": [
            {"id": "a", "constraints": [c(id="x")]},
            {"id": "q", "constraints": [c(id="x")]},
        ],
    }
    msg = refused(block)
    assert "id 'a' repeats trace_checks.a" in msg
    assert "trace_checks.q.x: id 'x' repeats trace_checks.a.x" in msg


def test_a_gate_only_route_beside_a_scored_route_is_refused() -> None:
    block = {
        "alternatives": [
            {"id": "gated", "constraints": [c(id="g", severity="gate")]},
            {"id": "scored", "constraints": [c(id="s")]},
        ]
    }
    msg = refused(block)
    assert (
        "trace_checks.alternatives[gated]" in msg
        and "move its gates into the shared constraints" in msg
    )


def test_all_gate_only_routes_are_admitted_and_shared_scored_members_count() -> None:
    load_trace_checks(
        {
            "alternatives": [
                {"id": "a", "constraints": [c(id="g1", severity="gate")]},
                {"id": "b", "constraints": [c(id="g2", severity="gate")]},
            ]
        }
    )
    load_trace_checks(
        {
            "constraints": [c(id="s")],
            "alternatives": [
                {"id": "a", "constraints": [c(id="g1", severity="gate")]},
                {"id": "b", "constraints": [c(id="x")]},
            ],
        }
    )


BIND = {"match": tc("write"), "values": {"rec": {"field": "args.id"}}}


def test_an_unreferenced_bind_name_is_refused() -> None:
    bind = {
        "match": tc("write"),
        "values": {"rec": {"field": "args.id"}, "spare": {"field": "tool"}},
    }
    req = {"present": {"match": tc("read", args={"id": {"equals_binding": "rec"}})}}
    msg = refused({"constraints": [c(req, bind=bind)]})
    assert "trace_checks.c.bind.values.spare: binds 'spare' but no predicate" in msg


def test_a_reference_to_an_unbound_name_is_refused() -> None:
    req = {"present": {"match": tc("read", args={"id": {"contains_binding": "other"}})}}
    msg = refused({"constraints": [c(req, bind=BIND)]})
    assert "references binding 'other', which this constraint's bind does not declare" in msg
    msg = refused({"constraints": [c(req)]})
    assert "references binding 'other' but the constraint declares no bind" in msg


def test_a_binding_cannot_reach_across_constraints() -> None:
    ref = {"present": {"match": tc("read", args={"id": {"equals_binding": "rec"}})}}
    block = {"constraints": [c(ref, id="binds", bind=BIND), c(ref, id="borrows")]}
    assert (
        "trace_checks.borrows.require.present.match.args.id: references binding 'rec'"
        in refused(block)
    )


def test_bind_fields_must_exist_on_the_binders_kind() -> None:
    req = {"present": {"match": tc("read", args={"id": {"equals_binding": "t"}})}}
    bind = {"match": {"kind": "assistant_message"}, "values": {"t": {"field": "args.id"}}}
    assert "is never set on the kind: assistant_message events" in refused(
        {"constraints": [c(req, bind=bind)]}
    )
    bind = {"match": tc("w"), "values": {"t": {"field": "status"}}}
    assert "write tool, text, result, args" in refused({"constraints": [c(req, bind=bind)]})


def test_regex_patterns_the_engine_cannot_compile_are_load_errors() -> None:
    req = {"present": {"match": {"kind": "assistant_message", "text": {"regex": r"(a)\1"}}}}
    msg = refused({"constraints": [c(req)]})
    assert "trace_checks.c.require.present.match.text.regex" in msg and "RE2" in msg
    # The same pattern compiles under the backtracking engine a block may declare.
    load_trace_checks({"constraints": [c(req)], "regex_engine": "backtracking"})
    bind = {
        "match": {"kind": "assistant_message"},
        "values": {"v": {"field": "text", "pattern": "(?<=x)y"}},
    }
    req = {"present": {"match": tc("t", args={"a": {"equals_binding": "v"}})}}
    assert "trace_checks.c.bind.values.v.pattern" in refused({"constraints": [c(req, bind=bind)]})


def test_immediately_before_refuses_a_matcher_its_view_never_holds() -> None:
    req = {
        "immediately_before": {
            "left": side("any", {"kind": "assistant_message"}),
            "right": side("any", tc("x")),
            "among": "tool_calls",
        }
    }
    assert "write among: messages or events" in refused({"constraints": [c(req)]})


# --- same-matcher orderings: 38 quantifier combinations, 10 survive ------------------------

M = tc("poll")
QS = ("any", "all", "first", "last")


def _same_matcher_shapes() -> list[tuple[str, dict[str, Any], bool]]:
    shapes = []
    for kind in ("before", "immediately_before"):
        for ql, qr in itertools.product(QS, QS):
            payload: dict[str, Any] = {"left": side(ql, M), "right": side(qr, M)}
            if kind == "immediately_before":
                payload["among"] = "tool_calls"
            survives = ql in ("first", "any") and qr in ("last", "any")
            shapes.append((f"{kind}:{ql}/{qr}", {kind: payload}, survives))
    for qa in ("first", "last"):
        shapes.append(
            (
                f"absent_before:{qa}",
                {"absent_before": {"forbidden": M, "anchor": side(qa, M)}},
                qa == "last",
            )
        )
    for qs, qe in itertools.product(("first", "last"), ("first", "last")):
        shapes.append(
            (
                f"absent_between:{qs}/{qe}",
                {"absent_between": {"forbidden": M, "start": side(qs, M), "end": side(qe, M)}},
                (qs, qe) == ("first", "last"),
            )
        )
    return shapes


SHAPES = _same_matcher_shapes()


def test_the_census_is_38_shapes_of_which_10_survive() -> None:
    assert len(SHAPES) == 38
    assert sum(s for _, _, s in SHAPES) == 10


@pytest.mark.parametrize(("name", "require", "survives"), SHAPES, ids=[s[0] for s in SHAPES])
def test_same_matcher_shapes(name: str, require: dict[str, Any], survives: bool) -> None:
    block = {"constraints": [c(require)]}
    if survives:
        load_trace_checks(block)
        return
    msg = refused(block)
    if name == "absent_before:first":
        assert "present constraint written the long way round" in msg and "write present:" in msg
    elif name.startswith("absent_between"):
        assert "false on every trajectory" in msg and "write start: first, end: last" in msg
    else:
        assert "false on every trajectory" in msg
        assert "write left: first (or any) with right: last (or any)" in msg


def test_same_matcher_rule_reads_nested_expressions() -> None:
    bad = {"before": {"left": side("all", M), "right": side("all", M)}}
    msg = refused({"constraints": [c({"any_of": [PRESENT, {"negate": bad}]})]})
    assert "trace_checks.c.require.any_of[1].negate.before" in msg


def test_different_matchers_are_not_same_matcher_shapes() -> None:
    load_trace_checks(
        {
            "constraints": [
                c({"before": {"left": side("all", tc("a")), "right": side("all", tc("b"))}})
            ]
        }
    )


def test_every_problem_of_a_block_is_reported_in_one_raise() -> None:
    block = {
        "constraints": [c(id="g", severity="gate", weight=2), c(id="g")],
        "alternatives": [{"id": "only", "constraints": [c(id="r")]}],
    }
    with pytest.raises(TraceChecksConfigError) as exc:
        load_trace_checks(block)
    assert len(exc.value.problems) == 3


def test_a_missing_quantifier_is_named_with_what_to_write() -> None:
    msg = refused(
        {
            "constraints": [
                c({"before": {"left": {"match": tc("a")}, "right": side("any", tc("b"))}})
            ]
        }
    )
    assert (
        "require.before.left.quantifier: quantifier is required; write quantifier: any | all | first | last"
        in msg
    )


def test_recorded_pack_blocks_load() -> None:
    """The shipped migration packs' block (a gate with on_missing: fail written out) loads."""
    import yaml

    from tests.data_paths import PACKS

    root = PACKS
    blocks = [
        yaml.safe_load(p.read_text())["trace_checks"] for p in sorted(root.glob("*/grading.yaml"))
    ]
    assert len(blocks) == 2
    for block in blocks:
        (con,) = load_trace_checks(block).shared
        assert (con.severity, con.on_missing, con.kind) == ("gate", "fail", "before")


def test_every_matcher_is_addressed_for_the_authoring_gate() -> None:
    from replay.trace_checks.addresses import iter_block_matchers

    ref = {"present": {"match": tc("read", args={"id": {"equals_binding": "r"}})}}
    cfg = load_trace_checks(
        {
            "constraints": [
                c(
                    ref,
                    id="shared",
                    bind={"match": tc("write"), "values": {"r": {"field": "args.id"}}},
                )
            ],
            "alternatives": [
                {
                    "id": "p",
                    "constraints": [
                        c(
                            {
                                "absent_between": {
                                    "forbidden": tc("n"),
                                    "start": side("first", tc("o")),
                                    "end": side("last", tc("x")),
                                }
                            },
                            id="w",
                        )
                    ],
                },
                {"id": "q", "constraints": [c(BEFORE, id="b")]},
            ],
        }
    )
    assert [a for a, _ in iter_block_matchers(cfg)] == [
        "trace_checks.shared.require.present.match",
        "trace_checks.shared.bind.match",
        "trace_checks.p.w.require.absent_between.forbidden",
        "trace_checks.p.w.require.absent_between.start.match",
        "trace_checks.p.w.require.absent_between.end.match",
        "trace_checks.q.b.require.before.left.match",
        "trace_checks.q.b.require.before.right.match",
    ]
