"""What a matcher resolves to: the events that definitely match and the undecidable ones.

GRADING.md § What a matcher resolves to (None fields, pairing by call_id, unknown evidence).
Resolution is split in two so a bound constraint costs one pass over the timeline plus one
cheap pass per candidate: the literal predicates are evaluated once per (matcher, window),
and only the binding references are re-read per candidate, through a value index where the
reference is ``equals_binding``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from replay.grading.patterns import compile_regex
from replay.trace_checks.operators import MISSING, UNKNOWN, apply_operator, can_ever_hold, json_type
from schemas.timeline import VIEW_KINDS, TraceEvent, TraceEventKind, TrialTimeline
from schemas.trace_checks import Within
from schemas.trace_matchers import BINDING_OPERATORS, REGEX_OPERATORS, Matcher, RegexEngine


class TimelineIndex:
    """Per-timeline lookups computed once per evaluation: pairing, kinds, views."""

    def __init__(self, timeline: TrialTimeline) -> None:
        self.timeline = timeline
        self.events = timeline.events
        self.records_present = timeline.records_present
        self.result_for: dict[str, TraceEvent] = {}
        self.by_kind: dict[str, list[TraceEvent]] = {k.value: [] for k in TraceEventKind}
        for e in self.events:
            self.by_kind[e.kind.value].append(e)
            if e.kind is TraceEventKind.TOOL_RESULT and e.call_id is not None:
                self.result_for.setdefault(e.call_id, e)
        self._next: dict[str, dict[int, int]] = {}

    def next_in_view(self, among: str) -> dict[int, int]:
        """position -> position of the next event of the ``among`` view."""
        if among not in self._next:
            kinds = VIEW_KINDS[among]
            view = [e.position for e in self.events if e.kind in kinds]
            self._next[among] = dict(zip(view, view[1:], strict=False))
        return self._next[among]

    def paired_result(self, event: TraceEvent) -> TraceEvent | None:
        if event.call_id is None:
            return None
        return self.result_for.get(event.call_id)


def read_field(idx: TimelineIndex, event: TraceEvent, label: str) -> Any:
    """A field's value, ``None`` when absent, ``UNKNOWN`` when only missing evidence has it."""
    value = read_field_raw(idx, event, label)
    return None if value is MISSING else value


def read_field_raw(idx: TimelineIndex, event: TraceEvent, label: str) -> Any:
    """As :func:`read_field`, but an argument path the call never sent is ``MISSING`` —
    the one distinction only the recorded-only ``omitted`` operator reads."""
    if label.startswith("args"):
        value: Any = event.arguments
        if label == "args":
            return value
        for segment in label[5:].split("."):
            if not isinstance(value, Mapping) or segment not in value:
                return MISSING
            value = value[segment]
        return value
    if label == "tool":
        return event.tool_name
    if label == "text":
        return event.text
    if label == "executor":
        return event.executor if event.executor is not None else UNKNOWN
    source = event
    if event.kind is TraceEventKind.TOOL_CALL:
        paired = idx.paired_result(event)
        if paired is None:
            return UNKNOWN
        source = paired
    if label == "status":
        return source.status if source.status is not None else UNKNOWN
    if label == "result":
        return source.result
    raise AssertionError(f"bad field label {label!r}")


def missing_reason(idx: TimelineIndex, event: TraceEvent) -> str:
    if not idx.records_present:
        return "no tool-call record was supplied"
    if event.kind is TraceEventKind.TOOL_CALL and idx.paired_result(event) is None:
        return "the call never executed"
    return "the record does not carry it"


@dataclass(frozen=True, slots=True)
class Resolution:
    """Definitely matching and undecidable positions (ascending), and why each is undecidable."""

    matched: tuple[int, ...]
    undecidable: tuple[int, ...]
    missing: tuple[tuple[int, str, str], ...] = ()  # (position, field, reason)
    diagnostics: tuple[str, ...] = ()


@dataclass(slots=True)
class _Survivor:
    position: int
    unknown: tuple[str, ...]  # labels the literal predicates could not read
    dynamic_values: tuple[Any, ...]
    reason: str


@dataclass(slots=True)
class PreparedMatcher:
    """A matcher's literal predicates applied once over the timeline (kind + window)."""

    matcher: Matcher
    dynamic: tuple[tuple[str, str, str], ...]  # (label, operator, binding name)
    survivors: list[_Survivor]
    read_types: tuple[frozenset[str], ...]
    eq_index: dict[int, tuple[dict[Any, list[int]], list[int]]] = field(default_factory=dict)
    static: Resolution | None = None


def _compiled_ops(
    matcher: Matcher, engine: RegexEngine
) -> tuple[list[tuple[str, list[tuple[str, Any, Any]]]], list[tuple[str, str, str]]]:
    static: list[tuple[str, list[tuple[str, Any, Any]]]] = []
    dynamic: list[tuple[str, str, str]] = []
    for label, pred in matcher.predicates():
        ops = []
        site_engine = pred.engine_under(engine)
        for op, operand in pred.declared():
            if op in BINDING_OPERATORS:
                dynamic.append((label, op, operand))
            else:
                pattern = (
                    tuple(compile_regex(p, site_engine) for p in pred.patterns(op))
                    if op in REGEX_OPERATORS
                    else None
                )
                ops.append((op, operand, pattern))
        if ops:
            static.append((label, ops))
    return static, dynamic


