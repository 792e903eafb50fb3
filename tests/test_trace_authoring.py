"""The authoring gate's trace_checks rows (GRADING.md § What is validated before a run): a block
read against the task's tool schemas, with error / advisory / unchecked findings."""

from __future__ import annotations

import json
from typing import Any

import yaml

from replay.trace_checks.authoring import inspect_trace_checks
from replay.trace_checks.rules import load_trace_checks
from tests.parity_loader import PARITY_ROOT
from tests.trace_builders import side, tc


def _schema(props: dict[str, Any], strict: bool = True) -> dict[str, Any]:
    s: dict[str, Any] = {"type": "object", "properties": props}
    if strict:
        s["additionalProperties"] = False
    return s


STR, INT = {"type": "string"}, {"type": "integer"}
TOOLS = {
    "read_file": _schema({"path": STR, "offset": INT, "limit": INT}),
    "write_file": _schema({"path": STR, "content": STR}),
    "http_request": _schema({"url": STR, "method": STR, "json": {"type": "object"}}, strict=False),
    "loose_lookup": _schema({"ref": INT}, strict=False),
    "untyped": _schema({"blob": {"description": "anything"}}),
    "unresolved": None,
}


def findings(constraint: dict[str, Any], tools: Any = TOOLS) -> list[tuple[str, str]]:
    cfg = load_trace_checks({"constraints": [{"id": "c", **constraint}]})
    return [(f.klass, f.address) for f in inspect_trace_checks(cfg, tools)]


def present(matcher: dict[str, Any]) -> dict[str, Any]:
    return {"require": {"present": {"match": matcher}}}


def test_a_tool_outside_the_declared_set_is_an_error_wherever_the_matcher_sits() -> None:
    assert findings(present(tc("raed_file"))) == [
        ("error", "trace_checks.c.require.present.match.tool")
    ]
    m = {"kind": "tool_call", "tool": {"in_": ["read_file", "wirte_file"]}}
    assert findings(present(m)) == [("error", "trace_checks.c.require.present.match.tool")]
    bound = {
        "bind": {"match": tc("wirte_file"), "values": {"p": {"field": "args.path"}}},
        "require": {"present": {"match": tc("read_file", args={"path": {"equals_binding": "p"}})}},
    }
    assert ("error", "trace_checks.c.bind.match.tool") in findings(bound)


def test_a_tool_named_by_regex_draws_no_finding() -> None:
    assert findings(present({"kind": "tool_call", "tool": {"regex": "^raed"}})) == []


def test_an_unknown_first_argument_segment_is_an_error_or_an_advisory_by_the_schema() -> None:
    assert findings(present(tc("read_file", args={"pth": {"exists": True}}))) == [
        ("error", "trace_checks.c.require.present.match.args.pth")
    ]
    assert findings(present(tc("http_request", args={"jsn.q": {"exists": True}}))) == [
        ("advisory", "trace_checks.c.require.present.match.args.jsn.q"),
        ("unchecked", "trace_checks.c.require.present.match.args.jsn.q"),
    ]


def test_an_address_below_its_first_segment_and_an_unresolved_schema_are_unchecked() -> None:
    assert findings(present(tc("http_request", args={"json.q": {"len_gt": 0}}))) == [
        ("unchecked", "trace_checks.c.require.present.match.args.json.q")
    ]
    assert findings(present(tc("unresolved", args={"x": {"exists": True}}))) == [
        ("unchecked", "trace_checks.c.require.present.match.args.x")
    ]


def test_an_unresolvable_tool_set_is_one_unchecked_finding() -> None:
    assert findings(present(tc("anything")), tools=None) == [("unchecked", "trace_checks")]


def _bind(
    field: str,
    ref_label: str,
    ref_pred: dict[str, Any],
    binder: str = "read_file",
    pattern: str | None = None,
    ref_tool: str = "write_file",
) -> dict[str, Any]:
    value: dict[str, Any] = {"field": field}
    if pattern is not None:
        value["pattern"] = pattern
    if ref_label == "text":
        ref = {"kind": "assistant_message", "text": ref_pred}
    else:
        ref = tc(ref_tool, args={ref_label: ref_pred})
    return {
        "bind": {"match": tc(binder), "values": {"v": value}},
        "require": {"present": {"match": ref}},
    }


