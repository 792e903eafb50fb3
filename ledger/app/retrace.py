"""``retrace`` at the ledger seam: read trials, run the pure projection, append the results.

The projection (``replay.grading.retrace.retrace_trial``) takes one trial's events and returns
values. Every flag of ``vledger retrace`` becomes one :class:`RetraceRequest`, which picks
the engine (``ledger.engines``; a trial is never split), the trial selection and the
config record; the results are appended as one ``grade.replayed`` per trial plus one
``replay.completed`` receipt: the checkpoint read (tree size + root), the config digest
and the outputs digest.

Example::

    result = ledger.retrace(ledger=".vledger", corpus="notes_duplicate_check")
    print(result.to_json()["evidence"], result.exit_code)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain, islice
from pathlib import Path
from typing import Any

from ledger.app.context import LedgerArg, opened
from ledger.app.replay_results import (
    ListHasher,
    Tally,
    discard_results,
    keep_results,
    new_results,
    output_row,
)
from ledger.app.result import Result, with_request_keywords
from ledger.app.retrace_extend import Extension, Run, extended_run, find_base, recomputed_outcomes
from ledger.defaults import DEFAULT_MAX_RETRIES, DEFAULT_WORKERS
from ledger.engines import check_address, get_engine
from ledger.engines.base import Engine, EngineError, Progress, TrialSelection
from ledger.engines.parked import Parked
from ledger.errors import LedgerError
from ledger.log.store import Ledger
from ledger.sources.files import InputError
from replay.grading.grade import GRADING_VERSION
from replay.grading.retrace import Override, TrialRetrace, retrace_trial, unreadable_bundle
from replay.grading.retrace_report import RetraceReportError, build_report
from replay.grading.rules import GradingConfigError, load_grading_config
from replay.timeline.build import TIMELINE_VERSION
from replay.trace_checks import TRACE_CHECKS_VERSION
from replay.trace_checks.rules import TraceChecksConfigError, load_trace_checks
from schemas.canonical import digest
from schemas.envelope import NewEvent, StoredEvent
from schemas.errors import FAILED, OK
from schemas.retrace_status import RetraceStatus
from schemas.views import Mapped

PROJECTION_VERSION = f"retrace/1 ({GRADING_VERSION}, {TIMELINE_VERSION}, {TRACE_CHECKS_VERSION})"


class RetraceError(LedgerError):
    """A retrace that cannot start: bad replacement config, no trials, two blocks per task."""


@dataclass(frozen=True, kw_only=True)
class RetraceRequest:
    """One ``vledger retrace`` as asked (its flags): what flows to the engine and the receipt.

    The one declaration of retrace's options: :func:`retrace` takes exactly these keywords
    (its signature is built from these fields), and the command's flags are their names."""

    corpus: str | None = None
    source: Path | None = None
    task: str | None = None
    constraints_file: Path | None = None
    grading_file: Path | None = None
    engine: str | Engine = "local"  # a name, or an engine built by the caller
    address: str | None = None
    max_retries: int = DEFAULT_MAX_RETRIES
    segment_rows: int | None = None
    segment_bytes: int | None = None
    workers: int = DEFAULT_WORKERS
    dry_run: bool = False
    full: bool = False  # re-derive every trial even where an earlier replay can be extended
    # the API's only: processes reading ``source`` (None: the cores available); the
    # result is the same for any number
    read_workers: int | None = None

    def __post_init__(self) -> None:
        check_address(self.engine, self.address)

    def make_engine(self) -> Engine:
        if not isinstance(self.engine, str):
            return self.engine
        return get_engine(  # the local engine takes only workers
            self.engine, workers=self.workers, address=self.address, max_retries=self.max_retries,
            seal=not self.dry_run,  # a dry run writes nothing, not even segments
            segment_rows=self.segment_rows, segment_bytes=self.segment_bytes,
        )  # fmt: skip

    def selection(self, size: int, streams: frozenset[str] | None) -> TrialSelection:
        return TrialSelection(to_seq=size - 1, corpus=self.corpus, task=self.task, streams=streams)

    def config_record(self, override: dict[str, Any], streams: frozenset[str] | None) -> dict:
        """What the receipt binds: enough for :func:`recompute_replay` to redo the run."""
        return {
            "projection_version": PROJECTION_VERSION,
            "corpus": self.corpus,
            "task": self.task,
            "streams": None if streams is None else sorted(streams),
            "override": override,
        }


