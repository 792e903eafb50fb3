"""``reconcile``: migration claims checked against the judge's recorded verdicts (the I/O).

``reconcile/`` is pure; this module feeds it (RUBRIC_MIGRATION.md § Usage): the packs
(:mod:`ledger.app.reconcile_packs`), then every bundle under each declared corpus
(:mod:`reconcile.trials`) — a real run ingests the corpus and reads each trial
back from its stream, then appends ``reconcile.completed`` with its receipt; a dry run
folds the same events in memory. An invocation's defect raises :class:`ReconcileError`;
one bundle's is an ``unreadable_trials`` row.

Example::

    result = ledger.reconcile(packs=["corpora/packs"], dry_run=True)
    print(result.exit_code, result.to_json()["entries"])
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ledger.app.context import LedgerArg, ledger_path, opened
from ledger.app.ingest_read import gc_paused
from ledger.app.ingest_stat import Resolver, one_resolver
from ledger.app.reconcile_corpus import Ingested, settled, trial_inputs_of
from ledger.app.reconcile_extend import (
    Base,
    LazyBase,
    config_digest,
    kept_records,
)
from ledger.app.reconcile_kept import KeptWriter
from ledger.app.reconcile_packs import (
    Pack,
    ReconcileError,
    discover_bundles,
    display_path,
    find_packs,
    load_declarations,
    pack_from,
    packs_by_task,
    pool_claims,
)
from ledger.app.reconcile_pass import Context, corpus_report
from ledger.app.reconcile_read import (
    NEVER_RAN,
    Read,
    Ticks,
    TrialRef,
    flat,
    read_held,
    recompute_held,
)
from ledger.app.reconcile_receipt import append_receipt
from ledger.app.result import Result
from ledger.defaults import DEFAULT_PACKS, DEFAULT_RECONCILE_WORKERS
from ledger.engines import EngineError, check_address, get_engine
from ledger.errors import LedgerError
from ledger.log.outputs import is_ledger_dir
from ledger.sources.corpus import Corpus
from ledger.sources.detect import one_listing, relative_posix
from ledger.sources.files import InputError
from ledger.sources.shape import BundleError
from reconcile.reconcile import Claim
from reconcile.report import CorpusReport, run_json, text_lines
from reconcile.trials import (
    Evaluator,
    UnreadableBundle,
    graded_values,
    never_ran,
    trace_evaluator,
)
from replay.timeline.trial_inputs import TrialInputsError, trial_inputs
from schemas.canonical import digest
from schemas.envelope import StoredEvent
from schemas.errors import UsageError


@dataclass(frozen=True, kw_only=True)
class ReconcileRequest:
    """One ``vledger reconcile`` as asked (its flags); what every step below reads."""

    packs: Sequence[Path]
    base: Path
    source: Path | None = None
    allow_outside: Sequence[Path] = ()  # --allow-outside: grading files a pack may name outside it
    dry_run: bool = False
    engine: str = "local"  # where the candidate projection runs (ledger.engines)
    address: str | None = None
    # processes reading the corpora (default: the cores available), and a local Ray's CPUs
    workers: int | None = None
    full: bool = False  # observe every trial even where an earlier run's can be carried
    from_ledger: bool = False  # the declared corpora as the ledger holds them (reconcile_read)
    # progress (reconcile_read.Ticks): the trials to read so far, and each one read
    on_total: Callable[[int], None] | None = field(default=None, compare=False)
    on_done: Callable[[int], None] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        check_address(self.engine, self.address)
        if self.from_ledger and (self.dry_run or self.source is not None):
            flag = "--dry-run" if self.dry_run else "--source"
            raise UsageError(
                f"--from-ledger reads the declared corpora from the ledger; drop {flag}"
            )
        if self.engine != "local" and self.dry_run:
            raise UsageError("--engine ray reads the ledger's sealed segments; drop --dry-run")


@dataclass(frozen=True)
class ReconcileResult(Result):
    reports: list[CorpusReport]
    document: dict[str, Any]  # ``--json``; a recorded run adds its ``receipt``
    inputs_digest: str
    exit_code: int
    config: dict[str, Any] = field(default_factory=dict)  # what a receipt needs to recompute
    packs: tuple[Path, ...] = ()  # the directories searched for packs
    default_packs: bool = False  # no packs were given: ./corpora/packs was searched
    config_digest: str = ""  # what an extending run must share (ledger.app.reconcile_extend)
    extends: Base | None = None  # the run whose observations were carried forward
    kept: KeptWriter | None = None  # this run's observations, for the next run to carry
    carried: int = 0  # bundles whose earlier observation was carried forward
    evaluated: int = 0  # bundles observed from the ledger

    def to_json(self) -> dict[str, Any]:
        return self.document

    def text(self) -> str:
        """The reports as the command prints them (``reconcile.report.render_text``)."""
        return "".join(self.text_lines())

    def text_lines(self) -> Iterator[str]:
        """:meth:`text` a line at a time (each ending in a newline): a row per trial is
        rendered as it is written, not held."""
        return (f"{line}\n" for report in self.reports for line in text_lines(report))


class NoPacks(UsageError, ReconcileError):
    """No packs were given and the default directory does not exist (exit 2: usage)."""


def default_packs() -> Path:
    """``./corpora/packs`` when it exists, else a refusal naming what to pass."""
    if not DEFAULT_PACKS.is_dir():
        raise NoPacks(
            f"no --packs given and no ./{DEFAULT_PACKS} here; pass --packs DIR, the directory "
            "holding your task packs and their migration.yaml"
        )
    return DEFAULT_PACKS


def reconcile(
    *, packs: Sequence[Path] = (), source: Path | None = None, base: Path | None = None,
    dry_run: bool = False, engine: str = "local", address: str | None = None,
    workers: int | None = None,
    allow_outside: Sequence[Path] = (), ledger: LedgerArg = None, full: bool = False,
    from_ledger: bool = False, on_total: Callable[[int], None] | None = None,
    on_done: Callable[[int], None] | None = None,
) -> ReconcileResult:  # fmt: skip
    """``vledger reconcile``: every declared migration (or the claims behind ``source``'s
    trials) reconciled; unless ``dry_run``, recorded in ``ledger`` with a receipt, carrying
    forward the observations of an earlier run with the same inputs unless ``full``
    (docs/readme/reconcile.md § Catching up); ``from_ledger``: the declared corpora as the
    ledger holds them, nothing on disk read but the packs. ``on_total`` / ``on_done`` report
    progress (the trials to read so far; each one read); they change nothing else."""
    request = ReconcileRequest(
        packs=tuple(Path(p) for p in packs) or (default_packs(),),
        base=Path(base) if base is not None else Path.cwd(),
        source=None if source is None else Path(source),
        allow_outside=tuple(Path(p) for p in allow_outside),
        dry_run=dry_run, engine=engine, address=address, workers=workers, full=full,
        from_ledger=from_ledger, on_total=on_total, on_done=on_done,
    )  # fmt: skip
    # a dry run writes nothing, so it reads no ledger: the folds run in memory
    result = run_reconcile(request) if request.dry_run else run_recorded(request, ledger)
    return dataclasses.replace(result, packs=tuple(request.packs), default_packs=not packs)


def run_recorded(request: ReconcileRequest, ledger: LedgerArg) -> ReconcileResult:
    """Ingest, reconcile from the ledger, append the receipt — one open ledger throughout."""
    where = ledger_path(ledger)
    with ExitStack() as stack:
        try:
            lg = stack.enter_context(opened(ledger))
        except (LedgerError, OSError) as exc:
            if isinstance(exc, LedgerError) and is_ledger_dir(where):
                raise  # there, but held (busy, exit 3), unreadable or damaged: named as such
            msg = f"no ledger to record into at {where} ({exc}) — create it, or pass --dry-run"
            raise ReconcileError(msg) from None
        evaluator = None
        if request.engine != "local":  # candidates computed on the engine, the rest here
            from ledger.engines.reconcile_ray import engine_evaluator  # noqa: PLC0415

            cpus = request.workers or DEFAULT_RECONCILE_WORKERS
            eng = get_engine(request.engine, workers=cpus, address=request.address)
            try:
                evaluator = engine_evaluator(request, lg, eng)
            except (EngineError, LedgerError) as exc:
                raise ReconcileError(f"{exc}; nothing was appended") from None
        result = run_reconcile(request, lg, evaluator)
        run_id = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
        assert result.kept is not None
        try:
            result.document["receipt"] = append_receipt(lg, result, run_id=run_id)
        except LedgerError as exc:
            result.kept.discard()
            raise ReconcileError(
                f"could not append reconcile.completed to {where}: {exc}"
            ) from None
        except BaseException:  # interrupted: no half-written file left beside the log
            result.kept.discard()
            raise
        receipt = result.document["receipt"]
        trailer = {"run_id": run_id, "seq": lg.size() - 1, **receipt["checkpoint"],
                   "outputs_digest": receipt["outputs_digest"],
                   "observations": result.kept.hasher.digest()}  # fmt: skip
        result.kept.keep(lg, result.config_digest, trailer)
    return result


def _read_corpus(
    ctx: Context, root: Path, shown: str, corpus_value: str | None, claims: Sequence[Claim] = ()
) -> Read:
    """Every bundle under ``root``: a readable trial, an unreadable row or an exclusion; a
    bundle whose earlier observation still holds is carried forward (``ctx.prior``); on a
    real run, one read again is kept as its observation's values (``settled``)."""
    claimed = {t for c in claims for t in c.task_ids}
    gated: set[tuple[str, str]] = set()
    bundles = discover_bundles(root)
    if not bundles:
        raise ReconcileError(f"no bundle under {root} (a bundle directly holds trajectory.yaml)")
    corpus = root.resolve().name
    base = ctx.base.resolve()
    resolve = Resolver()  # each resolved once, through its parent: a corpus has many
    reals = [resolve(d) for d in bundles]
    labels = {r: display_path(d, base, r, base) for d, r in zip(bundles, reals, strict=True)}
    ingested = None
    if ctx.ledger is not None:
        ingested = Ingested.of(ctx.ledger, root, ctx.prior, shown, labels.get, ctx.workers,
                               ctx.ingested.get(root.resolve()), ctx.ticks.follow())  # fmt: skip
    out = Read(shown, corpus_value)
    manifests: dict[Path, Corpus] = {}
    ctx.ticks.more(len(bundles) - (0 if ingested is None else len(ingested.carried)))
    for directory, real in zip(bundles, reals, strict=True):
        trial = labels[real]
        kept = None if ingested is None else ingested.carried.get(real)
        if kept is None:
            ctx.ticks.done()
        try:
            if kept is not None:
                stream, stream_digest, inputs = kept.stream, kept.stream_digest, kept
            else:
                stream, stream_digest, inputs = trial_inputs_of(
                    directory, trial, corpus, manifests, ingested
                )
            if kept is None and ingested is not None and real in ingested.planned:
                out.planned[trial] = ingested.planned[real]  # a carried one has its own
            if kept is not None:
                out.carried[trial] = kept
            if kept.excluded if kept is not None else never_ran(inputs):
                out.excluded.append((trial, NEVER_RAN))
                continue
            if kept is None and ingested is None:
                graded_values(inputs)  # unreadable here, not halfway through reconciling
            elif kept is None:  # as unreadable here; the events' folding let go
                inputs = settled(inputs, trial, stream, ctx, claimed, gated)
        except (BundleError, InputError, TrialInputsError, UnreadableBundle) as exc:
            out.unreadable.append((trial, str(exc)))
            continue
        relative = relative_posix(directory, root)
        keys = {trial, relative}
        if corpus_value is not None:
            keys.add(f"{corpus_value.rstrip('/')}/{relative}")
        out.trials.append((TrialRef(trial, stream, tuple(sorted(keys))), inputs))
        out.digests.append(stream_digest)
    return out


