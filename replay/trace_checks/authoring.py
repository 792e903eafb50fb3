"""The authoring gate's trace_checks rules: a block checked against the task's tools.

GRADING.md § What is validated before a run, the rows that read a trace_checks block
against tool schemas; the inputs and the three finding classes (``error``, ``advisory``,
``unchecked``) are docs/readme/trace.md's. ``unchecked`` is never read to decide anything:
it is surfaced so a gate that checked nothing never reads as a clean bill of health. Everything
not about tools is answered earlier, by :func:`replay.trace_checks.rules.load_trace_checks`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from replay.trace_checks.addresses import constraint_matchers, iter_constraints, iter_matchers
from replay.trace_checks.operators import can_ever_hold
from schemas.trace_checks import Bind, Constraint, TraceChecksConfig
from schemas.trace_matchers import Matcher, Predicate

FindingClass = Literal["error", "advisory", "unchecked"]
JSON_TYPES = frozenset({"string", "integer", "number", "boolean", "array", "object"})
NON_TEXT = frozenset({"integer", "number", "boolean", "array", "object"})
TEXT_FIELDS = ("tool", "text", "result", "status", "executor")


@dataclass(frozen=True, slots=True)
class Finding:
    klass: FindingClass
    address: str
    message: str


@dataclass(frozen=True, slots=True)
class _Schema:
    name: str
    properties: Mapping[str, Any]
    forbids_extras: bool

    def declared_type(self, segment: str) -> str | None:
        prop = self.properties.get(segment)
        t = prop.get("type") if isinstance(prop, Mapping) else None
        return t if isinstance(t, str) and t in JSON_TYPES else None


@dataclass(frozen=True, slots=True)
class _Bound:
    """What one binding name is known to hold: its JSON type, and whether that is certain
    (a schema forbidding extras, or a text extraction) or only what a permissive schema says."""

    type: str
    certain: bool
    from_args_field: bool  # an args field carrying no pattern (rule 3's reach)


def inspect_trace_checks(
    cfg: TraceChecksConfig, tools: Mapping[str, Mapping[str, Any] | None] | None
) -> tuple[Finding, ...]:
    """Every tool-dependent finding of a block, in block order."""
    if tools is None:
        return (
            Finding(
                "unchecked",
                "trace_checks",
                "the task's tool set could not be resolved, so no tool name, argument address"
                " or binding type in the block was checked",
            ),
        )
    return tuple(f for address, c in iter_constraints(cfg) for f in _constraint(c, address, tools))


def _constraint(c: Constraint, address: str, tools: Mapping[str, Any]) -> Iterator[Finding]:
    for where, matcher in constraint_matchers(c, address):
        yield from _tool_names(matcher, where, tools)
        yield from _args_addresses(matcher, where, tools)
    if c.bind is None:
        return
    bound: dict[str, list[_Bound]] = {}
    for name in c.bind.values:
        where = f"{address}.bind.values.{name}"
        found, kinds = _binding(c.bind, name, where, tools)
        yield from found
        bound[name] = kinds
    for where, matcher in iter_matchers(c.require, f"{address}.require"):
        for label, pred in matcher.predicates():
            yield from _references(matcher, label, pred, f"{where}.{label}", c.bind, bound, tools)


def named_tools(matcher: Matcher) -> tuple[str, ...] | None:
    """The tools a matcher names by equals / in_; None where it names none or a pattern."""
    pred = matcher.tool
    if pred is None:
        return None
    if isinstance(pred.equals, str):
        return (pred.equals,)
    if pred.in_ is not None:
        return tuple(t for t in pred.in_ if isinstance(t, str))
    return None


def _schemas(matcher: Matcher, tools: Mapping[str, Any]) -> tuple[list[_Schema], bool]:
    """The resolved schemas of the tools a matcher names, and whether every one resolved."""
    names = named_tools(matcher)
    if names is None:
        return [], False
    out = []
    complete = True
    for n in names:
        params = tools.get(n)
        if not isinstance(params, Mapping):
            complete = False
            continue
        props = params.get("properties")
        out.append(
            _Schema(
                n,
                props if isinstance(props, Mapping) else {},
                params.get("additionalProperties") is False,
            )
        )
    return out, complete


def _tool_names(matcher: Matcher, where: str, tools: Mapping[str, Any]) -> Iterator[Finding]:
    for name in named_tools(matcher) or ():
        if name not in tools:
            yield Finding(
                "error",
                f"{where}.tool",
                f"tool {name!r} is not among the task's tools ({', '.join(sorted(tools)) or 'none'});"
                " under present it selects nothing and under absent it passes every trial —"
                " correct the name",
            )


def _args_addresses(matcher: Matcher, where: str, tools: Mapping[str, Any]) -> Iterator[Finding]:
    if not matcher.args:
        return
    schemas, complete = _schemas(matcher, tools)
    for path in matcher.args:
        yield from _address_findings(path, f"{where}.args.{path}", schemas, complete)


def _address_findings(
    path: str, where: str, schemas: list[_Schema], complete: bool
) -> Iterator[Finding]:
    head, _, rest = path.partition(".")
    if not complete:
        yield Finding(
            "unchecked", where, f"args address {path!r}: the tool's schema did not resolve"
        )
    for s in schemas:
        if head not in s.properties:
            klass: FindingClass = "error" if s.forbids_extras else "advisory"
            yield Finding(
                klass,
                where,
                f"{head!r} is not an argument of {s.name} (it declares"
                f" {', '.join(sorted(s.properties)) or 'none'}); a typo here binds or matches"
                " nothing on every trajectory — use a declared argument name",
            )
    if rest:
        yield Finding(
            "unchecked", where, f"args address {path!r} is checked only at its first segment"
        )


def _binding(
    bind: Bind, name: str, where: str, tools: Mapping[str, Any]
) -> tuple[list[Finding], list[_Bound]]:
    spec = bind.values[name]
    head, _, rest = spec.field.partition(".")
    findings: list[Finding] = []
    if head != "args":
        return findings, [_Bound("string", True, False)]  # tool / text / result are text
    if not rest:
        if spec.pattern is not None:
            findings.append(
                _pattern_finding(where, "the whole argument mapping (field: args)", "object", True)
            )
        return findings, [_Bound("string" if spec.pattern else "object", True, False)]
    schemas, complete = _schemas(bind.match, tools)
    findings.extend(_address_findings(rest, f"{where}.field", schemas, complete))
    first, _, below = rest.partition(".")
    kinds: list[_Bound] = []
    for s in schemas:
        declared = s.declared_type(first) if not below else None
        if declared is None:
            if first in s.properties and not below:
                findings.append(
                    Finding("unchecked", f"{where}.field", f"{s.name}.{first} writes no JSON type")
                )
            continue
        if spec.pattern is not None:
            if declared in NON_TEXT:
                findings.append(
                    _pattern_finding(where, f"{s.name}.{first}", declared, s.forbids_extras)
                )
            kinds.append(_Bound("string", True, False))
        else:
            kinds.append(_Bound(declared, s.forbids_extras, True))
    return findings, kinds


def _pattern_finding(where: str, what: str, declared: str, forbids: bool) -> Finding:
    return Finding(
        "error" if forbids else "advisory",
        f"{where}.pattern",
        f"a capture is taken off text alone, and {what} is typed {declared}, so the name binds on"
        " no trajectory; drop the pattern to bind the value itself",
    )


def _references(
    matcher: Matcher,
    label: str,
    pred: Predicate,
    where: str,
    bind: Bind,
    bound: Mapping[str, list[_Bound]],
    tools: Mapping[str, Any],
) -> Iterator[Finding]:
    for op, name in pred.declared():
        if op not in ("equals_binding", "contains_binding"):
            continue
        for b in bound.get(name, []):
            on_text = label in TEXT_FIELDS or (label.startswith("args.") and pred.regex is not None)
            if on_text and b.from_args_field:
                if b.type in NON_TEXT:
                    yield Finding(
                        "error" if b.certain else "advisory",
                        where,
                        f"{op}: {name} holds a value its tool types {b.type}, read here against"
                        f" text ({label}{' beside a regex' if pred.regex is not None else ''}), which"
                        " is false on every trajectory — extract a regex capture, or reference the"
                        " binding from an args predicate typed the same way",
                    )
                continue
            if label.startswith("args."):
                yield from _args_reference(matcher, label, op, name, b, where, tools)


def _args_reference(
    matcher: Matcher,
    label: str,
    op: str,
    name: str,
    b: _Bound,
    where: str,
    tools: Mapping[str, Any],
) -> Iterator[Finding]:
    path = label[5:]
    first, _, below = path.partition(".")
    if below:
        yield Finding(
            "unchecked", where, f"{op}: {label} is below its first segment, so its type is unknown"
        )
        return
    schemas, _ = _schemas(matcher, tools)
    for s in schemas:
        declared = s.declared_type(first)
        if declared is None:
            if first in s.properties:
                yield Finding("unchecked", where, f"{op}: {s.name}.{first} writes no JSON type")
            continue
        if not can_ever_hold(op, declared, b.type):
            both_forbid = s.forbids_extras and b.certain
            yield Finding(
                "error" if both_forbid else "advisory",
                where,
                f"{op}: {s.name}.{first} is typed {declared} and binding {name!r} holds a {b.type};"
                f" no pair of values of those types satisfies {op}, so the reference is false on"
                " every trajectory — correlate arguments the tools type compatibly",
            )
