"""A trial's events → the bundle files they were read from (the importer's inverse; pure).

``vledger curate`` writes every bundle through :func:`bundle_files`, whether the trial's
events were planned from a run directory or read back from the log, so a corpus cut from
the log is byte-identical to the same runs' corpus. The write set is RUBRIC_MIGRATION.md's
("Building a corpus"), plus the optional files the source bundle had. Keys are written
sorted (canonical JSON kept no order); an absent ``status`` / ``termination_reason`` reads
back as null, and a record call without ``arguments`` as ``arguments: {}``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ledger.sources.yaml_emit import emit_yaml
from replay.grading.recorded_grade import recorded_grade_of
from schemas.canonical import parse_json
from schemas.envelope import StoredEvent
from schemas.errors import LedgerError

# trajectory.yaml keys the importer moves onto trial.ended (ledger.sources.tolokaforge)
_END_KEYS = ("status", "termination_reason")
_TIME_KEYS = ("start_ts", "end_ts")
WRITE_SET = ("task.yaml", "trajectory.yaml", "grade.yaml")


class BundleExportError(LedgerError, ValueError):
    """The events do not hold what a bundle file needs; names the stream and the file."""


def _payloads(events: Sequence[StoredEvent]) -> dict[str, list[Any]]:
    by_type: dict[str, list[Any]] = {}
    for ev in sorted(events, key=lambda e: e.stream_version):
        by_type.setdefault(ev.type, []).append(parse_json(ev.payload))
    return by_type


def _as_recorded(row: Mapping[str, Any]) -> dict[str, Any]:
    # The importer numbers each row (``index``) and moves keys a newer recorder wrote under
    # ``unrecognized``, verbatim; the file holds them where the recorder wrote them.
    out = {k: v for k, v in row.items() if k not in ("index", "unrecognized")}
    out.update(row.get("unrecognized") or {})
    return out


def _without_index(rows: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [_as_recorded(r) for r in sorted(rows, key=lambda r: r["index"])]


def _trajectory(reg: Mapping[str, Any], by_type: Mapping[str, list[Any]]) -> dict[str, Any]:
    doc = dict(reg.get("trajectory_meta") or {})
    ended = (by_type.get("trial.ended") or [{}])[0]
    for key in _END_KEYS:
        doc[key] = ended.get(key)
    if ended.get("grading_error_recorded"):
        doc["grading_error"] = ended.get("grading_error")
    for key in _TIME_KEYS:
        if key in ended:
            doc[key] = ended[key]
    doc["messages"] = _without_index(by_type.get("trial.message") or [])
    calls = _without_index(by_type.get("trial.tool_call") or [])
    if reg.get("record_view") and "tool_log.yaml" not in (reg.get("files") or ()):
        doc["tool_log"] = calls  # the record travelled inline in trajectory.yaml
    return doc


def bundle_documents(events: Sequence[StoredEvent]) -> dict[str, Any]:
    """The documents of the write set this trial's source carried, by file name."""
    by_type = _payloads(events)
    registered = by_type.get("trial.registered")
    stream = events[0].stream if events else "<no events>"
    if not registered:
        raise BundleExportError(f"stream {stream!r} has no trial.registered event: it is not a trial")
    reg = registered[0]
    files = set(reg.get("files") or ())
    docs: dict[str, Any] = {"trajectory.yaml": _trajectory(reg, by_type)}
    if reg.get("task_source") == "task.yaml":
        docs["task.yaml"] = reg.get("task")
    grade = recorded_grade_of(by_type.get("grade.recorded") or ())
    if grade is not None:  # the one that counts, as retrace and curate read it
        docs["grade.yaml"] = grade
    if "metrics.yaml" in files:
        docs["metrics.yaml"] = reg.get("metrics")
    if "tools_schemas.yaml" in files:
        docs["tools_schemas.yaml"] = reg.get("tool_schemas")
    if "tool_log.yaml" in files:
        docs["tool_log.yaml"] = _without_index(by_type.get("trial.tool_call") or [])
    return docs


def bundle_files(events: Sequence[StoredEvent]) -> dict[str, bytes]:
    """The write set's bytes, by file name; refuses a trial missing a required file."""
    docs = bundle_documents(events)
    missing = [name for name in WRITE_SET if name not in docs]
    if missing:
        raise BundleExportError(
            f"stream {events[0].stream!r} carries no {', '.join(missing)}: a corpus bundle "
            "needs task.yaml, trajectory.yaml and grade.yaml"
        )
    return {name: emit_yaml(doc) for name, doc in sorted(docs.items())}
