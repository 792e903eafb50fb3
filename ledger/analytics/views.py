"""The documented SQL views over the log: every view is a projection of the ``events`` table.

The views read one relation, the raw envelope rows (``seq, stream, stream_version, event_id,
type, schema_version, recorded_at, payload, leaf_hash``) — whether that is the store's
DuckDB table or sealed Parquet segments is decided by the caller (``ledger.analytics.sql``).
Nothing here stores state: dropping every view and creating them again over the same
log gives the same rows, which ``tests/test_views.py`` checks.

Where a payload's shape is still settling, the JSON path lives in :data:`PATHS` (one
entry per field, a list of candidate paths tried in order), so a renamed key is a
one-line fix here and nowhere else.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import duckdb

from ledger.analytics.spend_views import SPEND_VIEWS
from schemas.events import PROJECTION_WRITERS
from schemas.key_manifest import MANIFEST

# --- payload paths: the one place that knows where each field lives --------------------------
#
# Each field maps to candidate JSON paths, tried left to right (the first non-null wins).
# Shapes: trial events per issue 3 (schemas/trial_events.py), grade.replayed /
# replay.completed per issue 6, verdict.admitted per issue 8 (schemas/verdict_events.py).

PATHS: dict[str, dict[str, list[str]]] = {
    "trial.registered": {
        "task_id": ["$.task_id", "$.task.task_id"],
        "trial_index": ["$.trial_index", "$.task.trial_index"],
        "corpus": ["$.corpus", "$.corpus_name", "$.corpus.name"],
        "agent_model": [
            "$.models.agent",
            "$.models.agent.name",
            "$.agent_model",
            "$.model_config.agent.name",
            "$.task.model_config.agent.name",
        ],
        "user_model": [
            "$.models.user",
            "$.models.user.name",
            "$.user_model",
            "$.model_config.user.name",
            "$.task.model_config.user.name",
        ],
        "judge_model": [
            "$.models.judge",
            "$.models.judge.name",
            "$.judge_model",
            "$.model_config.judge.name",
            "$.task.model_config.judge.name",
        ],
        "met": ["$.met", "$.membership.met"],
        "record_view": ["$.record_view"],
    },
    "trial.ended": {
        "status": ["$.status"],
        "termination_reason": ["$.termination_reason"],
        "grading_error": ["$.grading_error"],
        "start_ts": ["$.start_ts"],
        "end_ts": ["$.end_ts"],
    },
    "trial.message": {
        "position": ["$.index", "$.position"],
        "role": ["$.role"],
        "content": ["$.content"],
        "tool_call_id": ["$.tool_call_id"],
        "ts": ["$.ts"],
    },
    "trial.message/json": {
        "tool_calls": ["$.tool_calls"],
    },
    "trial.tool_call": {
        "call_id": ["$.call_id"],
        "sequence": ["$.sequence"],
        "tool_name": ["$.tool_name"],
        "executor": ["$.executor"],
        "status": ["$.status"],
        "output": ["$.output"],
        "latency_seconds": ["$.latency_seconds"],
        "timestamp": ["$.timestamp"],
    },
    "trial.tool_call/json": {
        "arguments": ["$.arguments"],
    },
    "timeline.event": {
        "projection_version": ["$.timeline_version", "$.projection_version"],
        "inconsistency": ["$.inconsistency.message"],
        "position": ["$.position", "$.event.position"],
        "turn_index": ["$.turn_index", "$.event.turn_index"],
        "kind": ["$.kind", "$.event.kind"],
        "text": ["$.text", "$.event.text"],
        "call_id": ["$.call_id", "$.event.call_id"],
        "tool_name": ["$.tool_name", "$.event.tool_name"],
        "executor": ["$.executor", "$.event.executor"],
        "status": ["$.status", "$.event.status"],
        "result": ["$.result", "$.event.result"],
        "latency_seconds": ["$.latency_seconds", "$.event.latency_seconds"],
    },
    "timeline.event/json": {
        "arguments": ["$.arguments", "$.event.arguments"],
    },
    # the scalar head of grade.recorded / grade.replayed, read without parsing nested lists
    "grade.head": {
        "trial": ["$.trial"],
        "task_id": ["$.task_id"],
        "projection_version": ["$.projection_version"],
        "config_digest": ["$.config_digest"],
        "replay_id": ["$.replay_id"],
        "score": ["$.grade.score"],
        "binary_pass": ["$.grade.binary_pass"],
        "judge_status": ["$.grade.judge_status"],
        "replay_status": ["$.status"],
    },
    "receipt": {
        "replay_id": ["$.replay_id", "$.reconcile_id", "$.run_id", "$.receipt.run_id"],
        "checkpoint_size": ["$.receipt.checkpoint.size", "$.checkpoint.size"],
        "checkpoint_root": ["$.receipt.checkpoint.root", "$.checkpoint.root"],
        "config_digest": ["$.receipt.config_digest", "$.config_digest", "$.receipt.inputs_digest"],
        "outputs_digest": ["$.receipt.outputs_digest", "$.outputs_digest"],
    },
    "verdict.admitted": {
        "unit": ["$.unit", "$.unit_id", "$.admission.unit"],
        "effective_grade": [
            "$.effective_grade",
            "$.admission.effective_grade",
            "$.derived.effective_grade",
        ],
        "evidence_kind": [
            "$.evidence_kind",
            "$.admission.evidence_kind",
            "$.derived.evidence_kind",
        ],
        "conflicting_evidence": [
            "$.conflicting_evidence",
            "$.admission.conflicting_evidence",
            "$.derived.conflicting_evidence",
        ],
        "failed_declared_evidence": [
            "$.failed_declared_evidence",
            "$.admission.failed_declared_evidence",
            "$.derived.failed_declared_evidence",
        ],
    },
    "verdict.admitted/json": {
        "applied_rank_ops": [
            "$.applied_rank_ops",
            "$.admission.applied_rank_ops",
            "$.derived.applied_rank_ops",
        ],
        "counters": ["$.counters", "$.admission.counters", "$.derived.counters"],
    },
}

# grade.recorded = {"source": "grade.yaml", "grade": <grade.yaml verbatim>} (issue 3);
# grade.replayed = {"trial", "task_id", "projection_version", "config_digest", "replay_id",
# "grade": {...}} (issue 6). Scalars come from PATHS["grade.head"]; the nested lists are read
# with these json_transform shapes (FORMATS.md § 4 field names).
CRITERION_SHAPE: dict[str, str] = {
    "id": "VARCHAR",
    "met": "BOOLEAN",
    "score": "DOUBLE",
    "justification": "VARCHAR",
}
TRACE_RESULT_SHAPE: dict[str, object] = {
    "id": "VARCHAR",
    "kind": "VARCHAR",
    "severity": "VARCHAR",
    "weight": "DOUBLE",
    "passed": "BOOLEAN",
    "undecided": "BOOLEAN",
    "withheld": "BOOLEAN",
    "message": "VARCHAR",
    "matched_positions": ["INTEGER"],
}

# Termination reasons GRADING.md § Infrastructure aborts excludes from every denominator.
ABORT_REASONS: tuple[str, ...] = ("rate_limit", "api_timeout", "provision_error")
# Counted, reported separately as harness errors (the fault is ours).
HARNESS_ERROR_REASONS: tuple[str, ...] = ("error", "trial_lost")

# The verdict-grade ladder of ../shared/reference/gvc/registration, strongest first; a grade
# outside it ranks below ``unverified`` (the spec's out-of-vocabulary rule).
GRADE_LADDER: tuple[str, ...] = (
    "proof",
    "known_answer",
    "interop",
    "constructed_check",
    "review_only",
    "unverified",
)

# The k values the pass_at_k view reports; any other k: ``pass_at_k_value(n, c, k)``.
PASS_K_VALUES: tuple[int, ...] = (1, 2, 3, 4, 5, 8, 10, 16, 20, 32, 50, 64, 100)


def _fields(
    path_key: str, *, as_json: bool = False, src: str = "body"
) -> tuple[str, dict[str, str]]:
    """One extraction for every field of ``PATHS[path_key]`` (one JSON parse per row).

    Returns the select item (``json_extract_string(body, [...]) AS _v``) and, per field, the
    expression choosing its first non-null candidate.
    """
    fields = PATHS[path_key]
    flat = [p for paths in fields.values() for p in paths]
    arr = "[" + ", ".join(_sql_str(p) for p in flat) + "]"
    var, fn = ("_j", "json_extract") if as_json else ("_v", "json_extract_string")
    exprs, i = {}, 1
    for name, paths in fields.items():
        picks = ", ".join(f"{var}[{i + j}]" for j in range(len(paths)))
        exprs[name] = f"coalesce({picks}, NULL)" + ("::JSON" if as_json else "")
        i += len(paths)
    return f"{fn}({src}, {arr}) AS {var}", exprs


def _sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _in_list(values: Sequence[str]) -> str:
    return "(" + ", ".join(_sql_str(v) for v in values) + ")"


def _written_by_projection() -> str:
    """SQL predicate over ``_ev`` rows: false for a projection-only type
    (``PROJECTION_WRITERS``) that is not on its projection's own stream, and for a
    ``grade.replayed`` whose stream holds no ``replay.completed`` (retrace appends both in
    one batch). The views that count projection outputs read only rows it keeps."""
    reserved = ", ".join(_sql_str(t) for t in PROJECTION_WRITERS)
    own = " OR ".join(
        f"(type = {_sql_str(t)} AND starts_with(stream, {_sql_str(prefix)}))"
        for t, (_, prefix) in PROJECTION_WRITERS.items()
    )
    return (
        f"(type NOT IN ({reserved}) OR {own}) AND (type <> 'grade.replayed' OR stream IN "
        "(SELECT stream FROM _ev WHERE type = 'replay.completed'))"
    )


def _typed_view(
    type_: str, out: Sequence[str], *, where: str = "", extra_json: bool = False
) -> str:
    """A view over one event type: the string fields (and JSON fields) extracted in one pass."""
    sv, scols = _fields(type_)
    inner_cols = ["seq", "stream", "stream_version", "recorded_at", sv]
    outer = [f"{e} AS {n}" for n, e in scols.items()]
    if extra_json:
        jv, jcols = _fields(type_ + "/json", as_json=True)
        inner_cols.append(jv)
        outer += [f"{e} AS {n}" for n, e in jcols.items()]
    cond = f"type = {_sql_str(type_)}" + (f" AND ({where})" if where else "")
    return (
        f"SELECT {', '.join(out)} FROM (SELECT seq, stream, stream_version, recorded_at, "
        f"{', '.join(outer)} FROM (SELECT {', '.join(inner_cols)} FROM _ev WHERE {cond}))"
    )


@dataclass(frozen=True)
class View:
    """One documented view: its name, its SQL, what a row is, and each column's meaning."""

    name: str
    sql: str
    doc: str
    columns: tuple[tuple[str, str], ...]
    public: bool = True


