"""``retrace`` at the ledger seam: read trials, run the pure projection, append the results.

The projection (``replay.retrace.retrace_trial``) takes one trial's events and returns
values; this module loads replacement configs from files, hands the trial selection to an
engine (``ledger.engines``: the local process pool or Ray; a trial is never split), and
appends one
``grade.replayed`` per trial plus one ``replay.completed`` carrying a receipt: the
checkpoint it read (tree size + root), the config digest and the outputs digest.

Example::

    with open_ledger(".vledger") as lg:
        result = retrace(lg, corpus="notes_duplicate_check")
    print(result.report["evidence"], result.exit_code)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ledger.app.receipts import register_recompute
from ledger.engines.base import Engine, EngineError, TrialSelection
from ledger.engines.local import LocalEngine
from ledger.log.store import Ledger
from ledger.sources.files import InputError
from ledger.sources.yaml_safe import load_yaml
from replay.grading_rules import GradingConfigError, load_grading_config
from replay.retrace import Override, TrialRetrace, retrace_trial, unreadable_bundle
from replay.retrace_report import RetraceReportError, build_report
from replay.timeline import TIMELINE_VERSION
from replay.trace_checks import TRACE_CHECKS_VERSION
from replay.trace_checks.rules import TraceChecksConfigError, load_trace_checks
from schemas.canonical import digest
from schemas.envelope import NewEvent, StoredEvent

PROJECTION_VERSION = f"retrace/1 ({TIMELINE_VERSION}, {TRACE_CHECKS_VERSION})"

# Exit codes (README § retrace): results are 0 whatever they say; the corpus being
# unreadable, a bad replacement config or an empty source is 1.
EXIT_OK = 0
EXIT_NOT_RECHECKED = 1


class RetraceError(Exception):
    """A retrace that cannot start: bad replacement config, no trials, two blocks per task."""


@dataclass(frozen=True)
class RetraceResult:
    report: dict[str, Any]
    exit_code: int
    appended: int


# ------------------------------------------------------------------ replacement configs


def load_override_source(
    grading_file: Path | None, constraints_file: Path | None
) -> dict[str, Any]:
    """The replacement blocks as parsed from their files (kept raw so a receipt can be
    recomputed by loading them again with the same loaders)."""
    if grading_file is not None and constraints_file is not None:
        raise RetraceError(
            "--grading and --constraints both replace the trace_checks block; pass one "
            "(put the constraints inside the grading file's trace_checks: key)"
        )
    source: dict[str, Any] = {"grading": None, "constraints": None}
    if grading_file is not None:
        source["grading"] = _read(grading_file)
    if constraints_file is not None:
        data = _read(constraints_file)
        if isinstance(data, dict) and "trace_checks" in data:
            data = data["trace_checks"]  # a grading document: take its block, nothing else
        source["constraints"] = data
    return source


def _read(path: Path) -> Any:
    try:  # the one bounded reader: a device, FIFO or oversize file is refused by name
        return load_yaml(Path(path))
    except InputError as exc:  # names the file (and line) itself
        raise RetraceError(str(exc)) from None
    except OSError as exc:
        raise RetraceError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except Exception as exc:  # the YAML loader's own typed errors name line and column
        raise RetraceError(f"{path}: {exc}") from None


def override_from_source(source: dict[str, Any], label: str = "") -> Override:
    """Validate the replacement blocks with the same load-time rules a pack meets."""
    try:
        grading = (
            None
            if source.get("grading") is None
            else load_grading_config(source["grading"], file=label or "--grading")
        )
        constraints = (
            None if source.get("constraints") is None else load_trace_checks(source["constraints"])
        )
    except (GradingConfigError, TraceChecksConfigError) as exc:
        raise RetraceError(
            f"{label or 'the replacement config'} fails the load-time rules; nothing was "
            f"re-checked:\n{exc}"
        ) from None
    return Override(grading=grading, trace_checks=constraints)


# ------------------------------------------------------------------ reading and running


def outputs_digest(outcomes: Sequence[TrialRetrace]) -> str:
    """The digest a receipt binds: every trial's status, differences and replayed grade."""
    return digest(
        [
            {
                "trial": o.trial,
                "status": o.status,
                "differences": [d.as_json() for d in o.differences],
                "replayed": o.replayed,
            }
            for o in outcomes
        ]
    )


def _config_record(
    source: dict[str, Any], corpus: str | None, task: str | None, streams: frozenset[str] | None
) -> dict[str, Any]:
    return {
        "projection_version": PROJECTION_VERSION,
        "corpus": corpus,
        "task": task,
        "streams": None if streams is None else sorted(streams),
        "override": source,
    }


