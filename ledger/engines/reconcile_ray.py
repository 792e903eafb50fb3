"""``reconcile --engine …``: every trial's candidate label (the pack's trace checks,
:func:`reconcile.trials.trace_evaluator`) computed on an engine; the rest of
reconcile stays on the driver, so the document is the local engine's (docs/readme/ray.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ledger.app.reconcile_corpus import ingest_corpus
from ledger.app.reconcile_packs import (  # packs_by_task: the same refusal run_reconcile makes
    Pack,
    find_packs,
    load_declarations,
    packs_by_task,
    pool_claims,
)
from ledger.engines.base import Engine, TrialSelection
from reconcile.inputs import Candidate
from reconcile.trials import Evaluator, trace_evaluator
from replay.timeline.trial_inputs import TrialInputs, TrialInputsError, trial_inputs

_WORKER_EVALUATOR: list[Evaluator] = []  # one per worker process (it caches loaded configs)


def candidate_of(
    events: list[Any], packs_by_task: Mapping[str, Pack]
) -> tuple[str, Candidate] | None:
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


def _roots(inv: Any, packs: list[Pack]) -> list[Path]:
    if inv.source is not None:
        return [inv.source]
    corpora = load_declarations(packs, inv.base)
    return [Path(corpora[v].resolved) for v in sorted({v for v, _ in pool_claims(packs)})]


def engine_evaluator(inv: Any, lg: Any, engine: Engine) -> Evaluator:
    """``inv`` is the ``ReconcileRequest`` (not imported: ``ledger.app.reconcile`` imports us).

    Ingest the invocation's corpora into ``lg``, evaluate every covered trial on
    ``engine``; an evaluator answering from those results (locally for anything else). Its
    ``ingested`` holds what each corpus's ingest planned (by resolved root), so the read
    that follows does not ingest it again."""
    packs = find_packs(inv.packs, inv.base)
    by_task = packs_by_task(packs)
    roots = () if inv.from_ledger else _roots(inv, packs)  # --from-ledger: nothing ingested
    ingested = {root.resolve(): ingest_corpus(lg, root, inv.workers) for root in roots}
    pairs = engine.map_trials(lg, TrialSelection(to_seq=lg.size() - 1), candidate_of, by_task)
    computed = {stream: hit for stream, hit in pairs if hit is not None}
    local = trace_evaluator()

    def evaluate(inputs: TrialInputs, pack: Pack) -> Candidate:
        hit = computed.get(inputs.registered.stream)
        if hit is not None and hit[0] == str(pack.directory):
            return hit[1]
        return local(inputs, pack)

    evaluate.computed = computed  # type: ignore[attr-defined]  (tests count the remote hits)
    evaluate.ingested = ingested  # type: ignore[attr-defined]
    return evaluate
