"""``vledger export --otel FILE``: every trial as an OTLP/JSON trace in the GenAI conventions
(its spans, attributes, ids and times: docs/readme/inspect.md § OpenTelemetry export).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from ledger.app.result import Result
from ledger.engines.trials import group_trials
from ledger.errors import LedgerError
from replay.grading.recorded_grade import RecordedGradeRead, is_number
from replay.timeline.build import attempted_calls, build_trial_timeline
from replay.timeline.trial_inputs import TrialInputs, TrialInputsError, trial_inputs
from schemas.timeline import TimelineInconsistencyError, TraceEventKind

SCOPE = "verdict-ledger"
SPAN_KIND_INTERNAL, SPAN_KIND_CLIENT = 1, 3  # opentelemetry.proto.trace.v1.Span.SpanKind
STATUS_ERROR = 2  # Status.StatusCode.STATUS_CODE_ERROR
EVALUATION_EVENT = "gen_ai.evaluation.result"


class OtelExportError(LedgerError):
    """The export cannot be written (the target exists, or cannot be created)."""


@dataclass(frozen=True)
class OtelResult(Result):
    path: Path
    traces: int
    spans: int

    def to_json(self) -> dict[str, Any]:
        return {"otel": str(self.path), "traces": self.traces, "spans": self.spans}


def _attr(key: str, value: Any) -> dict[str, Any] | None:
    """One OTLP KeyValue; None for an absent value (an attribute is never written empty)."""
    if value is None:
        return None
    if isinstance(value, bool):
        v: dict[str, Any] = {"boolValue": value}
    elif isinstance(value, int):
        v = {"intValue": str(value)}  # OTLP/JSON: 64-bit integers as decimal strings
    elif isinstance(value, float):
        v = {"doubleValue": value}
    elif isinstance(value, (list, tuple)):
        v = {"arrayValue": {"values": [{"stringValue": str(x)} for x in value]}}
    else:
        v = {"stringValue": str(value)}
    return {"key": key, "value": v}


def _attrs(pairs: Iterable[tuple[str, Any]]) -> list[dict[str, Any]]:
    return [a for k, v in pairs if (a := _attr(k, v)) is not None]


def _hex_id(*parts: str, length: int) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:length]


def parse_time(text: Any) -> int | None:
    """An ISO-8601 timestamp as Unix nanoseconds (naive = UTC); None if absent or unreadable."""
    if not isinstance(text, str) or not text:
        return None
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    delta = dt - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


def _plus(start: int, seconds: Any) -> int:
    if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and seconds >= 0:
        return start + int(seconds * 1e9)
    return start


def _provider(model: str | None) -> str | None:
    """``openai/gpt-4o`` → ``openai``: the provider prefix both recorders write."""
    return model.split("/", 1)[0] if model and "/" in model else None


@dataclass(frozen=True, slots=True)
class _Trace:
    trace_id: str
    root_id: str
    start: int


def _span(
    t: _Trace, name: str, key: str, kind: int, start: int, end: int, attrs: list, **extra: Any
) -> dict[str, Any]:
    return {
        "traceId": t.trace_id,
        "spanId": _hex_id(t.trace_id, key, length=16),
        "parentSpanId": t.root_id,
        "name": name,
        "kind": kind,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(max(start, end)),
        "attributes": attrs,
        **extra,
    }


def _usage_calls(trial: TrialInputs) -> list[Mapping[str, Any]]:
    metrics = trial.registered.payload.get("metrics") or {}
    usage = metrics.get("usage") if isinstance(metrics, Mapping) else None
    calls = usage.get("calls") if isinstance(usage, Mapping) else None
    return [c for c in calls or () if isinstance(c, Mapping)]


def chat_spans(t: _Trace, trial: TrialInputs, assistant_turns: int) -> list[dict[str, Any]]:
    """One CLIENT span per model call: from recorded usage, else per assistant message."""
    agent = trial.registered.models.get("agent")
    calls = _usage_calls(trial) or [{} for _ in range(assistant_turns)]
    out = []
    for i, c in enumerate(calls):
        model = c.get("model") or agent
        start = parse_time(c.get("started_at")) or t.start
        attrs = _attrs([
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.provider.name", _provider(model)),
            ("gen_ai.request.model", model),
            ("gen_ai.usage.input_tokens", c.get("prompt_tokens")),
            ("gen_ai.usage.output_tokens", c.get("completion_tokens")),
        ])  # fmt: skip
        extra = {}
        if c.get("error"):
            extra["status"] = {"code": STATUS_ERROR, "message": str(c["error"])}
            attrs += _attrs([("error.type", "model_error")])
        name = f"chat {model}" if model else "chat"
        out.append(_span(t, name, f"chat/{i}", SPAN_KIND_CLIENT, start,
                         _plus(start, c.get("latency_s")), attrs, **extra))  # fmt: skip
    return out


def tool_spans(t: _Trace, trial: TrialInputs, timeline: Any) -> list[dict[str, Any]]:
    """One INTERNAL span per attempted tool call; a failed one has status ERROR."""
    records = {r.call_id: r for r in trial.recorded_calls or ()}
    out = []
    for i, (call, result) in enumerate(attempted_calls(timeline)):
        record = records.get(call.call_id)
        start = parse_time(record.timestamp if record else None) or t.start
        latency = result.latency_seconds if result is not None else None
        status = result.status.value if result is not None and result.status else None
        attrs = _attrs([
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", call.tool_name),
            ("gen_ai.tool.call.id", call.call_id),
            ("gen_ai.tool.type", "function"),
            ("gen_ai.agent.name", call.agent),  # where the recorder names it (inspect_ai)
        ])  # fmt: skip
        extra = {}
        if status not in (None, "success"):
            extra["status"] = {"code": STATUS_ERROR, "message": (result.result or status)[:500]}
            attrs += _attrs([("error.type", status)])
        out.append(_span(t, f"execute_tool {call.tool_name}", f"tool/{i}", SPAN_KIND_INTERNAL,
                         start, _plus(start, latency), attrs, **extra))  # fmt: skip
    return out


def grade_attributes(grade: RecordedGradeRead | None) -> list[dict[str, Any]]:
    """The recorded grade as the trial span's ``gen_ai.evaluation.*`` attributes."""
    if grade is None or not grade.raw:
        return []
    reasons = grade.reasons
    return _attrs([
        ("gen_ai.evaluation.name", "grade"),
        ("gen_ai.evaluation.score.value", _number(grade.score)),
        ("gen_ai.evaluation.score.label",
         None if grade.binary_pass is None else ("pass" if grade.binary_pass else "fail")),
        ("gen_ai.evaluation.explanation", reasons if isinstance(reasons, str) and reasons else None),
    ])  # fmt: skip


