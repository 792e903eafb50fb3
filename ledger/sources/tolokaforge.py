"""Tolokaforge trial bundles → events (FORMATS.md §§ 1–5).

Reading (``read_bundle``) is the only I/O here; turning the parsed documents into events
(``bundle_events``) is pure, so the generator's bundles, the shared corpus and
hand-written dicts in tests all go through one path. Corpora and packs:
``ledger.sources.corpus`` and ``ledger.sources.packs``; ids: ``ledger.sources.plan``.

A bundle is the stream ``trial/<corpus>/<task_id>/<trial>``, ``<trial>`` named as
docs/readme/ingest.md § "Naming" says (:func:`trial_name`); its events, in order: § "The
events".
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ledger.sources.corpus import Corpus
from ledger.sources.files import Directory, is_file
from ledger.sources.plan import PlannedEvent, timeline_payloads, to_events, trial_stream
from ledger.sources.shape import (
    BundleError,
    check_choice,
    check_keys,
    check_type,
    describe,
    need_list,
    need_mapping,
    opt_str,
)
from ledger.sources.yaml_safe import DEFAULT_LIMITS, YamlLimits, load_confined_yaml, load_yaml_bytes
from schemas.envelope import NewEvent
from schemas.timeline import (
    Role,
    TimelineInconsistencyError,
    ToolExecutionStatus,
    ToolExecutorIdentity,
)

# Every top-level key Tolokaforge 0.33.1's Trajectory model writes. A key outside this set
# (a newer recorder) does not make the bundle unreadable: like every other top-level key
# it is kept verbatim in trial.registered's trajectory_meta, and named in unknown_keys.
TRAJECTORY_KEYS = frozenset(
    {
        "task_id", "trial_index", "attempt_id", "simulator_schema_version", "start_ts",
        "end_ts", "status", "termination_reason", "grading_error", "messages",
        "snapshot_status", "first_user_message_source", "user_reply_guard_events",
        "provision_stage", "tool_log", "final_env_state", "metrics", "simulation_steps",
        "environment_errors", "grade", "grading_judge_usage", "grading_state_snapshots",
        "grading_state_diff", "grading_comparison_view",
    }
)  # fmt: skip
END_KEYS = ("status", "termination_reason", "grading_error")
TIME_KEYS = ("start_ts", "end_ts")  # on trial.ended: when the trial ran, beside how it ended
# Message keys of Tolokaforge 0.33.1; tool_status is the completed tool outcome the recorder
# knew for a role: tool message. An unknown key is kept under the payload's "unrecognized"
# mapping (verbatim, unread) and named in trial.registered's unknown_keys.
MESSAGE_KEYS = frozenset(
    {"role", "content", "content_blocks", "tool_calls", "tool_call_id", "tool_status",
     "reasoning", "ts", "openrouter_generation_id"}
)  # fmt: skip
DECL_KEYS = frozenset({"id", "name", "arguments"})
RECORD_KEYS = frozenset(
    {"call_id", "sequence", "tool_name", "arguments", "executor", "status", "output",
     "latency_seconds", "timestamp"}
)  # fmt: skip
RECORD_REQUIRED = ("call_id", "sequence", "tool_name", "executor", "status")
ROLES = tuple(r.value for r in Role)
EXECUTORS = tuple(e.value for e in ToolExecutorIdentity)
STATUSES = tuple(s.value for s in ToolExecutionStatus)


# --------------------------------------------------------------------------- naming


def in_run_layout(bundle_dir: Path) -> bool:
    """``<run>/trials/<task_id>/<trial_index>/``: the layout a run writes."""
    return bundle_dir.name.isdigit() and bundle_dir.parent.parent.name == "trials"


def trial_name(bundle_dir: Path) -> str:
    """``<run-dir>_trial<index>`` in a run layout (as ``tolokaforge curate`` names it), else
    the bundle directory's name (a curated corpus names it ``<run-id>_trial<index>``)."""
    if in_run_layout(bundle_dir):
        return f"{bundle_dir.parent.parent.parent.name}_trial{bundle_dir.name}"
    return bundle_dir.name


