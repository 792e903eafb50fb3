"""What reconciliation reads of one trial: its recorded grade and grading, and the
candidate label (the pack's trace checks over the trial's timeline).

A bundle is read by the project's one importer and folded by ``replay.trial_inputs``, so
reconcile sees a trial exactly as ingest stores it; a defect in one bundle is an
:class:`UnreadableBundle` (an ``unreadable_trials`` row), never fatal to the run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ledger.app.reconcile_packs import Pack, ReconcileError, rubric_of
from reconcile.inputs import (
    Candidate,
    CandidateEvaluation,
    CriterionResult,
    RecordedGrade,
    RecordedGrading,
    Unavailable,
)
from replay.grading_rules import GradingConfigError, load_grading_config
from replay.timeline import build_trial_timeline
from replay.trace_checks import TraceChecksResult, evaluate_trace_checks
from replay.trace_checks.rules import TraceChecksConfigError, load_trace_checks
from replay.trial_inputs import TrialInputs
from schemas.errors import LedgerError
from schemas.timeline import TimelineInconsistencyError
from schemas.trace_checks import TraceChecksConfig


class UnreadableBundle(LedgerError):
    """One bundle that cannot be read as a trial; reported by name, never fatal to the run."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UnreadableBundle(f"grade.yaml {where} is {value!r}, not a number")
    return float(value)


def recorded_grade(raw: Mapping[str, Any] | None) -> RecordedGrade:
    """grade.yaml's verdict fields; a row that is not a judge verdict is unreadable."""
    if raw is None:
        return RecordedGrade("absent (no grade.yaml)", None, {}, 0.0, False)
    rows = raw.get("criterion_results")
    results = None
    if rows is not None:
        results = []
        for i, row in enumerate(rows):
            if not isinstance(row.get("id"), str) or not isinstance(row.get("met"), bool):
                raise UnreadableBundle(f"grade.yaml criterion_results[{i}] is not a judge verdict")
            score = row.get("score")
            score = None if score is None else _number(score, f"criterion_results[{i}].score")
            why = str(row.get("justification") or "")
            results.append(CriterionResult(row["id"], row["met"], score, why))
        results = tuple(results)
    components = {
        k: (None if v is None else _number(v, f"components.{k}"))
        for k, v in (raw.get("components") or {}).items()
    }
    summary = raw.get("trace_checks_summary") or {}
    return RecordedGrade(
        judge_status=str(raw.get("judge_status") or "unspecified"),
        criterion_results=results,
        components=components,
        score=_number(raw.get("score"), "score"),
        binary_pass=bool(raw.get("binary_pass")),
        trace_gate_failed=bool(summary.get("gate_failed", False)),
    )


def recorded_grading(cfg: Mapping[str, Any]) -> RecordedGrading:
    """The frozen ``grading_config``: rubric, combine map, method, threshold — read by the
    one reader as evidence (a broken authoring rule is no reason to drop the trial)."""
    try:
        config = load_grading_config(cfg, file="task.yaml grading_config", authored=False)
    except GradingConfigError as exc:
        raise UnreadableBundle(str(exc)) from None
    return RecordedGrading(
        rubric=rubric_of(config),
        weights=dict(config.combine.weights),
        method=config.combine.method,
        pass_threshold=config.combine.pass_threshold,
    )


def never_ran(inputs: TrialInputs) -> bool:
    """No task.yaml, and the trajectory records an abort rather than an episode."""
    return inputs.registered.task is None and (
        inputs.status != "completed" or bool(inputs.grading_error)
    )


def graded_values(inputs: TrialInputs) -> tuple[RecordedGrade, RecordedGrading]:
    """What reconciliation reads of a trial, or UnreadableBundle naming why not."""
    if inputs.registered.redacted:
        raise UnreadableBundle("metrics.yaml carries a redaction stamp; refused by name")
    if inputs.registered.task is None:
        raise UnreadableBundle(
            "task.yaml is absent on a bundle whose trajectory records a real episode"
        )
    grading = recorded_grading(inputs.registered.grading or {})
    return recorded_grade(inputs.recorded_grade), grading


# --- the candidate label -------------------------------------------------------------------

Evaluator = Callable[[TrialInputs, Pack], Candidate]


def trace_evaluator() -> Evaluator:
    """The production projection: the timeline, then the pack's trace_checks over it."""
    configs: dict[str, TraceChecksConfig | str] = {}

    def config_of(pack: Pack) -> TraceChecksConfig | str:
        if pack.trace_checks is not None:
            return pack.trace_checks
        key = str(pack.directory)
        if key not in configs:
            try:
                configs[key] = load_trace_checks(pack.grading.get("trace_checks"))
            except TraceChecksConfigError as exc:
                configs[key] = f"{pack.directory}: {exc}"
        return configs[key]

    def evaluate(inputs: TrialInputs, pack: Pack) -> Candidate:
        config = config_of(pack)
        if isinstance(config, str):
            return Unavailable(config)
        if inputs.timeline_inconsistency is not None:
            return Unavailable(
                "the message view and the tool-call record disagree: "
                + str(inputs.timeline_inconsistency.get("message"))
            )
        try:
            timeline = build_trial_timeline(
                inputs.timeline_messages, inputs.recorded_calls, inputs.termination_reason
            )
        except TimelineInconsistencyError as exc:
            return Unavailable(f"the timeline cannot be built: {exc}")
        return candidate_from_result(evaluate_trace_checks(timeline, config))

    return evaluate


def candidate_from_result(result: TraceChecksResult) -> Candidate:
    """Adapt a ``TraceChecksResult`` (decision-set results + summary) to our values.

    ``results`` covers the shared constraints and the winning route's, so a route-scoped
    constraint whose route lost is absent — which reconciliation names as unavailable.
    """
    if not result.results and result.skipped_reason:
        return Unavailable(f"the trace checks did not run: {result.skipped_reason}")
    verdicts: dict[str, bool | None] = {
        r.id: None if r.undecided else bool(r.passed) for r in result.results
    }
    return CandidateEvaluation(
        verdicts=verdicts,
        component=result.component,
        gate_failed=bool(result.summary.gate_failed),
        winning_path=result.summary.winning_path or "",
    )


def recorded_tools(inputs: TrialInputs) -> dict[str, Any] | None:
    """``tools_schemas.yaml`` as ``name -> parameters schema``; ``None`` when not recorded."""
    schemas = inputs.registered.tool_schemas
    if schemas is None:
        return None
    tools: dict[str, Any] = {}
    for item in schemas:
        fn = item.get("function") if isinstance(item, Mapping) else None
        if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
            params = fn.get("parameters")
            tools[fn["name"]] = params if isinstance(params, Mapping) else None
    return tools


def ingest_corpus(lg: Any, root: Path) -> dict[Path, tuple[str, list[str]]]:
    """A real run: the corpus into the ledger (idempotent; bad bundles recorded as skipped).
    Each bundle read, by resolved directory: its stream and planned event ids, so the
    caller need not read it again."""
    from ledger.app.ingest import IngestError, ingest_into  # noqa: PLC0415 - a dry run never ingests

    planned: dict[Path, tuple[str, list[str]]] = {}

    def seen(path: Path, unit: Any) -> None:
        planned[path.resolve()] = (unit.stream, [e.event_id for e in unit.events])

    try:
        ingest_into(
            lg, [str(root)], root.resolve().name, skip_bad=True, keep_inconsistent=True,
            on_unit=seen, workers=1,  # read here: reconcile's --workers are its engine's
        )  # fmt: skip
    except IngestError as exc:
        raise ReconcileError(f"ingesting {root} into the ledger: {exc}") from None
    return planned
