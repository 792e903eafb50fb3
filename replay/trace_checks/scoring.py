"""Component score, gates, and multi-path scoring: the formulas of GRADING.md § Weighting the
constraints, § severity and § How a multi-path block scores (an undecided member fails, an
undecided gate trips). Scores are compared as exact fractions so a tie is a tie and not a
rounding accident.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from replay.trace_checks.results import ConstraintResult, PathLine, TraceChecksSummary


@dataclass(frozen=True, slots=True)
class SetScore:
    score: Fraction
    failed_gate_ids: tuple[str, ...]

    @property
    def gate_failed(self) -> bool:
        return bool(self.failed_gate_ids)


def score_decision_set(results: Sequence[ConstraintResult]) -> SetScore:
    # A withheld constraint (recorded-only on_missing: withhold) is out of the decision on
    # both sides: no share of the fold, and a withheld gate neither holds nor shuts.
    failed_gates = tuple(
        r.id for r in results if r.severity == "gate" and not r.passed and not r.withheld
    )
    scored = [r for r in results if r.severity == "scored" and not r.withheld]
    if not scored:
        return SetScore(Fraction(0 if failed_gates else 1), failed_gates)
    total = sum((Fraction(r.weight) for r in scored), Fraction(0))
    earned = sum((Fraction(r.weight) for r in scored if r.passed), Fraction(0))
    return SetScore(earned / total, failed_gates)


def score_flat(results: Sequence[ConstraintResult]) -> tuple[float, TraceChecksSummary]:
    s = score_decision_set(results)
    component = 0.0 if s.gate_failed else float(s.score)
    return component, TraceChecksSummary("", s.gate_failed, s.failed_gate_ids, ())


def choose_winner(path_ids: Sequence[str], scores: Sequence[SetScore]) -> int:
    """Index of the winning path: highest score, ties to a shut gate, then first declared."""
    return max(range(len(scores)), key=lambda i: (scores[i].score, scores[i].gate_failed))


def score_paths(
    shared: Sequence[ConstraintResult],
    paths: Sequence[tuple[str, Sequence[ConstraintResult]]],
) -> tuple[float, TraceChecksSummary, int]:
    scores = [score_decision_set([*shared, *own]) for _, own in paths]
    w = choose_winner([pid for pid, _ in paths], scores)
    winner = scores[w]
    lines = tuple(
        PathLine(pid, float(s.score), s.gate_failed)
        for (pid, _), s in zip(paths, scores, strict=True)
    )
    component = 0.0 if winner.gate_failed else float(winner.score)
    summary = TraceChecksSummary(paths[w][0], winner.gate_failed, winner.failed_gate_ids, lines)
    return component, summary, w
