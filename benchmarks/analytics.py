"""Benchmark: five analytics questions over a ≥ 1,000,000-event grade history, in SQL over the
ledger's views versus the way users answer them today — load the bundles' YAML files with
PyYAML (C loader) and group in Python.

pandas is not a dependency of this project (pyproject.toml) and is not installed here, so the
baseline groups in plain Python dicts after loading; grouping is a small part of its time
(the YAML load dominates), which the table reports separately.

Usage::

    PYTHONPATH=. python -m benchmarks.analytics [--trials 20000] [--replays 3] [--workdir DIR]

The generated history is deterministic from ``--seed`` and cached under ``--workdir``. The
events are written straight into the store's ``events`` table in the envelope schema (with
real leaf hashes), because this measures reading, not appending; the same trials are also
written as bundles (task.yaml, trajectory.yaml, tool_log.yaml, grade.yaml), per-replay
``trace_replay/<replay_id>/<bundle>/trace_checks_result.yaml`` files and admission YAMLs for the
baseline.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import random
import shutil
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import orjson
import pyarrow as pa
import yaml

from ledger.analytics import sql as analytics
from schemas.envelope import ARROW_SCHEMA
from schemas.events import validate_payload
from schemas.gvc import COUNTER_NAMES

TOOLS = (
    "list_notes",
    "add_note",
    "search_kb",
    "get_order",
    "update_order",
    "send_email",
    "lookup_user",
    "refund",
)
CRITERIA = ("checked_first", "saved_faithfully", "clarity")
CONSTRAINTS = ("listed_before_add", "no_refund_without_lookup")
GRADES = ("proof", "known_answer", "interop", "constructed_check", "review_only", "unverified")
REASONS = (
    ("user_stop",) * 30
    + ("max_turns",) * 4
    + ("agent_done",) * 4
    + ("rate_limit", "api_timeout", "timeout", "error", "trial_lost")
)

try:
    _Loader: Any = yaml.CSafeLoader
    _Dumper: Any = yaml.CSafeDumper
except AttributeError:  # pragma: no cover - the C loader is a declared requirement
    _Loader, _Dumper = yaml.SafeLoader, yaml.SafeDumper


# --- generation --------------------------------------------------------------------------------


def _trial_plan(rng: random.Random, i: int, n_tasks: int, models: list[str]) -> dict[str, Any]:
    task = f"task_{i % n_tasks:03d}"
    idx = i // n_tasks
    reason = rng.choice(REASONS)
    aborted = reason in ("rate_limit", "api_timeout")
    quality = rng.random()
    passed = quality > 0.45
    crit = [(c, rng.random() < (0.8 if passed else 0.3)) for c in CRITERIA]
    checks = [
        (
            c,
            "pass"
            if rng.random() < (0.85 if passed else 0.25)
            else ("undecided" if rng.random() < 0.05 else "fail"),
        )
        for c in CONSTRAINTS
    ]
    tools = [
        (
            rng.choice(TOOLS),
            "success" if rng.random() < 0.9 else "error",
            round(rng.lognormvariate(-2.0, 1.0), 4),
        )
        for _ in range(6)
    ]
    replays = []
    for _r in range(3):
        flip = rng.random() < 0.08
        rp = (not passed) if flip else passed
        replays.append((rp, round(min(1.0, max(0.0, quality + rng.uniform(-0.1, 0.1))), 3)))
    return {
        "task": task,
        "idx": idx,
        "model": models[i % len(models)],
        "reason": reason,
        "aborted": aborted,
        "passed": passed,
        "score": round(quality, 3),
        "criteria": crit,
        "checks": checks,
        "tools": tools,
        "replays": replays,
    }


def _check_rows(checks: list[tuple[str, str]]) -> list[dict[str, Any]]:
    return [
        {
            "id": c,
            "kind": "before",
            "passed": v == "pass",
            "weight": 1.0,
            "severity": "scored",
            "message": "" if v == "pass" else f"{c} failed",
            "matched_positions": [],
            "undecided": v == "undecided",
            "withheld": False,
        }
        for c, v in checks
    ]


def _grade(p: dict[str, Any]) -> dict[str, Any]:
    return {
        "binary_pass": p["passed"],
        "score": p["score"],
        "components": {
            "state_checks": None,
            "transcript_rules": None,
            "trace_checks": None,
            "llm_judge": p["score"],
            "custom_checks": None,
        },
        "reasons": f"Judge: score={p['score']:.2f}",
        "state_diff": None,
        "custom_checks_details": None,
        "trace_check_results": [],
        "trace_checks_summary": {
            "winning_path": "",
            "gate_failed": False,
            "failed_gate_ids": [],
            "paths": [],
        },
        "criterion_results": [
            {
                "id": c,
                "met": m,
                "score": 1.0 if m else 0.0,
                "justification": "VERDICT: " + ("MET" if m else "NOT MET"),
            }
            for c, m in p["criteria"]
        ],
        "judge_status": "completed",
    }


def _task_snapshot(p: dict[str, Any]) -> dict[str, Any]:
    """A task.yaml-sized snapshot (~1.5 KB), as ingest copies it into trial.registered."""
    return {
        "task_id": p["task"],
        "trial_index": p["idx"],
        "category": "notes",
        "description": "Add the note the user asks for; check for a near-duplicate first. " * 3,
        "grading_config": {
            "combine": {
                "method": "weighted",
                "weights": {"llm_judge": 1.0},
                "pass_threshold": 0.75,
            },
            "llm_judge": {
                "rubric": {
                    "criteria": [
                        {
                            "id": c,
                            "description": f"The assistant {c.replace('_', ' ')}.",
                            "weight": 1.0,
                            "kind": "binary",
                            "required": c == "checked_first",
                            "expected": "yes",
                        }
                        for c in CRITERIA
                    ]
                }
            },
        },
        "tools": {"agent": {"enabled": list(TOOLS)}, "user": {"enabled": []}},
        "model_config": {
            "agent": {"provider": "x", "name": p["model"], "temperature": 0.0},
            "user": {"provider": "x", "name": "sim", "temperature": 0.2},
        },
    }


def _messages(p: dict[str, Any]) -> list[dict[str, Any]]:
    msgs = [
        {
            "role": "user",
            "content": f"Please help with {p['task']}.",
            "tool_calls": [],
            "tool_call_id": None,
            "ts": "2026-08-03T06:30:19Z",
        }
    ]
    for j, (name, _st, _lat) in enumerate(p["tools"]):
        msgs.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": f"call_{j}", "name": name, "arguments": {"q": j}}],
                "tool_call_id": None,
                "ts": "2026-08-03T06:30:20Z",
            }
        )
        msgs.append(
            {
                "role": "tool",
                "content": "ok",
                "tool_calls": [],
                "tool_call_id": f"call_{j}",
                "ts": "2026-08-03T06:30:21Z",
            }
        )
    return msgs[:12]


def trial_events(p: dict[str, Any], stream: str) -> list[tuple[str, str, dict[str, Any]]]:
    out: list[tuple[str, str, dict[str, Any]]] = [
        (
            stream,
            "trial.registered",
            {
                "task_id": p["task"],
                "trial_index": p["idx"],
                "corpus": "bench",
                "trial": stream.rsplit("/", 1)[1],
                "record_view": True,
                "bundle_path": stream.rsplit("/", 1)[1],
                "files": ["task.yaml", "trajectory.yaml", "tool_log.yaml", "grade.yaml"],
                "trajectory_meta": {"task_id": p["task"], "trial_index": p["idx"]},
                "models": {"agent": p["model"], "user": "sim", "judge": "judge-1"},
                "task": _task_snapshot(p),
            },
        )
    ]
    for k, m in enumerate(_messages(p)):
        out.append((stream, "trial.message", {"index": k, **m}))
    for j, (name, st, lat) in enumerate(p["tools"]):
        out.append(
            (
                stream,
                "trial.tool_call",
                {
                    "index": j,
                    "call_id": f"call_{j}",
                    "sequence": j,
                    "tool_name": name,
                    "arguments": {"q": j},
                    "executor": "agent",
                    "status": st,
                    "output": "ok",
                    "latency_seconds": lat,
                    "timestamp": "2026-08-03T06:30:21Z",
                },
            )
        )
    for pos in range(27):
        out.append(
            (
                stream,
                "timeline.event",
                {
                    "timeline_version": "timeline/1",
                    "message_view_present": True,
                    "records_present": True,
                    "position": pos,
                    "turn_index": pos // 4,
                    "kind": "assistant_message" if pos % 3 else "tool_call",
                    "text": "t",
                },
            )
        )
    out.append(
        (
            stream,
            "trial.ended",
            {
                "status": "completed",
                "termination_reason": p["reason"],
                "grading_error": None,
                "grading_error_recorded": True,
            },
        )
    )
    if not p["aborted"]:
        out.append((stream, "grade.recorded", {"source": "grade.yaml", "grade": _grade(p)}))
    return out


def _replay_grade(p: dict[str, Any], r: int) -> dict[str, Any]:
    rp, sc = p["replays"][r]
    return {
        "score": sc,
        "binary_pass": rp,
        "components": {"llm_judge": sc, "trace_checks": None},
        "not_measured": {},
        "reasons": [f"Judge: score={sc}"],
        "trace_check_results": _check_rows(p["checks"]),
        "trace_checks_summary": {
            "winning_path": "",
            "gate_failed": False,
            "failed_gate_ids": [],
            "paths": [],
        },
    }


class _Writer:
    """Accumulates envelope rows and flushes Arrow batches into the events table."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.seq = 0
        self.versions: dict[str, int] = {}
        self.rows: dict[str, list[Any]] = {f.name: [] for f in ARROW_SCHEMA}
        self.t0 = datetime(2026, 9, 1, tzinfo=UTC)
        self.validated: set[str] = set()

    def add(self, stream: str, type_: str, payload: dict[str, Any]) -> None:
        if type_ not in self.validated:  # one of each type through the append-seam validator
            validate_payload(type_, payload)
            self.validated.add(type_)
        v = self.versions.get(stream, -1) + 1
        self.versions[stream] = v
        body = orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)
        eid = f"e{self.seq}"
        header = orjson.dumps([self.seq, stream, v, eid, type_, 1])
        r = self.rows
        r["seq"].append(self.seq)
        r["stream"].append(stream)
        r["stream_version"].append(v)
        r["event_id"].append(eid)
        r["type"].append(type_)
        r["schema_version"].append(1)
        r["recorded_at"].append(self.t0 + timedelta(milliseconds=self.seq))
        r["payload"].append(body)
        r["leaf_hash"].append(hashlib.sha256(b"\x00" + header + b"\n" + body).digest())
        self.seq += 1
        if len(r["seq"]) >= 100_000:
            self.flush()

    def flush(self) -> None:
        if not self.rows["seq"]:
            return
        batch = pa.table(self.rows, schema=ARROW_SCHEMA)
        self.con.register("_batch", batch)
        self.con.execute("INSERT INTO events SELECT * FROM _batch")
        self.con.unregister("_batch")
        self.rows = {f.name: [] for f in ARROW_SCHEMA}


