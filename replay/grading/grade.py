"""Re-derive a trial's whole grade from its recorded evidence: ``grade_trial``, pure, returning
the :class:`Grade` of ``vledger grade --json``. What a component that is not measurable offline
does to the score and the pass flag: docs/readme/grading.md § What is measurable offline.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pydantic import Field

from replay.grading.accounting import (
    accounting_rows,
    expected_evaluators,
    populated_scored_keys,
    skipped,
    trace_accounting,
    unaccounted,
)
from replay.grading.components.combine import MissingWeightError, combine_components
from replay.grading.components.custom_checks import (
    CheckVerdict,
    RecordedSuite,
    evaluate_custom_checks,
)
from replay.grading.components.judge import CriterionVerdict, RecordedJudge, evaluate_judge
from replay.grading.components.result import COMPONENTS, ComponentResult
from replay.grading.components.state_checks import StateEvidence, evaluate_state_checks
from replay.grading.components.transcript_rules import evaluate_transcript_rules
from replay.grading.outcomes import TrialOutcomeClass, classify_trial_outcome
from replay.grading.recorded_grade import RecordedGradeRead
from replay.grading.rules import load_grading_config
from replay.timeline.build import build_trial_timeline
from replay.timeline.trial_inputs import TrialInputs, trial_inputs
from replay.trace_checks.results import TraceChecksResult
from schemas.closed import Closed
from schemas.envelope import StoredEvent
from schemas.grading import CustomChecksConfig, GradingConfig
from schemas.key_manifest import component_of
from schemas.timeline import Message, RecordedToolCall, TrialTimeline
from schemas.trace_checks import TraceChecksConfig

# The grading projection's code version: bump it whenever a rule here or in its components
# changes what a grade says. A retrace binds it (ledger.app.retrace.PROJECTION_VERSION), so
# a replay never extends one made by code whose rules differ.
GRADING_VERSION = "grading/1"

TimelineBuilder = Callable[..., TrialTimeline]
TraceEvaluator = Callable[[TrialTimeline, TraceChecksConfig], ComponentResult]


class Grade(Closed):
    """The GRADE object of the ``vledger grade --json`` contract (extend, don't rename)."""

    score: float | None
    binary_pass: bool | None
    components: dict[str, float | None]
    not_measured: dict[str, str] = Field(default_factory=dict)
    reasons: list[str] = []
    # per populated scored key: evaluated or skipped, with the reason (replay/grading/accounting.py)
    accounting: list[dict[str, str]] = []


@dataclass(frozen=True, slots=True)
class GradeInputs:
    """One trial's grading inputs, as the recording holds them (``recorded_calls`` None: no
    tool-call record, not an empty one; ``initial_db``: ``initial_state.json_db``)."""

    trial: str
    messages: tuple[Message, ...]
    recorded_calls: tuple[RecordedToolCall, ...] | None
    termination_reason: str | None
    grading_error: str | None = None
    initial_db: Any = None
    final_state: Mapping[str, Any] | None = None
    judge: RecordedJudge | None = None
    custom_suite: RecordedSuite | None = None


def evaluate_trace(timeline: TrialTimeline, block: TraceChecksConfig) -> TraceChecksResult:
    """The block evaluated over the timeline; the evaluator is imported by the first trial
    that has one (replay/trace_checks/__init__.py)."""
    from replay.trace_checks.evaluate import evaluate_trace_checks

    return evaluate_trace_checks(timeline, block)


def evaluate_trace_component(timeline: TrialTimeline, block: TraceChecksConfig) -> ComponentResult:
    """The trace_checks component as the fold reads it (helper trace's one evaluator)."""
    return trace_component(evaluate_trace(timeline, block), block)


def trace_component(result: TraceChecksResult, block: TraceChecksConfig) -> ComponentResult:
    """An evaluated trace_checks block as the fold reads it."""
    accounted = trace_accounting(block, result)
    if result.not_measured is not None:  # a pattern past its time budget (regex_budget)
        return ComponentResult(
            score=None, reasons=(), not_measured=result.not_measured, accounted=accounted
        )
    if result.component is None:  # an events-less timeline: the component is unscored
        skipped = result.skipped_reason or "the timeline carries no events"
        return ComponentResult(
            score=None, reasons=(f"Trace checks: skipped ({skipped})",), accounted=accounted
        )
    return ComponentResult(
        score=result.component,
        reasons=result.reason_segments(),
        gate_failed=result.summary.gate_failed,
        accounted=accounted,
    )


def no_grade(reason: str, config: GradingConfig | None = None) -> Grade:
    """No verdict exists; every populated scored key is accounted as skipped for that reason."""
    rows = [] if config is None else accounting_rows(skipped(reason, populated_scored_keys(config)))
    return Grade(
        score=None,
        binary_pass=None,
        components=dict.fromkeys(COMPONENTS),
        reasons=[reason],
        accounting=rows,
    )


def grade_trial(
    inputs: GradeInputs,
    config: GradingConfig,
    *,
    timeline: TrialTimeline | None = None,
    build_timeline: TimelineBuilder | None = None,
    trace_evaluator: TraceEvaluator | None = None,
) -> Grade:
    """Every configured component, then the fold. Raises TimelineInconsistencyError rather
    than grading around it; a fold with no weight for a scored component reports that
    under ``not_measured["combine"]`` with the score undecided."""
    outcome = classify_trial_outcome(inputs.termination_reason, inputs.grading_error)
    if outcome is TrialOutcomeClass.INFRASTRUCTURE_ABORT:
        return no_grade(
            f"No grade: infrastructure abort ({inputs.termination_reason}), never measured",
            config,
        )
    if inputs.termination_reason == "trial_lost":
        return no_grade(
            "No grade: trial_lost — the runner lost the trial, so no verdict exists", config
        )
    # Built once, before any component runs, whatever the config reads: a trial whose two
    # views disagree (TimelineInconsistencyError) gets no grade at all, judge-only or not.
    if timeline is None:
        build = build_timeline or build_trial_timeline
        timeline = build(inputs.messages, inputs.recorded_calls, inputs.termination_reason)
    results = {
        name: _evaluate(name, inputs, config, timeline, trace_evaluator)
        for name in config.configured()
    }
    return account(fold_grade(results, config), results, config)


WRITTEN_NOT_ENABLED = "custom_checks is written but enabled is off, so the suite never runs"


def account(grade: Grade, results: Mapping[str, ComponentResult], config: GradingConfig) -> Grade:
    """§ The runtime ledger: the evaluators' records subtracted from the populated scored
    keys. A remainder would have scored nothing: an authored config is refused its grade
    naming each key and the evaluator the manifest expects; a recorded snapshot reports
    the key's component not measured (evidence is read, never refused)."""
    populated = populated_scored_keys(config)
    records = [r for res in results.values() for r in res.accounted]
    for name, res in results.items():
        if res.not_measured is not None and not res.accounted:
            records += skipped(res.not_measured, (k for k in populated if component_of(k) == name))
    if "custom_checks" not in results:
        records += skipped(
            WRITTEN_NOT_ENABLED, (k for k in populated if k == "custom_checks.enabled")
        )
    rows = accounting_rows(records)
    left = unaccounted(populated, records)
    if not left:
        return grade.model_copy(update={"accounting": rows})
    expects = "; ".join(f"{k} (read by {e})" for k, e in expected_evaluators(left).items())
    message = f"populated scored key(s) no evaluator accounted for: {expects}"
    if config.recorded:
        not_measured = dict(grade.not_measured)
        components = dict(grade.components)
        for k in left:
            not_measured.setdefault(component_of(k), message)
            components[component_of(k)] = None
        return grade.model_copy(
            update={
                "score": None,
                "binary_pass": grade.binary_pass if grade.binary_pass is False else None,
                "components": components,
                "not_measured": not_measured,
                "accounting": rows,
            }
        )
    return Grade(
        score=None,
        binary_pass=None,
        components=grade.components,
        not_measured={"accounting": message},
        reasons=[*grade.reasons, f"No grade: {message}"],
        accounting=rows,
    )


def _evaluate(
    name: str,
    inputs: GradeInputs,
    config: GradingConfig,
    timeline: TrialTimeline,
    trace_evaluator: TraceEvaluator | None,
) -> ComponentResult:
    unknown = config.unknown_in(name)
    if unknown:  # a newer recorder's key degrades its component, named
        return ComponentResult.unmeasurable(unknown_keys_reason(unknown))
    if name == "state_checks" and config.state_checks is not None:
        return evaluate_state_checks(
            config.state_checks, StateEvidence(inputs.final_state, inputs.initial_db)
        )
    if name == "transcript_rules" and config.transcript_rules is not None:
        return evaluate_transcript_rules(timeline, config.transcript_rules)
    if name == "llm_judge" and config.llm_judge is not None:
        return evaluate_judge(config.llm_judge, inputs.judge)
    if name == "custom_checks" and config.custom_checks is not None:
        return evaluate_custom_checks(
            CustomChecksConfig.model_validate(config.custom_checks), inputs.custom_suite
        )
    if name == "trace_checks" and config.trace_checks is not None:
        return (trace_evaluator or evaluate_trace_component)(timeline, config.trace_checks)
    raise AssertionError(f"configured component {name!r} has no evaluator")  # our bug


def unknown_keys_reason(keys: Sequence[str]) -> str:
    return (
        f"the recorded snapshot carries {', '.join(keys)}, "
        f"{'a key' if len(keys) == 1 else 'keys'} this version does not know (a newer recorder)"
    )


def fold_grade(results: Mapping[str, ComponentResult], config: GradingConfig) -> Grade:
    """Combine the component results into the trial's Grade."""
    components = {n: (results[n].score if n in results else None) for n in COMPONENTS}
    not_measured = {n: r.not_measured for n, r in results.items() if r.not_measured is not None}
    if config.unknown_in("combine"):  # the fold's own rule is not fully known
        not_measured["combine"] = unknown_keys_reason(config.unknown_in("combine"))
    reasons = [reason for n in COMPONENTS if n in results for reason in results[n].reasons]
    judge_gate = bool(results.get("llm_judge") and results["llm_judge"].gate_failed)
    trace_gate = bool(results.get("trace_checks") and results["trace_checks"].gate_failed)
    if not_measured:
        blocking = ", ".join(not_measured)
        reasons.append(
            f"Combine: not decidable from the recorded evidence ({blocking} not measured)"
        )
        decided_fail = False if (judge_gate or trace_gate) else None
        return Grade(
            score=None,
            binary_pass=decided_fail,
            components=components,
            not_measured=not_measured,
            reasons=reasons,
        )
    try:
        fold = combine_components(
            {n: components[n] for n in results},
            configured=config.configured(),
            combine=config.combine,
            judge_gate_failed=judge_gate,
            trace_gate_failed=trace_gate,
        )
    except MissingWeightError as exc:
        # only a recorded snapshot (read as evidence) or a replaced block gets here: the
        # components stand, the fold has no rule to run and says why
        return Grade(
            score=None,
            binary_pass=False if (judge_gate or trace_gate) else None,
            components=components,
            not_measured={"combine": f"the fold cannot run: {exc}"},
            reasons=[*reasons, f"Combine: cannot fold ({exc})"],
        )
    return Grade(
        score=fold.score,
        binary_pass=fold.binary_pass,
        components=components,
        not_measured={},
        reasons=reasons + list(fold.reasons),
    )


def recorded_grade(read: RecordedGradeRead) -> Grade:
    """A recorded grade.yaml as a :class:`Grade` (reasons split into their ` | ` segments;
    a generation lacking a component key records it as not evaluated)."""
    return Grade(
        score=read.score,
        binary_pass=read.binary_pass,
        components={n: read.components.get(n) for n in COMPONENTS},
        not_measured={},
        reasons=read.reason_segments,
    )


@dataclass(frozen=True, slots=True)
class Difference:
    component: str  # a component name, or "score" / "binary_pass"
    recorded: Any
    replayed: Any
    reason: str

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a is b or a == b
    return abs(float(a) - float(b)) <= 1e-9


def compare_grades(recorded: Grade, replayed: Grade) -> list[Difference]:
    """Every component, the score and the pass flag where the two grades disagree, each
    with why: a named not-measured reason, or a recomputation that disagrees."""
    out = []
    for name in (*COMPONENTS, "score", "binary_pass"):
        if name in COMPONENTS:
            rec, rep = recorded.components.get(name), replayed.components.get(name)
        else:
            rec, rep = getattr(recorded, name), getattr(replayed, name)
        if _same(rec, rep):
            continue
        if name in replayed.not_measured:
            why = f"not measurable from the recorded evidence: {replayed.not_measured[name]}"
        elif rep is None and replayed.not_measured:
            why = f"not decidable: {', '.join(replayed.not_measured)} not measured"
        else:
            why = "the recomputation from the recorded evidence disagrees with the recorded value"
        out.append(Difference(name, rec, rep, why))
    return out


def recorded_judge(read: RecordedGradeRead | None) -> RecordedJudge | None:
    """grade.yaml's judge_status and criterion_results (null: no judge verdicts recorded)."""
    if read is None:
        return None
    rows = read.criterion_results
    verdicts = (
        None
        if rows is None
        else tuple(
            CriterionVerdict(id=r["id"], met=r.get("met"), score=r.get("score")) for r in rows
        )
    )
    return RecordedJudge(status=read.status, criterion_results=verdicts)


def recorded_suite(read: RecordedGradeRead | None) -> RecordedSuite | None:
    """grade.yaml custom_checks_details: [{check_name, status, message}] or null. A per-check
    ``error`` status is a check that raised: it reached a failing verdict."""
    rows = None if read is None else read.custom_checks_details
    if rows is None:
        return None
    if not rows:
        error = suite_error(read)
        if error is not None:
            return RecordedSuite((), error)
    out = []
    for r in rows:
        score = r.get("score")
        score = (
            float(score) if isinstance(score, int | float) and not isinstance(score, bool) else None
        )
        if r.get("status") == "error":
            out.append(
                CheckVerdict(r["check_name"], "failed", f"raised: {r.get('message', '')}", score)
            )
        else:
            out.append(CheckVerdict(r["check_name"], r["status"], r.get("message") or "", score))
    return RecordedSuite(tuple(out))


# GRADING.md § Custom Checks: "a suite that failed to run names the error it failed with" in
# its one Custom checks: segment — the only record of that error (no per-check rows exist).
SUITE_FAILED = "Custom checks: the suite failed to run"
# The reference reports a checks.py declaring no @check as a suite that failed to run; the
# spec reads it as a suite that "decided nothing" (unscored), so it is told apart here.
NO_CHECK_DECLARED = "No @check decorated functions found"


def suite_error(read: RecordedGradeRead | None) -> str | None:
    """The error of a recorded suite that failed to run, from its reasons segment; None when
    the grade records no such segment or the file simply declared no check."""
    reasons = None if read is None else read.reasons
    if not isinstance(reasons, str):
        return None
    for segment in reasons.split(" | "):
        if segment.startswith(SUITE_FAILED):
            error = segment.removeprefix(SUITE_FAILED).lstrip(" :—-").strip()
            if error.startswith(NO_CHECK_DECLARED):
                return None
            return error or "the suite failed to run"
    return None


def inputs_from_trial(trial: TrialInputs) -> GradeInputs:
    """A trial read back from the ledger (``replay.timeline.trial_inputs``) as grading inputs."""
    initial = trial.states.get("initial")
    initial_db = initial.get("json_db") if isinstance(initial, Mapping) else None
    final = trial.states.get("final")
    return GradeInputs(
        trial=trial.stream,
        messages=trial.timeline_messages,  # every component reads the executed conversation
        recorded_calls=trial.recorded_calls,
        termination_reason=trial.termination_reason,
        grading_error=trial.grading_error,
        initial_db=initial_db if isinstance(initial_db, Mapping) else None,
        final_state=final if isinstance(final, Mapping) else None,
        judge=recorded_judge(read := trial.grade_read),
        custom_suite=recorded_suite(read),
    )


def grade_events(events: Sequence[StoredEvent], config: GradingConfig | None = None) -> Grade:
    """One trial stream's events → its re-derived Grade, under ``config`` or, by default,
    the grading snapshot the trial was recorded with (read as a recorded config)."""
    trial = trial_inputs(events)
    if config is None:
        if trial.registered.grading is None:
            raise ValueError(
                f"{trial.stream}: trial.registered carries no grading_config; pass the "
                "grading config to grade it under"
            )
        config = load_grading_config(
            trial.registered.grading, file=f"{trial.stream} grading_config", authored=False
        )
    return grade_trial(inputs_from_trial(trial), config)