def run_reconcile(
    inv: ReconcileRequest, ledger: Any | None = None, evaluator: Evaluator | None = None
) -> ReconcileResult:
    """Every report the request asks for, their JSON document and the exit code.

    With ``ledger`` (an open one) each corpus is ingested first and every trial is read
    back from its stream, carrying forward the observations of an earlier run with the same
    config digest unless ``inv.full``; without, nothing is written. ``evaluator`` labels
    the candidates (default: :func:`trace_evaluator`, here).
    """
    packs = find_packs(inv.packs, inv.base, inv.allow_outside)
    claims = pool_claims(packs)
    with gc_paused():  # per-trial values, acyclic: rescanned as they pile up, not freed
        return _reconciled(inv, packs, claims, ledger, evaluator)


def _reconciled(
    inv: ReconcileRequest, packs: list[Pack], claims: list[tuple[str, Claim]], ledger: Any | None,
    evaluator: Evaluator | None,
) -> ReconcileResult:  # fmt: skip
    # every step sees each corpus as one listing showed it, each path resolved once; both
    # (a path per bundle) let go once the corpora are read
    with one_listing(), one_resolver():
        ctx, config_id, reads = _read_all(inv, packs, claims, ledger, evaluator)
    base = None if ctx.prior is None else ctx.prior()
    if base is not None:  # what no bundle of this run named (the carried: held by the reads)
        base.records.clear()
    reports = [corpus_report(ctx, read, mine) for read, mine in reads]
    digests = [f"pack:{p.directory}={p.digest}" for p in packs]
    digests += [d for read, _ in reads for d in read.input_digests()]
    document = run_json(reports)
    config = {
        "packs_searched": list(ctx.roots),
        "packs": [p.document(str(p.directory)) for p in packs],
        "corpora": [read.record() for read, _ in reads],
    }
    inputs = digest(sorted(digests))
    kept = None
    if ledger is not None:
        reader = None if base is None else base.reader
        kept = KeptWriter(ledger, reader)
        for source, trial, observed in kept_records(read for read, _ in reads):
            kept.add(source, trial, observed)
        if reader is not None:  # the carried ones' lines copied as read, counted ones too
            counted = [r.counted for r, _ in reads if r.counted is not None]
            kept.finish(counted, reader.hasher.digest())
        kept.note_streams({read.source: read.rows() for read, _ in reads if read.held})
    if base is not None:
        base.close()
    carried = sum(len(read.carried) + read.carried_counted() + read.carried_lazy()
                  for read, _ in reads)  # fmt: skip
    bundles = sum(r.rows() for r, _ in reads)
    return ReconcileResult(reports, document, inputs, document["exit_code"], config,
                           config_digest=config_id, extends=base, kept=kept,
                           carried=carried, evaluated=bundles - carried)  # fmt: skip