@dataclass(frozen=True)
class RetraceResult(Result):
    report: dict[str, Any]
    exit_code: int
    appended: int
    # for a summary without reading every trial's row back: the count of each status, and
    # the rows of the trials that disagreed or could not be re-checked, in trial order
    statuses: dict[str, int] = field(default_factory=dict)
    notable: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        # the per-trial rows are a view of outcomes parked on disk: a list for JSON
        return {**self.report, "trials": list(self.report["trials"])}


# ------------------------------------------------------------------ replacement configs


def load_override_source(
    grading_file: Path | None, constraints_file: Path | None
) -> dict[str, Any]:
    """The replacement blocks as parsed from their files (kept raw so a receipt can be
    recomputed by loading them again with the same loaders)."""
    if grading_file is not None and constraints_file is not None:
        raise RetraceError(
            "--grading and --constraints both replace the trace_checks block; pass one "
            "(put the constraints inside the grading file's trace_checks: key)"
        )
    source: dict[str, Any] = {"grading": None, "constraints": None}  # None: no file; empty: {}
    if grading_file is not None:
        source["grading"] = {} if (data := _read(grading_file)) is None else data
    if constraints_file is not None:
        data = _read(constraints_file)
        if isinstance(data, dict) and "trace_checks" in data:
            data = data["trace_checks"]  # a grading document: take its block, nothing else
        source["constraints"] = {} if data is None else data
    return source


def _read(path: Path) -> Any:
    from ledger.sources.yaml_safe import load_yaml  # noqa: PLC0415 - only a replacement is read

    try:  # the one bounded reader: a device, FIFO or oversize file is refused by name
        return load_yaml(Path(path))
    except InputError as exc:  # names the file (and line) itself
        raise RetraceError(str(exc)) from None
    except OSError as exc:
        raise RetraceError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except Exception as exc:  # the YAML loader's own typed errors name line and column
        raise RetraceError(f"{path}: {exc}") from None


def override_from_source(source: dict[str, Any], label: str = "") -> Override:
    """Validate the replacement blocks with the same load-time rules a pack meets."""
    try:
        grading = (
            None
            if source.get("grading") is None
            else load_grading_config(source["grading"], file=label or "--grading")
        )
        constraints = (
            None if source.get("constraints") is None else load_trace_checks(source["constraints"])
        )
    except (GradingConfigError, TraceChecksConfigError) as exc:
        raise RetraceError(
            f"{label or 'the replacement config'} fails the load-time rules; nothing was "
            f"re-checked:\n{exc}"
        ) from None
    return Override(grading=grading, trace_checks=constraints)


# ------------------------------------------------------------------ reading and running


def outputs_digest(outcomes: Iterable[TrialRetrace]) -> str:
    """The digest a receipt binds: every trial's status, differences and replayed grade.

    The canonical JSON of the list of rows, hashed row by row as it is written (no list
    of every row in memory): the bytes, so the digest, are those of ``digest(rows)``."""
    hasher = ListHasher()
    for o in outcomes:
        hasher.add(output_row(o))
    return hasher.digest()


@dataclass(frozen=True)
class ReplayIds:
    """What names a replay before its outcomes are known: its id, stream and config."""

    replay_id: str
    stream: str
    config: dict[str, Any]
    config_digest: str

    @staticmethod
    def of(config: dict[str, Any], size: int) -> ReplayIds:
        config_digest = digest(config)
        # The id binds the log size read, so a second identical run (which reads the first
        # run's events too) is a second replay in the history, never a silent duplicate.
        replay_id = "replay-" + digest({"config": config_digest, "size": size})[7:23]
        # Replays live on their own stream, never on a trial's: the trial stream stays
        # exactly what ingest recorded, so re-ingesting the same bundle still appends nothing.
        return ReplayIds(replay_id, f"replay/{replay_id}", config, config_digest)


