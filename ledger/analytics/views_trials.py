"""The log and trial views: events, messages, tool_calls, timeline, trials."""

from __future__ import annotations

from ledger.analytics.payload_paths import PATHS
from ledger.analytics.view_kit import View, in_list, internal, typed_view
from replay.grading.outcomes import HARNESS_ERRORS, INFRASTRUCTURE_ABORTS, TrialOutcomeClass

_TRIAL = ("trial", "trial stream")
_SEQ = ("seq", "log position of the event")
_AGENT = "agent that made the call or wrote the message (inspect_ai agent span path), else NULL"


def outcome_case(reason: str, grading_error: str) -> str:
    """``replay.grading.outcomes.classify_trial_outcome`` as SQL, from its own classes and reason
    sets; grading_error is read first (tests/test_views_parity.py runs both)."""
    c = TrialOutcomeClass
    return (
        f"CASE WHEN {grading_error} IS NOT NULL AND {grading_error} <> '' "
        f"THEN '{c.UNGRADEABLE}' "
        f"WHEN {reason} IN {in_list(sorted(INFRASTRUCTURE_ABORTS))} "
        f"THEN '{c.INFRASTRUCTURE_ABORT}' "
        f"WHEN {reason} IN {in_list(sorted(HARNESS_ERRORS))} THEN '{c.HARNESS_ERROR}' "
        f"ELSE '{c.MEASURED}' END"
    )


def raw_events() -> View:
    return internal(
        "_ev",
        "SELECT seq, stream, stream_version, event_id, type, schema_version, recorded_at, "
        "decode(payload) AS body, leaf_hash FROM _raw_events",
    )


def events() -> View:
    return View(
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
    )


def event_fields(name: str, type_: str) -> View:
    """One row per ``type_`` event with every field of ``PATHS[type_]`` (``_registered``…)."""
    return internal(name, typed_view(type_, ["seq", "stream", "recorded_at", *PATHS[type_]]))


def messages() -> View:
    cols = ["stream AS trial", "seq", "TRY_CAST(position AS INTEGER) AS position", "role"]
    cols += ["content", "tool_call_id"]
    cols += ["coalesce(json_array_length(tool_calls), 0)::INTEGER AS n_tool_calls"]
    return View(
        "messages",
        typed_view("trial.message", [*cols, "tool_calls", "ts"], extra_json=True),
        "one row per recorded message (trial.message), in trial order",
        (
            _TRIAL,
            _SEQ,
            ("position", "0-based message index in the trajectory"),
            ("role", "user / assistant / tool / system"),
            ("content", "message text"),
            ("tool_call_id", "for a tool message: the call it answers"),
            ("n_tool_calls", "tool calls the message declares"),
            ("tool_calls", "JSON list of {id, name, arguments}"),
            ("ts", "message timestamp as recorded"),
        ),
    )


def tool_calls() -> View:
    cols = ["stream AS trial", "seq", "call_id", "TRY_CAST(sequence AS INTEGER) AS sequence"]
    cols += ["tool_name", "executor", "status"]
    cols += ["TRY_CAST(latency_seconds AS DOUBLE) AS latency_seconds", "timestamp", "agent"]
    return View(
        "tool_calls",
        typed_view("trial.tool_call", [*cols, "arguments", "output"], extra_json=True),
        "one row per recorded tool call (tool_log.yaml's RecordedToolCall)",
        (
            _TRIAL,
            _SEQ,
            ("call_id", "episode-unique call id (x, x#2, …)"),
            ("sequence", "0-based order across the trial and all executors"),
            ("tool_name", "tool called"),
            ("executor", "agent or user"),
            ("status", "success / error / …"),
            ("latency_seconds", "recorded latency"),
            ("timestamp", "recorded timestamp"),
            ("agent", _AGENT),
            ("arguments", "call arguments (JSON)"),
            ("output", "the tool's own output text"),
        ),
    )