def bundle_location(bundle_dir: Path) -> str:
    """The bundle's recorded source path (docs/readme/ingest.md § Naming): part of
    ``trial.registered``'s content, so the same however the PATH named the bundle (or
    re-ingest would read a changed bundle)."""
    here = os.fspath(bundle_dir)  # by strings: a corpus names thousands of bundles
    parent = os.path.dirname(here)
    if is_file(os.path.join(parent, "corpus.yaml")):
        return f"{os.path.basename(parent)}/{os.path.basename(here)}"
    if in_run_layout(bundle_dir):
        return f"trials/{bundle_dir.parent.name}/{bundle_dir.name}"
    return bundle_dir.name


def bundle_context(
    bundle_dir: Path, corpus: str, manifest: Corpus | None, resolved: Path | None = None
) -> BundleContext:
    """Where ``bundle_dir`` sits as ingest records it; ``manifest`` is the corpus.yaml beside it.
    ``resolved``: ``bundle_dir.resolve()`` if the caller has it (a corpus resolves its
    directory once, not once per bundle)."""
    resolved = bundle_dir.resolve() if resolved is None else resolved
    return BundleContext(
        corpus=corpus,
        trial=trial_name(resolved),
        bundle_path=bundle_location(resolved),
        corpus_file=f"{resolved.parent.name}/corpus.yaml" if manifest else None,
        criterion=manifest.criterion if manifest else None,
        entry=manifest.entries.get(bundle_dir.name) if manifest else None,
    )


# --------------------------------------------------------------------------- reading


@dataclass(frozen=True, slots=True)
class RawBundle:
    """The parsed files of one bundle; ``label`` is how errors name its directory."""

    label: str
    trajectory: dict[str, Any]
    tool_log: Any = None  # parsed tool_log.yaml; meaningful only when has_tool_log
    has_tool_log: bool = False
    task: Any = None
    task_source: str | None = None
    grade: Any = None
    has_grade: bool = False
    metrics: Any = None
    tools_schemas: Any = None
    env: Any = None
    files: tuple[str, ...] = ()
    resolved: Path | None = None  # the bundle directory as read, links resolved


OPTIONAL_FILES = ("tool_log.yaml", "task.yaml", "bundle.yaml", "grade.yaml", "metrics.yaml",
                  "tools_schemas.yaml", "env.yaml")  # fmt: skip


def read_bundle(
    path: Path, label: str, limits: YamlLimits = DEFAULT_LIMITS,
    files: Mapping[str, bytes] | None = None,
) -> RawBundle:  # fmt: skip
    """Parse a bundle's files (absent optional files stay absent, never empty).

    The bundle directory is the root: a file that resolves outside it is refused by name
    (``ledger.sources.files``), and an optional file that is present in any form (a
    dangling link, a device) is read and refused, never taken as absent. ``files``: the
    bytes of every file present, read already as regular files directly in the bundle
    within ``limits.max_bytes`` (``ledger.app.ingest_key``); parsed as read from disk."""
    folder = None
    if files is not None:
        docs = {n: load_yaml_bytes(b, f"{label}/{n}", limits) for n, b in files.items()}
        if "trajectory.yaml" not in docs:
            raise BundleError(f"{label}/trajectory.yaml", None, "a trajectory.yaml", "none")
    else:
        what = f"the bundle {label}"
        folder = Directory(path, what)  # resolved and listed once for all its files
        docs = {"trajectory.yaml": load_confined_yaml(folder, "trajectory.yaml", label, what, limits)}
        for name in OPTIONAL_FILES:
            if folder.present(name):
                docs[name] = load_confined_yaml(folder, name, label, what, limits)
    task_source = (
        "task.yaml" if "task.yaml" in docs else ("bundle.yaml" if "bundle.yaml" in docs else None)
    )
    return RawBundle(
        label=label,
        trajectory=docs["trajectory.yaml"],
        tool_log=docs.get("tool_log.yaml"),
        has_tool_log="tool_log.yaml" in docs,
        task=docs.get(task_source) if task_source else None,
        task_source=task_source,
        grade=docs.get("grade.yaml"),
        has_grade="grade.yaml" in docs,
        metrics=docs.get("metrics.yaml"),
        tools_schemas=docs.get("tools_schemas.yaml"),
        env=docs.get("env.yaml"),
        files=tuple(sorted(docs)),
        resolved=None if folder is None else folder.resolved,
    )


# --------------------------------------------------------------------------- validation


