"""Retrace: the pure half of auditing a recorded corpus (TRACE_REPLAY.md, FORMATS.md § retrace).

Whether one trial's re-derived grade agrees with its recorded one, and what each constraint
observed; the corpus fold is ``replay.grading.retrace_report``'s, the I/O ``ledger/app/retrace.py``'s.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from replay.grading.components.result import COMPONENTS, ComponentResult
from replay.grading.grade import (
    Difference,
    Grade,
    compare_grades,
    evaluate_trace,
    grade_trial,
    inputs_from_trial,
    recorded_grade,
    trace_component,
)
from replay.grading.rules import GradingConfigError, load_grading_config
from replay.timeline.build import build_trial_timeline
from replay.timeline.trial_inputs import trial_inputs
from replay.timeline.unrecorded import (
    not_measured_reason,
    unmeasured_constraints,
    unrecorded_fields,
)
from replay.trace_checks.results import TraceChecksResult
from replay.trace_checks.rules import TraceChecksConfigError
from schemas.canonical import canonical_json, digest, parse_json
from schemas.envelope import StoredEvent
from schemas.grading import GradingConfig
from schemas.retrace_status import RetraceStatus
from schemas.timeline import TimelineInconsistencyError, TraceEventKind, TrialTimeline
from schemas.trace_checks import TraceChecksConfig


@dataclass(frozen=True, slots=True)
class ConstraintObservation:
    """One constraint's re-checked verdict on one trial (plus the recorded one, if any)."""

    task_id: str
    constraint_id: str
    passed: bool
    undecided: bool
    recorded_passed: bool | None = None  # None: not recorded, or recorded undecided


@dataclass(frozen=True, slots=True)
class Override:
    """What the caller replaces: a whole grading config, or just the trace_checks block;
    wholesale, never merged (TRACE_REPLAY.md)."""

    grading: GradingConfig | None = None
    trace_checks: TraceChecksConfig | None = None

    def as_json(self) -> dict[str, Any]:
        blocks = (("grading", self.grading), ("trace_checks", self.trace_checks))
        return {k: None if b is None else b.model_dump(mode="json") for k, b in blocks}


@dataclass(frozen=True, slots=True)
class TrialRetrace:
    """One trial's outcome: ``agreed`` / ``disagreed`` / ``ungraded`` (re-checked, nothing
    recorded to compare with) / ``not_rechecked``."""

    trial: str
    task_id: str
    corpus: str
    status: RetraceStatus
    reason: str | None = None
    differences: tuple[Difference, ...] = ()
    replayed: Mapping[str, Any] | None = None
    recorded_binary_pass: bool | None = None
    record_view: bool = False
    regex_refused: bool = False
    readable: bool = True  # False: the bundle never became a trial (its ingest failed)
    predates_call_ids: bool = False
    winning_path: str = ""
    gate_failed: bool | None = None
    declared: tuple[tuple[str, str], ...] = ()
    block_digest: str | None = None
    observations: tuple[ConstraintObservation, ...] = ()
    advisories: tuple[str, ...] = ()  # rules the recorded snapshot breaks (never refusals)
    unknown_keys: tuple[str, ...] = ()  # recorded keys this version does not know
    # (constraint id, reason) left unobserved: it reads a field the recorder never
    # wrote (replay.timeline.unrecorded), so its verdict here would measure an importer's default
    unmeasured: tuple[tuple[str, str], ...] = ()
    # (agent, tool calls it made) in first-call order, where the recorder names agents
    agents: tuple[tuple[str, int], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "trial": self.trial,
            "task_id": self.task_id,
            "corpus": self.corpus,
            "status": self.status,
            "differences": [d.as_json() for d in self.differences],
            "reason": self.reason,
            "record_view": self.record_view,
            "recorded_binary_pass": self.recorded_binary_pass,
            "winning_path": self.winning_path,
            "gate_failed": self.gate_failed,
            "replayed": self.replayed,
            "constraints": [
                {"id": o.constraint_id, "passed": o.passed, "undecided": o.undecided}
                for o in self.observations
            ],
            "advisories": list(self.advisories),
            "not_measured_constraints": [{"id": c, "reason": r} for c, r in self.unmeasured],
            "agents": [{"agent": a, "tool_calls": n} for a, n in self.agents],
        }


