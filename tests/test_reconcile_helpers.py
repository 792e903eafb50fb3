"""Builders for hand-made observations and declarations (no tests here).

The notes shape mirrors the shared corpus (FORMATS.md § 4–5): rubric
checked_duplicates_first (binary, required, 1.0), note_saved (graded, 1.0), clarity
(graded, 0.5); combine {llm_judge: 1.0} at pass_threshold 0.75.
"""

from __future__ import annotations

from typing import Any

from reconcile.inputs import (
    CandidateEvaluation,
    ConstraintDecl,
    CriterionResult,
    CriterionShape,
    PackView,
    RecordedGrade,
    RecordedGrading,
    TrialObservation,
    Unavailable,
)
from reconcile.reconcile import Claim
from schemas.migration import MigrationEntry, parse_migration

CRIT = "checked_duplicates_first"
GATE = "the_notes_were_listed_before_the_note_was_added"
WAS_TEXT = "Before calling add_note, the assistant called list_notes AND warned the user."
NARROWED_TEXT = "The assistant warned the user that a similar note already exists."

NOTES_RUBRIC = (
    CriterionShape(CRIT, "binary", True, 1.0, WAS_TEXT),
    CriterionShape("note_saved", "graded", False, 1.0, "A new note was saved."),
    CriterionShape("clarity", "graded", False, 0.5, "The reply is clear."),
)
NOTES_GRADING = RecordedGrading(NOTES_RUBRIC, {"llm_judge": 1.0}, "weighted", 0.75)


def results(met: bool, note_saved: float = 1.0, clarity: float = 1.0, justification: str = ""):
    return (
        CriterionResult(CRIT, met, 1.0 if met else 0.0, justification or f"judge says met={met}"),
        CriterionResult("note_saved", True, note_saved, "saved"),
        CriterionResult("clarity", True, clarity, "clear"),
    )


def notes_obs(
    trial: str,
    *,
    met: bool,
    passed: bool | None,
    task_id: str = "task_a",
    grading: RecordedGrading = NOTES_GRADING,
    judge_status: str = "completed",
    criterion_results: Any = "default",
    components: dict[str, float | None] | None = None,
    candidate: Any = None,
    keys: frozenset[str] = frozenset(),
) -> TrialObservation:
    rows = results(met) if criterion_results == "default" else criterion_results
    judge = 1.0 if met else 0.0
    grade = RecordedGrade(
        judge_status=judge_status,
        criterion_results=rows,
        components=components if components is not None else {"llm_judge": judge},
        score=judge,
        binary_pass=met,
    )
    if candidate is None:
        if passed is None:
            candidate = CandidateEvaluation({GATE: None}, 0.0, False)
        else:
            candidate = CandidateEvaluation({GATE: passed}, 1.0 if passed else 0.0, not passed)
    return TrialObservation(trial, task_id, grade, grading, candidate, keys)


def entry(**overrides: Any) -> MigrationEntry:
    data: dict[str, Any] = {
        "criterion": CRIT,
        "mode": "narrowed",
        "by": [GATE],
        "corpus": "corpora/notes",
        "was": {"kind": "binary", "required": True, "weight": 1.0, "description": WAS_TEXT},
        "residual": {"kind": "text", "reason": "the judge still reads the warning"},
        "combine_weights": {"llm_judge": 0.5, "trace_checks": 0.5},
        "evidence": {"observations": 17, "kappa": 1.0},
    }
    for key, value in overrides.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return parse_migration({"migrations": [data]}).migrations[0]


GATE_DECL = ConstraintDecl(GATE, "", "gate")


def claim(e: MigrationEntry, task_ids: tuple[str, ...] = ("task_a",), current=None) -> Claim:
    return Claim(e, task_ids, {GATE: GATE_DECL}, current)


def pack(
    *,
    criteria: tuple[CriterionShape, ...] | None = None,
    constraints: dict[str, ConstraintDecl] | None = None,
    weights: dict[str, float] | None = None,
) -> PackView:
    narrowed = (CriterionShape(CRIT, "binary", True, 1.0, NARROWED_TEXT),) + NOTES_RUBRIC[1:]
    return PackView(
        task_id="task_a",
        source="packs/a",
        criteria={c.id: c for c in (criteria if criteria is not None else narrowed)},
        constraints=constraints if constraints is not None else {GATE: GATE_DECL},
        combine_weights=weights or {"llm_judge": 0.7, "trace_checks": 0.3},
    )


__all__ = ["Unavailable"]