def _read_all(
    inv: ReconcileRequest, packs: list[Pack], claims: list[tuple[str, Claim]], ledger: Any | None,
    evaluator: Evaluator | None,
) -> tuple[Context, str, list[tuple[Read, list[Claim]]]]:  # fmt: skip
    """The run's context, its config digest and every corpus as read (ingested first)."""
    corpora = load_declarations(packs, inv.base, held=inv.from_ledger)
    roots = tuple(str(p) for p in inv.packs)
    selection = {  # the files it names, not their spelling: another spelling still extends
        "packs_searched": [str(p.resolve()) for p in inv.packs],
        "packs": [p.document(str(p.directory)) for p in packs],
        "base": str(inv.base.resolve()),
        "source": None if inv.source is None else str(inv.source.resolve()),
        "corpora": sorted(
            (v, str(Path(corpora[v].resolved).resolve())) for v in {v for v, _ in claims}
        ),  # fmt: skip
        **({"from_ledger": {v: flat(Path(corpora[v].resolved)) for v, _ in claims}}
           if inv.from_ledger else {}),  # fmt: skip
    }
    config_id = config_digest(selection)
    covered = None  # read from the ledger: a trial of a task no claim covers is only counted
    if inv.from_ledger:
        covered = {v: frozenset(t for w, c in claims if w == v for t in c.task_ids)
                   for v, _ in claims}  # fmt: skip
    prior = None if ledger is None or inv.full else LazyBase(ledger, config_id, covered)
    ctx = Context(inv.base, packs_by_task(packs), evaluator or trace_evaluator(), roots, ledger,
                   prior, inv.workers, getattr(evaluator, "ingested", {}),
                   Ticks(inv.on_total, inv.on_done))  # fmt: skip
    reads: list[tuple[Read, list[Claim]]] = []
    if inv.source is not None:
        shown = display_path(inv.source, inv.base)
        every = [c for _, c in claims]
        reads.append((_read_corpus(ctx, inv.source, shown, None, every), every))
    else:
        for value in sorted({v for v, _ in claims}):
            root, mine = Path(corpora[value].resolved), [c for v, c in claims if v == value]
            if inv.from_ledger:  # under the name ingest gives the directory
                reads.append((read_held(ctx, value, root.resolve(), mine), mine))
            else:
                reads.append((_read_corpus(ctx, root, value, value, mine), mine))
    return ctx, config_id, reads