def replayed_events(ids: ReplayIds, outcomes: Iterable[TrialRetrace]) -> Iterator[NewEvent]:
    """One grade.replayed per re-derived trial, as the outcomes are read."""
    for o in outcomes:
        if o.replayed is None:
            continue
        payload = {
            "trial": o.trial,
            "task_id": o.task_id,
            "replay_id": ids.replay_id,
            "projection_version": PROJECTION_VERSION,
            "config_digest": ids.config_digest,
            "status": o.status,
            "differences": [d.as_json() for d in o.differences],
            "grade": o.replayed,
        }
        yield NewEvent(ids.stream, "grade.replayed", payload, f"{ids.replay_id}:{o.trial}")


def completed_event(
    ids: ReplayIds, report: Mapping[str, Any], statuses: dict[str, int], size: int,
    root: bytes, out_digest: str, extension: Extension | None = None,
) -> NewEvent:  # fmt: skip
    """The replay.completed receipt: the checkpoint read, the config and outputs digests;
    for a replay that extends another, that replay and its tree head (``extends``) and how
    many trials were carried forward from it or evaluated."""
    summary = {k: report[k] for k in ("constraints", "paths", "evidence")}
    summary["statuses"] = statuses
    payload = {
        "replay_id": ids.replay_id,
        "projection_version": PROJECTION_VERSION,
        "config": ids.config,
        "summary": summary,
        "receipt": {
            "checkpoint": {"size": size, "root": root.hex()},
            "config_digest": ids.config_digest,
            "outputs_digest": out_digest,
        },
    }
    if extension is not None:
        payload["receipt"]["extends"] = extension.base.link()
        payload["receipt"]["carried"] = extension.carried
        payload["receipt"]["evaluated"] = extension.evaluated
    return NewEvent(ids.stream, "replay.completed", payload, f"{ids.replay_id}:completed")


def replay_events(
    outcomes: Sequence[TrialRetrace],
    report: Mapping[str, Any],
    config: dict[str, Any],
    size: int,
    root: bytes,
) -> list[NewEvent]:
    """One grade.replayed per re-derived trial and the replay.completed receipt, as one
    list (:func:`run_retrace` streams the same events instead)."""
    ids = ReplayIds.of(config, size)
    digest_ = outputs_digest(outcomes)
    done = completed_event(ids, report, _status_counts(outcomes), size, root, digest_)
    return [*replayed_events(ids, outcomes), done]


def _status_counts(outcomes: Iterable[TrialRetrace]) -> dict[str, int]:
    tally = Tally()
    for o in outcomes:
        tally.take(o)
    return tally.statuses


def _append_replay(lg: Any, events: Iterable[NewEvent], completed: NewEvent) -> Any:
    """Append the replay as one atomic batch; a store that takes it in parts
    (``append_parts``) never holds every grade.replayed at once."""
    parts = getattr(lg, "append_parts", None)
    if parts is None:
        return lg.append([*events, completed])
    return parts(_chunks(chain(events, [completed]), REPLAY_PART))


REPLAY_PART = 1024  # grade.replayed events prepared and inserted at a time


def _chunks(items: Iterable[NewEvent], n: int) -> Iterator[list[NewEvent]]:
    it = iter(items)
    while chunk := list(islice(it, n)):
        yield chunk


