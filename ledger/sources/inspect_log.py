"""inspect_ai evaluation logs → trial events (docs/readme/inspect.md § "The mapping").

:func:`log_samples` is the only I/O and the only (lazy) import of inspect_ai; the mapping is
pure. Scores are history, not content (§ "Re-import and re-scoring"): a ``grade.recorded``
is identified by its content alone (``SCORES_POSITION``), and only the solver phase feeds
the transcript and the usage.
"""

from __future__ import annotations

import io
import math
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ledger.sources.files import read_input
from ledger.sources.inspect_agents import executed, flatten, in_start_order
from ledger.sources.plan import PlannedEvent, event_id, timeline_payloads, to_events, trial_stream
from ledger.sources.shape import BundleError
from schemas.canonical import canonical_json
from schemas.errors import LedgerError
from schemas.timeline import TimelineInconsistencyError

EXTRA = "inspect"
INSTALL_HINT = "pip install 'verdict-ledger[inspect]'"
RECORDER = "inspect_ai"
# The corpus of an inspect trial ingested without --corpus: a name of the recorder, not of
# the folder the log sits in (docs/readme/inspect.md § "Identity").
CORPUS = RECORDER
# inspect_ai's own rule for what a log file is named (inspect_ai.log._file.log_file_pattern):
# any ``.eval``; a ``.json`` only under its timestamped name, so a directory's other JSON
# (a pack's fixtures/tools.json, a run's receipt.json) is never taken for a log.
_JSON_LOG_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}[:-]\d{2}[:-]\d{2}.*\.json$")
# The trace-check fields an inspect log does not record: ``executor`` is written "agent"
# only to fit the record's shape (docs/readme/inspect.md § "Trace checks over inspect samples").
UNRECORDED_FIELDS: tuple[str, ...] = ("executor",)
# The position a grade.recorded's id is derived with: a name, not a stream position, so the
# same scores get the same id whenever they are read and new scores a new one.
SCORES_POSITION = "scores"
# inspect_ai.scorer's letter values (CORRECT, INCORRECT, PARTIAL, NOANSWER) as numbers, as
# its value_to_float reads them.
_LETTERS = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
# ToolCallError.type -> the record's status vocabulary; any other type is a plain error.
_ERROR_STATUS = {"timeout": "timeout", "parsing": "invalid_arguments"}


class InspectUnavailable(LedgerError, RuntimeError):
    """inspect_ai is not installed; the message names the extra that provides it."""

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(
            f"{path}: reading inspect_ai logs needs the optional '{EXTRA}' extra "
            f"({INSTALL_HINT}); nothing was ingested"
        )


def is_log_file(path: Path) -> bool:
    """A name inspect_ai would list as a log (see ``_JSON_LOG_NAME``)."""
    return path.suffix == ".eval" or bool(_JSON_LOG_NAME.match(path.name))


