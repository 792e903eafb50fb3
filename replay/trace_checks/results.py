"""What evaluate_trace_checks returns, in the shapes grade.yaml records.

``to_grade_dict()`` emits exactly FORMATS.md § 4's keys, so a recorded grade and a replayed
one compare field by field; failing bindings and the route are kept outside that shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ConstraintResult:
    id: str
    kind: str
    passed: bool
    undecided: bool
    weight: float
    severity: str
    message: str
    matched_positions: tuple[int, ...]
    route: str = ""  # "" for a shared constraint, else the alternative's id
    failing_bindings: tuple[Mapping[str, Any], ...] = ()
    # recorded-only on_missing: withhold reached (passed and undecided are then both False)
    withheld: bool = False
    # the binder selected no value: the require tree was never entered (key accounting)
    unbound: bool = False

    def to_grade_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "passed": self.passed,
            "weight": self.weight,
            "severity": self.severity,
            "message": self.message,
            "matched_positions": list(self.matched_positions),
            "undecided": self.undecided,
            "withheld": self.withheld,
        }


@dataclass(frozen=True, slots=True)
class PathLine:
    id: str
    score: float
    gate_failed: bool

    def to_grade_dict(self) -> dict[str, Any]:
        return {"id": self.id, "score": self.score, "gate_failed": self.gate_failed}


@dataclass(frozen=True, slots=True)
class TraceChecksSummary:
    winning_path: str = ""
    gate_failed: bool = False
    failed_gate_ids: tuple[str, ...] = ()
    paths: tuple[PathLine, ...] = ()

    def to_grade_dict(self) -> dict[str, Any]:
        return {
            "winning_path": self.winning_path,
            "gate_failed": self.gate_failed,
            "failed_gate_ids": list(self.failed_gate_ids),
            "paths": [p.to_grade_dict() for p in self.paths],
        }


@dataclass(frozen=True, slots=True)
class TraceChecksResult:
    """The component score (None when the timeline carries no events), the decision set's
    per-constraint verdicts in declaration order, the summary, and every route's verdicts."""

    component: float | None
    results: tuple[ConstraintResult, ...]
    summary: TraceChecksSummary
    route_results: Mapping[str, tuple[ConstraintResult, ...]]
    skipped_reason: str = ""
    # set when a constraint could not be evaluated (a backtracking pattern past its time
    # budget): ``results`` holds only the measured ones and the component is unscored
    not_measured_reason: str = ""

    def to_grade_dict(self) -> dict[str, Any]:
        return {
            "trace_checks": self.component,
            "trace_check_results": [r.to_grade_dict() for r in self.results],
            "trace_checks_summary": self.summary.to_grade_dict(),
        }

    # The component-result surface the grade fold reads (score / reasons / gate_failed /
    # not_measured): a trace block is measurable from the timeline it is given unless a
    # pattern ran past its time budget, and a timeline with no events leaves it
    # unevaluated (score None), not unmeasurable.
    @property
    def score(self) -> float | None:
        return self.component

    @property
    def gate_failed(self) -> bool:
        return self.summary.gate_failed

    @property
    def reasons(self) -> tuple[str, ...]:
        return self.reason_segments()

    @property
    def not_measured(self) -> str | None:
        return self.not_measured_reason or None

    @property
    def evaluated(self) -> bool:
        return self.component is not None

    def reason_segments(self) -> tuple[str, ...]:
        """The ``reasons`` segments grade.yaml carries for this component."""
        if self.component is None:
            return ()
        out = []
        if self.summary.gate_failed:
            out.append("FAILED trace gates: " + ", ".join(self.summary.failed_gate_ids))
        out.append(f"Trace checks: score={self.component:.2f}")
        return tuple(out)