def _unknown(doc: Mapping[str, Any], known: frozenset[str], prefix: str) -> list[str]:
    return [f"{prefix}{k}" for k in doc if k not in known]


def _split_unknown(
    doc: Mapping[str, Any], known: frozenset[str], prefix: str, unknown: list[str]
) -> dict[str, Any]:
    """``doc`` minus the keys a newer recorder wrote, which move under ``unrecognized``
    (kept verbatim, read by nothing) and are named on ``unknown``. A document carrying no
    such key comes back unchanged, so its payload and event ids are what they always were."""
    extra = [k for k in doc if k not in known]
    if not extra:
        return dict(doc)
    unknown.extend(f"{prefix}{k}" for k in extra)
    kept = {k: v for k, v in doc.items() if k in known}
    kept["unrecognized"] = {k: doc[k] for k in extra}
    return kept


def _check_trajectory(doc: Any, file: str) -> dict[str, Any]:
    doc = need_mapping(doc, file, None)
    check_keys(doc, doc.keys() | TRAJECTORY_KEYS, file, required=("task_id", "messages"))
    check_type(doc["task_id"], (str,), file, "task_id", "the task id as a string")
    if doc.get("trial_index") is not None:
        check_type(doc["trial_index"], (int,), file, "trial_index", "a 0-based integer")
    for k in (*END_KEYS, *TIME_KEYS):
        opt_str(doc, k, file, "")
    need_list(doc["messages"], file, "messages")
    return doc


def _message_payload(index: int, m: Any, file: str, unknown: list[str]) -> dict[str, Any]:
    key = f"messages[{index}]"
    m = _split_unknown(need_mapping(m, file, key), MESSAGE_KEYS, f"trajectory.{key}.", unknown)
    check_keys(m, MESSAGE_KEYS | {"unrecognized"}, file, key, required=("role",))
    check_choice(m["role"], ROLES, file, f"{key}.role")
    for k in ("content", "tool_call_id", "ts", "openrouter_generation_id"):
        opt_str(m, k, file, key)
    check_choice(m.get("tool_status"), STATUSES, file, f"{key}.tool_status", nullable=True)
    payload = {"index": index, **m}
    calls = m.get("tool_calls")
    if calls is not None:
        for j, c in enumerate(need_list(calls, file, f"{key}.tool_calls")):
            ck = f"{key}.tool_calls[{j}]"
            c = need_mapping(c, file, ck)
            check_keys(c, DECL_KEYS, file, ck, required=("id", "name"))
            check_type(c["id"], (str,), file, f"{ck}.id", "the call id as a string")
            check_type(c["name"], (str,), file, f"{ck}.name", "the tool name as a string")
            if "arguments" in c:
                need_mapping(c["arguments"], file, f"{ck}.arguments")
    return payload


def _record_payload(index: int, r: Any, file: str, unknown: list[str]) -> dict[str, Any]:
    key = f"[{index}]"
    r = _split_unknown(need_mapping(r, file, key), RECORD_KEYS, f"tool_log{key}.", unknown)
    check_keys(r, RECORD_KEYS | {"unrecognized"}, file, key, required=RECORD_REQUIRED)
    check_type(r["call_id"], (str,), file, f"{key}.call_id", "the call id as a string")
    check_type(r["sequence"], (int,), file, f"{key}.sequence", "a 0-based integer")
    check_type(r["tool_name"], (str,), file, f"{key}.tool_name", "the tool name as a string")
    check_choice(r["executor"], EXECUTORS, file, f"{key}.executor")
    check_choice(r["status"], STATUSES, file, f"{key}.status")
    if "arguments" in r:
        need_mapping(r["arguments"], file, f"{key}.arguments")
    for k in ("output", "timestamp"):
        opt_str(r, k, file, key)
    lat = r.get("latency_seconds")
    if lat is not None:
        check_type(lat, (int, float), file, f"{key}.latency_seconds", "a number of seconds or null")
    payload = {"index": index, **r}
    payload.setdefault("arguments", {})
    return payload