def _outcome_case(reason: str, grading_error: str) -> str:
    # Read before the reason: a grading refusal is never traded for an exclusion.
    return (
        f"CASE WHEN {grading_error} IS NOT NULL AND {grading_error} <> '' THEN 'ungradeable' "
        f"WHEN {reason} IN {_in_list(ABORT_REASONS)} THEN 'infrastructure_abort' "
        f"WHEN {reason} IN {_in_list(HARNESS_ERROR_REASONS)} THEN 'harness_error' "
        f"ELSE 'measured' END"
    )


def _grade_rank(col: str) -> str:
    whens = " ".join(f"WHEN {_sql_str(g)} THEN {i}" for i, g in enumerate(GRADE_LADDER))
    return f"CASE {col} {whens} ELSE {len(GRADE_LADDER)} END"


def _shape(value: object) -> str:
    return _sql_str(json.dumps(value))


# Typed reads of the nested lists, straight from the payload (one parse, no JSON re-serialised).
_CRIT_T = (
    "json_transform(body, " + _shape({"grade": {"criterion_results": [CRITERION_SHAPE]}}) + ")"
)
_TRACE_T = (
    "json_transform(body, "
    + _shape(
        {
            "grade": {
                "trace_check_results": [TRACE_RESULT_SHAPE],
                "trace_checks_summary": {"winning_path": "VARCHAR"},
            }
        }
    )
    + ")"
)
_VERDICT = (
    "CASE WHEN coalesce(r.withheld, false) THEN 'withheld' "
    "WHEN coalesce(r.undecided, false) THEN 'undecided' "
    "WHEN r.passed THEN 'pass' ELSE 'fail' END"
)


