"""Small hand-built ledgers for the analytics tests: events in the payload shapes of issues
3 (trial events), 6 (grade.replayed / replay.completed) and 8 (verdict.admitted).

``write_ledger`` appends through ``ledger.log.store`` when it is importable, so the views are
tested over exactly what the store writes; otherwise it writes the envelope rows itself
(same columns, same leaf hashes).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from schemas.canonical import canonical_json
from schemas.envelope import ARROW_SCHEMA, NewEvent, envelope_bytes, leaf_hash

Event = tuple[str, str, dict[str, Any]]  # (stream, type, payload)

COMPONENTS = ("state_checks", "transcript_rules", "trace_checks", "llm_judge", "custom_checks")


def trial_stream(corpus: str, task: str, idx: int) -> str:
    return f"trial/{corpus}/{task}/{idx}"


def recorded_grade(
    score: float | None,
    passed: bool | None,
    *,
    criteria: list[tuple[str, bool | None, float | None]] = (),  # type: ignore[assignment]
    checks: list[dict[str, Any]] = (),  # type: ignore[assignment]
    judge: float | None = None,
    judge_status: str = "completed",
) -> dict[str, Any]:
    comps: dict[str, Any] = dict.fromkeys(COMPONENTS)
    comps["llm_judge"] = judge if judge is not None else score
    return {
        "binary_pass": passed,
        "score": score,
        "components": comps,
        "reasons": f"Judge: score={score}",
        "state_diff": None,
        "custom_checks_details": None,
        "trace_check_results": list(checks),
        "trace_checks_summary": {
            "winning_path": "",
            "gate_failed": False,
            "failed_gate_ids": [],
            "paths": [],
        },
        "criterion_results": [
            {"id": cid, "met": met, "score": sc, "justification": f"why {cid}"}
            for cid, met, sc in criteria
        ],
        "judge_status": judge_status,
    }


def check(
    cid: str, verdict: str, *, kind: str = "before", severity: str = "gate"
) -> dict[str, Any]:
    """One trace_check_results row; verdict is pass / fail / undecided / withheld."""
    return {
        "id": cid,
        "kind": kind,
        "passed": verdict == "pass",
        "weight": 1.0,
        "severity": severity,
        "message": "" if verdict == "pass" else f"{cid} failed",
        "matched_positions": [1, 3] if verdict == "pass" else [],
        "undecided": verdict == "undecided",
        "withheld": verdict == "withheld",
    }


def trial_events(
    corpus: str,
    task: str,
    idx: int,
    *,
    model: str = "openai/gpt-4o-mini",
    termination: str | None = "user_stop",
    grading_error: str | None = None,
    grade: dict[str, Any] | None = None,
    tools: list[tuple[str, str, float]] = (),  # type: ignore[assignment]
    met: bool | None = None,
) -> list[Event]:
    """A trial's raw events: registered, messages, tool calls, timeline, ended, grade."""
    s = trial_stream(corpus, task, idx)
    out: list[Event] = [
        (
            s,
            "trial.registered",
            {
                "task_id": task,
                "trial_index": idx,
                "trial": str(idx),
                "corpus": corpus,
                "bundle_path": f"{task}_{idx}",
                "files": ["trajectory.yaml", "grade.yaml"],
                "record_view": bool(tools),
                "met": met,
                "models": {"agent": model, "user": "sim-user", "judge": "judge-1"},
                "trajectory_meta": {"task_id": task, "trial_index": idx},
            },
        ),
        (
            s,
            "trial.message",
            {
                "index": 0,
                "role": "user",
                "content": "please add a note é",
                "tool_calls": [],
                "tool_call_id": None,
                "ts": "2026-08-03T06:30:19Z",
            },
        ),
    ]
    calls = [
        {"id": f"c{i}", "name": name, "arguments": {"i": i}}
        for i, (name, _st, _lat) in enumerate(tools)
    ]
    out.append(
        (
            s,
            "trial.message",
            {
                "index": 1,
                "role": "assistant",
                "content": "",
                "tool_calls": calls,
                "tool_call_id": None,
                "ts": "2026-08-03T06:30:20Z",
            },
        )
    )
    for i, (name, status, lat) in enumerate(tools):
        out.append(
            (
                s,
                "trial.tool_call",
                {
                    "index": i,
                    "call_id": f"c{i}",
                    "sequence": i,
                    "tool_name": name,
                    "arguments": {"i": i},
                    "executor": "agent",
                    "status": status,
                    "output": "ok",
                    "latency_seconds": lat,
                    "timestamp": "2026-08-03T06:30:21Z",
                },
            )
        )
    out.append(
        (
            s,
            "trial.ended",
            {
                "status": "completed",
                "termination_reason": termination,
                "grading_error": grading_error,
                "grading_error_recorded": True,
            },
        )
    )
    for pos, kind in enumerate(("user_message", "assistant_message")):
        out.append(
            (
                s,
                "timeline.event",
                {
                    "timeline_version": "timeline/1",
                    "message_view_present": True,
                    "records_present": bool(tools),
                    "position": pos,
                    "turn_index": 0,
                    "kind": kind,
                    "text": f"m{pos}",
                },
            )
        )
    if grade is not None:
        out.append((s, "grade.recorded", {"source": "grade.yaml", "grade": grade}))
    return out


