"""evaluate_trace_checks: a pure function from (timeline, validated config) to the verdicts.

GRADING.md § Trace Checks: every constraint, shared and every route's, is evaluated once;
the decision set reported is the shared constraints plus the winning route's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from replay.grading.patterns import RegexBudgetExceeded
from replay.trace_checks import kinds
from replay.trace_checks.bind import collect_candidates, fold_bound
from replay.trace_checks.kleene import Truth, Verdict, kleene_and, kleene_not, kleene_or
from replay.trace_checks.matching import (
    PreparedMatcher,
    Resolution,
    TimelineIndex,
    prepare,
    resolve,
)
from replay.trace_checks.results import ConstraintResult, TraceChecksResult, TraceChecksSummary
from replay.trace_checks.rules import load_trace_checks
from replay.trace_checks.scoring import score_flat, score_paths
from schemas.timeline import TrialTimeline
from schemas.trace_checks import Constraint, OnMissing, Require, TraceChecksConfig, Within
from schemas.trace_matchers import Matcher, RegexEngine

NO_EVENTS = "the timeline carries no events, so no constraint has evidence to read"


@dataclass
class _Context:
    idx: TimelineIndex
    within: Within | None
    engine: RegexEngine
    on_missing: OnMissing
    prepared: dict[int, PreparedMatcher] = field(default_factory=dict)

    def resolve(self, matcher: Matcher, env: Mapping[str, Any]) -> Resolution:
        key = id(matcher)
        p = self.prepared.get(key)
        if p is None:
            p = self.prepared[key] = prepare(self.idx, matcher, self.within, self.engine)
        return resolve(self.idx, p, env)


def evaluate_node(node: Require, ctx: _Context, env: Mapping[str, Any]) -> Verdict:
    """One reading of a require tree under one binding environment."""
    p = node.payload
    r = ctx.resolve
    match node.kind:
        case "present":
            return kinds.present(r(p.match, env), ctx.on_missing)
        case "absent":
            return kinds.absent(r(p.match, env))
        case "count":
            return kinds.count(r(p.match, env), p, ctx.on_missing)
        case "before":
            return kinds.before(
                r(p.left.match, env),
                p.left.quantifier,
                r(p.right.match, env),
                p.right.quantifier,
                ctx.on_missing,
            )
        case "immediately_before":
            return kinds.immediately_before(
                ctx.idx,
                r(p.left.match, env),
                p.left.quantifier,
                r(p.right.match, env),
                p.right.quantifier,
                p.among,
                ctx.on_missing,
            )
        case "absent_before":
            return kinds.absent_before(
                r(p.forbidden, env), r(p.anchor.match, env), p.anchor.quantifier, ctx.on_missing
            )
        case "absent_between":
            return kinds.absent_between(
                r(p.forbidden, env),
                r(p.start.match, env),
                p.start.quantifier,
                r(p.end.match, env),
                p.end.quantifier,
                ctx.on_missing,
            )
        case "all_of":
            return kleene_and(evaluate_node(ch, ctx, env) for ch in p)
        case "any_of":
            return kleene_or(evaluate_node(ch, ctx, env) for ch in p)
        case "negate":
            return kleene_not(evaluate_node(p, ctx, env), p.kind)
    raise AssertionError(f"bad constraint kind {node.kind!r}")


def _diagnosed(v: Verdict) -> Verdict:
    """A reference no read event could compare fails the reading, carrying the sentence."""
    if not v.diagnostics:
        return v
    return Verdict(Truth.FALSE, v.diagnostics[0], v.positions, v.diagnostics)


def evaluate_constraint(
    idx: TimelineIndex, c: Constraint, engine: RegexEngine, route: str = ""
) -> ConstraintResult:
    ctx = _Context(idx, c.within, engine, c.effective_on_missing)
    failing: tuple[Mapping[str, Any], ...] = ()
    unbound = False
    if c.bind is None:
        v = _diagnosed(evaluate_node(c.require, ctx, {}))
    else:
        binder = resolve(idx, prepare(idx, c.bind.match, c.within, engine), {})
        cands = collect_candidates(idx, binder, c.bind, engine)
        unbound = not cands.definite and not cands.undecidable
        v, failing = fold_bound(
            cands,
            lambda env: _diagnosed(evaluate_node(c.require, ctx, env)),
            c.bind.effective_on_unbound,
        )
    return ConstraintResult(
        id=c.id,
        kind=c.kind,
        passed=v.truth is Truth.TRUE,
        undecided=v.truth is Truth.UNKNOWN,
        withheld=v.truth is Truth.WITHHELD,
        weight=c.effective_weight,
        severity=c.severity,
        message=v.message,
        matched_positions=tuple(sorted(v.positions)),
        route=route,
        failing_bindings=failing if v.truth is not Truth.TRUE else (),
        unbound=unbound,
    )


def _measured(
    idx: TimelineIndex, constraints: Any, engine: RegexEngine, route: str, lost: list[str]
) -> tuple[ConstraintResult, ...]:
    """Each constraint's result; one whose backtracking pattern ran past its time budget
    (replay/grading/patterns.py) is left out and named in ``lost`` — not measured, never a
    verdict, and never a hang."""
    out = []
    for c in constraints:
        try:
            out.append(evaluate_constraint(idx, c, engine, route=route))
        except RegexBudgetExceeded as exc:
            where = f"trace_checks.{route + '.' if route else ''}{c.id}"
            lost.append(f"{where}: {exc}")
    return tuple(out)


def evaluate_trace_checks(
    timeline: TrialTimeline, config: TraceChecksConfig | Mapping[str, Any]
) -> TraceChecksResult:
    """Score a trace_checks block over one trial's timeline. Pure; a raw mapping meets the
    same load-time refusals (TraceChecksConfigError) as the model."""
    if not isinstance(config, TraceChecksConfig):
        config = load_trace_checks(config)
    if not timeline.events:
        return TraceChecksResult(None, (), TraceChecksSummary(), {}, skipped_reason=NO_EVENTS)
    idx = TimelineIndex(timeline)
    engine = config.regex_engine
    lost: list[str] = []
    shared = _measured(idx, config.shared, engine, "", lost)
    routes = [(p.id, _measured(idx, p.constraints, engine, p.id, lost)) for p in config.paths]
    if lost:  # a pattern ran past its budget: those constraints, and so the score, unknown
        measured = shared + tuple(r for _, rs in routes for r in rs)
        return TraceChecksResult(
            None, measured, TraceChecksSummary(), {"": shared, **dict(routes)},
            skipped_reason="; ".join(lost),  # what the key accounting files the skip under
            not_measured_reason="; ".join(lost),
        )  # fmt: skip
    if not config.paths:
        component, summary = score_flat(shared)
        return TraceChecksResult(component, shared, summary, {"": shared})
    component, summary, w = score_paths(shared, routes)
    return TraceChecksResult(
        component, shared + routes[w][1], summary, {"": shared, **dict(routes)}
    )
