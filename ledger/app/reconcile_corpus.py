"""A real reconciliation's corpus read: ingested into the ledger, each bundle's stream and
planned event ids kept so the caller need not read it again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ledger.app.reconcile_packs import ReconcileError


def ingest_corpus(lg: Any, root: Path) -> dict[Path, tuple[str, list[str]]]:
    """A real run: the corpus into the ledger (idempotent; bad bundles recorded as skipped).
    Each bundle read, by resolved directory: its stream and planned event ids, so the
    caller need not read it again."""
    from ledger.app.ingest import IngestError, ingest_into  # noqa: PLC0415 - a dry run never ingests

    planned: dict[Path, tuple[str, list[str]]] = {}

    def seen(path: Path, unit: Any) -> None:
        planned[path.resolve()] = (unit.stream, [e.event_id for e in unit.events])

    try:
        ingest_into(
            lg, [str(root)], root.resolve().name, skip_bad=True, keep_inconsistent=True,
            on_unit=seen, workers=1,  # read here: reconcile's --workers are its engine's
        )  # fmt: skip
    except IngestError as exc:
        raise ReconcileError(f"ingesting {root} into the ledger: {exc}") from None
    return planned