def _record_view(raw: RawBundle, traj: Mapping[str, Any]) -> tuple[list[Any] | None, str | None]:
    """The record as a list (None = no record view) and the file it came from."""
    inline = traj.get("tool_log")
    if raw.has_tool_log:
        file = f"{raw.label}/tool_log.yaml"
        if raw.tool_log is None or not isinstance(raw.tool_log, list):
            # FORMATS.md § 3: present but not a list (e.g. truncated) is an error, never "absent"
            raise BundleError(
                file,
                None,
                "a YAML list of recorded tool calls ([] if none)",
                describe(raw.tool_log),
            )
        if inline is not None and inline != raw.tool_log:
            raise BundleError(
                f"{raw.label}/trajectory.yaml",
                "tool_log",
                "no inline record, or one equal to tool_log.yaml",
                "a different inline record",
            )
        return raw.tool_log, file
    if inline is not None:
        file = f"{raw.label}/trajectory.yaml"
        return need_list(inline, file, "tool_log"), file
    return None, None


# --------------------------------------------------------------------------- events


@dataclass(frozen=True, slots=True)
class BundleContext:
    """Where a bundle sits: its corpus name, trial name, path, corpus row."""

    corpus: str
    trial: str
    bundle_path: str
    corpus_file: str | None = None
    criterion: str | None = None
    entry: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class BundlePlan:
    """The events one bundle becomes, and the views' disagreement if they had one."""

    stream: str
    label: str
    events: tuple[PlannedEvent, ...]
    inconsistency: TimelineInconsistencyError | None = None

    def new_events(self) -> list[NewEvent]:
        return [e.new_event() for e in self.events]


def _models(task: Any) -> dict[str, str | None]:
    mc = task.get("model_config") if isinstance(task, Mapping) else None
    out: dict[str, str | None] = {"agent": None, "user": None, "judge": None}
    if isinstance(mc, Mapping):
        for role in out:
            m = mc.get(role)
            if isinstance(m, Mapping) and isinstance(m.get("name"), str):
                out[role] = m["name"]
    return out


def _membership(raw: RawBundle, ctx: BundleContext, task_id: str, record_view: bool) -> dict | None:
    if ctx.corpus_file is None:
        return None
    entry = dict(ctx.entry) if ctx.entry is not None else None
    if entry is not None:
        file = ctx.corpus_file
        if entry.get("task_id") not in (None, task_id):
            raise BundleError(
                file,
                f"bundles[{entry['directory']}].task_id",
                f"the bundle's own task_id {task_id!r}",
                describe(entry["task_id"]),
            )
        carried = entry.get("record_carried")
        if carried is not None and carried != record_view:
            raise BundleError(
                file,
                f"bundles[{entry['directory']}].record_carried",
                f"{str(record_view).lower()} (tool_log.yaml is "
                f"{'present' if record_view else 'absent'} in {raw.label})",
                describe(carried),
            )
    return {
        "corpus_file": ctx.corpus_file,
        "criterion": ctx.criterion,
        "entry": entry,
        "met": entry.get("met") if entry else None,
        "record_carried": entry.get("record_carried") if entry else None,
    }


def _registered(
    raw: RawBundle, ctx: BundleContext, traj: Mapping[str, Any], record_view: bool
) -> dict:
    task_id = traj["task_id"]
    task = raw.task
    if task is not None:
        tfile = f"{raw.label}/{raw.task_source}"
        task = need_mapping(task, tfile, None)
        if task.get("task_id") not in (None, task_id):
            raise BundleError(
                tfile, "task_id", f"the trajectory's task_id {task_id!r}", describe(task["task_id"])
            )
        if task.get("grading_config") is not None:
            need_mapping(task["grading_config"], tfile, "grading_config")
    metrics = raw.metrics
    if metrics is not None:
        metrics = need_mapping(metrics, f"{raw.label}/metrics.yaml", None)
    stamp = metrics.get("schema_version") if metrics else None
    if stamp is not None:
        check_type(stamp, (int,), f"{raw.label}/metrics.yaml", "schema_version", "an integer stamp")
    if raw.tools_schemas is not None:
        need_list(raw.tools_schemas, f"{raw.label}/tools_schemas.yaml", None)
    membership = _membership(raw, ctx, task_id, record_view)
    meta = {
        k: v for k, v in traj.items() if k not in ("messages", "tool_log", *END_KEYS, *TIME_KEYS)
    }
    return {
        "task_id": task_id,
        "trial_index": traj.get("trial_index"),
        "trial": ctx.trial,
        "corpus": ctx.corpus,
        "bundle_path": ctx.bundle_path,
        "files": list(raw.files),
        "record_view": record_view,
        "met": membership["met"] if membership else None,
        "membership": membership,
        "models": _models(task),
        "task": task,
        "task_source": raw.task_source,
        "trajectory_meta": meta,
        "metrics": metrics,
        "schema_version_stamp": stamp,
        "redacted": bool(metrics and metrics.get("redaction") is not None),
        "tool_schemas": raw.tools_schemas,
    }