def retrace(
    *, ledger: LedgerArg = None, on_ingest: Callable[[str], None] | None = None,
    on_total: Progress | None = None, on_done: Progress | None = None, **options: Any,
) -> RetraceResult:  # fmt: skip
    """``vledger retrace``: re-derive every matching trial's grade; append the replay unless dry.

    ``options`` are :class:`RetraceRequest`'s fields (``corpus``, ``source``, ``task``,
    ``constraints_file``, ``grading_file``, ``engine``, ``address``, ``workers``, …). With
    ``source`` the path is ingested first (``on_ingest`` gets the summary line; a dry run
    ingests into a throwaway in-memory log) and exactly its trials are retraced. It is
    read as ``ingest`` reads, in ``read_workers`` local processes (default: the cores
    available), whatever engine then runs the projection with its ``workers``.
    A run whose inputs match an earlier replay's extends it, evaluating only trials new or
    changed since (``ledger.app.retrace_extend``; ``full``: all); ``on_*`` report progress.
    """
    request = RetraceRequest(**options)
    if request.source is None:
        # a local dry run only reads (the ray engine seals the tail it reads)
        with opened(ledger, read_only=request.dry_run and request.engine == "local") as lg:
            return run_retrace(lg, request, on_total=on_total, on_done=on_done)
    from ledger.app.ingest import IngestError, ingest_into  # noqa: PLC0415 - only --source ingests
    from ledger.app.retrace_source import SourceOutcomes, derive_outcome  # noqa: PLC0415

    # the replacement config is checked before anything is read, and with the local
    # engine each new trial is projected where its bundle is read (ledger.app.retrace_source)
    label = str(request.grading_file or request.constraints_file or "")
    override = override_from_source(
        load_override_source(request.grading_file, request.constraints_file), label
    )
    found = SourceOutcomes() if request.engine == "local" else None
    derive = None if found is None else (derive_outcome, (override, request.selection(0, None)))
    if request.dry_run:
        from ledger.log.memory_store import MemoryLedger  # noqa: PLC0415

        store: Any = MemoryLedger()
    else:
        store = opened(ledger, create=True)
    with store as lg:
        try:
            # A bundle that cannot be read is a named failure of the batch (exit 1),
            # never a reason to leave the readable ones unmeasured.
            rep = ingest_into(
                lg, [str(request.source)], request.corpus, skip_bad=True,
                workers=request.read_workers,
                derive=derive, on_derived=None if found is None else found.add,
            )  # fmt: skip
        except IngestError as exc:
            raise RetraceError(str(exc)) from None
        if on_ingest:
            on_ingest(rep.summary())
        streams = frozenset(rep.trial_streams)
        try:
            return run_retrace(
                lg, request, streams, rep.skipped, on_total=on_total, on_done=on_done,
                precomputed=found,
            )  # fmt: skip
        finally:
            if found is not None:
                found.close()


retrace.__signature__ = with_request_keywords(retrace, RetraceRequest)  # type: ignore[attr-defined]


def run_retrace(
    lg: Ledger,
    request: RetraceRequest,
    streams: frozenset[str] | None = None,
    unreadable: Sequence[Mapping[str, Any]] = (),
    *,
    on_total: Progress | None = None,
    on_done: Progress | None = None,
    precomputed: Any = None,
) -> RetraceResult:
    """The retrace over an open log: ``streams`` (and the ``unreadable`` bundles) are what
    an ingested ``--source`` held; ``precomputed`` (a ``SourceOutcomes``) the outcomes of
    those its reading already projected. The appends happen here, on the driver, only
    after every trial has a result."""
    source = load_override_source(request.grading_file, request.constraints_file)
    label = str(request.grading_file or request.constraints_file or "")
    override = override_from_source(source, label)
    size = lg.size()
    config = request.config_record(source, streams)
    ids = ReplayIds.of(config, size)
    select = request.selection(size, streams)
    tail = [unreadable_bundle(str(u["source"]), str(u["reason"]))
            for u in sorted(unreadable, key=lambda u: str(u["source"]))]  # fmt: skip
    progress = {"on_total": on_total, "on_done": on_done}
    base = None if request.full else find_base(lg, config, ids.config_digest, size)
    run = None
    if base is not None:
        run = extended_run(lg, base, select, override, tail, progress, keep=not request.dry_run)
        if run is not None and not run.outcomes:
            raise _no_trials(request)
    if run is None:
        run = _full_run(lg, request, select, override, tail, progress, precomputed)
    writer, report = run.tally.writer, run.report
    try:
        root = lg.root(size)
        done = completed_event(
            ids, report, run.tally.statuses, size, root, run.tally.hasher.digest(), run.ext
        )  # fmt: skip
        report["replay_id"] = ids.replay_id
        report["receipt"] = done.payload["receipt"]
        report["dry_run"] = request.dry_run
        appended = 0
        if not request.dry_run:
            fresh = run.outcomes if run.ext is None else run.ext.fresh
            added = _append_replay(lg, replayed_events(ids, fresh), done)
            appended = added.appended
            if writer is not None:  # kept for the next retrace with these inputs to extend
                writer.finish({
                    "replay_id": ids.replay_id, "seq": added.last_seq, "size": size,
                    "root": root.hex(), "config_digest": ids.config_digest,
                    "outputs_digest": done.payload["receipt"]["outputs_digest"],
                })  # fmt: skip
                keep_results(lg, ids.config_digest, writer)
    finally:
        if writer is not None:
            discard_results(writer)  # a no-op once kept
    failed = run.tally.statuses[RetraceStatus.NOT_RECHECKED] > 0
    # results are 0 whatever they say; a trial that could not be re-checked is 1
    report["exit_code"] = FAILED if failed else OK
    return RetraceResult(
        report, report["exit_code"], appended, dict(run.tally.statuses), run.tally.notable
    )