# The per-trial fields a corpus report folds (everything but the differences and the
# replayed grade): an extended replay reads only these of a carried trial, and the rest
# (RECORD_DETAIL) when the trial's row is printed.
RECORD_DETAIL = ("differences", "replayed")


def outcome_record(o: TrialRetrace) -> dict[str, Any]:
    """Every field of ``o`` as JSON values, in field order; :func:`outcome_from_record`
    rebuilds ``o`` exactly (tuples from lists), so a stored outcome prints as computed."""
    return {
        "trial": o.trial, "task_id": o.task_id, "corpus": o.corpus, "status": o.status,
        "reason": o.reason, "differences": [d.as_json() for d in o.differences],
        "replayed": o.replayed, "recorded_binary_pass": o.recorded_binary_pass,
        "record_view": o.record_view, "regex_refused": o.regex_refused, "readable": o.readable,
        "predates_call_ids": o.predates_call_ids, "winning_path": o.winning_path,
        "gate_failed": o.gate_failed, "declared": [list(d) for d in o.declared],
        "block_digest": o.block_digest,
        "observations": [
            [b.task_id, b.constraint_id, b.passed, b.undecided, b.recorded_passed]
            for b in o.observations
        ],
        "advisories": list(o.advisories), "unknown_keys": list(o.unknown_keys),
        "unmeasured": [list(u) for u in o.unmeasured],
    }  # fmt: skip


def outcome_from_record(rec: Mapping[str, Any]) -> TrialRetrace:
    """The :class:`TrialRetrace` a record stands for (without ``RECORD_DETAIL``: no
    differences and no replayed grade, which the report's fold never reads)."""
    return TrialRetrace(
        **{k: rec[k] for k in _RECORD_SCALARS},
        differences=tuple(Difference(**d) for d in rec.get("differences") or ()),
        replayed=rec.get("replayed"),
        declared=tuple((c, r) for c, r in rec["declared"]),
        observations=tuple(ConstraintObservation(*b) for b in rec["observations"]),
        advisories=tuple(rec["advisories"]),
        unknown_keys=tuple(rec["unknown_keys"]),
        unmeasured=tuple((c, r) for c, r in rec["unmeasured"]),
    )


_RECORD_SCALARS = (
    "trial", "task_id", "corpus", "status", "reason", "recorded_binary_pass", "record_view",
    "regex_refused", "readable", "predates_call_ids", "winning_path", "gate_failed",
    "block_digest",
)  # fmt: skip


def declared_constraints(block: TraceChecksConfig | None) -> tuple[tuple[str, str], ...]:
    """``(id, route)`` for every constraint a block declares: shared first, then each route's."""
    if block is None:
        return ()
    shared = tuple((c.id, "") for c in block.constraints or ())
    routed = tuple((c.id, p.id) for p in block.alternatives or () for c in p.constraints)
    return shared + routed


def replaced_blocks(recorded: GradingConfig | None, effective: GradingConfig) -> frozenset[str]:
    """The components (and ``combine``) whose rule differs from the one the trial was graded
    by: those have nothing recorded to be compared against."""
    if recorded is None:
        return frozenset((*COMPONENTS, "combine"))
    return frozenset(
        name
        for name in (*COMPONENTS, "combine")
        if getattr(recorded, name) != getattr(effective, name)
    )


