"""Payload models for verdict grades (GVC) and imported verdict-core runs.

The events of a unit's stream ``unit/<unit_id>`` (docs/readme/verdict.md § Recording and
admitting a unit) are closed: a typo in a key is refused at append time rather than
silently ignored by the derivation.

``run.event`` and ``receipt.issued`` stay permissive: ``run.event`` carries an imported
verdict-core event verbatim (its ``data`` is the emitter's free-form keyword arguments),
and ``receipt.issued`` is shared with other projections.
"""

from __future__ import annotations

from pydantic import Field

from schemas.closed import Closed
from schemas.gvc import Party


class OracleDeclared(Closed):
    """A judge named before delegation (GVC § 4): the tier it grants when it passes,
    how to re-run it, and who authored it (a declaration, not an attestation)."""

    unit: str = Field(min_length=1)
    oracle_id: str = Field(min_length=1)
    tier: str = Field(min_length=1)
    command: str | None = None
    author: Party


class OracleRan(Closed):
    """An observed execution of a declared judge: pass/fail, who ran it, and the
    identity of the content it judged (empty when the runner could not bind one)."""

    unit: str = Field(min_length=1)
    oracle_id: str = Field(min_length=1)
    passed: bool
    runner: Party
    content_identity: str = ""
    exit_code: int | None = None
    evidence: str | None = None


class WorkProduced(Closed):
    """The delivered work: producer triple (its chain admission-populated), the content
    identity at admission, and an optional producer-supplied grade, which is never
    admitted (GVC § 6) but counted when it disagrees."""

    unit: str = Field(min_length=1)
    producer: Party
    content_identity: str = ""
    producer_supplied_grade: str | None = None


class AdmissionCounters(Closed):
    """All nine canonical populations of GVC § 7, always present."""

    unverified_from_unrun_declared: int = Field(ge=0)
    degraded: int = Field(ge=0)
    producer_mint_rejected: int = Field(ge=0)
    unbindable_content_identity: int = Field(ge=0)
    same_chain_indeterminate: int = Field(ge=0)
    author_chain_unbound: int = Field(ge=0)
    failed_declared: int = Field(ge=0)
    proof_kernel_exempt: int = Field(ge=0)
    tied_uncap: int = Field(ge=0)


class VerdictAdmitted(Closed):
    """The custody record derived at admission; ``through_version`` is the stream
    version of the last evidence event it was derived from, so ``verify`` can re-derive
    exactly the same record."""

    unit: str = Field(min_length=1)
    effective_grade: str
    evidence_kind: str
    applied_rank_ops: list[str]
    conflicting_evidence: bool
    failed_declared_evidence: bool
    provenance: str
    oracle_author: Party | None
    oracle_runner: Party | None
    work_producer: Party | None
    content_identity: str | None
    current_content_identity: str
    declared_count: int = Field(ge=0)
    unrun_count: int = Field(ge=0)
    counters: AdmissionCounters
    registration: str
    through_version: int = Field(ge=-1)