def replay_events(
    replay_id: str, grades: dict[str, dict[str, Any]], *, task_of: dict[str, str]
) -> list[Event]:
    """One retrace: a grade.replayed per trial and its replay.completed receipt."""
    out: list[Event] = []
    for trial, g in grades.items():
        out.append(
            (
                f"replay/{replay_id}",
                "grade.replayed",
                {
                    "trial": trial,
                    "task_id": task_of[trial],
                    "projection_version": "grade/1",
                    "config_digest": "sha256:cfg",
                    "replay_id": replay_id,
                    "grade": g,
                },
            )
        )
    out.append(
        (
            f"replay/{replay_id}",
            "replay.completed",
            {
                "replay_id": replay_id,
                "receipt": {
                    "checkpoint": {"size": 10, "root": "ab" * 16},
                    "config_digest": "sha256:cfg",
                    "outputs_digest": f"sha256:{replay_id}",
                },
            },
        )
    )
    return out


def replayed_grade(
    score: float | None,
    passed: bool | None,
    *,
    checks: list[dict[str, Any]] = (),  # type: ignore[assignment]
    not_measured: dict[str, str] | None = None,
    judge: float | None = None,
) -> dict[str, Any]:
    return {
        "score": score,
        "binary_pass": passed,
        "components": {"llm_judge": judge if judge is not None else score, "trace_checks": None},
        "not_measured": not_measured or {},
        "reasons": ["Judge: re-aggregated", "Trace checks: replayed"],
        "trace_check_results": list(checks),
        "trace_checks_summary": {
            "winning_path": "",
            "gate_failed": False,
            "failed_gate_ids": [],
            "paths": [],
        },
    }


def admission(unit: str, grade: str, **extra: Any) -> Event:
    counters = dict.fromkeys(
        (
            "unverified_from_unrun_declared",
            "degraded",
            "producer_mint_rejected",
            "unbindable_content_identity",
            "same_chain_indeterminate",
            "author_chain_unbound",
            "failed_declared",
            "proof_kernel_exempt",
            "tied_uncap",
        ),
        0,
    )
    payload = {
        "unit": unit,
        "effective_grade": grade,
        "evidence_kind": "oracle",
        "applied_rank_ops": [],
        "conflicting_evidence": False,
        "failed_declared_evidence": False,
        "provenance": "test",
        "oracle_author": None,
        "oracle_runner": None,
        "work_producer": None,
        "content_identity": None,
        "current_content_identity": "",
        "declared_count": 0,
        "unrun_count": 0,
        "counters": counters,
        "registration": "verdict-grade-registration/v1",
        "through_version": -1,
    }
    payload.update(extra)
    return (f"unit/{unit}", "verdict.admitted", payload)


def write_ledger(path: Path, events: list[Event], *, via_store: bool = True) -> Path:
    """Create a ledger directory holding ``events`` (appended in order)."""
    try:
        from ledger.log.store import init_ledger  # noqa: PLC0415
    except ImportError:
        via_store = False
    if via_store:
        with init_ledger(path) as lg:
            lg.append([NewEvent(s, t, p, event_id=f"e{i}") for i, (s, t, p) in enumerate(events)])
        return path
    path.mkdir(parents=True, exist_ok=True)
    table = envelope_table(events)
    con = duckdb.connect(str(path / "events.duckdb"))
    con.execute(
        "CREATE TABLE IF NOT EXISTS events (seq UBIGINT NOT NULL, stream VARCHAR NOT NULL, "
        "stream_version UINTEGER NOT NULL, event_id VARCHAR NOT NULL, type VARCHAR NOT NULL, "
        "schema_version USMALLINT NOT NULL, recorded_at TIMESTAMPTZ NOT NULL, "
        "payload BLOB NOT NULL, leaf_hash BLOB NOT NULL)"
    )
    con.register("t", table)
    con.execute("INSERT INTO events SELECT * FROM t")
    con.close()
    return path


def envelope_table(events: list[Event], *, first_seq: int = 0) -> pa.Table:
    """The envelope rows for ``events`` as the store would write them."""
    t0 = datetime(2026, 9, 1, tzinfo=UTC)
    versions: dict[str, int] = {}
    cols: dict[str, list[Any]] = {f.name: [] for f in ARROW_SCHEMA}
    for i, (stream, type_, payload) in enumerate(events):
        seq = first_seq + i
        v = versions.get(stream, -1) + 1
        versions[stream] = v
        body = canonical_json(payload)
        eid = f"e{seq}"
        cols["seq"].append(seq)
        cols["stream"].append(stream)
        cols["stream_version"].append(v)
        cols["event_id"].append(eid)
        cols["type"].append(type_)
        cols["schema_version"].append(1)
        cols["recorded_at"].append(t0 + timedelta(seconds=seq))
        cols["payload"].append(body)
        cols["leaf_hash"].append(leaf_hash(envelope_bytes(seq, stream, v, eid, type_, 1, body)))
    return pa.table(cols, schema=ARROW_SCHEMA)
