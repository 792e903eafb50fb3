"""Trace checks: the constraint language of GRADING.md § Trace Checks, evaluated over a timeline."""

from replay.trace_checks.evaluate import evaluate_constraint, evaluate_trace_checks
from replay.trace_checks.results import (
    ConstraintResult,
    PathLine,
    TraceChecksResult,
    TraceChecksSummary,
)

__all__ = [
    "ConstraintResult",
    "PathLine",
    "TraceChecksResult",
    "TraceChecksSummary",
    "evaluate_constraint",
    "evaluate_trace_checks",
]
