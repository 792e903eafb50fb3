"""Trace checks: the constraint language of GRADING.md § Trace Checks, evaluated over a timeline."""

from replay.trace_checks.evaluate import evaluate_constraint, evaluate_trace_checks
from replay.trace_checks.results import (
    ConstraintResult,
    PathLine,
    TraceChecksResult,
    TraceChecksSummary,
)

# Recorded on grade.replayed beside the scores, so a replay says which evaluator produced them.
TRACE_CHECKS_VERSION = "trace_checks/1"

__all__ = [
    "TRACE_CHECKS_VERSION",
    "ConstraintResult",
    "PathLine",
    "TraceChecksResult",
    "TraceChecksSummary",
    "evaluate_constraint",
    "evaluate_trace_checks",
]
