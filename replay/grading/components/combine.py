"""The fold of component scores into one score and one pass flag
(GRADING.md § Score Combination).

A scored component with no declared weight raises: neither 1.0 nor 0.0 may be invented.
With no weighted scored component the fold decides instead of aggregating (nothing asked:
1.0 and a pass; otherwise 0.0 and a fail naming what was asked).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from schemas.errors import LedgerError
from schemas.grading import CombineConfig


class MissingWeightError(LedgerError, ValueError):
    """A scored component whose share combine.weights does not declare."""

    def __init__(self, components: list[str]) -> None:
        self.components = components
        fixes = "; ".join(
            f"declare combine.weights.{c}, or drop the {c} section" for c in components
        )
        super().__init__(
            f"component(s) {', '.join(components)} produced a score but combine.weights "
            f"declares no share for them: {fixes}"
        )


@dataclass(frozen=True, slots=True)
class FoldResult:
    score: float
    binary_pass: bool
    reasons: tuple[str, ...] = ()


def combine_components(
    scores: Mapping[str, float | None],
    *,
    configured: Collection[str],
    combine: CombineConfig,
    judge_gate_failed: bool = False,
    trace_gate_failed: bool = False,
) -> FoldResult:
    """Fold evaluated components; ``None`` means unevaluated (excluded from the fold)."""
    evaluated = {n: s for n, s in scores.items() if s is not None}
    weights = combine.weights
    missing = sorted(n for n in evaluated if n not in weights)
    if missing:
        raise MissingWeightError(missing)
    unevaluated = [n for n in configured if scores.get(n) is None]
    reasons: list[str] = []
    if unevaluated:
        reasons.append(f"Not evaluated, left out of the fold: {', '.join(unevaluated)}")
    if not evaluated:
        return _decide_empty(configured, weights, reasons)
    if combine.method == "weighted":
        total = sum(weights[n] for n in evaluated)
        if total == 0:
            reasons.append(
                "Combine: the scored components' shares sum to zero "
                f"({', '.join(sorted(evaluated))})"
            )
            return FoldResult(0.0, False, tuple(reasons))
        score = sum(weights[n] * s for n, s in evaluated.items()) / total
        passed = score >= combine.pass_threshold
    elif combine.method == "all":
        score = min(evaluated.values())
        passed = all(s >= combine.pass_threshold for s in evaluated.values())
    else:
        score = max(evaluated.values())
        passed = any(s >= combine.pass_threshold for s in evaluated.values())
    if judge_gate_failed or trace_gate_failed:
        passed = False
    return FoldResult(score, passed, tuple(reasons))


def _decide_empty(
    configured: Collection[str], weights: Mapping[str, float], reasons: list[str]
) -> FoldResult:
    if not configured and not weights:
        return FoldResult(1.0, True, tuple(reasons))
    dangling = sorted(k for k in weights if k not in configured)
    if dangling:
        reasons.append(
            f"Combine: weights name nothing the config configures: {', '.join(dangling)}"
        )
    if configured:
        reasons.append(
            f"Combine: no configured component produced a verdict ({', '.join(configured)})"
        )
    return FoldResult(0.0, False, tuple(reasons))