def _states(raw: RawBundle, task: Any) -> list[dict[str, Any]]:
    out = []
    if isinstance(task, Mapping) and task.get("initial_state") is not None:
        out.append(
            {
                "which": "initial",
                "source": f"{raw.task_source}:initial_state",
                "state": task["initial_state"],
            }
        )
    if raw.env is not None:
        out.append({"which": "final", "source": "env.yaml", "state": raw.env})
    return out


def _grade(raw: RawBundle) -> dict[str, Any] | None:
    if not raw.has_grade:
        return None
    file = f"{raw.label}/grade.yaml"
    g = need_mapping(raw.grade, file, None)
    for k in ("binary_pass", "score"):
        if k not in g:
            raise BundleError(
                file, k, "this key to be present (every grade.yaml has it)", "nothing"
            )
    check_type(g["binary_pass"], (bool,), file, "binary_pass", "true or false")
    check_type(g["score"], (int, float), file, "score", "a number between 0.0 and 1.0")
    comps = g.get("components")
    if comps is not None:
        for name, v in need_mapping(comps, file, "components").items():
            if v is not None:
                check_type(v, (int, float), file, f"components.{name}", "a number or null")
    for k in ("criterion_results", "trace_check_results"):
        if g.get(k) is not None:
            for i, row in enumerate(need_list(g[k], file, k)):
                need_mapping(row, file, f"{k}[{i}]")
    if g.get("trace_checks_summary") is not None:
        need_mapping(g["trace_checks_summary"], file, "trace_checks_summary")
    for k in ("reasons", "judge_status"):
        opt_str(g, k, file, "")
    return {"source": "grade.yaml", "grade": g}


def bundle_events(raw: RawBundle, ctx: BundleContext) -> BundlePlan:
    """One bundle → its stream's events, in the order the module docstring gives.

    Raises :class:`BundleError` for a wrong shape. A G6b/G7 disagreement between the
    views does not raise: the plan carries it (``inconsistency``) and its last event
    records it, and the caller decides whether that aborts the ingest.
    """
    tfile = f"{raw.label}/trajectory.yaml"
    traj = _check_trajectory(raw.trajectory, tfile)
    unknown = _unknown(traj, TRAJECTORY_KEYS, "trajectory.")
    msgs = [_message_payload(i, m, tfile, unknown) for i, m in enumerate(traj["messages"])]
    records, rfile = _record_view(raw, traj)
    recs = (
        None
        if records is None
        else [_record_payload(i, r, rfile or "", unknown) for i, r in enumerate(records)]
    )
    registered = _registered(raw, ctx, traj, records is not None)
    if unknown:  # only then: a bundle with none keeps the payload (and ids) it always had
        registered["unknown_keys"] = sorted(dict.fromkeys(unknown))
    ended = {k: traj.get(k) for k in END_KEYS}
    ended["grading_error_recorded"] = "grading_error" in traj
    for k in TIME_KEYS:
        if traj.get(k) is not None:
            ended[k] = traj[k]
    grade = _grade(raw)
    timeline, inconsistency = timeline_payloads(msgs, recs, traj.get("termination_reason"))
    typed: list[tuple[str, dict[str, Any]]] = [("trial.registered", registered)]
    typed += [("trial.message", p) for p in msgs]
    typed += [("trial.tool_call", p) for p in recs or ()]
    typed.append(("trial.ended", ended))
    typed += [("state.recorded", s) for s in _states(raw, registered["task"])]
    if grade is not None:
        typed.append(("grade.recorded", grade))
    typed += [("timeline.event", p) for p in timeline]
    stream = trial_stream(ctx.corpus, traj["task_id"], ctx.trial)
    events = to_events(stream, typed, raw.label)
    return BundlePlan(stream, raw.label, events, inconsistency)
