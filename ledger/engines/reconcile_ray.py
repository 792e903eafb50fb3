"""``reconcile --engine …``: the candidate projection of every trial, run on an engine.

Reconciliation's per-trial projection is the pack's trace checks over the trial's
timeline (:func:`ledger.app.reconcile.trace_evaluator`, pure and total: a problem is an
``Unavailable`` candidate, never an exception). This module ingests the corpora the
invocation reads (idempotent, exactly the ingest ``run_reconcile`` does itself), runs that
evaluator on every trial of a task that has a pack through an :class:`Engine` (one Ray
task per sealed segment), and hands ``run_reconcile`` an evaluator that returns those
precomputed candidates. Everything else — reading each bundle back from its stream, the
verdicts, the receipt — stays on the driver, unchanged, so the document is identical to
the local engine's.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ledger.app.ingest import IngestError
from ledger.app.ingest import ingest_into as ingest
from ledger.app.reconcile import (  # _packs_by_task: the same refusal run_reconcile makes
    Evaluator,
    Invocation,
    Pack,
    ReconcileError,
    _packs_by_task,
    find_packs,
    load_declarations,
    pool_claims,
    trace_evaluator,
)
from ledger.engines import Engine, TrialSelection
from reconcile.inputs import Candidate
from replay.trial_inputs import TrialInputs, TrialInputsError, trial_inputs

_WORKER_EVALUATOR: list[Evaluator] = []  # one per worker process (it caches loaded configs)


def candidate_of(events: list[Any], packs_by_task: Mapping[str, Pack]) -> tuple[str, Candidate] | None:
    """``(pack directory, candidate)`` for one trial stream; None when no pack covers it
    or the stream does not fold (the driver reports that bundle as unreadable itself)."""
    try:
        inputs = trial_inputs(events)
    except TrialInputsError:
        return None
    pack = packs_by_task.get(inputs.registered.task_id)
    if pack is None:
        return None
    if not _WORKER_EVALUATOR:
        _WORKER_EVALUATOR.append(trace_evaluator())
    return str(pack.directory), _WORKER_EVALUATOR[0](inputs, pack)


def _roots(inv: Invocation, packs: list[Pack]) -> list[Path]:
    if inv.source is not None:
        return [inv.source]
    corpora = load_declarations(packs, inv.base)
    return [Path(corpora[v].resolved) for v in sorted({v for v, _ in pool_claims(packs)})]


def engine_evaluator(inv: Invocation, lg: Any, engine: Engine) -> Evaluator:
    """Ingest the invocation's corpora into ``lg``, evaluate every covered trial on
    ``engine``; an evaluator answering from those results (locally for anything else)."""
    packs = find_packs(inv.packs, inv.base)
    by_task = _packs_by_task(packs)
    for root in _roots(inv, packs):
        try:
            ingest(lg, [str(root)], corpus=root.resolve().name, skip_bad=True, keep_inconsistent=True)
        except IngestError as exc:
            raise ReconcileError(f"ingesting {root} into the ledger: {exc}") from None
    pairs = engine.map_trials(lg, TrialSelection(to_seq=lg.size() - 1), candidate_of, by_task)
    computed = {stream: hit for stream, hit in pairs if hit is not None}
    local = trace_evaluator()

    def evaluate(inputs: TrialInputs, pack: Pack) -> Candidate:
        hit = computed.get(inputs.registered.stream)
        if hit is not None and hit[0] == str(pack.directory):
            return hit[1]
        return local(inputs, pack)

    evaluate.computed = computed  # type: ignore[attr-defined]  (tests count the remote hits)
    return evaluate