def discover_logs(
    root: Path, skip: frozenset[str] = frozenset(), names: frozenset[str] = frozenset()
) -> list[Path]:
    """Every log file under ``root``, sorted; hidden and symlinked directories are skipped,
    and so are the directories ``skip`` holds (their paths as strings) and any directory
    named one of ``names``."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(  # ``skip`` first: a corpus's bundles, without an lstat each
            d for d in dirnames
            if not d.startswith(".") and d not in names
            and (full := os.path.join(dirpath, d)) not in skip and not os.path.islink(full)
        )  # fmt: skip
        logs = sorted((f for f in filenames if is_log_file(Path(f))), key=_read_order)
        found += [Path(dirpath, f) for f in logs]
    return found


def _read_order(name: str) -> tuple[str, str]:
    """Names sorted without their format suffix, so the copy ``inspect score`` writes
    beside a log (``<name>-scored.eval``) is read after it and its scores are the latest."""
    return (name.removesuffix(".eval").removesuffix(".json"), name)


def _inspect(label: str) -> Any:
    """inspect_ai.log, or :class:`InspectUnavailable` naming ``label``."""
    try:
        import inspect_ai.log as inspect_log
    except ImportError:
        raise InspectUnavailable(label) from None
    return inspect_log


def _unreadable(label: str, exc: Exception) -> BundleError:
    first = (str(exc).strip().splitlines() or [""])[0][:300]
    return BundleError(
        label,
        None,
        "an inspect_ai log (.eval or .json) that inspect_ai's read_eval_log can read",
        f"{type(exc).__name__}: {first}",
    )


def log_samples(
    path: Path, label: str, max_bytes: int, max_members: int, root: Path
) -> Iterator[tuple[Any, Any]]:
    """``(eval spec, sample)`` for every sample × epoch of a log, one sample at a time,
    attachments resolved. A ``.eval`` archive is read member by member within the bounds
    (ledger.sources.inspect_archive); a ``.json`` log is one file, read whole within
    ``max_bytes``. Raises :class:`InspectUnavailable` without the extra, and
    :class:`BundleError` / :class:`InputError` naming the file or member it cannot read.
    """
    log = _inspect(label)
    if path.suffix != ".eval":
        data = read_input(
            path, max_bytes=max_bytes, name=label, root=root, what="the log directory"
        )
        try:
            whole = log.read_eval_log(io.BytesIO(data), format="json", resolve_attachments=True)
        except Exception as exc:  # inspect's reader raises many types; each one named
            raise _unreadable(label, exc) from None
        del data
        yield from ((whole.eval, s) for s in whole.samples or ())
        return
    from ledger.sources.inspect_archive import HEADER, START, Archive, member_label, parse_member

    with Archive(path, label, max_bytes, max_members, root) as arc:
        head = HEADER if HEADER in arc.members else START
        if head not in arc.members:
            raise BundleError(label, None, f"a .eval log holding {HEADER} or {START}", "neither")
        spec = _validated(log.EvalSpec, parse_member(arc.read(head), member_label(label, head)),
                          member_label(label, head), key="eval")  # fmt: skip
        for name in arc.sample_names():
            where = member_label(label, name)
            sample = _validated(log.EvalSample, parse_member(arc.read(name), where), where)
            yield spec, log.resolve_sample_attachments(sample, True)


def _validated(model: Any, data: Any, where: str, key: str | None = None) -> Any:
    try:
        from inspect_ai._util.constants import get_deserializing_context

        context = get_deserializing_context()
    except ImportError:  # a private helper of inspect_ai; without it, plain validation
        context = None
    try:
        return model.model_validate(data[key] if key else data, context=context)
    except Exception as exc:  # pydantic's ValidationError, a missing key: named
        raise _unreadable(where, exc) from None


def _iso(value: Any) -> str | None:
    if value is None:
        return None
    return value.isoformat() if isinstance(value, datetime) else str(value)


def _seconds(start: Any, end: Any) -> float | None:
    if isinstance(start, datetime) and isinstance(end, datetime):
        return (end - start).total_seconds()
    return None


def _text(value: Any) -> str:
    """A tool result or message content as text: strings as they are, content blocks'
    text joined, anything else as canonical JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float, bool)):
        return canonical_json(value).decode()
    if isinstance(value, list):
        return "".join(_text(v) for v in value)
    text = getattr(value, "text", None)
    if isinstance(text, str):
        return text
    dump = getattr(value, "model_dump", None)
    return canonical_json(dump(mode="json") if dump else str(value)).decode()