def comparable_differences(
    diffs: Iterable[Difference], replaced: frozenset[str], not_measured: Mapping[str, str]
) -> tuple[Difference, ...]:
    """Drop what is not a disagreement: replaced rules, and components the recording cannot
    decide (those are reported as not measured, never as a contradiction)."""
    fold_comparable = not replaced and not not_measured
    return tuple(
        d
        for d in diffs
        if d.component not in replaced
        and d.component not in not_measured
        and (fold_comparable or d.component not in ("score", "binary_pass"))
    )


def retrace_trial(events: Sequence[StoredEvent], override: Override) -> TrialRetrace:
    """Re-derive one trial's grade from its events and compare it to the recorded grade."""
    trial = trial_inputs(events)
    read = trial.grade_read
    reg = trial.registered
    base = dict(
        trial=reg.stream,
        task_id=reg.task_id,
        corpus=reg.corpus,
        record_view=reg.record_view,
        recorded_binary_pass=None if read is None else read.binary_pass,
    )
    recorded_cfg, problem = _recorded_config(reg.grading)
    effective = _effective_config(recorded_cfg, override)
    if effective is None:
        return TrialRetrace(
            status=RetraceStatus.NOT_RECHECKED,
            reason=problem or f"{reg.stream}: no grading snapshot recorded; pass --grading FILE",
            regex_refused=bool(problem and ("regex" in problem or "re2" in problem)),
            **base,
        )
    try:
        timeline = build_trial_timeline(
            trial.timeline_messages, trial.recorded_calls, trial.termination_reason
        )
    except TimelineInconsistencyError as exc:
        return TrialRetrace(
            status=RetraceStatus.NOT_RECHECKED,
            reason=f"inconsistent views at {exc.where} (call id {exc.call_id!r}): {exc}",
            **base,
        )
    inputs = inputs_from_trial(trial)
    block = effective.trace_checks
    trace = evaluate_trace(timeline, block) if block is not None else None
    grade, fold_note = _grade(inputs, effective, recorded_cfg, timeline, trace)
    replayed = grade.model_dump(mode="json")
    if fold_note:
        replayed["reasons"] = [*replayed["reasons"], fold_note]
    observations: tuple[ConstraintObservation, ...] = ()
    if trace is not None:
        replayed.update(trace.to_grade_dict())
        recorded_verdicts = {} if read is None else read.trace_check_results
        observations = tuple(
            ConstraintObservation(
                reg.task_id, r.id, r.passed, r.undecided, recorded_verdicts.get(r.id)
            )
            for r in trace.results
        )
    unmeasured = _unmeasured(block, reg.payload)
    observations = tuple(o for o in observations if o.constraint_id not in dict(unmeasured))
    if read is None:
        # "a trial is worth re-checking whether or not it was graded": the replayed grade
        # and verdicts are the result; there is nothing recorded to agree with
        diffs: tuple[Difference, ...] = ()
        status = RetraceStatus.UNGRADED
        reason = "no recorded grade: replayed only, nothing to compare"
    else:
        replaced = replaced_blocks(recorded_cfg, effective)
        diffs = comparable_differences(
            compare_grades(recorded_grade(read), grade),
            replaced,
            grade.not_measured,
        )
        status = RetraceStatus.DISAGREED if diffs else RetraceStatus.AGREED
        reason = None
    return TrialRetrace(
        status=status,
        reason=reason,
        differences=diffs,
        replayed=replayed,
        winning_path=trace.summary.winning_path if trace else "",
        gate_failed=trace.summary.gate_failed if trace else None,
        declared=declared_constraints(block),
        block_digest=None if block is None else digest(block.model_dump(mode="json")),
        observations=observations,
        advisories=recorded_cfg.advisories if recorded_cfg is not None else (),
        # the snapshot's unknown grading keys, then the bundle files' (trajectory, tool log)
        unknown_keys=(
            *(recorded_cfg.unknown_keys if recorded_cfg is not None else ()),
            *reg.unknown_keys,
        ),
        unmeasured=unmeasured,
        agents=calls_by_agent(timeline),
        **base,
    )


