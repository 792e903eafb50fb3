"""A curated corpus's own account of itself (``corpus.yaml``) and the ``corpus.curated`` event.

The manifest is the reference's format (``reference/tolokaforge/FORMATS.md`` § 6), so
Tolokaforge's ``reconcile`` and this project's ``ingest`` read a corpus written here as
they read one the reference wrote. The field order of each model is the order the
reference writes, which is the order ``corpus.yaml`` lists keys in.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import model_validator

from schemas.closed import Closed

MANIFEST_FILE = "corpus.yaml"


class Rejection(StrEnum):
    """Why a discovered trial did not enter the corpus (RUBRIC_MIGRATION.md, "Building a corpus")."""

    MISSING_TASK_SNAPSHOT = "missing_task_snapshot"
    MISSING_GRADE = "missing_grade"
    JUDGE_INCOMPLETE = "judge_incomplete"
    CRITERION_NOT_JUDGED = "criterion_not_judged"
    ENVIRONMENT_DEAD = "environment_dead"
    AUTHOR_EXCLUDED = "author_excluded"


class Authority(StrEnum):
    """Whose judgment a rejection is: the admission rule's, or the author's ``--exclude``."""

    RULE = "rule"
    AUTHOR = "author"


class CuratedBundle(Closed):
    """One admitted trial, as ``corpus.yaml`` lists it."""

    directory: str  # <run-id>_trial<index>
    source_run: str
    task_id: str
    agent_model: str  # model_config.agent.name
    judge_model: str | None  # model_config.judge.name; null where the snapshot names none
    met: bool  # the judge's recorded verdict on the criterion: the label the corpus carries
    record_carried: bool  # tool_log.yaml travelled: where false, environment-dead could not reach


class RejectedTrial(Closed):
    """One discovered trial the corpus does not hold, and the observation behind it."""

    source: str
    reason: Rejection
    by: Authority
    observation: str  # the rule's measurement, or the reason the author gave

    @model_validator(mode="after")
    def _authority_matches_reason(self) -> RejectedTrial:
        # author_excluded is the one rejection an author makes; every other is a rule's.
        # A manifest pairing them the other way would credit a judgment to whoever did not
        # make it, and the manifest is what outlives the runs behind a corpus.
        if (self.reason is Rejection.AUTHOR_EXCLUDED) is (self.by is Authority.AUTHOR):
            return self
        want = "author" if self.reason is Rejection.AUTHOR_EXCLUDED else "rule"
        raise ValueError(
            f"reason: {self.reason.value} is recorded by: {self.by.value}; write by: {want}"
        )


class CorpusManifest(Closed):
    """``corpus.yaml``: criterion, task ids, source runs, curation time, admitted, rejected."""

    criterion: str
    task_ids: list[str]
    curated_from: list[str]
    curated_at: str  # ISO-8601 UTC with a trailing Z, as the reference writes it
    bundles: list[CuratedBundle]
    excluded: list[RejectedTrial]

    def document(self) -> dict[str, Any]:
        """The manifest as the plain mapping ``corpus.yaml`` holds, in the reference's order."""
        return self.model_dump(mode="json")


class CorpusCurated(Closed):
    """Payload of ``corpus.curated``: what a corpus was cut from and what it holds
    (``manifest_digest``: SHA-256 of the written ``corpus.yaml``; ``log_size``: the log
    prefix a ``--from-ledger`` curation read)."""

    criterion: str
    into: str
    origin: str  # "runs" or "ledger"
    sources: list[str] = []
    where: str | None = None
    log_size: int | None = None
    curated_at: str
    admitted: list[dict[str, Any]]
    rejected: list[dict[str, Any]]
    manifest_digest: str