def prepare(
    idx: TimelineIndex, matcher: Matcher, within: Within | None, engine: RegexEngine
) -> PreparedMatcher:
    static_ops, dynamic = _compiled_ops(matcher, engine)
    survivors: list[_Survivor] = []
    for event in idx.by_kind[matcher.kind]:
        if within is not None and not within.keeps(event.turn_index):
            continue
        unknown: list[str] = []
        rejected = False
        for label, ops in static_ops:
            value = read_field_raw(idx, event, label)
            if value is UNKNOWN:
                unknown.append(label)
                continue
            if not all(apply_operator(op, value, operand, pat) for op, operand, pat in ops):
                rejected = True
                break
        if rejected:
            continue
        values = tuple(read_field(idx, event, label) for label, _, _ in dynamic)
        unknown.extend(
            label for (label, _, _), v in zip(dynamic, values, strict=True) if v is UNKNOWN
        )
        reason = missing_reason(idx, event) if unknown else ""
        survivors.append(_Survivor(event.position, tuple(dict.fromkeys(unknown)), values, reason))
    read_types = tuple(
        frozenset(
            json_type(s.dynamic_values[i])
            for s in survivors
            if s.dynamic_values[i] is not None and s.dynamic_values[i] is not UNKNOWN
        )
        for i in range(len(dynamic))
    )
    prepared = PreparedMatcher(matcher, tuple(dynamic), survivors, read_types)
    if not dynamic:
        prepared.static = _collect(idx, [(s, s.unknown) for s in survivors])
    else:
        for i, (_, op, _) in enumerate(dynamic):
            if op == "equals_binding":
                prepared.eq_index[i] = _value_index(survivors, i)
    return prepared


def _value_index(survivors: list[_Survivor], i: int) -> tuple[dict[Any, list[int]], list[int]]:
    """Survivors by hashable value (dict lookup is ``==``, so 1, 1.0 and True share a bucket),
    plus the ones every lookup must scan: unreadable values and unhashable ones."""
    index: dict[Any, list[int]] = {}
    always: list[int] = []
    for n, s in enumerate(survivors):
        v = s.dynamic_values[i]
        if v is None:
            continue  # an absent value equals nothing
        if v is UNKNOWN:
            always.append(n)
            continue
        try:
            index.setdefault(v, []).append(n)
        except TypeError:
            always.append(n)
    return index, always


def _collect(idx: TimelineIndex, rows: list[tuple[_Survivor, tuple[str, ...]]]) -> Resolution:
    matched: list[int] = []
    undecidable: list[int] = []
    missing: list[tuple[int, str, str]] = []
    for s, unknown in rows:
        if unknown:
            undecidable.append(s.position)
            missing.extend((s.position, label, s.reason) for label in unknown)
        else:
            matched.append(s.position)
    return Resolution(tuple(matched), tuple(undecidable), tuple(missing))


def resolve(idx: TimelineIndex, prepared: PreparedMatcher, env: Mapping[str, Any]) -> Resolution:
    """The matcher's two sets under one binding environment."""
    if prepared.static is not None:
        return prepared.static
    diagnostics = tuple(
        d
        for i, (label, op, name) in enumerate(prepared.dynamic)
        if (d := _type_diagnostic(prepared.read_types[i], label, op, name, env[name]))
    )
    survivors = (prepared.survivors[n] for n in _candidate_rows(prepared, env))
    out = [
        (s, s.unknown)
        for s in survivors
        if all(
            v is UNKNOWN or apply_operator(op, v, env[name])
            for v, (_, op, name) in zip(s.dynamic_values, prepared.dynamic, strict=True)
        )
    ]
    res = _collect(idx, out)
    if diagnostics:
        return Resolution(res.matched, res.undecidable, res.missing, diagnostics)
    return res


def _candidate_rows(prepared: PreparedMatcher, env: Mapping[str, Any]) -> list[int]:
    for i, (index, always) in prepared.eq_index.items():
        bound = env[prepared.dynamic[i][2]]
        try:
            hit = index.get(bound, [])
        except TypeError:
            break  # an unhashable bound value: scan every survivor
        return sorted(hit + always) if always else hit
    return list(range(len(prepared.survivors)))


def render_value(value: Any) -> str:
    if isinstance(value, str):
        return repr(str(value))
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


def _type_diagnostic(
    read_types: frozenset[str], label: str, op: str, name: str, bound: Any
) -> str | None:
    """The evaluation-time sentence for a reference no read event could ever satisfy: some
    event carried a value at the field, and none a type the operator can pair."""
    if not read_types:
        return None
    bound_type = json_type(bound)
    if any(can_ever_hold(op, t, bound_type) for t in read_types):
        return None
    return (
        f"the {label} comparison was not made: binding '{name}' holds {render_value(bound)},"
        f" a JSON {bound_type}, and no candidate carried a value at that field which {op} can"
        " ever satisfy against it — two JSON types the operator cannot pair are false on every"
        " trajectory, whichever of the two holds the text. Reference the binding from an args"
        " predicate whose arguments the tools type the same way, or extract a regex capture"
        " off a field that holds text"
    )


def describe_missing(res: Resolution, limit: int = 5) -> str:
    """'status at positions [3, 5] (the call never executed)' — what evidence, and where."""
    groups: dict[tuple[str, str], list[int]] = {}
    for pos, label, reason in res.missing:
        groups.setdefault((label, reason), []).append(pos)
    parts = []
    for (label, reason), positions in groups.items():
        shown = sorted(set(positions))
        more = f" and {len(shown) - limit} more" if len(shown) > limit else ""
        parts.append(f"{label} at positions {shown[:limit]}{more} ({reason})")
    return "; ".join(parts) if parts else "no evidence"