def calls_by_agent(timeline: TrialTimeline) -> tuple[tuple[str, int], ...]:
    """How many tool calls each named agent made, in the order each first called."""
    counts: dict[str, int] = {}
    for e in timeline.events:
        if e.kind is TraceEventKind.TOOL_CALL and e.agent is not None:
            counts[e.agent] = counts.get(e.agent, 0) + 1
    return tuple(counts.items())


def _unmeasured(
    block: TraceChecksConfig | None, registered: Mapping[str, Any]
) -> tuple[tuple[str, str], ...]:
    """The constraints this trial cannot measure, each with the fields that make it so."""
    hits = unmeasured_constraints(block, unrecorded_fields(registered))
    recorder = (registered.get("trajectory_meta") or {}).get("recorder")
    return tuple((cid, not_measured_reason(f, recorder)) for cid, f in hits.items())


def _recorded_config(
    snapshot: Mapping[str, Any] | None,
) -> tuple[GradingConfig | None, str | None]:
    """The trial's recorded snapshot, read as evidence. A task's trials record one snapshot,
    so reads are shared by its canonical bytes (the trial row names the trial; the messages
    name the snapshot's key)."""
    if snapshot is None:
        return None, None
    return _read_snapshot(canonical_json(snapshot))


@lru_cache(maxsize=256)
def _read_snapshot(body: bytes) -> tuple[GradingConfig | None, str | None]:
    try:
        return load_grading_config(parse_json(body), file="grading_config", authored=False), None
    except (GradingConfigError, TraceChecksConfigError, ValueError) as exc:
        return None, f"the recorded grading snapshot does not load: {exc}"


def _effective_config(recorded: GradingConfig | None, override: Override) -> GradingConfig | None:
    if override.grading is not None:
        return override.grading
    if override.trace_checks is not None:
        base = recorded if recorded is not None else GradingConfig()
        return base.model_copy(update={"trace_checks": override.trace_checks})
    return recorded


def _grade(
    inputs: Any,
    effective: GradingConfig,
    recorded: GradingConfig | None,
    timeline: Any,
    trace: TraceChecksResult | None,
) -> tuple[Grade, str | None]:
    """Grade under the effective config; where a replaced trace block is not weighted by
    the recorded combine, score it but fold under the recorded rule, and say so."""

    def evaluator(_tl: Any, _block: Any) -> ComponentResult:
        return trace_component(trace, _block) if trace is not None else ComponentResult(score=None)

    grade = grade_trial(inputs, effective, timeline=timeline, trace_evaluator=evaluator)
    unfolded = grade.not_measured.get("combine")
    if unfolded is None or recorded is None or effective.trace_checks is None:
        return grade, None  # folded, or the reason it could not be is in the grade
    fallback = grade_trial(inputs, recorded, timeline=timeline)
    if "combine" in fallback.not_measured:
        return grade, None
    components = dict(fallback.components)
    components["trace_checks"] = trace.component if trace is not None else None
    note = (
        "Retrace: trace_checks replaced and scored, but folded under the recorded "
        f"combine, which does not weight it ({unfolded})"
    )
    return fallback.model_copy(update={"components": components}), note


# A bundle written before call-id threading declares tool calls (or records them) without
# the id that joins a call to its result; ingest refuses it naming that key.
_MISSING_CALL_ID = re.compile(r"(tool_calls\[\d+\]\.id|call_id)'?: expected this key to be present")


def unreadable_bundle(source: str, reason: str) -> TrialRetrace:
    """A bundle that could not be read into a trial: reported, never dropped; counted apart
    when it predates call ids (TRACE_REPLAY.md § What gets re-checked)."""
    return TrialRetrace(
        trial=source,
        task_id="",
        corpus="",
        status=RetraceStatus.NOT_RECHECKED,
        reason=f"unreadable bundle: {reason}",
        readable=False,
        predates_call_ids=bool(_MISSING_CALL_ID.search(reason)),
    )
