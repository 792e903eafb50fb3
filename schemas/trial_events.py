"""Payload models for recorded trials: registration, messages, tool calls, end, state, grade.

One bundle is one stream ``trial/<corpus>/<task_id>/<trial>``; packs are ``pack/<pack>``
streams; skipped bundles are ``ingest.skipped`` events on ``ingest/skipped``. Every model
is closed except the *inside* of a recorded grade, task snapshot and state: evidence copied
verbatim, whose shapes belong to the recording harness (FORMATS.md § 4).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from schemas.closed import Closed
from schemas.timeline import Role, ToolExecutionStatus, ToolExecutorIdentity, TraceEventKind


class CorpusMembership(Closed):
    """The bundle's row in corpus.yaml plus the corpus-level facts it is read against."""

    corpus_file: str  # path of corpus.yaml relative to the corpus root
    criterion: str | None = None
    entry: dict[str, Any] | None = None  # the bundles[] row verbatim; None when not listed
    met: bool | None = None
    record_carried: bool | None = None


class Models(Closed):
    """Model names from task.yaml ``model_config`` (None where not recorded)."""

    agent: str | None = None
    user: str | None = None
    judge: str | None = None


class TrialRegistered(Closed):
    """Who the trial is, what it was graded under, and where it came from."""

    task_id: str
    trial_index: int | None = None
    trial: str  # the stream's last component: bundle dir name, or <run>_trial<index>
    corpus: str
    # provenance: always filled by ingest; optional so a trial registered through the API
    # (not read from a bundle) can say it has none
    bundle_path: str | None = None  # see ledger.sources.tolokaforge.bundle_location
    files: list[str] = []  # the bundle files read, relative to the bundle directory
    record_view: bool  # False = no tool_log record at all ("no record view", not [])
    met: bool | None = None
    membership: CorpusMembership | None = None
    models: Models
    task: dict[str, Any] | None = None  # task.yaml (or bundle.yaml) verbatim, grading_config inside
    task_source: str | None = None
    # trajectory.yaml top level minus messages / trial.ended's fields
    trajectory_meta: dict[str, Any] = {}
    metrics: dict[str, Any] | None = None
    schema_version_stamp: int | None = None  # metrics.yaml schema_version
    redacted: bool = False  # metrics.yaml carries a redaction stamp
    tool_schemas: list[Any] | None = None  # tools_schemas.yaml verbatim
    # Keys a newer recorder wrote that this reader does not know, addressed
    # ("trajectory.messages[3].foo", "tool_log[0].bar"); present only when there are some.
    unknown_keys: list[str] = []


class ToolCallDeclPayload(Closed):
    id: str
    name: str
    arguments: dict[str, Any]


class TrialMessage(Closed):
    """One trajectory.yaml message, every role included (the timeline drops system, N3)."""

    index: int
    role: Role
    content: str | None = None
    content_blocks: Any = None
    tool_calls: list[ToolCallDeclPayload] | None = None
    tool_call_id: str | None = None
    tool_status: ToolExecutionStatus | None = None  # the completed outcome, where recorded
    reasoning: Any = None
    ts: str | None = None
    openrouter_generation_id: str | None = None
    unrecognized: dict[str, Any] | None = None  # keys a newer recorder wrote, verbatim
    agent: str | None = None  # the agent that wrote it, where the recorder names one


class TrialAgentMessage(Closed):
    """One message of the conversation as its agents executed it (inspect_ai: each model
    call's output, of whichever agent, and each user message first given to a model)."""

    index: int
    role: Role
    content: str | None = None
    tool_calls: list[ToolCallDeclPayload] | None = None
    agent: str | None = None


class TrialToolCall(Closed):
    """One tool_log.yaml record (RecordedToolCall), ``index`` = its place in the file."""

    index: int
    call_id: str
    sequence: int
    tool_name: str
    arguments: dict[str, Any]
    executor: ToolExecutorIdentity
    status: ToolExecutionStatus
    output: str | None = None
    latency_seconds: float | None = None
    timestamp: str | None = None
    unrecognized: dict[str, Any] | None = None  # keys a newer recorder wrote, verbatim
    agent: str | None = None  # the agent that made the call, where the recorder names one


class TrialEnded(Closed):
    status: str | None = None
    termination_reason: str | None = None
    grading_error: str | None = None
    # False on bundles predating the key (FORMATS.md § 2)
    grading_error_recorded: bool | None = None
    start_ts: str | None = None  # trajectory.yaml start_ts / end_ts, as written
    end_ts: str | None = None


class StateRecorded(Closed):
    which: Literal["initial", "final"]
    source: str  # e.g. "env.yaml", "task.yaml:initial_state"
    state: Any


class RecordedGrade(BaseModel):
    """grade.yaml: typed where every generation agrees, open for everything else."""

    model_config = ConfigDict(extra="allow", frozen=True, defer_build=True)

    binary_pass: bool
    score: float
    components: dict[str, float | None] | None = None
    reasons: str | None = None
    criterion_results: list[dict[str, Any]] | None = None
    judge_status: str | None = None
    trace_check_results: list[dict[str, Any]] | None = None
    trace_checks_summary: dict[str, Any] | None = None


class GradeRecorded(Closed):
    source: str  # "grade.yaml"
    grade: RecordedGrade


class TimelineInconsistency(Closed):
    """Why no timeline could be built (G6b / G7): the error's text, key and position."""

    message: str
    call_id: str
    where: str


class TimelineEvent(Closed):
    """One ``replay.timeline.build.timeline_to_payloads`` row; a trial whose views disagree (G6b /
    G7) has instead one ``timeline.event`` with ``inconsistency`` set and no event fields."""

    timeline_version: str
    message_view_present: bool
    records_present: bool
    position: int | None = None
    turn_index: int | None = None
    kind: TraceEventKind | None = None
    text: str | None = None
    call_id: str | None = None
    tool_name: str | None = None
    executor: ToolExecutorIdentity | None = None
    arguments: dict[str, Any] | None = None
    status: ToolExecutionStatus | None = None
    result: str | None = None
    latency_seconds: float | None = None
    agent: str | None = None
    inconsistency: TimelineInconsistency | None = None


class PackRegistered(Closed):
    pack: str
    pack_path: str  # "<parent dir>/<pack dir>", the same however the PATH named the pack
    task_id: str | None = None
    task: dict[str, Any] | None = None
    grading: dict[str, Any] | None = None
    grading_source: str | None = None  # "grading.yaml", "task.yaml:grading_config" or None
    files: list[str]


class MigrationDeclared(Closed):
    pack: str
    file: str  # "migration.yaml"
    declaration: dict[str, Any]  # verbatim; reconcile/ validates it


class IngestSkipped(Closed):
    source: str  # the bundle or pack path as given on the command line
    kind: str  # "bundle", "pack", ...
    reason: str  # the full error text
    file: str | None = None
    key: str | None = None
    expected: str | None = None
