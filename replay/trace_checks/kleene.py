"""Three-valued verdicts and their Kleene folds (GRADING.md § When a constraint cannot be decided).

A verdict is decided only where every completion of the missing evidence agrees. The
composites fold their branches the strong-Kleene way: a conjunction with a failing branch
fails whatever an undecided branch would have said, a disjunction with a holding branch
passes, and otherwise an undecided branch leaves the composite undecided.

``WITHHELD`` is the recorded-only ``on_missing: withhold`` verdict (Tolokaforge 0.33.1; not
in GRADING.md, so the reference's folds are the contract): contagious under composites
unless a definite verdict beats it — a conjunction with a failing branch fails, a
disjunction with a holding branch passes, otherwise a withheld branch withholds the
composite (ahead of an undecided one); negate leaves it withheld.
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


def kleene_and(branches: Iterable[Verdict], label: str = "all_of") -> Verdict:
    vs = list(branches)
    positions, diagnostics = _merge(vs)
    for i, v in enumerate(vs):
        if v.truth is Truth.FALSE:
            return Verdict(Truth.FALSE, f"{label}[{i}] failed: {v.message}", positions, diagnostics)
    for i, v in enumerate(vs):
        if v.truth is Truth.WITHHELD:
            return Verdict(Truth.WITHHELD, f"{label}[{i}] {v.message}", positions, diagnostics)
    for i, v in enumerate(vs):
        if v.truth is Truth.UNKNOWN:
            return Verdict(Truth.UNKNOWN, f"{label}[{i}] {v.message}", positions, diagnostics)
    return Verdict(Truth.TRUE, "", positions, diagnostics)


def kleene_or(branches: Iterable[Verdict], label: str = "any_of") -> Verdict:
    vs = list(branches)
    positions, diagnostics = _merge(vs)
    if any(v.truth is Truth.TRUE for v in vs):
        return Verdict(Truth.TRUE, "", positions, diagnostics)
    for i, v in enumerate(vs):
        if v.truth is Truth.WITHHELD:
            return Verdict(Truth.WITHHELD, f"{label}[{i}] {v.message}", positions, diagnostics)
    for i, v in enumerate(vs):
        if v.truth is Truth.UNKNOWN:
            return Verdict(Truth.UNKNOWN, f"{label}[{i}] {v.message}", positions, diagnostics)
    joined = "; ".join(f"[{i}] {v.message}" for i, v in enumerate(vs))
    return Verdict(Truth.FALSE, f"{label}: no branch held — {joined}", positions, diagnostics)


def kleene_not(v: Verdict, what: str) -> Verdict:
    """negate: a holding expression fails, a failing one holds, undecided stays undecided."""
    if v.truth is Truth.TRUE:
        return Verdict(Truth.FALSE, f"negate: the negated {what} held", v.positions, v.diagnostics)
    if v.truth is Truth.FALSE:
        return Verdict(Truth.TRUE, "", v.positions, v.diagnostics)
    return Verdict(v.truth, f"negate: {v.message}", v.positions, v.diagnostics)
