"""The values reconciliation reads: a pack's view, and one observation per recorded trial.

Plain frozen data built by the caller (``ledger/app/reconcile.py``, tests by hand):
reconciliation never opens a file.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["scored", "gate"]
SHARED = ""  # the route id of a shared constraint


def words(text: str) -> tuple[str, ...]:
    """A description compared as words, so YAML folding and wrapping do not matter."""
    return tuple(text.split())


@dataclass(frozen=True, slots=True)
class CriterionShape:
    """One rubric criterion as a pack declares it or a bundle recorded it."""

    id: str
    kind: str
    required: bool
    weight: float
    description: str


@dataclass(frozen=True, slots=True)
class ConstraintDecl:
    """One trace_checks constraint: its route (``""`` = shared), severity and canonical JSON
    (``spec``: packs pool only with byte-identical constraints)."""

    id: str
    route: str
    severity: Severity
    spec: bytes = b""


@dataclass(frozen=True, slots=True)
class PackView:
    """What validation and reconciliation need from a pack's task.yaml + grading.yaml."""

    task_id: str
    source: str
    criteria: Mapping[str, CriterionShape]
    constraints: Mapping[str, ConstraintDecl]
    combine_weights: Mapping[str, float] = field(default_factory=dict)
    has_trace_checks: bool = True


@dataclass(frozen=True, slots=True)
class CriterionResult:
    """One recorded judge verdict: ``criterion_results[i]`` of grade.yaml."""

    id: str
    met: bool
    score: float | None
    justification: str = ""


@dataclass(frozen=True, slots=True)
class RecordedGrade:
    """The grade.yaml fields reconciliation and the counterfactual read."""

    judge_status: str
    criterion_results: tuple[CriterionResult, ...] | None
    components: Mapping[str, float | None]
    score: float
    binary_pass: bool
    trace_gate_failed: bool = False


@dataclass(frozen=True, slots=True)
class RecordedGrading:
    """The grading config the trial was graded under (task.yaml's frozen ``grading_config``)."""

    rubric: tuple[CriterionShape, ...] | None
    weights: Mapping[str, float]
    method: str
    pass_threshold: float  # no default here: schemas/grading.py's CombineConfig is the one


@dataclass(frozen=True, slots=True)
class CandidateEvaluation:
    """The trace-check projection of the pack's block over one trial: ``verdicts`` over the
    scoring decision set (shared + winning route; ``None`` undecided), and the recomputed
    component the counterfactual folds in."""

    verdicts: Mapping[str, bool | None]
    component: float | None
    gate_failed: bool
    winning_path: str = ""


@dataclass(frozen=True, slots=True)
class Unavailable:
    """The projection could not run on this trial (e.g. the timeline is inconsistent)."""

    reason: str


Candidate = CandidateEvaluation | Unavailable


@dataclass(frozen=True, slots=True)
class TrialObservation:
    """One recorded trial: ``keys`` are every spelling a waiver may use for it; ``candidate``
    is the projection or a zero-argument callable computing it on demand."""

    trial: str
    task_id: str
    grade: RecordedGrade
    grading: RecordedGrading
    candidate: Candidate | Callable[[], Candidate]
    keys: Collection[str] = ()  # a few: a tuple holds them in a fraction of a set

    def evaluate(self) -> Candidate:
        value = self.candidate
        return value() if callable(value) else value

    def answers_to(self, spelling: str) -> bool:
        spelling = normalise_trial_path(spelling)
        return spelling == normalise_trial_path(self.trial) or spelling in self.keys


def normalise_trial_path(path: str) -> str:
    """POSIX separators, no leading ``./``, no trailing ``/`` — how waivers are compared."""
    path = path.replace("\\", "/").strip()
    while path.startswith("./"):
        path = path[2:]
    return path.rstrip("/")


@dataclass(frozen=True, slots=True)
class CorpusResolution:
    """The caller's resolution of one declared ``corpus`` value against a base (the
    filesystem work is the caller's); ``bundles`` are relative to the corpus directory."""

    value: str
    base: str
    resolved: str
    error: str | None = None
    bundles: frozenset[str] = frozenset()