def _views() -> list[View]:
    reg_cols = list(PATHS["trial.registered"])
    end_cols = list(PATHS["trial.ended"])
    rc_sv, rc = _fields("receipt")
    gh_sv, gh = _fields("grade.head")
    ks = ", ".join(str(k) for k in PASS_K_VALUES)
    return [
        View(
            "_ev",
            "SELECT seq, stream, stream_version, event_id, type, schema_version, recorded_at, "
            "decode(payload) AS body, leaf_hash FROM _raw_events",
            "internal: raw rows with the payload decoded to text",
            (),
            public=False,
        ),
        View(
            "events",
            "SELECT seq, stream, stream_version, event_id, type, schema_version, recorded_at, "
            "body::JSON AS payload, lower(hex(leaf_hash)) AS leaf_hash FROM _ev",
            "one row per event of the log, in seq order",
            (
                ("seq", "global position, dense, 0-based"),
                ("stream", "stream name, e.g. trial/<corpus>/<task_id>/<trial>"),
                ("stream_version", "0-based position inside the stream"),
                ("event_id", "idempotency key (content-derived or client-supplied)"),
                ("type", "event type from the closed vocabulary (or ext.*)"),
                ("schema_version", "payload schema version"),
                ("recorded_at", "append time (UTC); not part of the leaf hash"),
                ("payload", "the payload as JSON"),
                ("leaf_hash", "RFC 9162 leaf hash, lowercase hex"),
            ),
        ),
        View(
            "_registered",
            _typed_view(
                "trial.registered",
                ["seq", "stream", "recorded_at", *reg_cols],
            ),
            "internal",
            (),
            public=False,
        ),
        View(
            "_ended",
            _typed_view(
                "trial.ended",
                ["seq", "stream", "recorded_at", *end_cols],
            ),
            "internal",
            (),
            public=False,
        ),
        View(
            "messages",
            _typed_view(
                "trial.message",
                [
                    "stream AS trial",
                    "seq",
                    "coalesce(TRY_CAST(position AS INTEGER), "
                    "(row_number() OVER (PARTITION BY stream ORDER BY seq) - 1)::INTEGER) "
                    "AS position",
                    "role",
                    "content",
                    "tool_call_id",
                    "coalesce(json_array_length(tool_calls), 0)::INTEGER AS n_tool_calls",
                    "tool_calls",
                    "ts",
                ],
                extra_json=True,
            ),
            "one row per recorded message (trial.message), in trial order",
            (
                ("trial", "trial stream"),
                ("seq", "log position of the event"),
                ("position", "0-based message index in the trajectory"),
                ("role", "user / assistant / tool / system"),
                ("content", "message text"),
                ("tool_call_id", "for a tool message: the call it answers"),
                ("n_tool_calls", "tool calls the message declares"),
                ("tool_calls", "JSON list of {id, name, arguments}"),
                ("ts", "message timestamp as recorded"),
            ),
        ),
        View(
            "tool_calls",
            _typed_view(
                "trial.tool_call",
                [
                    "stream AS trial",
                    "seq",
                    "call_id",
                    "TRY_CAST(sequence AS INTEGER) AS sequence",
                    "tool_name",
                    "executor",
                    "status",
                    "TRY_CAST(latency_seconds AS DOUBLE) AS latency_seconds",
                    "timestamp",
                    "arguments",
                    "output",
                ],
                extra_json=True,
            ),
            "one row per recorded tool call (tool_log.yaml's RecordedToolCall)",
            (
                ("trial", "trial stream"),
                ("seq", "log position of the event"),
                ("call_id", "episode-unique call id (x, x#2, …)"),
                ("sequence", "0-based order across the trial and all executors"),
                ("tool_name", "tool called"),
                ("executor", "agent or user"),
                ("status", "success / error / …"),
                ("latency_seconds", "recorded latency"),
                ("timestamp", "recorded timestamp"),
                ("arguments", "call arguments (JSON)"),
                ("output", "the tool's own output text"),
            ),
        ),
        View(
            "timeline",
            _typed_view(
                "timeline.event",
                [
                    "stream AS trial",
                    "seq",
                    "projection_version",
                    "TRY_CAST(position AS INTEGER) AS position",
                    "TRY_CAST(turn_index AS INTEGER) AS turn_index",
                    "kind",
                    "text",
                    "call_id",
                    "tool_name",
                    "executor",
                    "status",
                    "result",
                    "TRY_CAST(latency_seconds AS DOUBLE) AS latency_seconds",
                    "arguments",
                ],
                extra_json=True,
            ),
            "one row per derived trace event (timeline.event), per projection version",
            (
                ("trial", "trial stream"),
                ("seq", "log position of the event"),
                ("projection_version", "version of the timeline projection that derived it"),
                ("position", "dense 0-based timeline position"),
                ("turn_index", "turn the event belongs to"),
                ("kind", "message / tool_call / tool_result … (TraceEventKind)"),
                ("text", "message text, when a message"),
                ("call_id", "disambiguated call id"),
                ("tool_name", "tool, for call events"),
                ("executor", "agent or user"),
                ("status", "execution status, when recorded"),
                ("result", "tool result text"),
                ("latency_seconds", "recorded latency"),
                ("arguments", "call arguments (JSON)"),
            ),
        ),
        View(
            "_trial_keys",
            # The latest trial.registered per stream: the only place task and models live.
            "SELECT stream AS trial, arg_max(task_id, seq) AS task_id, "
            "arg_max(agent_model, seq) AS agent_model FROM _registered GROUP BY stream",
            "internal",
            (),
            public=False,
        ),
        View(
            "_trial_core",
            "WITH r AS (SELECT * FROM _registered QUALIFY row_number() OVER "
            "(PARTITION BY stream ORDER BY seq DESC) = 1), "
            "e AS (SELECT * FROM _ended QUALIFY row_number() OVER "
            "(PARTITION BY stream ORDER BY seq DESC) = 1) "
            "SELECT r.stream AS trial, r.corpus, r.task_id, TRY_CAST(r.trial_index AS INTEGER) "
            "AS trial_index, r.agent_model, r.user_model, r.judge_model, "
            "TRY_CAST(r.met AS BOOLEAN) AS met, TRY_CAST(r.record_view AS BOOLEAN) AS records_present, "
            "e.status, e.termination_reason, e.grading_error, "
            f"{_outcome_case('e.termination_reason', 'e.grading_error')} AS outcome_class, "
            f"({_outcome_case('e.termination_reason', 'e.grading_error')}) "
            "<> 'infrastructure_abort' AS counted, e.start_ts, e.end_ts, "
            "r.recorded_at AS registered_at FROM r LEFT JOIN e USING (stream)",
            "internal",
            (),
            public=False,
        ),
        View(
            "trials",
            "WITH m AS (SELECT stream AS trial, count(*) AS n FROM _ev "
            "WHERE type = 'trial.message' GROUP BY stream), "
            "t AS (SELECT stream AS trial, count(*) AS n FROM _ev "
            "WHERE type = 'trial.tool_call' GROUP BY stream) "
            "SELECT c.trial, c.corpus, c.task_id, c.trial_index, c.agent_model, c.user_model, "
            "c.judge_model, c.met, c.records_present, c.status, c.termination_reason, "
            "c.grading_error, c.outcome_class, c.counted, c.start_ts, c.end_ts, "
            "coalesce(m.n, 0) AS n_messages, coalesce(t.n, 0) AS n_tool_calls, c.registered_at "
            "FROM _trial_core c LEFT JOIN m USING (trial) LEFT JOIN t USING (trial)",
            "one row per registered trial (trial.registered + trial.ended)",
            (
                ("trial", "trial stream (trial/<corpus>/<task_id>/<trial>)"),
                ("corpus", "corpus the trial was ingested under"),
                ("task_id", "task id"),
                ("trial_index", "0-based index of the trial within its task"),
                ("agent_model", "model_config.agent.name"),
                ("user_model", "model_config.user.name"),
                ("judge_model", "model_config.judge.name (null when none recorded)"),
                ("met", "the corpus.yaml met label, when curated"),
                ("records_present", "a tool_log.yaml record view exists (false: messages only)"),
                ("status", "trajectory status, e.g. completed"),
                ("termination_reason", "how the trial ended (null when not recorded)"),
                ("grading_error", "why grading produced no verdict, or null"),
                (
                    "outcome_class",
                    "measured / harness_error / ungradeable / infrastructure_abort "
                    "(GRADING.md § Infrastructure aborts; grading_error is read first)",
                ),
                ("counted", "false only for infrastructure aborts: left out of every rate"),
                ("start_ts", "trial start as recorded"),
                ("end_ts", "trial end as recorded"),
                ("n_messages", "trial.message events"),
                ("n_tool_calls", "trial.tool_call events"),
                ("registered_at", "when the trial was appended"),
            ),
        ),
        View(
            "_grade_head",
            # The scalar fields only (one cheap pass): what grades / current_grades / pass@k need.
            "SELECT u.seq, u.recorded_at, u.source, u.trial, coalesce(u.task_id, k.task_id) AS task_id, "
            "u.projection_version, u.config_digest, u.replay_id, u.score, u.binary_pass, "
            "u.judge_status, u.replay_status, u.body FROM (SELECT seq, recorded_at, body, "
            "CASE type WHEN 'grade.recorded' THEN 'recorded' ELSE 'replayed' END AS source, "
            f"coalesce({gh['trial']}, stream) AS trial, {gh['task_id']} AS task_id, "
            f"{gh['projection_version']} AS projection_version, {gh['config_digest']} AS config_digest, "
            f"{gh['replay_id']} AS replay_id, TRY_CAST({gh['score']} AS DOUBLE) AS score, "
            f"TRY_CAST({gh['binary_pass']} AS BOOLEAN) AS binary_pass, {gh['judge_status']} AS judge_status, "
            f"CASE WHEN type = 'grade.replayed' THEN {gh['replay_status']} END AS replay_status "
            f"FROM (SELECT seq, recorded_at, type, stream, body, {gh_sv} FROM _ev "
            f"WHERE type IN ('grade.recorded', 'grade.replayed') AND {_written_by_projection()})) u "
            "LEFT JOIN _trial_keys k ON k.trial = u.trial",
            "internal",
            (),
            public=False,
        ),
        View(
            "grades",
            "SELECT seq, trial, task_id, source, projection_version, config_digest, replay_id, "
            "score, binary_pass, judge_status, replay_status, "
            "CASE WHEN json_type(body, '$.grade.reasons') = 'ARRAY' THEN array_to_string("
            "json_transform(json_extract(body, '$.grade.reasons'), '[\"VARCHAR\"]'), ' | ') "
            "ELSE json_extract_string(body, '$.grade.reasons') END AS reasons, recorded_at, "
            "json_extract(body, '$.grade') AS grade FROM _grade_head",
            "every grade ever recorded or replayed; replays never replace a recorded grade",
            (
                ("seq", "log position of the grade event (the grade's id)"),
                ("trial", "trial stream the grade is about"),
                ("task_id", "task id"),
                ("source", "recorded (grade.recorded) or replayed (grade.replayed)"),
                ("projection_version", "grading projection version (replayed only)"),
                ("config_digest", "digest of the grading config a replay used"),
                ("replay_id", "the retrace run that produced it (replayed only)"),
                ("score", "trial score in [0, 1]"),
                ("binary_pass", "trial verdict"),
                ("judge_status", "unspecified / completed / errored (recorded grades)"),
                (
                    "replay_status",
                    "replayed only: agreed / disagreed with the recorded grade, as the retrace "
                    "compared them component by component",
                ),
                ("reasons", "reason segments joined with ' | '"),
                ("recorded_at", "when the grade was appended"),
                ("grade", "the whole grade object (JSON)"),
            ),
        ),
        View(
            "_current",
            # One pass over the grades: the pick is the latest replay, else the latest
            # recorded grade (a replay never shadows history; it is just preferred here).
            "SELECT trial, any_value(task_id) AS task_id, "
            "arg_max({'seq': seq, 'source': source, 'replay_id': replay_id, "
            "'projection_version': projection_version, 'score': score, "
            "'binary_pass': binary_pass, 'recorded_at': recorded_at}, "
            "(source = 'replayed')::BIGINT * 4611686018427387904 + seq) AS cur, "
            "arg_max({'score': score, 'binary_pass': binary_pass}, seq) "
            "FILTER (WHERE source = 'recorded') AS rec, "
            "count(*) FILTER (WHERE source = 'replayed') AS replays FROM _grade_head GROUP BY trial",
            "internal",
            (),
            public=False,
        ),
        View(
            "current_grades",
            "SELECT trial, task_id, cur.seq AS seq, cur.source AS source, cur.replay_id AS replay_id, "
            "cur.projection_version AS projection_version, cur.score AS score, "
            "cur.binary_pass AS binary_pass, rec.score AS recorded_score, "
            "rec.binary_pass AS recorded_binary_pass, replays, cur.recorded_at AS recorded_at "
            "FROM _current",
            "the current grade of each trial: its latest replay, else its latest recorded grade",
            (
                ("trial", "trial stream"),
                ("task_id", "task id"),
                ("seq", "log position of the chosen grade event"),
                ("source", "replayed when any replay exists, else recorded"),
                ("replay_id", "replay that produced it (null for recorded)"),
                ("projection_version", "grading projection version (replayed only)"),
                ("score", "current score"),
                ("binary_pass", "current verdict"),
                ("recorded_score", "the latest recorded score, for comparison"),
                ("recorded_binary_pass", "the latest recorded verdict, for comparison"),
                ("replays", "how many replays of this trial the log holds"),
                ("recorded_at", "when the chosen grade was appended"),
            ),
        ),
        View(
            "components",
            "WITH g AS MATERIALIZED (SELECT seq, trial, task_id, source, replay_id, "
            "json_extract(body, ['$.grade.components', '$.grade.not_measured']) AS j "
            "FROM _grade_head), "
            "k AS (SELECT g.seq, e.key AS component, e.value AS v FROM g, json_each(g.j[1]) e), "
            "nm AS (SELECT g.seq, e.key AS component, e.value ->> '$' AS reason "
            "FROM g, json_each(g.j[2]) e), "
            "kn AS (SELECT coalesce(k.seq, nm.seq) AS seq, coalesce(k.component, nm.component) "
            "AS component, TRY_CAST(k.v ->> '$' AS DOUBLE) AS score, nm.reason "
            "FROM k FULL OUTER JOIN nm ON k.seq = nm.seq AND k.component = nm.component) "
            "SELECT g.seq AS grade_seq, g.trial, g.task_id, g.source, g.replay_id, kn.component, "
            "kn.score, CASE WHEN kn.reason IS NOT NULL THEN 'not_measured' "
            "WHEN kn.score IS NULL THEN 'not_evaluated' ELSE 'scored' END AS status, kn.reason "
            "FROM kn JOIN g ON g.seq = kn.seq",
            "per grade, per component: its score, or not-evaluated / not-measured with the reason",
            (
                ("grade_seq", "the grade (grades.seq)"),
                ("trial", "trial stream"),
                ("task_id", "task id"),
                ("source", "recorded or replayed"),
                ("replay_id", "replay id (replayed only)"),
                (
                    "component",
                    "state_checks / transcript_rules / trace_checks / llm_judge / custom_checks",
                ),
                ("score", "component score, null when not scored"),
                (
                    "status",
                    "scored / not_evaluated (null: not configured or unscored) / "
                    "not_measured (the recorded evidence cannot decide it)",
                ),
                ("reason", "why it is not measured (replayed grades)"),
            ),
        ),
        View(
            "criteria",
            "SELECT seq AS grade_seq, trial, task_id, source, replay_id, c.id AS criterion, c.met, "
            "c.score, c.justification, judge_status FROM (SELECT seq, trial, task_id, source, "
            f"replay_id, judge_status, unnest(({_CRIT_T}).grade.criterion_results) AS c "
            "FROM _grade_head)",
            "judge criterion results carried by a grade (criterion_results)",
            (
                ("grade_seq", "the grade (grades.seq)"),
                ("trial", "trial stream"),
                ("task_id", "task id"),
                ("source", "recorded or replayed"),
                ("replay_id", "replay id (replayed only)"),
                ("criterion", "rubric criterion id"),
                ("met", "the judge's verdict on it"),
                ("score", "criterion score"),
                ("justification", "the judge's justification"),
                ("judge_status", "unspecified / completed / errored"),
            ),
        ),
        View(
            "trace_checks",
            "SELECT seq AS grade_seq, trial, task_id, source, replay_id, recorded_at, "
            "ord::INTEGER AS ord, r.id AS constraint_id, r.kind, r.severity, r.weight, r.passed, "
            "coalesce(r.undecided, false) AS undecided, coalesce(r.withheld, false) AS withheld, "
            f"{_VERDICT} AS verdict, r.message, r.matched_positions, winning_path "
            "FROM (SELECT seq, trial, task_id, source, replay_id, recorded_at, "
            "x.grade.trace_checks_summary.winning_path AS winning_path, "
            "unnest(x.grade.trace_check_results) AS r, "
            "unnest(range(len(x.grade.trace_check_results))) AS ord "
            f"FROM (SELECT *, {_TRACE_T} AS x FROM _grade_head))",
            "per grade, per trace constraint: pass / fail / undecided / withheld",
            (
                ("grade_seq", "the grade (grades.seq)"),
                ("trial", "trial stream"),
                ("task_id", "task id"),
                ("source", "recorded or replayed"),
                ("replay_id", "replay id (replayed only)"),
                ("recorded_at", "when the grade was appended"),
                ("ord", "0-based declaration order in the scoring decision set"),
                ("constraint_id", "constraint id"),
                ("kind", "constraint kind"),
                ("severity", "scored or gate"),
                ("weight", "constraint weight"),
                ("passed", "recorded passed flag (an undecided result scores as a failure)"),
                ("undecided", "the evidence could not decide it"),
                ("withheld", "dropped from numerator and denominator"),
                ("verdict", "withheld / undecided / pass / fail, in that precedence"),
                ("message", "failure message (empty on pass)"),
                ("matched_positions", "timeline positions the constraint matched"),
                ("winning_path", "the grade's winning alternative path ('' without alternatives)"),
            ),
        ),
        View(
            "constraint_separation",
            "WITH lr AS (SELECT task_id, arg_max(replay_id, grade_seq) AS replay_id "
            "FROM trace_checks WHERE source = 'replayed' GROUP BY task_id), "
            "rows_ AS (SELECT t.* FROM trace_checks t JOIN lr "
            "ON t.task_id IS NOT DISTINCT FROM lr.task_id AND t.replay_id = lr.replay_id "
            "WHERE t.source = 'replayed'), "
            "agg AS (SELECT task_id, replay_id, constraint_id, min(ord) AS ord, "
            "count(*) FILTER (WHERE verdict <> 'withheld') AS evaluated, "
            "count(*) FILTER (WHERE verdict = 'pass') AS passed, "
            "count(*) FILTER (WHERE verdict = 'fail') AS failed, "
            "count(*) FILTER (WHERE verdict = 'undecided') AS undecided FROM rows_ "
            "GROUP BY task_id, replay_id, constraint_id) "
            "SELECT task_id, replay_id, constraint_id, ord, evaluated, passed, failed, undecided, "
            "constraint_class(passed, failed, undecided) AS class "
            "FROM agg",
            "per task, per constraint, over the task's latest replay: how it separates trials "
            "(FORMATS.md § 9 verdict order)",
            (
                ("task_id", "task id"),
                ("replay_id", "the latest replay that evaluated this task"),
                ("constraint_id", "constraint id"),
                ("ord", "first declaration position seen"),
                ("evaluated", "trials it was evaluated on (withheld excluded)"),
                ("passed", "decided passes"),
                ("failed", "decided failures"),
                ("undecided", "undecided trials"),
                (
                    "class",
                    "not_measured / discriminating / never_decided / undecided_in_part / "
                    "always_true / always_false",
                ),
            ),
        ),
        View(
            "admissions",
            _typed_view(
                "verdict.admitted",
                [
                    "seq",
                    "coalesce(unit, regexp_replace(stream, '^unit/', '')) AS unit",
                    "effective_grade",
                    f"{_grade_rank('effective_grade')} AS grade_rank",
                    "evidence_kind",
                    "TRY_CAST(conflicting_evidence AS BOOLEAN) AS conflicting_evidence",
                    "TRY_CAST(failed_declared_evidence AS BOOLEAN) AS failed_declared_evidence",
                    "applied_rank_ops",
                    "counters",
                    "recorded_at",
                ],
                where=_written_by_projection(),
                extra_json=True,
            ),
            "one row per recorded verdict admission (verdict.admitted)",
            (
                ("seq", "log position of the admission"),
                ("unit", "the unit admitted"),
                ("effective_grade", "the derived verdict grade"),
                ("grade_rank", "0 = proof … 5 = unverified; 6 = outside the registered ladder"),
                ("evidence_kind", "kind of evidence the grade rests on"),
                ("conflicting_evidence", "computed conflict flag"),
                ("failed_declared_evidence", "a declared oracle failed"),
                ("applied_rank_ops", "rank operations that lowered the grade (JSON)"),
                ("counters", "the nine counters (JSON)"),
                ("recorded_at", "when it was appended"),
            ),
        ),
        View(
            "receipts",
            f"SELECT seq, CASE type WHEN 'replay.completed' THEN 'replay' "
            f"WHEN 'reconcile.completed' THEN 'reconcile' ELSE 'verdict-core' END AS kind, "
            f"stream, {rc['replay_id']} AS replay_id, "
            f"TRY_CAST({rc['checkpoint_size']} AS BIGINT) AS checkpoint_size, "
            f"{rc['checkpoint_root']} AS checkpoint_root, {rc['config_digest']} AS config_digest, "
            f"{rc['outputs_digest']} AS outputs_digest, "
            f"coalesce(json_extract(body, '$.receipt'), body::JSON) AS receipt, recorded_at "
            f"FROM (SELECT *, {rc_sv} FROM _ev WHERE type IN "
            f"('replay.completed', 'reconcile.completed', 'receipt.issued') "
            f"AND {_written_by_projection()})",
            "receipts: replays, reconciliations and imported verdict-core runs",
            (
                ("seq", "log position of the receipt event"),
                ("kind", "replay / reconcile / verdict-core"),
                ("stream", "stream the receipt lives in"),
                ("replay_id", "replay / reconcile / run id"),
                ("checkpoint_size", "tree size of the checkpoint it read"),
                ("checkpoint_root", "root hash of that checkpoint"),
                ("config_digest", "digest of its configuration (a reconcile's inputs digest)"),
                ("outputs_digest", "digest of its outputs"),
                ("receipt", "the whole receipt (JSON)"),
                ("recorded_at", "when it was appended"),
            ),
        ),
        View(
            "_trial_outcomes",
            # Every registered trial with its current and recorded verdicts; a counted trial
            # without a grade (trial_lost) counts as not passed, and so does an ungradeable one
            # whatever grade it carries: grading refused, so no verdict exists
            # (replay.outcomes.tally does the same).
            "SELECT t.trial, t.task_id, coalesce(t.agent_model, '(unknown)') AS model, "
            "t.outcome_class, t.counted, "
            "coalesce(c.cur.binary_pass, false) AND t.outcome_class <> 'ungradeable' AS pass_current, "
            "coalesce(c.rec.binary_pass, false) AND t.outcome_class <> 'ungradeable' AS pass_recorded "
            "FROM _trial_core t LEFT JOIN _current c USING (trial)",
            "internal",
            (),
            public=False,
        ),
        View(
            "pass_at_k",
            "WITH o AS MATERIALIZED (SELECT * FROM _trial_outcomes), "
            "b AS (SELECT 'current' AS basis, task_id, model, counted, pass_current AS p, "
            "outcome_class FROM o UNION ALL SELECT 'recorded', task_id, model, "
            "counted, pass_recorded, outcome_class FROM o), "
            "per_task AS (SELECT basis, task_id, CASE WHEN grouping(model) = 1 THEN '*' ELSE model END AS model, "
            "count(*) FILTER (WHERE counted) AS n, count(*) FILTER (WHERE counted AND p) AS c, "
            "count(*) FILTER (WHERE NOT counted) AS aborts "
            "FROM b GROUP BY GROUPING SETS ((basis, task_id, model), (basis, task_id))), "
            f"ks AS (SELECT unnest([{ks}]) AS k), "
            "task_rows AS (SELECT 'task' AS level, basis, task_id, model, k, n, c, aborts, "
            "pass_at_k_value(n, c, k) AS pass_at_k, 1 AS tasks FROM per_task, ks), "
            "macro AS (SELECT 'macro' AS level, basis, NULL::VARCHAR AS task_id, model, k, "
            "sum(n)::BIGINT AS n, sum(c)::BIGINT AS c, sum(aborts)::BIGINT AS aborts, "
            "avg(pass_at_k) AS pass_at_k, count(pass_at_k) AS tasks "
            "FROM task_rows GROUP BY basis, model, k), "
            "micro AS (SELECT 'micro' AS level, basis, NULL::VARCHAR AS task_id, model, k, "
            "sum(n)::BIGINT AS n, sum(c)::BIGINT AS c, sum(aborts)::BIGINT AS aborts, "
            "pass_at_k_value(sum(n)::BIGINT, sum(c)::BIGINT, k) AS pass_at_k, "
            "count(DISTINCT task_id) AS tasks FROM per_task, ks GROUP BY basis, model, k) "
            "SELECT level, basis, task_id, model, k, n::BIGINT AS n, c::BIGINT AS c, "
            "aborts::BIGINT AS aborts, pass_at_k, tasks::BIGINT AS tasks, "
            "(n < k AND n + aborts >= k) AS reduced_by_aborts "
            "FROM (SELECT * FROM task_rows UNION ALL SELECT * FROM macro UNION ALL SELECT * FROM micro)",
            "pass@k = 1 − C(n−c, k)/C(n, k) over measured trials (GRADING.md § pass@k), per task "
            "and per model ('*' = all models), with macro (mean over tasks) and micro (all trials "
            f"pooled) rows, for k in {list(PASS_K_VALUES)}; any k: pass_at_k_value(n, c, k)",
            (
                ("level", "task / macro (mean of per-task pass@k) / micro (all trials pooled)"),
                ("basis", "current (latest replay, else recorded) or recorded verdicts"),
                ("task_id", "task id (null on macro and micro rows)"),
                ("model", "agent model, or '*' for all models together"),
                ("k", "attempts"),
                ("n", "measured trials: every registered trial except infrastructure aborts"),
                ("c", "measured trials whose verdict passed (no grade counts as not passed)"),
                ("aborts", "infrastructure aborts left out of n"),
                (
                    "pass_at_k",
                    "the estimate; null where n < k (macro: mean over tasks with a value)",
                ),
                ("tasks", "tasks contributing (macro: tasks with a value)"),
                ("reduced_by_aborts", "n < k only because aborts were excluded"),
            ),
        ),
        View(
            "agreement",
            # One parse of the grades: criterion verdicts from each trial's latest recorded
            # grade, constraint verdicts from its current grade (latest replay, else
            # recorded); a trial counts for a pair when both are decided.
            "WITH h AS MATERIALIZED (SELECT seq, trial, task_id, source FROM _grade_head), "
            "pick AS (SELECT trial, any_value(task_id) AS task_id, "
            "max(seq) FILTER (WHERE source = 'recorded') AS rec_seq, "
            "arg_max(seq, (source = 'replayed')::BIGINT * 4611686018427387904 + seq) AS cur_seq "
            "FROM h GROUP BY trial), "
            "b AS MATERIALIZED (SELECT seq, body FROM _ev WHERE type IN "
            "('grade.recorded', 'grade.replayed') AND seq IN (SELECT rec_seq FROM pick "
            "UNION SELECT cur_seq FROM pick)), "
            "cr AS (SELECT trial, task_id, c.id AS criterion, c.met FROM (SELECT p.trial, p.task_id, "
            f"unnest(({_CRIT_T.replace('body', 'b.body')}).grade.criterion_results) AS c "
            "FROM pick p JOIN b ON b.seq = p.rec_seq) WHERE c.met IS NOT NULL), "
            "tc AS (SELECT trial, r.id AS constraint_id, r.passed FROM (SELECT p.trial, "
            f"unnest(({_TRACE_T.replace('body', 'b.body')}).grade.trace_check_results) AS r "
            f"FROM pick p JOIN b ON b.seq = p.cur_seq) WHERE {_VERDICT} IN ('pass', 'fail')), "
            "pairs AS (SELECT cr.task_id, cr.criterion, tc.constraint_id, cr.met, tc.passed "
            "FROM cr JOIN tc USING (trial)), "
            "cnt AS (SELECT CASE WHEN grouping(task_id) = 1 THEN '*' ELSE task_id END AS task_id, "
            "criterion, constraint_id, "
            "count(*) FILTER (WHERE met AND passed) AS met_passed, "
            "count(*) FILTER (WHERE met AND NOT passed) AS met_failed, "
            "count(*) FILTER (WHERE NOT met AND passed) AS not_met_passed, "
            "count(*) FILTER (WHERE NOT met AND NOT passed) AS not_met_failed, "
            "count(*) AS observations FROM pairs "
            "GROUP BY GROUPING SETS ((task_id, criterion, constraint_id), (criterion, constraint_id))), "
            "p AS (SELECT *, (met_passed + not_met_failed)::DOUBLE / observations AS accuracy, "
            "((met_passed + met_failed)::DOUBLE * (met_passed + not_met_passed) "
            "+ (not_met_passed + not_met_failed)::DOUBLE * (met_failed + not_met_failed)) "
            "/ (observations::DOUBLE * observations) AS pe FROM cnt) "
            "SELECT task_id, criterion, constraint_id, observations, met_passed, met_failed, "
            "not_met_passed, not_met_failed, accuracy, "
            "CASE WHEN pe >= 1 THEN NULL ELSE (accuracy - pe) / (1 - pe) END AS kappa FROM p",
            "judge criterion × trace constraint: the 2×2 table and Cohen's κ over every trial "
            "carrying both decided (task_id '*' = pooled over tasks)",
            (
                ("task_id", "task id, or '*' for every task pooled"),
                ("criterion", "judge criterion id (latest recorded grade)"),
                ("constraint_id", "trace constraint id (current grade: latest replay)"),
                ("observations", "trials with both a met verdict and a decided constraint"),
                ("met_passed", "judge met, constraint passed"),
                ("met_failed", "judge met, constraint failed"),
                ("not_met_passed", "judge not met, constraint passed"),
                ("not_met_failed", "judge not met, constraint failed"),
                ("accuracy", "observed agreement"),
                ("kappa", "Cohen's κ; null (undefined) when chance agreement is 1"),
            ),
        ),
        View(
            "key_accounting",
            # issue 22: every replayed grade's accounting rows (GRADING.md § The runtime
            # ledger), per task, corpus and key, over the whole history of replays
            f"WITH m(key, kind) AS (VALUES {_MANIFEST_ROWS}), "
            "h AS MATERIALIZED (SELECT seq, trial, task_id, replay_id FROM _grade_head "
            "WHERE source = 'replayed'), "
            "a AS (SELECT h.task_id, split_part(h.trial, '/', 2) AS corpus, h.replay_id, h.seq, "
            "r.key, r.outcome, r.reason FROM (SELECT seq, unnest((json_transform(body, "
            + _shape({"grade": {"accounting": [ACCOUNTING_SHAPE]}})
            + ")).grade.accounting) AS r FROM _ev WHERE type = 'grade.replayed') x "
            "JOIN h USING (seq)) "
            "SELECT a.task_id, a.corpus, a.key, m.kind, "
            "count(*) FILTER (WHERE a.outcome = 'evaluated') AS evaluated, "
            "count(*) FILTER (WHERE a.outcome = 'skipped') AS skipped, "
            "list_sort(list_distinct(list(a.reason) FILTER (WHERE a.reason <> ''))) AS reasons, "
            "arg_max(a.replay_id, a.seq) AS last_replay "
            "FROM a LEFT JOIN m USING (key) GROUP BY a.task_id, a.corpus, a.key, m.kind",
            "per populated scored key: how often a replay evaluated or skipped it, and why "
            "(a key with evaluated = 0 never scored anything)",
            (
                ("task_id", "task id"),
                ("corpus", "the corpus component of the trial stream"),
                ("key", "author-facing grading key (schemas/key_manifest.py)"),
                ("kind", "scored_check (only scored keys are accounted)"),
                ("evaluated", "replayed grades whose evaluator read the key"),
                ("skipped", "replayed grades that skipped it, each with its reason"),
                ("reasons", "the distinct skip reasons"),
                ("last_replay", "the latest replay that accounted for it"),
            ),
        ),
    ]