def _number(value: Any) -> float | None:
    return float(value) if is_number(value) else None


def component_events(grade: RecordedGradeRead | None, at: int) -> list[dict[str, Any]]:
    """One ``gen_ai.evaluation.result`` event per grade component that has a value."""
    comps = {} if grade is None else grade.components
    return [
        {"timeUnixNano": str(at), "name": EVALUATION_EVENT, "attributes": _attrs([
            ("gen_ai.evaluation.name", name), ("gen_ai.evaluation.score.value", _number(value)),
        ])}
        for name, value in sorted(comps.items())
        if _number(value) is not None
    ]  # fmt: skip


def trial_spans(trial: TrialInputs, ended: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A trial's whole trace: the agent-turn root, then its model and tool spans.

    ``ended`` is the trial.ended payload, whose ``start_ts``/``end_ts`` time the root
    (TrialInputs keeps how a trial ended, not when).
    """
    stream = trial.registered.stream
    trace_id = _hex_id("trace", stream, length=32)
    root_id = _hex_id(trace_id, "root", length=16)
    start = parse_time(ended.get("start_ts")) or 0
    t = _Trace(trace_id, root_id, start)
    children: list[dict[str, Any]] = []
    root_extra: dict[str, Any] = {}
    try:
        timeline = build_trial_timeline(
            trial.timeline_messages, trial.recorded_calls, trial.termination_reason
        )
    except TimelineInconsistencyError as exc:
        root_extra["status"] = {"code": STATUS_ERROR, "message": f"inconsistent views: {exc}"}
    else:
        turns = sum(e.kind is TraceEventKind.ASSISTANT_MESSAGE for e in timeline.events)
        children = chat_spans(t, trial, turns) + tool_spans(t, trial, timeline)
    end = max([parse_time(ended.get("end_ts")) or start]
              + [int(s["endTimeUnixNano"]) for s in children])  # fmt: skip
    reg = trial.registered
    calls = _usage_calls(trial)
    attrs = _attrs([
        ("gen_ai.operation.name", "invoke_agent"),
        ("gen_ai.agent.name", reg.task_id),
        ("gen_ai.conversation.id", stream),
        ("gen_ai.request.model", reg.models.get("agent")),
        ("gen_ai.provider.name", _provider(reg.models.get("agent"))),
        ("gen_ai.usage.input_tokens", _sum(calls, "prompt_tokens")),
        ("gen_ai.usage.output_tokens", _sum(calls, "completion_tokens")),
    ]) + grade_attributes(trial.grade_read)  # fmt: skip
    if trial.status == "error" and "status" not in root_extra:
        root_extra["status"] = {"code": STATUS_ERROR, "message": "the trial ended in error"}
    root = {
        "traceId": trace_id,
        "spanId": root_id,
        "name": f"invoke_agent {reg.task_id}",
        "kind": SPAN_KIND_INTERNAL,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(end),
        "attributes": attrs,
        "events": component_events(trial.grade_read, end),
        **root_extra,
    }
    return [root, *children]


def _sum(calls: Sequence[Mapping[str, Any]], key: str) -> int | None:
    values = [c[key] for c in calls if isinstance(c.get(key), int)]
    return sum(values) if values else None


def traces_document(spans: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The OTLP/JSON TracesData: one resource (this ledger), one scope, every span."""
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": _attrs([("service.name", SCOPE)])},
                "scopeSpans": [{"scope": {"name": SCOPE}, "spans": list(spans)}],
            }
        ]
    }


def export_otel(lg: Any, path: Path) -> OtelResult:
    """Write every trial of ``lg`` as OTLP/JSON to ``path`` (which must not exist)."""
    path = Path(path)
    if path.exists():
        raise OtelExportError(f"{path}: exists; pass a new file name (an export never overwrites)")
    spans: list[dict[str, Any]] = []
    traces = 0
    for events in group_trials(lg.read(stream_prefix="trial/")).values():  # in stream order
        try:
            trial = trial_inputs(events)
        except TrialInputsError:
            continue  # not readable as a trial: nothing to trace
        ended = next((e.data() for e in reversed(events) if e.type == "trial.ended"), {})
        spans += trial_spans(trial, ended)
        traces += 1
    try:
        path.write_bytes(orjson.dumps(traces_document(spans)))
    except OSError as exc:
        raise OtelExportError(f"{path}: cannot write: {exc.strerror or exc}") from None
    return OtelResult(path, traces, len(spans))