def test_a_number_typed_binding_read_against_text_is_an_error() -> None:
    assert findings(_bind("args.offset", "text", {"contains_binding": "v"})) == [
        ("error", "trace_checks.c.require.present.match.text")
    ]
    # a permissive binder schema makes it an advisory
    assert findings(_bind("args.ref", "text", {"equals_binding": "v"}, binder="loose_lookup")) == [
        ("advisory", "trace_checks.c.require.present.match.text")
    ]
    # beside a regex on the same args predicate, the comparison is text too
    assert findings(_bind("args.offset", "path", {"equals_binding": "v", "regex": "^/"})) == [
        ("error", "trace_checks.c.require.present.match.args.path")
    ]


def test_a_capture_over_a_number_typed_argument_or_bare_args_binds_nothing() -> None:
    assert ("error", "trace_checks.c.bind.values.v.pattern") in findings(
        _bind("args.offset", "text", {"contains_binding": "v"}, pattern=r"(\d+)")
    )
    assert ("error", "trace_checks.c.bind.values.v.pattern") in findings(
        _bind("args", "text", {"contains_binding": "v"}, pattern=r"(\d+)")
    )


def test_args_references_read_the_comparability_table_over_both_declared_types() -> None:
    """read_file.path against a binding off read_file.offset is reported, and so is the
    reverse; read_file.limit against that same offset binding is not."""
    assert findings(
        _bind("args.offset", "path", {"equals_binding": "v"}, ref_tool="read_file")
    ) == [("error", "trace_checks.c.require.present.match.args.path")]
    assert findings(
        _bind("args.path", "offset", {"equals_binding": "v"}, ref_tool="read_file")
    ) == [("error", "trace_checks.c.require.present.match.args.offset")]
    assert (
        findings(_bind("args.offset", "limit", {"equals_binding": "v"}, ref_tool="read_file")) == []
    )
    # either schema permitting extras makes it an advisory
    assert findings(
        _bind(
            "args.ref", "path", {"equals_binding": "v"}, binder="loose_lookup", ref_tool="read_file"
        )
    ) == [("advisory", "trace_checks.c.require.present.match.args.path")]
    # a text extraction is text whatever the schema: against an integer argument it is an error
    text_bound = {
        "bind": {"match": {"kind": "assistant_message"}, "values": {"v": {"field": "text"}}},
        "require": {
            "present": {"match": tc("read_file", args={"offset": {"equals_binding": "v"}})}
        },
    }
    assert findings(text_bound) == [("error", "trace_checks.c.require.present.match.args.offset")]


def test_a_property_writing_no_type_is_unchecked() -> None:
    assert findings(_bind("args.blob", "path", {"equals_binding": "v"}, binder="untyped")) == [
        ("unchecked", "trace_checks.c.bind.values.v.field")
    ]


def test_every_shipped_trace_pack_with_tool_fixtures_passes_the_gate() -> None:
    checked = 0
    for pack in sorted(PARITY_ROOT.iterdir()):
        fixtures = pack / "fixtures" / "tools.json"
        grading = pack / "grading.yaml"
        if not fixtures.exists() or not grading.exists():
            continue
        block = (yaml.safe_load(grading.read_text(encoding="utf-8")) or {}).get("trace_checks")
        if block is None:
            continue
        tools = {
            t["name"]: t["parameters"] for t in json.loads(fixtures.read_text(encoding="utf-8"))
        }
        found = inspect_trace_checks(load_trace_checks(block), tools)
        assert [f for f in found if f.klass != "unchecked"] == [], pack.name
        checked += 1
    assert checked >= 15


def test_a_window_side_matcher_is_checked_too() -> None:
    req = {
        "absent_between": {
            "forbidden": tc("notify"),
            "start": side("first", tc("read_file")),
            "end": side("last", tc("write_file")),
        }
    }
    assert findings({"require": req}) == [
        ("error", "trace_checks.c.require.absent_between.forbidden.tool")
    ]