def _dump(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    return dump(mode="json", exclude_none=True) if dump else value


def score_value(value: Any) -> float | None:
    """One scorer's value as a number, the way inspect's ``value_to_float`` reads it; None
    for a value that is not one number (a dict or list of values) or is not finite."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        if value in _LETTERS:
            return _LETTERS[value]
        try:
            number = float(value)
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def solver_events(events: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """The sample's events split at its ``scorers`` span: (solver phase, scoring phase)."""
    for i, ev in enumerate(events):
        if getattr(ev, "event", None) == "span_begin" and getattr(ev, "type", None) == "scorers":
            return list(events[:i]), list(events[i:])
    return list(events), []


def _of(events: Iterable[Any], kind: str) -> list[Any]:
    return [e for e in events if getattr(e, "event", None) == kind]


def message_payload(index: int, m: Any) -> dict[str, Any]:
    """One ChatMessage as a ``trial.message`` payload (keys of trajectory.yaml's messages)."""
    payload: dict[str, Any] = {"index": index, "role": m.role, "content": m.text}
    if not isinstance(m.content, str):
        payload["content_blocks"] = [_dump(c) for c in m.content]
    calls = getattr(m, "tool_calls", None)
    if calls:
        payload["tool_calls"] = [
            {"id": c.id, "name": c.function, "arguments": dict(c.arguments or {})} for c in calls
        ]
    if m.role == "tool" and getattr(m, "tool_call_id", None) is not None:
        payload["tool_call_id"] = m.tool_call_id
    return payload


def tool_status(ev: Any) -> str:
    """A ToolEvent's outcome. A call that raised past the tool (``failed``: it ended the
    sample) or never returned (``pending``: the sample was cancelled or cut off while it
    ran) records no ``error`` and an empty result, and did not succeed either."""
    error = ev.error
    if error is None:
        failed = getattr(ev, "failed", None) or getattr(ev, "pending", None)
        return "error" if failed else "success"
    if error.type == "parsing" and error.message == f"Tool {ev.function} not found":
        return "tool_not_found"  # inspect files an unknown tool name as a parsing error
    return _ERROR_STATUS.get(getattr(error, "type", ""), "error")


def record_payload(index: int, ev: Any, agent: str | None = None) -> dict[str, Any]:
    """One ToolEvent as a ``trial.tool_call`` payload (RecordedToolCall's fields) naming the
    agent that made it; a failed call that returned nothing gets its error message as
    output, so it reaches the timeline."""
    output = _text(ev.result)
    if ev.error is not None and not output:
        output = ev.error.message
    latency = _seconds(ev.timestamp, getattr(ev, "completed", None))
    return {
        "index": index,
        "call_id": ev.id,
        "sequence": index,
        "tool_name": ev.function,
        "arguments": dict(ev.arguments or {}),
        "executor": "agent",  # see UNRECORDED_FIELDS
        "status": tool_status(ev),
        "output": output,
        "latency_seconds": latency if latency is not None else ev.working_time,
        "timestamp": _iso(ev.timestamp),
        **({} if agent is None else {"agent": agent}),
    }


def _usage(model: str, u: Any, **rest: Any) -> dict[str, Any]:
    """A ModelUsage (or None) in metrics.yaml's ``usage.calls[]`` key names, plus ``rest``."""
    read = (u.input_tokens_cache_read or 0) if u else 0
    write = (u.input_tokens_cache_write or 0) if u else 0
    return {
        "model": model,
        # inspect's input_tokens excludes cached input; a prompt is all of it
        "prompt_tokens": (u.input_tokens + read + write) if u else None,
        "completion_tokens": u.output_tokens if u else None,
        "reasoning_tokens": u.reasoning_tokens if u else None,
        "cached_tokens": read if u else None,
        "cache_creation_input_tokens": write if u else None,
        "cache_read_input_tokens": read if u else None,
        "cost_usd": u.total_cost if u else None,
        "cost_source": RECORDER if u and u.total_cost is not None else None,
        **rest,
    }


def _call_usage(ev: Any) -> dict[str, Any]:
    """One ModelEvent's usage."""
    return _usage(
        ev.model,
        getattr(ev.output, "usage", None),
        latency_s=_seconds(ev.timestamp, getattr(ev, "completed", None)),
        started_at=_iso(ev.timestamp),
        error=ev.error,
    )


def _total(calls: Sequence[Mapping[str, Any]], key: str) -> int | float | None:
    values = [c[key] for c in calls if c.get(key) is not None]
    return sum(values) if values else None


def usage_from_calls(calls: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    keys = ("prompt_tokens", "completion_tokens", "reasoning_tokens", "cached_tokens",
            "cache_creation_input_tokens", "cache_read_input_tokens")  # fmt: skip
    return {**{k: _total(calls, k) for k in keys}, "calls": list(calls)}


def _usage_from_summary(model_usage: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per-model totals as calls, for a log recorded without model events."""
    return [
        _usage(model, u, latency_s=None, started_at=None, error=None, summary=True)
        for model, u in sorted(model_usage.items())
    ]


def metrics_payload(sample: Any, solver: Sequence[Any]) -> dict[str, Any]:
    """The agent's usage in metrics.yaml's key names (the views read both alike)."""
    model_events = _of(solver, "model")
    if model_events:
        calls, source = [_call_usage(e) for e in model_events], "model_events"
    else:
        calls, source = _usage_from_summary(sample.model_usage or {}), "model_usage"
    return {
        "recorder": RECORDER,
        "usage_source": source,
        "usage": usage_from_calls(calls),
        "cost_usd": _total(calls, "cost_usd"),
        "api_calls": len(model_events) if model_events else None,
        "latency_total_s": sample.total_time,
        "working_time_s": sample.working_time,
        "tool_calls": len(_of(solver, "tool")),
    }


def grade_payload(scores: Mapping[str, Any], scoring: Sequence[Any]) -> dict[str, Any] | None:
    """The sample's scores as a recorded grade, one component per scorer (docs/readme/inspect.md
    § The mapping, ``grade.recorded``)."""
    if not scores:
        return None
    components = {name: score_value(s.value) for name, s in scores.items()}
    numeric = [v for v in components.values() if v is not None]
    grade: dict[str, Any] = {
        "binary_pass": bool(numeric) and all(v == 1.0 for v in numeric),
        "score": sum(numeric) / len(numeric) if numeric else 0.0,
        "components": components,
        "reasons": " | ".join(
            f"{name}: {s.explanation}" for name, s in scores.items() if s.explanation
        ),
        "scores": {name: _dump(s.model_copy(update={"history": []})) for name, s in scores.items()},
    }
    judge = [_call_usage(e) for e in _of(scoring, "model")]
    if judge:
        grade["judge_usage"] = {
            "calls": len(judge),
            "prompt_tokens": _total(judge, "prompt_tokens"),
            "completion_tokens": _total(judge, "completion_tokens"),
            "reasoning_tokens": _total(judge, "reasoning_tokens"),
            "cost_usd": _total(judge, "cost_usd"),
        }
    return {"source": RECORDER, "grade": grade}


def _judge_model(spec: Any) -> str | None:
    roles = getattr(spec, "model_roles", None) or {}
    grader = roles.get("grader")
    if isinstance(grader, list):
        grader = grader[0] if grader else None
    return getattr(grader, "model", None)


def trial_name(sample: Any, eval_id: str) -> str:
    return f"{sample.id}_epoch{sample.epoch}_{eval_id}"


def registered_payload(
    spec: Any, sample: Any, corpus: str, record_view: bool, metrics: dict
) -> dict[str, Any]:
    """Who the trial is (task, model, epoch, sample): nothing about the file it was read
    from, so a copy, a conversion or a re-scored file anywhere registers the same trial."""
    return {
        "task_id": spec.task,
        "trial_index": sample.epoch - 1,
        "trial": trial_name(sample, spec.eval_id),
        "corpus": corpus,
        "bundle_path": f"{spec.eval_id}#{sample.id}/{sample.epoch}",
        "files": [],  # a log is one file, and which one is not part of the trial
        "record_view": record_view,
        "models": {"agent": spec.model, "user": None, "judge": _judge_model(spec)},
        "task": {
            "task_id": spec.task,
            "task_version": spec.task_version,
            "task_file": spec.task_file,
            "task_registry_name": spec.task_registry_name,
            "dataset": getattr(spec.dataset, "name", None),
            "sample": {
                "id": sample.id,
                "epoch": sample.epoch,
                "input": sample.input if isinstance(sample.input, str) else None,
                "target": sample.target,
                "choices": sample.choices,
                "metadata": sample.metadata or {},
            },
        },
        "task_source": RECORDER,
        "trajectory_meta": {
            "recorder": RECORDER,
            "eval_id": spec.eval_id,
            "eval_set_id": getattr(spec, "eval_set_id", None),
            "run_id": spec.run_id,
            "task_id": spec.task_id,
            "inspect_version": (spec.packages or {}).get("inspect_ai"),
            "sample_uuid": sample.uuid,
            "unrecorded_fields": list(UNRECORDED_FIELDS),
        },
        "metrics": metrics,
    }


def ended_payload(sample: Any) -> dict[str, Any]:
    """How the sample ended: an error, a limit (``<type>_limit``), or completed."""
    if sample.error is not None:
        status, reason = "error", "error"
    elif sample.limit is not None:
        status, reason = "completed", f"{sample.limit.type}_limit"
    else:
        status, reason = "completed", "completed"
    return {
        "status": status,
        "termination_reason": reason,
        "grading_error": None,
        "grading_error_recorded": False,
        "start_ts": _iso(sample.started_at),
        "end_ts": _iso(sample.completed_at),
    }


@dataclass(frozen=True, slots=True)
class SamplePlan:
    """One sample × epoch: its core events (position ids) and its scores (content ids)."""

    stream: str
    label: str
    events: tuple[PlannedEvent, ...]
    scores: tuple[PlannedEvent, ...]
    inconsistency: TimelineInconsistencyError | None = None


def sample_plan(spec: Any, sample: Any, corpus: str, label: str) -> SamplePlan:
    """One EvalSample → its stream's events (module docstring)."""
    where = f"{label}#{sample.id}/{sample.epoch}"
    solver, scoring = solver_events(list(flatten(sample.events or [])))
    solver = in_start_order(solver)  # a re-scored copy holds them in another order
    msgs = [message_payload(i, m) for i, m in enumerate(sample.messages)]
    run = executed(solver)
    # no events at all: the log carries no record view (the messages are all there is)
    records = (
        [record_payload(i, e, agent) for i, (e, agent) in enumerate(run.tools)]
        if sample.events
        else None
    )
    metrics = metrics_payload(sample, solver)
    registered = registered_payload(spec, sample, corpus, records is not None, metrics)
    ended = ended_payload(sample)
    view = msgs if run.messages is None else run.messages
    timeline, inconsistency = timeline_payloads(view, records, ended["termination_reason"])
    typed: list[tuple[str, dict[str, Any]]] = [("trial.registered", registered)]
    typed += [("trial.message", p) for p in msgs]
    typed += [("trial.agent_message", p) for p in run.messages or ()]
    typed += [("trial.tool_call", p) for p in records or ()]
    typed.append(("trial.ended", ended))
    typed += [("timeline.event", p) for p in timeline]
    stream = trial_stream(corpus, spec.task, registered["trial"])
    events = to_events(stream, typed, where)
    grade = grade_payload(sample.scores or {}, scoring)
    scores = () if grade is None else (_scores_event(stream, grade, where),)
    return SamplePlan(stream, where, events, scores, inconsistency)


def _scores_event(stream: str, grade: dict[str, Any], where: str) -> PlannedEvent:
    (planned,) = to_events(stream, [("grade.recorded", grade)], where)
    # appended beside earlier scores of the same trial, never as a stream's first event
    return PlannedEvent(
        stream, planned.type, event_id(stream, SCORES_POSITION, "grade.recorded", grade),  # type: ignore[arg-type]
        planned.body,
    )  # fmt: skip
