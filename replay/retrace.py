"""Retrace: the pure half of auditing a recorded corpus (TRACE_REPLAY.md, FORMATS.md § retrace).

Given each trial's re-derived grade beside its recorded one, this module decides three
things and nothing else: whether the trial agrees with what was recorded, how each
declared constraint separated the corpus, and what the corpus could prove. Reading the
ledger, choosing configs and appending results live in ``ledger/retrace_cmd.py``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# Scores are compared with a tolerance: the recorded grade went through YAML and a
# different float fold order, so bit-equality would report noise as disagreement.
SCORE_TOLERANCE = 1e-9

COMPONENTS = ("state_checks", "transcript_rules", "trace_checks", "llm_judge", "custom_checks")


@dataclass(frozen=True, slots=True)
class Difference:
    """One component (or ``score`` / ``binary_pass``) on which replay and record disagree."""

    component: str
    recorded: Any
    replayed: Any
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "component": self.component,
            "recorded": self.recorded,
            "replayed": self.replayed,
            "reason": self.reason,
        }


def _same_number(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(float(a), float(b), rel_tol=0.0, abs_tol=SCORE_TOLERANCE)


def compare_grades(
    recorded: Mapping[str, Any],
    replayed: Mapping[str, Any],
    *,
    replaced: frozenset[str] = frozenset(),
) -> list[Difference]:
    """Component-by-component differences between a recorded and a replayed grade.

    A component the replay could not measure offline is not a difference: it is reported
    in ``not_measured`` and never guessed. A component whose config was replaced
    (``--constraints`` / ``--grading``) has nothing recorded to compare against, and once
    any was replaced the fold (score, binary_pass) is not comparable either.
    """
    not_measured = replayed.get("not_measured") or {}
    rec_components = recorded.get("components") or {}
    rep_components = replayed.get("components") or {}
    replayed_reason = " | ".join(replayed.get("reasons") or [])
    recorded_reason = recorded.get("reasons")
    if isinstance(recorded_reason, list):
        recorded_reason = " | ".join(recorded_reason)
    out: list[Difference] = []
    for name in COMPONENTS:
        if name in replaced or name in not_measured:
            continue
        rec, rep = rec_components.get(name), rep_components.get(name)
        if not _same_number(rec, rep):
            out.append(
                Difference(
                    name,
                    rec,
                    rep,
                    f"recorded: {recorded_reason or '-'} // replayed: {replayed_reason or '-'}",
                )
            )
    if replaced or not_measured:
        return out
    if not _same_number(recorded.get("score"), replayed.get("score")):
        out.append(
            Difference("score", recorded.get("score"), replayed.get("score"), "combined score differs")
        )
    if recorded.get("binary_pass") != replayed.get("binary_pass"):
        out.append(
            Difference(
                "binary_pass",
                recorded.get("binary_pass"),
                replayed.get("binary_pass"),
                "pass verdict differs",
            )
        )
    return out


# ---------------------------------------------------------------------------
# Discrimination: how each declared constraint separated the corpus.


@dataclass(frozen=True, slots=True)
class ConstraintObservation:
    """One constraint's re-checked verdict on one trial (plus the recorded one, if any)."""

    task_id: str
    constraint_id: str
    passed: bool
    undecided: bool
    recorded_passed: bool | None = None  # None: not recorded, or recorded undecided


@dataclass(slots=True)
class ConstraintRow:
    task_id: str
    id: str
    route: str
    evaluated: int = 0
    passed: int = 0
    failed: int = 0
    undecided: int = 0
    labelled: int = 0
    agreed: int = 0
    verdict: str = "not_measured"
    decided_verdict: bool | None = None

    @property
    def decided(self) -> int:
        return self.passed + self.failed

    def as_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "id": self.id,
            "route": self.route,
            "class": self.verdict,
            "decided_verdict": self.decided_verdict,
            "evaluated": self.evaluated,
            "decided": self.decided,
            "passed": self.passed,
            "failed": self.failed,
            "undecided": self.undecided,
            "labelled": self.labelled,
            "agrees_with_recorded": self.agreed if self.labelled else None,
        }


def classify(passed: int, failed: int, undecided: int) -> tuple[str, bool | None]:
    """The verdict of TRACE_REPLAY.md, decided in its order: not_measured first.

    Returns ``(class, decided_verdict)``; decided_verdict is set only for
    ``undecided_in_part`` (the value the decided trials agree on).
    """
    evaluated = passed + failed + undecided
    if evaluated == 0:
        return "not_measured", None
    if passed and failed:
        return "discriminating", None
    if passed + failed == 0:
        return "never_decided", None
    if undecided:
        return "undecided_in_part", bool(passed)
    return ("always_true", None) if passed else ("always_false", None)


def discrimination(
    declared: Mapping[str, Sequence[tuple[str, str]]],
    observations: Iterable[ConstraintObservation],
) -> list[ConstraintRow]:
    """One row per declared ``(task_id, constraint_id)``, in declaration order.

    ``declared`` maps a task to its constraints as ``(id, route)`` pairs (route ``""`` for
    shared). Every declared constraint gets a row even if no trial evaluated it — a row
    that vanished would read as a constraint never declared.
    """
    rows: dict[tuple[str, str], ConstraintRow] = {}
    for task_id, constraints in declared.items():
        for cid, route in constraints:
            rows[(task_id, cid)] = ConstraintRow(task_id, cid, route)
    for obs in observations:
        row = rows.get((obs.task_id, obs.constraint_id))
        if row is None:
            raise ValueError(
                f"constraint {obs.constraint_id!r} of task {obs.task_id!r} was evaluated "
                "but is not declared by the block the trial was replayed with"
            )
        row.evaluated += 1
        if obs.undecided:
            row.undecided += 1
            continue
        if obs.passed:
            row.passed += 1
        else:
            row.failed += 1
        if obs.recorded_passed is not None:
            row.labelled += 1
            row.agreed += int(obs.recorded_passed == obs.passed)
    for row in rows.values():
        row.verdict, row.decided_verdict = classify(row.passed, row.failed, row.undecided)
    return list(rows.values())


@dataclass(slots=True)
class PathTally:
    """How often each alternative path won, per task."""

    counts: dict[tuple[str, str], int] = field(default_factory=dict)

    def add(self, task_id: str, winning_path: str | None) -> None:
        if winning_path:
            key = (task_id, winning_path)
            self.counts[key] = self.counts.get(key, 0) + 1

    def as_list(self) -> list[dict[str, Any]]:
        return [
            {"task_id": t, "path": p, "won": n} for (t, p), n in sorted(self.counts.items())
        ]