def recompute_reconcile(lg: Any, ev: StoredEvent) -> str:
    """The outputs digest of a recorded reconciliation, redone from the log prefix its
    receipt read and the packs it recorded — no file on disk is opened."""
    payload = ev.data()
    config = payload["config"]
    size = payload["receipt"]["checkpoint"]["size"]
    packs = [pack_from(d["directory"], d["task_id"], d["grading"], d["migration"],
                       d["migration"] is not None) for d in config["packs"]]  # fmt: skip
    claims = pool_claims(packs)
    ctx = Context(
        Path("."), packs_by_task(packs), trace_evaluator(), tuple(config["packs_searched"]), lg
    )
    reports = []
    for record in config["corpora"]:
        read = Read(record["source"], record["corpus_value"])
        if "held" in record:  # read from the ledger: every stream of the corpus in the prefix
            read = recompute_held(lg, record, size)
        for trial, stream, keys in record.get("trials", ()):
            events = list(lg.read(stream=stream, to_seq=size - 1)) if size else []
            read.trials.append((TrialRef(trial, stream, tuple(keys)), trial_inputs(events)))
        read.unreadable += [tuple(u) for u in record.get("unreadable", ())]
        read.excluded += [tuple(x) for x in record.get("excluded", ())]
        value = record["corpus_value"]
        mine = [c for v, c in claims if value is None or v == value]
        reports.append(corpus_report(ctx, read, mine))
    return digest(run_json(reports))