def replay_events(
    outcomes: Sequence[TrialRetrace], report: dict[str, Any], config: dict[str, Any], size: int, root: bytes
) -> list[NewEvent]:
    """One grade.replayed per re-derived trial and the replay.completed receipt."""
    config_digest = digest(config)
    out_digest = outputs_digest(outcomes)
    # The id binds the log size read, so a second identical run (which reads the first
    # run's events too) is a second replay in the history, never a silent duplicate.
    replay_id = "replay-" + digest({"config": config_digest, "size": size})[7:23]
    # Replays live on their own stream, never on a trial's: the trial stream stays exactly
    # what ingest recorded, so re-ingesting the same bundle still appends nothing.
    stream = f"replay/{replay_id}"
    events = [
        NewEvent(
            stream=stream,
            type="grade.replayed",
            payload={
                "trial": o.trial,
                "task_id": o.task_id,
                "replay_id": replay_id,
                "projection_version": PROJECTION_VERSION,
                "config_digest": config_digest,
                "status": o.status,
                "differences": [d.as_json() for d in o.differences],
                "grade": o.replayed,
            },
            event_id=f"{replay_id}:{o.trial}",
        )
        for o in outcomes
        if o.replayed is not None
    ]
    summary = {k: report[k] for k in ("constraints", "paths", "evidence")}
    summary["statuses"] = _status_counts(outcomes)
    events.append(
        NewEvent(
            stream=stream,
            type="replay.completed",
            payload={
                "replay_id": replay_id,
                "projection_version": PROJECTION_VERSION,
                "config": config,
                "summary": summary,
                "receipt": {
                    "checkpoint": {"size": size, "root": root.hex()},
                    "config_digest": config_digest,
                    "outputs_digest": out_digest,
                },
            },
            event_id=f"{replay_id}:completed",
        )
    )
    return events


def _status_counts(outcomes: Sequence[TrialRetrace]) -> dict[str, int]:
    counts = {"agreed": 0, "disagreed": 0, "ungraded": 0, "not_rechecked": 0}
    for o in outcomes:
        counts[o.status] += 1
    return counts


def retrace(
    lg: Ledger,
    *,
    corpus: str | None = None,
    task: str | None = None,
    grading_file: Path | None = None,
    constraints_file: Path | None = None,
    workers: int = 1,
    dry_run: bool = False,
    streams: frozenset[str] | None = None,
    on_total: Callable[[int], None] | None = None,
    on_done: Callable[[int], None] | None = None,
    engine: Engine | None = None,
    unreadable: Sequence[Mapping[str, Any]] = (),
) -> RetraceResult:
    """Re-derive every matching trial's grade from the log; append the replay unless dry.

    ``engine`` runs the projection (default: the local process pool of ``workers``); the
    appends happen here, on the driver, only after every trial has a result.
    """
    source = load_override_source(grading_file, constraints_file)
    label = str(grading_file or constraints_file or "")
    override = override_from_source(source, label)
    size = lg.size()
    eng = engine if engine is not None else LocalEngine(workers=workers)
    select = TrialSelection(to_seq=size - 1, corpus=corpus, task=task, streams=streams)
    try:
        pairs = eng.map_trials(
            lg, select, retrace_trial, override, on_total=on_total, on_done=on_done
        )
    except EngineError as exc:
        raise RetraceError(f"{exc}; nothing was appended") from None
    if not pairs and not unreadable:
        where = " ".join(f"--{k} {v}" for k, v in (("corpus", corpus), ("task", task)) if v)
        raise RetraceError(
            f"no trial in the ledger{' matches ' + where if where else ''}; ingest some first "
            "(`vledger ingest PATH`) or pass --source PATH"
        )
    outcomes = [o for _, o in pairs] + [
        unreadable_bundle(str(u["source"]), str(u["reason"]))
        for u in sorted(unreadable, key=lambda u: str(u["source"]))
    ]
    try:
        report = build_report(outcomes)
    except RetraceReportError as exc:
        raise RetraceError(str(exc)) from None
    config = _config_record(source, corpus, task, streams)
    root = lg.root(size)
    events = replay_events(outcomes, report, config, size, root)
    completed = events[-1].payload
    report["replay_id"] = completed["replay_id"]
    report["receipt"] = completed["receipt"]
    report["dry_run"] = dry_run
    appended = 0
    if not dry_run:
        appended = lg.append(events).appended
    exit_code = EXIT_NOT_RECHECKED if any(o.status == "not_rechecked" for o in outcomes) else EXIT_OK
    report["exit_code"] = exit_code
    return RetraceResult(report, exit_code, appended)


def recompute_replay(lg: Ledger, ev: StoredEvent) -> str:
    """Re-run a recorded replay over the log prefix its receipt names; its outputs digest."""
    payload = ev.data()
    config = payload["config"]
    size = payload["receipt"]["checkpoint"]["size"]
    override = override_from_source(config["override"])
    streams = config.get("streams")
    select = TrialSelection(
        to_seq=size - 1,
        corpus=config.get("corpus"),
        task=config.get("task"),
        streams=None if streams is None else frozenset(streams),
    )
    pairs = LocalEngine(workers=1).map_trials(lg, select, retrace_trial, override)
    return outputs_digest([o for _, o in pairs])


register_recompute("replay.completed", recompute_replay)

