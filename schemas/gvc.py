"""Graded Verdict Custody (GVC) vocabulary: the registered grade ladder and its case files.

The ladder is never restated here: it is read from the registration artifact
(``verdict-grade-registration/v1``, spec § 2) and handed around as a :class:`Ladder`.
The case-file models describe ``gvc-derivation-cases/v1``, the language-neutral
conformance fixture format (spec § 9.2), so any set of cases can be checked against
the derivation, not only the shipped 28.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from schemas.closed import Closed

# Rank operations, in the application order of spec § 5 (step 2, then step 3.1–3.3).
UNRUN_DECLARED_CAP = "unrun_declared_cap"
SAME_CHAIN_CAP = "same_chain_cap"
CONFLICT_DEMOTION = "conflict_demotion"
STALENESS_REVERSION = "staleness_reversion"
RANK_OPS: tuple[str, ...] = (
    UNRUN_DECLARED_CAP,
    SAME_CHAIN_CAP,
    CONFLICT_DEMOTION,
    STALENESS_REVERSION,
)

# The nine canonical population identifiers of spec § 7 / § 9.2, as the fixtures spell
# them. Our counters use exactly these spellings, so the local→canonical mapping the
# spec asks for is the identity: static, total and injective by construction.
COUNTER_NAMES: tuple[str, ...] = (
    "unverified_from_unrun_declared",
    "degraded",
    "producer_mint_rejected",
    "unbindable_content_identity",
    "same_chain_indeterminate",
    "author_chain_unbound",
    "failed_declared",
    "proof_kernel_exempt",
    "tied_uncap",
)
COUNTER_MAPPING: dict[str, str] = {name: name for name in COUNTER_NAMES}

PROVENANCE_DERIVED = "derived"
PROVENANCE_MISSING_ADMISSION = "missing_admission_fact"

Kind = Literal["human", "agent", "kernel"]


class Registration(BaseModel):
    """The vocabulary registration artifact. Only ``schema_version`` and
    ``ordered_grades`` carry conformance weight (spec § 9.1); other fields are local."""

    model_config = ConfigDict(extra="allow", frozen=True, defer_build=True)

    schema_version: Literal["verdict-grade-registration/v1"]
    ordered_grades: tuple[str, ...] = Field(min_length=1)

    @field_validator("ordered_grades")
    @classmethod
    def _distinct(cls, grades: tuple[str, ...]) -> tuple[str, ...]:
        dupes = sorted({g for g in grades if grades.count(g) > 1})
        if dupes:
            raise ValueError(f"ordered_grades repeats {dupes}; each grade appears once")
        if any(not g for g in grades):
            raise ValueError("ordered_grades holds an empty name")
        return grades

    def ladder(self) -> Ladder:
        return Ladder(self.ordered_grades)


@dataclass(frozen=True, slots=True)
class Ladder:
    """The order predicate derived from the registration (spec § 2), ``grades`` strongest
    first; an out-of-vocabulary grade ranks 0, below every real one."""

    grades: tuple[str, ...]
    _ranks: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        ranks = {g: len(self.grades) - i for i, g in enumerate(self.grades)}
        object.__setattr__(self, "_ranks", ranks)

    @property
    def floor(self) -> str:
        """The weakest member (``unverified`` in v1)."""
        return self.grades[-1]

    def is_member(self, grade: str) -> bool:
        return grade in self._ranks

    def rank(self, grade: str) -> int:
        return self._ranks.get(grade, 0)

    def demote(self, grade: str) -> str:
        """One ordinal tier down; the floor demotes to itself."""
        if not self.is_member(grade) or grade == self.floor:
            return self.floor
        return self.grades[self.grades.index(grade) + 1]

    def cap(self, grade: str, ceiling: str) -> str:
        """``grade`` limited to at most ``ceiling``."""
        return ceiling if self.rank(grade) > self.rank(ceiling) else grade


class Party(Closed):
    """A custody role triple ``{identity, kind, chain_id}`` (spec § 3)."""

    identity: str
    kind: Kind
    chain_id: str = ""


class CaseOracle(Closed):
    """One declared oracle of a conformance case, with its observed run/pass state."""

    tier: str
    ran: bool
    passed: bool
    author: Party
    runner: Party | None = None
    content_identity: str = ""


class CaseInput(Closed):
    admission_evidence: bool = True
    declared: tuple[CaseOracle, ...]
    work_producer: Party
    current_content_identity: str = ""
    producer_supplied_grade: str | None = None


class CaseCounters(Closed):
    """Expected counts. A canonical population a case does not name expects zero."""

    unverified_from_unrun_declared: int = 0
    degraded: int = 0
    producer_mint_rejected: int = 0
    unbindable_content_identity: int = 0
    same_chain_indeterminate: int = 0
    author_chain_unbound: int = 0
    failed_declared: int = 0
    proof_kernel_exempt: int = 0
    tied_uncap: int = 0


class CaseExpect(Closed):
    """What a case expects. Fields left out (``None``) are not compared, except the
    counters, which are always compared in full (spec § 9.2)."""

    effective_grade: str
    evidence_kind: str
    applied_rank_ops: tuple[str, ...]
    conflicting_evidence: bool
    failed_declared_evidence: bool | None = None
    provenance: str | None = None
    oracle_author: Party | None = None
    oracle_runner: Party | None = None
    work_producer: Party | None = None
    counters: CaseCounters = CaseCounters()


class Case(Closed):
    name: str
    comment: str | None = None
    input: CaseInput
    expect: CaseExpect | None = None


class CaseFile(Closed):
    """A ``gvc-derivation-cases/v1`` file."""

    schema_: Literal["gvc-derivation-cases/v1"] = Field(alias="schema")
    source: str | None = None
    cases: tuple[Case, ...]

    @field_validator("cases")
    @classmethod
    def _unique_names(cls, cases: tuple[Case, ...]) -> tuple[Case, ...]:
        names = [c.name for c in cases]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"case names must be unique; repeated: {dupes}")
        return cases
