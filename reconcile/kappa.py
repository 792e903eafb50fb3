"""The 2×2 agreement table, accuracy and Cohen's κ (RUBRIC_MIGRATION.md § The bar).

Rows: the judge's recorded verdict; columns: the recomputed constraint. κ is exact integer
arithmetic divided once, so "undefined" is an exact zero, never a float rounding to one:

    N = a + b + c + d,  agree = a + d,  R = a + b (judge met),  C = a + c (constraint passed)
    p_o = agree / N,  p_e = (R·C + (N−R)(N−C)) / N²
    κ = (p_o − p_e) / (1 − p_e) = (N·agree − E) / (N² − E),  E = R·C + (N−R)(N−C)

κ is ``None`` below two observations and where ``N² = E`` (neither labeller varies).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields


@dataclass(frozen=True, slots=True)
class Table:
    """Judge met / not met × constraint passed / failed."""

    met_passed: int = 0
    met_failed: int = 0
    not_met_passed: int = 0
    not_met_failed: int = 0

    def __post_init__(self) -> None:
        for f in fields(self):
            if getattr(self, f.name) < 0:
                raise ValueError(f"Table.{f.name} = {getattr(self, f.name)}, want a count >= 0")

    @property
    def n(self) -> int:
        return self.met_passed + self.met_failed + self.not_met_passed + self.not_met_failed

    @property
    def agreements(self) -> int:
        return self.met_passed + self.not_met_failed

    @classmethod
    def of(cls, pairs: Iterable[tuple[bool, bool]], start: Table | None = None) -> Table:
        """``start`` (default: empty) with one observation per (judge met, constraint
        passed) pair: counted first, one table built (not one per observation)."""
        counts = Counter(pairs)
        s = start or cls()
        return cls(s.met_passed + counts[(True, True)], s.met_failed + counts[(True, False)],
                   s.not_met_passed + counts[(False, True)],
                   s.not_met_failed + counts[(False, False)])  # fmt: skip

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def accuracy(table: Table) -> float | None:
    """Agreements / N; ``None`` when there is no observation."""
    return table.agreements / table.n if table.n else None


def chance_numerator(table: Table) -> int:
    """E = R·C + (N−R)(N−C): N² times the chance agreement p_e."""
    n = table.n
    r = table.met_passed + table.met_failed
    c = table.met_passed + table.not_met_passed
    return r * c + (n - r) * (n - c)


def cohen_kappa(table: Table) -> float | None:
    """Cohen's κ, or ``None`` below two observations or when chance agreement is total."""
    n = table.n
    if n < 2:
        return None
    expected = chance_numerator(table)
    denominator = n * n - expected
    if denominator == 0:
        return None
    return (n * table.agreements - expected) / denominator
