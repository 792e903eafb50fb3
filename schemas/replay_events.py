"""Payload models for projections' own results: replays and reconciliations.

Closed at the top level (a misspelt key is refused at append), open inside the grade,
the configs and the receipt, which carry shapes their own projections define. A receipt
may sit under ``receipt`` or at the top level (``ledger/app/receipts.py`` reads both); a
malformed or missing one is appended and then *named* by ``vledger verify`` and
``vledger receipt verify``, rather than never existing.
"""

from typing import Any

from pydantic import BaseModel, ConfigDict


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class _ReceiptFields(_Closed):
    receipt: dict[str, Any] | None = None
    checkpoint: dict[str, Any] | None = None
    config_digest: str | None = None
    inputs_digest: str | None = None
    outputs_digest: str | None = None


class GradeReplayed(_Closed):
    """One trial's re-derived grade (retrace); never on the trial's own stream."""

    trial: str
    replay_id: str
    grade: dict[str, Any] | None
    task_id: str | None = None
    projection_version: str | None = None
    config_digest: str | None = None
    status: str | None = None
    differences: list[dict[str, Any]] = []


class ReplayCompleted(_ReceiptFields):
    replay_id: str | None = None
    projection_version: str | None = None
    config: dict[str, Any] | None = None
    summary: dict[str, Any] | None = None


class ReconcileCompleted(_ReceiptFields):
    run_id: str | None = None
    exit_code: int | None = None
    entries: list[dict[str, Any]] = []
    config: dict[str, Any] | None = None
    # the digest of the observations kept for the next run to carry (derived data)
    observations_digest: str | None = None