ACCOUNTING_SHAPE: dict[str, str] = {"key": "VARCHAR", "outcome": "VARCHAR", "reason": "VARCHAR"}
_MANIFEST_ROWS = ", ".join(f"({_sql_str(k.key)}, {_sql_str(k.kind.value)})" for k in MANIFEST)

# issue 19: the token and cost views live in their own module (ledger/analytics/spend_views.py)
VIEWS: tuple[View, ...] = tuple(_views()) + tuple(
    View(name, sql, doc, columns) for name, sql, doc, columns in SPEND_VIEWS
)
PUBLIC_VIEWS: tuple[View, ...] = tuple(v for v in VIEWS if v.public)

MACROS: tuple[str, ...] = (
    # The retrace verdict order (FORMATS.md § 9, replay.retrace.classify): not_measured first.
    "CREATE OR REPLACE MACRO constraint_class(passed, failed, undecided) AS CASE "
    "WHEN passed + failed + undecided = 0 THEN 'not_measured' "
    "WHEN passed > 0 AND failed > 0 THEN 'discriminating' "
    "WHEN passed + failed = 0 THEN 'never_decided' "
    "WHEN undecided > 0 THEN 'undecided_in_part' "
    "WHEN failed = 0 THEN 'always_true' ELSE 'always_false' END",
    # 1 − C(n−c, k)/C(n, k) as a product of k ratios, so large n never overflows; a factor
    # reaches 0 exactly when fewer than k failures exist, giving 1.0 with no rounding.
    "CREATE OR REPLACE MACRO pass_at_k_value(n, c, k) AS CASE WHEN k IS NULL OR n IS NULL "
    "OR c IS NULL OR k < 1 OR n < k THEN NULL ELSE 1 - coalesce(list_product(list_transform("
    "range(k), lambda i: (n - c - i)::DOUBLE / (n - i))), 1) END",
)


def create_views(con: duckdb.DuckDBPyConnection, raw_relation_sql: str) -> None:
    """Create every view on ``con`` over ``raw_relation_sql`` (the envelope rows)."""
    con.execute(f"CREATE OR REPLACE VIEW _raw_events AS {raw_relation_sql}")
    for macro in MACROS:
        con.execute(macro)
    for view in VIEWS:
        con.execute(f"CREATE OR REPLACE VIEW {view.name} AS {view.sql}")


def drop_views(con: duckdb.DuckDBPyConnection) -> None:
    for view in reversed(VIEWS):
        con.execute(f"DROP VIEW IF EXISTS {view.name}")
    con.execute("DROP VIEW IF EXISTS _raw_events")


def schema_rows() -> list[dict[str, str]]:
    """The column docs ``vledger sql --schema`` prints: one row per public view column."""
    return [
        {"view": v.name, "column": col, "description": desc, "view_doc": v.doc}
        for v in PUBLIC_VIEWS
        for col, desc in v.columns
    ]