def _full_run(
    lg: Ledger, request: RetraceRequest, select: TrialSelection, override: Override,
    tail: Sequence[TrialRetrace], progress: dict[str, Progress | None], precomputed: Any = None,
) -> Run:  # fmt: skip
    try:
        outcomes = _parked_outcomes(request.make_engine(), lg, select, override, tail,
                                    precomputed, **progress)  # fmt: skip
    except EngineError as exc:
        raise RetraceError(f"{exc}; nothing was appended") from None
    if not outcomes:
        raise _no_trials(request)
    # a run that appends keeps its results, for the next one with these inputs to extend
    tally = Tally(None if request.dry_run else new_results(lg, keep=True))
    try:  # one pass over the parked outcomes; the per-trial rows are a view of them
        report = build_report(map(tally.take, outcomes), Mapped(outcomes, TrialRetrace.as_dict))
    except RetraceReportError as exc:
        if tally.writer is not None:
            discard_results(tally.writer)
        raise RetraceError(str(exc)) from None
    return Run(report, tally, outcomes)


def _no_trials(request: RetraceRequest) -> RetraceError:
    given = (("corpus", request.corpus), ("task", request.task))
    where = " ".join(f"--{k} {v or repr(v)}" for k, v in given if v is not None)
    return RetraceError(
        f"no trial in the ledger{' matches ' + where if where else ''}; ingest some first "
        "(`vledger ingest PATH`) or pass --source PATH"
    )


def _parked_outcomes(
    engine: Engine, lg: Ledger, select: TrialSelection, override: Override,
    tail: Sequence[TrialRetrace], precomputed: Any = None, **progress: Progress | None,
) -> Parked:  # fmt: skip
    """Every selected trial's outcome in stream order, then ``tail``: parked on disk as the
    engine computes them (an engine that streams them, ``iter_trials``, never holds all).
    The trials ``precomputed`` settles are not read back from the log."""
    stream = getattr(engine, "iter_trials", None) or engine.map_trials
    if precomputed is None or select.streams is None:
        return Parked(stream(lg, select, retrace_trial, override, **progress), tail)
    done = precomputed.pairs(progress.get("on_done"))
    rest = select.streams - precomputed.decided
    if not rest:  # every trial was projected as it was read: the log is not read back
        return Parked(done, tail)
    rest_select = dataclasses.replace(select, streams=frozenset(rest))
    return Parked(chain(done, stream(lg, rest_select, retrace_trial, override, **progress)), tail)


def recompute_replay(lg: Ledger, ev: StoredEvent) -> str:
    """Re-run a recorded replay over the log prefix its receipt names; its outputs digest.

    A replay that extended another is recomputed as it was made: the replay it extends,
    recomputed and checked against that replay's receipt, then the trials changed since."""

    def full(select: TrialSelection, override: Override) -> Parked:
        return _parked_outcomes(RetraceRequest().make_engine(), lg, select, override, ())

    return outputs_digest(recomputed_outcomes(lg, ev, _recorded_inputs, full))


def _recorded_inputs(ev: StoredEvent) -> tuple[Override, TrialSelection]:
    """The replacement config and trial selection a replay.completed event records."""
    payload = ev.data()
    config = payload["config"]
    size = payload["receipt"]["checkpoint"]["size"]
    streams = config.get("streams")
    request = RetraceRequest(corpus=config.get("corpus"), task=config.get("task"))
    select = request.selection(size, None if streams is None else frozenset(streams))
    return override_from_source(config["override"]), select
