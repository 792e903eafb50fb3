"""What one grading component hands the fold.

Three outcomes, kept apart on purpose (GRADING.md § Score Combination, § Infrastructure
aborts): a score; no verdict (the component is *unevaluated*, which the
configured-but-unevaluated rule reads); or *not measurable from the recorded evidence*,
which the offline replay reports with its reason and never turns into 0.0 or 1.0.
"""

from __future__ import annotations

from dataclasses import dataclass

from replay.grading.accounting import KeyRecord
from schemas.grading import COMPONENT_SECTIONS

COMPONENTS: tuple[str, ...] = COMPONENT_SECTIONS
"""The grading components in grade.yaml order: the sections grading.yaml configures them in."""


@dataclass(frozen=True, slots=True)
class ComponentResult:
    """``score`` in [0, 1] or ``None``; ``not_measured`` set only when ``score`` is ``None``."""

    score: float | None
    reasons: tuple[str, ...] = ()
    not_measured: str | None = None
    gate_failed: bool = False
    # the populated scored keys this evaluation accounts for (replay/grading/accounting.py)
    accounted: tuple[KeyRecord, ...] = ()

    def __post_init__(self) -> None:
        if self.score is not None and self.not_measured is not None:
            raise ValueError("a scored component cannot also be not measurable")
        if self.score is not None and not 0.0 <= self.score <= 1.0:
            raise ValueError(f"component score {self.score!r} is outside [0, 1]")

    @classmethod
    def unmeasurable(cls, reason: str, *reasons: str) -> ComponentResult:
        return cls(score=None, reasons=reasons, not_measured=reason)

    @property
    def evaluated(self) -> bool:
        return self.score is not None