def timeline() -> View:
    cols = ["stream AS trial", "seq", "projection_version"]
    cols += ["TRY_CAST(position AS INTEGER) AS position"]
    cols += ["TRY_CAST(turn_index AS INTEGER) AS turn_index", "kind", "text", "call_id"]
    cols += ["tool_name", "executor", "status", "result"]
    cols += ["TRY_CAST(latency_seconds AS DOUBLE) AS latency_seconds", "agent", "arguments"]
    return View(
        "timeline",
        typed_view("timeline.event", cols, extra_json=True),
        "one row per derived trace event (timeline.event), per projection version",
        (
            _TRIAL,
            _SEQ,
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
            ("agent", _AGENT),
            ("arguments", "call arguments (JSON)"),
        ),
    )


def trial_keys() -> View:
    # The latest trial.registered per stream: the only place task and models live.
    return internal(
        "_trial_keys",
        "SELECT stream AS trial, arg_max(task_id, seq) AS task_id, "
        "arg_max(agent_model, seq) AS agent_model FROM _registered GROUP BY stream",
    )


def trial_core() -> View:
    outcome = outcome_case("e.termination_reason", "e.grading_error")
    return internal(
        "_trial_core",
        "WITH r AS (SELECT * FROM _registered QUALIFY row_number() OVER "
        "(PARTITION BY stream ORDER BY seq DESC) = 1), "
        "e AS (SELECT * FROM _ended QUALIFY row_number() OVER "
        "(PARTITION BY stream ORDER BY seq DESC) = 1) "
        "SELECT r.stream AS trial, r.corpus, r.task_id, TRY_CAST(r.trial_index AS INTEGER) "
        "AS trial_index, r.agent_model, r.user_model, r.judge_model, "
        "TRY_CAST(r.met AS BOOLEAN) AS met, TRY_CAST(r.record_view AS BOOLEAN) AS records_present, "
        f"e.status, e.termination_reason, e.grading_error, {outcome} AS outcome_class, "
        f"({outcome}) <> '{TrialOutcomeClass.INFRASTRUCTURE_ABORT}' AS counted, e.start_ts, "
        "e.end_ts, r.recorded_at AS registered_at FROM r LEFT JOIN e USING (stream)",
    )


def stream_counts() -> View:
    # Messages and tool calls per stream: counts over disjoint runs of events add up, so
    # they are kept and added to (ledger.analytics.materialise.ADDED)
    return internal(
        "_stream_counts",
        "SELECT stream, count(*) FILTER (WHERE type = 'trial.message') AS n_messages, "
        "count(*) FILTER (WHERE type = 'trial.tool_call') AS n_tool_calls FROM _ev "
        "WHERE type IN ('trial.message', 'trial.tool_call') GROUP BY stream",
    )


def trials() -> View:
    classes = " / ".join(TrialOutcomeClass)
    return View(
        "trials",
        "SELECT c.trial, c.corpus, c.task_id, c.trial_index, c.agent_model, c.user_model, "
        "c.judge_model, c.met, c.records_present, c.status, c.termination_reason, "
        "c.grading_error, c.outcome_class, c.counted, c.start_ts, c.end_ts, "
        "coalesce(n.n_messages, 0) AS n_messages, coalesce(n.n_tool_calls, 0) AS n_tool_calls, "
        "c.registered_at FROM _trial_core c LEFT JOIN _stream_counts n ON n.stream = c.trial",
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
                f"{classes} (GRADING.md § Infrastructure aborts; grading_error is read first)",
            ),
            ("counted", "false only for infrastructure aborts: left out of every rate"),
            ("start_ts", "trial start as recorded"),
            ("end_ts", "trial end as recorded"),
            ("n_messages", "trial.message events"),
            ("n_tool_calls", "trial.tool_call events"),
            ("registered_at", "when the trial was appended"),
        ),
    )


VIEWS: tuple[View, ...] = (
    raw_events(),
    events(),
    event_fields("_registered", "trial.registered"),
    event_fields("_ended", "trial.ended"),
    messages(),
    tool_calls(),
    timeline(),
    trial_keys(),
    trial_core(),
    stream_counts(),
    trials(),
)
