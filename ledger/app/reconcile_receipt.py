"""A recorded reconciliation's receipt: the ``reconcile.completed`` event it appends
(``ledger.app.reconcile.recompute_reconcile`` redoes the verdict it binds)."""

from __future__ import annotations

from typing import Any

from schemas.canonical import digest
from schemas.envelope import NewEvent


def append_receipt(lg: Any, outcome: Any, *, run_id: str) -> dict[str, Any]:
    """Append ``reconcile.completed`` for ``outcome`` (the run's ``ReconcileResult``) with
    {checkpoint, inputs_digest, outputs_digest, config_digest} (and, for a run that carried
    observations forward, the run it extends).

    The checkpoint is the log as the reconciliation read it (after its corpus was
    ingested, before this event), so the receipt names the state the verdict came from.
    ``config`` records the packs and the trial streams read, which is what
    :func:`ledger.app.reconcile.recompute_reconcile` needs to redo the verdict from the log.
    """
    size = lg.size()
    receipt: dict[str, Any] = {
        "checkpoint": {"size": size, "root": lg.root(size).hex()},
        "inputs_digest": outcome.inputs_digest,
        "outputs_digest": digest(outcome.document),
        "config_digest": outcome.config_digest,
    }
    if outcome.extends is not None:
        receipt["extends"] = outcome.extends.link()
        receipt["carried"], receipt["evaluated"] = outcome.carried, outcome.evaluated
    keys = ("criterion", "task_ids", "mode", "verdict", "observations", "kappa")
    payload = {
        "run_id": run_id,
        "exit_code": outcome.exit_code,
        "entries": [{k: e[k] for k in keys} for e in outcome.document["entries"]],
        "config": outcome.config,
        "receipt": receipt,
    }
    if outcome.kept is not None:  # binds the kept observations (ledger.app.reconcile_extend)
        payload["observations_digest"] = outcome.kept.hasher.digest()
    lg.append([NewEvent(f"reconcile/{run_id}", "reconcile.completed", payload)])
    return receipt