def generate(workdir: Path, n_trials: int, n_replays: int, seed: int) -> tuple[Path, Path, int]:
    """Write the ledger and the equivalent bundles; return (ledger_dir, bundles_dir, events).

    Each parameter set has its own folder under ``workdir``, wiped before it is written: a
    cache shared between sizes once mixed a smaller run's bundles into the YAML baseline.
    """
    here = workdir / f"trials{n_trials}-replays{n_replays}-seed{seed}"
    ledger_dir, bundles = here / "ledger", here / "bundles"
    stamp = here / "done"
    if stamp.exists():
        return ledger_dir, bundles, int(stamp.read_text())
    shutil.rmtree(here, ignore_errors=True)
    rng = random.Random(seed)
    n_tasks = max(1, n_trials // 400)
    models = ["openai/gpt-4o-mini", "anthropic/claude-x", "google/gemini-y", "meta/llama-z"]
    ledger_dir.mkdir(parents=True, exist_ok=True)
    (ledger_dir / analytics.DB_FILE).unlink(missing_ok=True)
    con = duckdb.connect(str(ledger_dir / analytics.DB_FILE))
    con.execute(
        "CREATE TABLE events (seq UBIGINT NOT NULL, stream VARCHAR NOT NULL, stream_version "
        "UINTEGER NOT NULL, event_id VARCHAR NOT NULL, type VARCHAR NOT NULL, schema_version "
        "USMALLINT NOT NULL, recorded_at TIMESTAMPTZ NOT NULL, payload BLOB NOT NULL, "
        "leaf_hash BLOB NOT NULL)"
    )
    w = _Writer(con)
    plans = []
    for i in range(n_trials):
        p = _trial_plan(rng, i, n_tasks, models)
        name = f"run{i % 7}_{p['task']}_trial{p['idx']}"
        stream = f"trial/bench/{p['task']}/{name}"
        plans.append((name, stream, p))
        for ev in trial_events(p, stream):
            w.add(*ev)
        _write_bundle(bundles / name, p)
    for r in range(n_replays):
        rid = f"replay-{r}"
        for name, stream, p in plans:
            if p["aborted"]:
                continue
            g = _replay_grade(p, r)
            w.add(
                f"replay/{rid}",
                "grade.replayed",
                {
                    "trial": stream,
                    "task_id": p["task"],
                    "projection_version": "grade/1",
                    "config_digest": "sha256:cfg",
                    "replay_id": rid,
                    "grade": g,
                },
            )
            _dump(
                bundles / "trace_replay" / rid / name / "trace_checks_result.yaml",
                {
                    "bundle": name,
                    "score": g["score"],
                    "binary_pass": g["binary_pass"],
                    "trace_check_results": g["trace_check_results"],
                },
            )
        w.add(
            f"replay/{rid}",
            "replay.completed",
            {
                "replay_id": rid,
                "receipt": {
                    "checkpoint": {"size": w.seq, "root": "00" * 32},
                    "config_digest": "sha256:cfg",
                    "outputs_digest": "sha256:" + rid,
                },
            },
        )
    for u in range(max(1, n_trials // 2)):
        g = GRADES[min(len(GRADES) - 1, int(rng.expovariate(0.8)))]
        w.add(f"unit/u{u}", "verdict.admitted", _admission(f"u{u}", g))
        _dump(bundles / "admissions" / f"u{u}.yaml", {"unit": f"u{u}", "effective_grade": g})
    w.flush()
    con.close()
    stamp.write_text(str(w.seq))
    return ledger_dir, bundles, w.seq


def _admission(unit: str, grade: str) -> dict[str, Any]:
    counters = dict.fromkeys(COUNTER_NAMES, 0)
    return {
        "unit": unit,
        "effective_grade": grade,
        "evidence_kind": "oracle",
        "applied_rank_ops": [],
        "conflicting_evidence": False,
        "failed_declared_evidence": False,
        "provenance": "bench",
        "oracle_author": None,
        "oracle_runner": None,
        "work_producer": None,
        "content_identity": None,
        "current_content_identity": "",
        "declared_count": 1,
        "unrun_count": 0,
        "counters": counters,
        "registration": "verdict-grade-registration/v1",
        "through_version": -1,
    }


def _dump(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.dump(value, Dumper=_Dumper, sort_keys=False))


def _write_bundle(d: Path, p: dict[str, Any]) -> None:
    _dump(d / "task.yaml", _task_snapshot(p))
    _dump(
        d / "trajectory.yaml",
        {
            "task_id": p["task"],
            "trial_index": p["idx"],
            "status": "completed",
            "termination_reason": p["reason"],
            "grading_error": None,
            "messages": _messages(p),
        },
    )
    _dump(
        d / "tool_log.yaml",
        [
            {
                "call_id": f"call_{j}",
                "sequence": j,
                "tool_name": n,
                "arguments": {"q": j},
                "executor": "agent",
                "status": s,
                "output": "ok",
                "latency_seconds": lat,
                "timestamp": "2026-08-03T06:30:21Z",
            }
            for j, (n, s, lat) in enumerate(p["tools"])
        ],
    )
    if not p["aborted"]:
        _dump(d / "grade.yaml", _grade(p))


# --- the five questions, two ways ------------------------------------------------------------

SQL = {
    "pass@k per task/model": (
        "SELECT task_id, model, k, n, c, pass_at_k FROM pass_at_k WHERE level = 'task' "
        "AND basis = 'current' AND model <> '*' AND k IN (1, 5, 10) ORDER BY task_id, model, k"
    ),
    "current-vs-previous replay regressions": (
        "WITH r AS (SELECT trial, task_id, binary_pass, row_number() OVER (PARTITION BY trial "
        "ORDER BY seq DESC) AS rn FROM grades WHERE source = 'replayed') "
        "SELECT cur.task_id, count(*) FILTER (WHERE prev.binary_pass AND NOT cur.binary_pass) "
        "AS regressed, count(*) FILTER (WHERE NOT prev.binary_pass AND cur.binary_pass) AS improved "
        "FROM r cur JOIN r prev ON cur.trial = prev.trial AND cur.rn = 1 AND prev.rn = 2 "
        "GROUP BY cur.task_id ORDER BY regressed DESC, cur.task_id"
    ),
    "agreement matrix": (
        "SELECT criterion, constraint_id, observations, met_passed, met_failed, not_met_passed, "
        "not_met_failed, kappa FROM agreement WHERE task_id = '*' ORDER BY criterion, constraint_id"
    ),
    "slowest tools": (
        "SELECT tool_name, count(*) AS calls, avg(latency_seconds) AS mean_s, "
        "quantile_cont(latency_seconds, 0.95) AS p95_s FROM tool_calls GROUP BY tool_name "
        "ORDER BY p95_s DESC"
    ),
    "verdict-grade counts": (
        "SELECT effective_grade, count(*) AS units FROM admissions GROUP BY effective_grade "
        "ORDER BY min(grade_rank)"
    ),
}


def _load(path: Path) -> Any:
    with open(path, "rb") as fh:
        return yaml.load(fh, Loader=_Loader)


def _bundle_dirs(bundles: Path) -> Iterator[Path]:
    for d in sorted(bundles.iterdir()):
        if (d / "trajectory.yaml").exists():
            yield d


def _pass_at_k(n: int, c: int, k: int) -> float | None:
    return None if n < k else 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _latest_replays(bundles: Path, count: int) -> list[dict[str, dict[str, Any]]]:
    rids = sorted((bundles / "trace_replay").iterdir(), key=lambda p: p.name)[-count:]
    return [
        {f.parent.name: _load(f) for f in rid.glob("*/trace_checks_result.yaml")} for rid in rids
    ]


def baseline_pass_at_k(bundles: Path) -> list[tuple[Any, ...]]:
    (latest,) = _latest_replays(bundles, 1)
    n: dict[tuple[str, str], int] = defaultdict(int)
    c: dict[tuple[str, str], int] = defaultdict(int)
    for d in _bundle_dirs(bundles):
        traj, task = _load(d / "trajectory.yaml"), _load(d / "task.yaml")
        if traj["termination_reason"] in (
            "rate_limit",
            "api_timeout",
            "provision_error",
        ) and not traj.get("grading_error"):
            continue
        key = (task["task_id"], task["model_config"]["agent"]["name"])
        n[key] += 1
        rep = latest.get(d.name)
        if rep is None and (d / "grade.yaml").exists():
            rep = _load(d / "grade.yaml")
        c[key] += bool(rep and rep["binary_pass"])
    return [
        (t, m, k, n[(t, m)], c[(t, m)], _pass_at_k(n[(t, m)], c[(t, m)], k))
        for (t, m) in sorted(n)
        for k in (1, 5, 10)
    ]


def baseline_regressions(bundles: Path) -> list[tuple[Any, ...]]:
    prev, cur = _latest_replays(bundles, 2)
    tasks = {d.name: _load(d / "task.yaml")["task_id"] for d in _bundle_dirs(bundles)}
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for name, g in cur.items():
        p = prev.get(name)
        if p is None:
            continue
        row = out[tasks[name]]
        row[0] += p["binary_pass"] and not g["binary_pass"]
        row[1] += (not p["binary_pass"]) and g["binary_pass"]
    return sorted(((t, r[0], r[1]) for t, r in out.items()), key=lambda x: (-x[1], x[0]))


def baseline_agreement(bundles: Path) -> list[tuple[Any, ...]]:
    (latest,) = _latest_replays(bundles, 1)
    cells: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for d in _bundle_dirs(bundles):
        if not (d / "grade.yaml").exists() or d.name not in latest:
            continue
        crit = {
            r["id"]: r["met"]
            for r in _load(d / "grade.yaml")["criterion_results"]
            if r["met"] is not None
        }
        for r in latest[d.name]["trace_check_results"]:
            if r["undecided"] or r["withheld"]:
                continue
            for cid, met in crit.items():
                cells[(cid, r["id"])][(0 if met else 2) + (0 if r["passed"] else 1)] += 1
    out = []
    for (cid, kid), (a, b, c, e) in sorted(cells.items()):
        n = a + b + c + e
        po = (a + e) / n
        pe = ((a + b) * (a + c) + (c + e) * (b + e)) / (n * n)
        out.append((cid, kid, n, a, b, c, e, None if pe >= 1 else (po - pe) / (1 - pe)))
    return out


def baseline_slowest_tools(bundles: Path) -> list[tuple[Any, ...]]:
    lat: dict[str, list[float]] = defaultdict(list)
    for d in _bundle_dirs(bundles):
        for call in _load(d / "tool_log.yaml"):
            lat[call["tool_name"]].append(call["latency_seconds"])
    out = []
    for tool, xs in lat.items():
        xs.sort()
        pos = 0.95 * (len(xs) - 1)
        lo = int(pos)
        p95 = xs[lo] + (xs[min(lo + 1, len(xs) - 1)] - xs[lo]) * (pos - lo)
        out.append((tool, len(xs), sum(xs) / len(xs), p95))
    return sorted(out, key=lambda r: -r[3])


def baseline_grade_counts(bundles: Path) -> list[tuple[Any, ...]]:
    counts: dict[str, int] = defaultdict(int)
    for f in (bundles / "admissions").glob("*.yaml"):
        counts[_load(f)["effective_grade"]] += 1
    return sorted(counts.items(), key=lambda kv: GRADES.index(kv[0]))


BASELINES: dict[str, Callable[[Path], list[tuple[Any, ...]]]] = {
    "pass@k per task/model": baseline_pass_at_k,
    "current-vs-previous replay regressions": baseline_regressions,
    "agreement matrix": baseline_agreement,
    "slowest tools": baseline_slowest_tools,
    "verdict-grade counts": baseline_grade_counts,
}


def _same(sql_rows: list[tuple[Any, ...]], base_rows: list[tuple[Any, ...]]) -> bool:
    """Both ways must give the same answer (floats to 9 places), or the timing means nothing."""

    def norm(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        return [tuple(round(v, 9) if isinstance(v, float) else v for v in r) for r in rows]

    return norm(sql_rows) == norm(base_rows)


def _best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, result = math.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t)
    return best, result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=20_000)
    ap.add_argument("--replays", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=3, help="SQL runs per query (best is reported)")
    ap.add_argument("--skip-baseline", action="store_true", help="time the SQL side only")
    ap.add_argument(
        "--workdir",
        type=Path,
        default=Path(os.environ.get("TMPDIR", "/tmp")) / "vledger-bench-analytics",
    )
    args = ap.parse_args(argv)
    t = time.perf_counter()
    ledger_dir, bundles, n_events = generate(args.workdir, args.trials, args.replays, args.seed)
    gen_s = time.perf_counter() - t
    print(
        f"history: {n_events:,} events, {args.trials:,} trials, {args.replays} replays each "
        f"(generated/cached in {gen_s:.1f}s); baseline groups in plain Python dicts "
        "(pandas is not installed and not a dependency)\n"
    )
    load0 = os.getloadavg()[0]
    floor_s, _ = _best_of(lambda: analytics.query(ledger_dir, "SELECT 1"), args.repeat)
    yaml_files = sum(1 for _ in bundles.rglob("*.yaml"))
    yaml_mb = sum(f.stat().st_size for f in bundles.rglob("*.yaml")) / 1e6
    print(
        f"fixed cost of query() (attach + create views + SELECT 1): {floor_s * 1000:.0f} ms; "
        f"baseline reads from {yaml_files:,} YAML files ({yaml_mb:,.0f} MB), page cache warm\n"
    )
    print(
        "| question | `vledger sql` (`query()`, incl. open + view setup) | PyYAML load + group | ratio | same answer |"
    )
    print("|---|---:|---:|---:|:---:|")
    ok = True
    for name, sql in SQL.items():
        sql_s, table = _best_of(lambda sql=sql: analytics.query(ledger_dir, sql), args.repeat)
        rows = [tuple(r.values()) for r in table.to_pylist()]
        if args.skip_baseline:
            print(f"| {name} | {sql_s * 1000:.0f} ms | (skipped) | | |")
            continue
        base_s, base_rows = _best_of(lambda name=name: BASELINES[name](bundles), 1)
        same = _same(rows, base_rows)
        ok &= same
        print(
            f"| {name} | {sql_s * 1000:.0f} ms | {base_s:.2f} s | {base_s / sql_s:.0f}× | "
            f"{'yes' if same else 'NO'} |"
        )
    print(
        f"\nload average (1 min) before / after: {load0:.1f} / {os.getloadavg()[0]:.1f} "
        f"on {os.cpu_count()} CPUs"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
