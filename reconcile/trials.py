"""What reconciliation reads of one trial: its recorded grade and grading, and the
candidate label (the pack's trace checks over the trial's timeline).

A bundle is read by the project's one importer and folded by ``replay.timeline.trial_inputs``, so
reconcile sees a trial exactly as ingest stores it; a defect in one bundle is an
:class:`UnreadableBundle` (an ``unreadable_trials`` row), never fatal to the run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from reconcile.inputs import (
    Candidate,
    CandidateEvaluation,
    CriterionResult,
    CriterionShape,
    RecordedGrade,
    RecordedGrading,
    Unavailable,
)
from replay.grading.recorded_grade import RecordedGradeRead
from replay.grading.rules import GradingConfigError, load_grading_config
from replay.timeline.build import build_trial_timeline
from replay.timeline.trial_inputs import TrialInputs
from replay.trace_checks import TraceChecksResult, evaluate_trace_checks
from replay.trace_checks.rules import TraceChecksConfigError, load_trace_checks
from schemas.errors import LedgerError
from schemas.grading import GradingConfig, Rubric
from schemas.timeline import TimelineInconsistencyError
from schemas.trace_checks import TraceChecksConfig


def rubric_of(config: GradingConfig) -> tuple[CriterionShape, ...] | None:
    """The rubric's criteria as the grading models read them (schemas/grading.py is the
    one reader: its defaults — kind binary, weight 1.0 — are the only ones), ``None``
    when no judge rubric is configured."""
    judge = config.llm_judge
    rubric: Rubric | None = judge.rubric if judge is not None else None
    if rubric is None:
        return None
    return tuple(
        CriterionShape(c.id, c.kind, c.required, float(c.weight), c.description)
        for c in rubric.criteria
    )


class UnreadableBundle(LedgerError):
    """One bundle that cannot be read as a trial; reported by name, never fatal to the run."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def recorded_grade(read: RecordedGradeRead | None) -> RecordedGrade:
    """The recorded grade's verdict fields as numbers; kappa needs them, so a field the one
    reading names as no number (or a row that is no judge verdict) makes the trial
    unreadable here, by name."""
    if read is None:
        return RecordedGrade("absent (no grade.yaml)", None, {}, 0.0, False)
    if problems := read.problems:
        raise UnreadableBundle(problems[0])
    results = None
    if read.criterion_results is not None:
        results = tuple(
            CriterionResult(
                r["id"], r["met"], _float(r.get("score")), str(r.get("justification") or "")
            )
            for r in read.criterion_results
        )
    return RecordedGrade(
        judge_status=read.status,
        criterion_results=results,
        components={k: _float(v) for k, v in read.components.items()},
        score=float(read.score),
        binary_pass=bool(read.binary_pass),
        trace_gate_failed=read.trace_gate_failed,
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
    return recorded_grade(inputs.grade_read), grading


# --- the candidate label -------------------------------------------------------------------

Evaluator = Callable[[TrialInputs, Any], Candidate]  # (inputs, a loaded pack)


def trace_evaluator() -> Evaluator:
    """The production projection: the timeline, then the pack's trace_checks over it."""
    configs: dict[str, TraceChecksConfig | str] = {}

    def config_of(pack: Any) -> TraceChecksConfig | str:
        if pack.trace_checks is not None:
            return pack.trace_checks
        key = str(pack.directory)
        if key not in configs:
            try:
                configs[key] = load_trace_checks(pack.grading.get("trace_checks"))
            except TraceChecksConfigError as exc:
                configs[key] = f"{pack.directory}: {exc}"
        return configs[key]

    def evaluate(inputs: TrialInputs, pack: Any) -> Candidate:
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
