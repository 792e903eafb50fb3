"""One corpus reconciled in one pass over its trials (:func:`corpus_report`): each readable
trial becomes an observation, labelled against its own task's pack, is fed to the fold of
every claim over its task (``reconcile.reconcile.EntryFold``) and let go, so the report
holds what it lists, not the trials it was computed from.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ledger.app.reconcile_corpus import authoring_gate
from ledger.app.reconcile_extend import Carried, LazyBase, lazy_from_ledger
from ledger.app.reconcile_packs import Pack, ReconcileError
from ledger.app.reconcile_read import Read, Ticks
from reconcile.inputs import Candidate, TrialObservation
from reconcile.reconcile import Claim, EntryFold
from reconcile.report import CorpusReport
from reconcile.trials import Evaluator, graded_values
from replay.timeline.trial_inputs import TrialInputs, trial_inputs
from schemas.envelope import StoredEvent


@dataclass(frozen=True)
class Context:
    base: Path
    packs_by_task: Mapping[str, Pack]
    evaluator: Evaluator
    roots: tuple[str, ...]
    ledger: Any | None  # an open Ledger on a real run, None on a dry run
    prior: LazyBase | None = None  # the run whose observations are carried forward
    workers: int | None = None  # processes reading a corpus into the ledger
    ingested: Mapping[Path, dict] = field(default_factory=dict)  # corpora an engine ingested
    ticks: Ticks = field(default_factory=Ticks)  # the run's progress


def _observations(ctx: Context, read: Read, claimed: Collection[str]) -> Iterator[TrialObservation]:
    """The readable trials as observations, in the report's order, each labelled against
    its own task's pack (a carried trial as it was observed: its pack and its tools passed
    the gate then). A carried trial of a task no claim (``claimed``: their task ids) covers
    is never asked for its candidate (``EntryFold.add`` skips other tasks' trials). Each
    is yielded and let go, but those of ``read.trials`` are noted in ``read.observed`` (what
    the next run may carry of them: ``reconcile_extend.kept_records``)."""
    gated: set[tuple[str, str]] = set()
    by_pack: dict[str, Callable[[list[StoredEvent]], Candidate]] = {}  # one evaluator a pack
    read.observed = []
    for got in read.readable():
        if len(got) == 4:  # held lazily: as the earlier run observed it, its candidate too
            trial, _, keys, (task_id, grade, grading, candidate) = got
            _pack_of(ctx, task_id, trial)
            assert candidate is not None  # (only a record with one is held lazily)
            yield TrialObservation(trial, task_id, grade, grading, candidate, keys)
            continue
        ref, inputs = got
        if isinstance(inputs, Carried):
            grade, grading, task_id = inputs.grade, inputs.grading, inputs.task_id
        else:
            grade, grading = graded_values(inputs)
            task_id = inputs.registered.task_id
        pack = _pack_of(ctx, task_id, ref.trial)
        if isinstance(inputs, Carried):
            assert grade is not None and grading is not None
            lazy = inputs.candidate
            if lazy is None and task_id not in claimed:
                lazy = _unasked
            elif lazy is None:
                on = by_pack.get(task_id)
                if on is None:
                    on = by_pack[task_id] = functools.partial(_evaluate, ctx.evaluator, pack)
                lazy = lazy_from_ledger(ctx.ledger, inputs.stream, on)
        else:
            authoring_gate(pack, inputs, ref.trial, gated)
            lazy = _once(ctx.evaluator, inputs, pack)
        obs = TrialObservation(ref.trial, task_id, grade, grading, lazy, ref.keys)
        read.observed.append(obs)
        yield obs


def _pack_of(ctx: Context, task_id: str, trial: str) -> Pack:
    pack = ctx.packs_by_task.get(task_id)
    if pack is None:
        raise ReconcileError(
            f"task_id {task_id!r} of {trial} resolves in none of the searched pack "
            f"roots ({', '.join(ctx.roots)}) — pass --packs with the directory holding its pack"
        )
    return pack


def _unasked() -> Candidate:
    raise AssertionError("a candidate asked of a trial no claim covers")


def _evaluate(evaluator: Evaluator, pack: Pack, events: list[StoredEvent]) -> Candidate:
    return evaluator(trial_inputs(events), pack)


def _once(evaluator: Evaluator, inputs: TrialInputs, pack: Pack) -> Callable[[], Candidate]:
    """Evaluate on first demand only, and once: two entries over one trial share the result."""
    return functools.cache(lambda: evaluator(inputs, pack))


def corpus_report(ctx: Context, read: Read, claims: Sequence[Claim]) -> CorpusReport:
    """Every claim over one corpus reconciled, in one pass over its trials (each fed to the
    claims over its task, then let go); the sweep knows which corpus it names."""
    observations: Iterable[TrialObservation] = _observations(
        ctx, read, {t for c in claims for t in c.task_ids}
    )
    if read.corpus_value is None:  # --source: the claims of the packs behind its trials
        observations = list(observations)
        tasks = {o.task_id for o in observations}
        claims = dedupe(c for c in claims if tasks & set(c.task_ids))
    folds = [EntryFold(c) for c in claims]
    by_task: dict[str, list[EntryFold]] = {}
    for fold in folds:
        for task in dict.fromkeys(fold.claim.task_ids):
            by_task.setdefault(task, []).append(fold)
    observed = 0
    for obs in observations:
        observed += 1
        for fold in by_task.get(obs.task_id, ()):
            fold.add(obs)
    sweep = read.corpus_value is not None
    entries = tuple(fold.result(sweep=sweep) for fold in folds)
    total = observed + read.carried_counted() + len(read.unreadable)
    return CorpusReport(read.source, ctx.roots, total, entries, tuple(read.unreadable),
                        tuple(read.excluded))  # fmt: skip


def dedupe(claims: Iterable[Claim]) -> list[Claim]:
    """With --source, a criterion pooled under two corpus values is reconciled once."""
    first: dict[tuple[str, tuple[str, ...]], Claim] = {}
    for c in claims:
        first.setdefault((c.entry.criterion, c.task_ids), c)
    return list(first.values())
