"""Three-valued verdicts and their Kleene folds (GRADING.md § When a constraint cannot be decided).

``WITHHELD`` is the recorded-only ``on_missing: withhold`` verdict (Tolokaforge 0.33.1; not
in GRADING.md, so the reference's folds are the contract): contagious under composites
unless a definite verdict beats it (a failing conjunct, a holding disjunct), ahead of an
undecided branch; negate leaves it withheld.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum


class Truth(Enum):
    TRUE = "true"
    FALSE = "false"
    UNKNOWN = "unknown"
    WITHHELD = "withheld"


@dataclass(frozen=True, slots=True)
class Verdict:
    """One node's verdict, why it is not a pass, and the positions its matchers selected."""

    truth: Truth
    message: str = ""
    positions: frozenset[int] = frozenset()
    diagnostics: tuple[str, ...] = ()


def from_outcomes(can_pass: bool, can_fail: bool) -> Truth:
    """The verdict over a set of completions: decided only where they all agree."""
    if can_pass and can_fail:
        return Truth.UNKNOWN
    if can_pass:
        return Truth.TRUE
    if can_fail:
        return Truth.FALSE
    raise AssertionError("a verdict with no reachable completion: bad outcome arithmetic")


def _merge(verdicts: Sequence[Verdict]) -> tuple[frozenset[int], tuple[str, ...]]:
    positions: frozenset[int] = frozenset().union(*(v.positions for v in verdicts))
    diagnostics = tuple(d for v in verdicts for d in v.diagnostics)
    return positions, diagnostics


def fold_truths(truths: Iterable[Truth], absorbing: Truth = Truth.FALSE) -> Truth:
    """The strong-Kleene fold: AND with ``absorbing`` FALSE, OR with TRUE; WITHHELD ranks
    ahead of UNKNOWN. An empty fold is the identity (AND: TRUE, OR: FALSE)."""
    seen = set(truths)
    for truth in (absorbing, Truth.WITHHELD, Truth.UNKNOWN):
        if truth in seen:
            return truth
    return Truth.TRUE if absorbing is Truth.FALSE else Truth.FALSE


def _fold(vs: Sequence[Verdict], absorbing: Truth, label: str) -> Verdict:
    """``label[i]`` names the first branch carrying the composite's verdict."""
    positions, diagnostics = _merge(vs)
    truth = fold_truths((v.truth for v in vs), absorbing)
    if truth is Truth.TRUE:
        return Verdict(Truth.TRUE, "", positions, diagnostics)
    if truth is Truth.FALSE and absorbing is Truth.TRUE:
        joined = "; ".join(f"[{i}] {v.message}" for i, v in enumerate(vs))
        return Verdict(Truth.FALSE, f"{label}: no branch held — {joined}", positions, diagnostics)
    i, v = next((i, v) for i, v in enumerate(vs) if v.truth is truth)
    failed = "failed: " if truth is Truth.FALSE else ""
    return Verdict(truth, f"{label}[{i}] {failed}{v.message}", positions, diagnostics)


def kleene_and(branches: Iterable[Verdict], label: str = "all_of") -> Verdict:
    return _fold(list(branches), Truth.FALSE, label)


def kleene_or(branches: Iterable[Verdict], label: str = "any_of") -> Verdict:
    return _fold(list(branches), Truth.TRUE, label)


def kleene_not(v: Verdict, what: str) -> Verdict:
    """negate: a holding expression fails, a failing one holds, undecided stays undecided."""
    if v.truth is Truth.TRUE:
        return Verdict(Truth.FALSE, f"negate: the negated {what} held", v.positions, v.diagnostics)
    if v.truth is Truth.FALSE:
        return Verdict(Truth.TRUE, "", v.positions, v.diagnostics)
    return Verdict(v.truth, f"negate: {v.message}", v.positions, v.diagnostics)
