"""``curate``: a judge-labelled corpus from run directories or from the log (the I/O side).

Two doors, one rule (``replay.receipts.curation``): run directories through the one importer
(``plan_bundle``), the log as events; either way each trial is read as ``retrace`` reads it
(``replay.timeline.trial_inputs``) and rendered by ``bundle_files``, so both doors write the same
bytes. Destination rules, the rename into place and the ``corpus.curated`` event:
docs/readme/curate.md (RUBRIC_MIGRATION.md, "Building a corpus").
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from ledger.analytics import sql as analytics
from ledger.app.context import LedgerArg, default_ledger_path, ledger_path
from ledger.app.curate_kept import kept_bundles
from ledger.app.ingest_read import CHUNK, POOL_FROM, gc_paused, pool_size
from ledger.app.result import Result
from ledger.engines import get_engine
from ledger.engines.trials import group_trials
from ledger.log.store import open_ledger
from ledger.sources.detect import discover_bundles
from ledger.sources.export_bundle import BundleExportError, bundle_files
from ledger.sources.files import InputError
from ledger.sources.in_memory import as_stored, plan_bundle
from ledger.sources.plan import escape
from ledger.sources.shape import BundleError
from ledger.sources.tolokaforge import in_run_layout
from replay.receipts.curation import Candidate, Curation, CurationError, recorded_location
from replay.receipts.curation import curate as curate_trials
from replay.timeline.trial_inputs import TrialInputsError, trial_inputs
from schemas.canonical import canonical_json
from schemas.curation import MANIFEST_FILE, CorpusCurated
from schemas.envelope import NewEvent, StoredEvent
from schemas.errors import FAILED, OK, UsageError

try:
    _ManifestDumper: type = yaml.CSafeDumper
except AttributeError:  # pragma: no cover - libyaml missing
    _ManifestDumper = yaml.SafeDumper

__all__ = ["CurateRequest", "CurateResult", "CurationError", "curate"]

EVENT_TYPE = "corpus.curated"
# what the rule and the renderer read; timeline events are derived and not needed here
_TRIAL_TYPES = (
    "trial.registered", "trial.message", "trial.agent_message", "trial.tool_call",
    "trial.ended", "grade.recorded",
)  # fmt: skip


class CurateUsage(UsageError, CurationError):
    """A request refused as usage (exit 2): the two doors, mixed."""


@dataclass(frozen=True, kw_only=True)
class CurateRequest:
    """One ``vledger curate`` as asked (its flags): what the curation reads and records."""

    criterion: str
    into: Path
    sources: tuple[Path, ...] = ()
    from_ledger: bool = False
    where: str | None = None  # an SQL predicate over the trials view (--from-ledger)
    exclusions: Mapping[str, str] = field(default_factory=dict)  # bundle or trial -> reason
    replace: bool = False
    dry_run: bool = False
    ledger: Path = field(default_factory=default_ledger_path)
    workers: int | None = None  # processes reading the run directories (None: the cores)
    full: bool = False  # --from-ledger: render every bundle again, none kept (curate_kept)

    def __post_init__(self) -> None:
        if self.from_ledger == bool(self.sources):
            raise CurateUsage("give --source RUN_OR_BUNDLE… or --from-ledger (one of the two)")
        if self.where is not None and not self.from_ledger:
            raise CurateUsage("--where filters the log's trials view; it needs --from-ledger")

    @property
    def origin(self) -> str:
        return "ledger" if self.from_ledger else "runs"


@dataclass(frozen=True)
class CurateResult(Result):
    """What one curation classified, wrote and appended; ``to_json()`` is ``--json``."""

    request: CurateRequest
    curation: Curation
    manifest_bytes: bytes
    streams: Mapping[str, str] = field(default_factory=dict)  # candidate label -> trial stream
    written: bool = False
    event: Mapping[str, Any] | None = None

    @property
    def origin(self) -> str:
        return self.request.origin

    @property
    def manifest_digest(self) -> str:
        return hashlib.sha256(self.manifest_bytes).hexdigest()

    @property
    def admitted_nothing(self) -> bool:
        return not self.curation.admitted

    @property
    def exit_code(self) -> int:
        """1 when nothing was admitted: a corpus of nothing is evidence of nothing."""
        return FAILED if self.admitted_nothing else OK

    @property
    def refusal(self) -> str | None:
        """Why nothing was written when nothing was admitted (the command's ``Error:``)."""
        if not self.admitted_nothing:
            return None
        rq = self.request
        searched = ", ".join(map(str, rq.sources)) or f"the ledger at {rq.ledger}"
        return (
            f"no trial under {searched} is admissible evidence for {rq.criterion}; "
            "a corpus of nothing is evidence of nothing, so nothing was written"
        )

    def to_json(self) -> dict[str, Any]:
        m, rq = self.curation.manifest, self.request
        return {
            "criterion": m.criterion,
            "into": str(rq.into),
            "origin": rq.origin,
            "sources": [str(s) for s in rq.sources],
            "where": rq.where,
            "dry_run": rq.dry_run,
            "written": self.written,
            "admitted": [e.model_dump(mode="json") for e in m.bundles],
            "rejected": [r.model_dump(mode="json") for r in m.excluded],
            "manifest": m.document(),
            "manifest_digest": self.manifest_digest,
            "event": dict(self.event) if self.event else None,
            "exit_code": self.exit_code,
        }


def curate(
    *, criterion: str, into: Path, sources: Sequence[Path] = (), from_ledger: bool = False,
    where: str | None = None, exclusions: Mapping[str, str] | None = None, replace: bool = False,
    dry_run: bool = False, ledger: LedgerArg = None, workers: int | None = None,
    full: bool = False,
) -> CurateResult:  # fmt: skip
    """``vledger curate``: a judge-labelled corpus from run directories (``sources``) or
    from the log (``from_ledger``, optionally ``where``); see the module docstring. Run
    directories are read as ``ingest`` reads them, in ``workers`` processes (default: the
    cores available); the corpus is the same for any number. From the log, bundles whose
    streams did not change since a curation kept them are not rendered again (``full``:
    all are)."""
    request = CurateRequest(
        criterion=criterion, into=Path(into), sources=tuple(Path(s) for s in sources),
        from_ledger=from_ledger, where=where, exclusions=dict(exclusions or {}),
        replace=replace, dry_run=dry_run, ledger=ledger_path(ledger), workers=workers,
        full=full,
    )  # fmt: skip
    return from_ledger_request(request) if from_ledger else from_runs_request(request)


# --------------------------------------------------------------------------- shared


def now_utc() -> str:
    """The curation time as the reference writes ``curated_at``: ISO-8601, UTC, ``Z``."""
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def render_manifest(document: Mapping[str, Any]) -> bytes:
    # The reference writes corpus.yaml with yaml.safe_dump(..., sort_keys=False); the same
    # emitter settings give the same bytes for the same manifest (pinned by a test against
    # a manifest the reference wrote).
    return yaml.dump(dict(document), Dumper=_ManifestDumper, sort_keys=False).encode("utf-8")


def _nests(one: Path, other: Path) -> bool:
    a, b = one.resolve(), other.resolve()
    return a == b or a in b.parents or b in a.parents


def check_destination(into: Path, *, replace: bool, nests_with: Iterable[tuple[str, Path]]) -> None:
    """Refuse a ``--into`` this command may not write (RUBRIC_MIGRATION.md, ``--replace``)."""
    for flag, path in nests_with:
        if _nests(into, path):
            raise CurationError(
                f"--into {into} and {flag} {path} nest, and --replace rewrites the whole "
                "destination; curate into a directory outside every source and the ledger"
            )
    if not into.exists():
        return
    if not into.is_dir():
        raise CurationError(f"--into {into} is a file; name a directory for the corpus")
    if not (into / MANIFEST_FILE).exists():
        if any(into.iterdir()):
            raise CurationError(
                f"--into {into} is not empty and holds no {MANIFEST_FILE}, so it is not a "
                "corpus this command wrote; curate into a new or empty directory"
            )
        return
    if not replace:
        raise CurationError(
            f"--into {into} already holds {MANIFEST_FILE}; pass --replace to rewrite the "
            "whole corpus (a corpus is never a half-refresh), or choose another --into"
        )


def _write(into: Path, files: Mapping[str, Mapping[str, bytes]], manifest: bytes) -> None:
    """Build the corpus beside ``into`` and rename it into place (old corpus removed last)."""
    into.parent.mkdir(parents=True, exist_ok=True)
    fresh = into.parent / f".{into.name}.curating-{os.getpid()}"
    old = into.parent / f".{into.name}.replaced-{os.getpid()}"
    for stale in (fresh, old):
        if stale.exists():
            shutil.rmtree(stale)
    fresh.mkdir()
    try:
        for directory, bundle in files.items():
            (fresh / directory).mkdir()
            for name, data in bundle.items():
                (fresh / directory / name).write_bytes(data)
        (fresh / MANIFEST_FILE).write_bytes(manifest)
        if into.exists():
            into.rename(old)
        fresh.rename(into)
    except BaseException:
        shutil.rmtree(fresh, ignore_errors=True)
        if old.exists() and not into.exists():
            old.rename(into)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _event(result: CurateResult, log_size: int | None) -> NewEvent:
    m = result.curation.manifest
    admitted = [
        {"directory": e.directory, "trial": result.streams.get(c.label), "met": e.met}
        for c, e in result.curation.admitted
    ]
    rejected = [
        {"trial": result.streams.get(c.label), **r.model_dump(mode="json")}
        for c, r in result.curation.rejected
    ]
    rq = result.request
    payload = CorpusCurated(
        criterion=m.criterion, into=str(rq.into), origin=result.origin,
        sources=[str(s) for s in rq.sources], where=rq.where, log_size=log_size,
        curated_at=m.curated_at, admitted=admitted, rejected=rejected,
        manifest_digest=result.manifest_digest,
    ).model_dump(mode="json")  # fmt: skip
    stream = f"curation/{escape(m.criterion)}"
    event_id = hashlib.sha256(canonical_json([stream, EVENT_TYPE, payload])).hexdigest()[:32]
    return NewEvent(stream, EVENT_TYPE, payload, event_id=event_id)


def _finish(
    result: CurateResult, events: Mapping[str, Sequence[StoredEvent]], log_size: int | None,
    render: Callable[[Sequence[StoredEvent]], dict[str, bytes]] = bundle_files,
) -> CurateResult:  # fmt: skip
    """Render, write and record — unless dry or nothing was admitted (then nothing at all)."""
    files: dict[str, dict[str, bytes]] = {}
    for candidate, entry in result.curation.admitted:
        try:
            files[entry.directory] = render(events[candidate.label])
        except BundleExportError as exc:
            raise CurationError(f"{candidate.label}: {exc}") from None
    rq = result.request
    if rq.dry_run or result.admitted_nothing:
        return result
    _write(rq.into, files, result.manifest_bytes)
    event = _event(result, log_size)
    # run directories create the ledger if absent, as ``ingest`` does
    with open_ledger(rq.ledger, create=not rq.from_ledger) as lg:
        done = lg.append([event])
    recorded = {"stream": event.stream, "event_id": event.event_id, "seq": done.seqs[0]}
    return dataclasses.replace(result, written=True, event=recorded)


def _result(request: CurateRequest, curation: Curation, streams: Mapping[str, str]) -> CurateResult:
    manifest = render_manifest(curation.manifest.document())
    return CurateResult(request, curation, manifest, streams)


# --------------------------------------------------------------------------- from runs


def _corpus_name(bundle: Path) -> str:
    # the corpus name ingest gives a run directory's bundles: the run directory's name
    resolved = bundle.resolve()
    return resolved.parent.parent.parent.name if in_run_layout(resolved) else resolved.parent.name


def _discovered(sources: Sequence[Path]) -> list[Path]:
    # overlapping sources (a run and one bundle inside it) discover a bundle once
    seen: set[Path] = set()
    out: list[Path] = []
    for source in sources:
        if not source.is_dir():
            raise CurationError(f"--source {source} is not a directory; name a run or bundle dir")
        for bundle in discover_bundles(source):
            if bundle.resolve() not in seen:
                seen.add(bundle.resolve())
                out.append(bundle)
    return out


def _read_run_bundles(
    bundles: Sequence[Path], workers: int | None
) -> Iterator[tuple[Candidate, list[StoredEvent]]]:
    """Each bundle's reading, in input order: in a process pool (``ledger.engines``) once
    there are enough bundles to pay for one (``ingest_read.POOL_FROM``), else here."""
    if len(bundles) < POOL_FROM:
        yield from map(_read_run_bundle, bundles)
        return
    engine = get_engine("local", workers=pool_size(workers, len(bundles)))
    jobs = (bundles[i : i + CHUNK] for i in range(0, len(bundles), CHUNK))
    for part in engine.map_inputs(_read_run_chunk, jobs):
        yield from part


def _read_run_chunk(bundles: Sequence[Path]) -> list[tuple[Candidate, list[StoredEvent]]]:
    with gc_paused():
        return [_read_run_bundle(b) for b in bundles]


def _read_run_bundle(bundle: Path) -> tuple[Candidate, list[StoredEvent]]:
    label = str(bundle)
    try:
        plan = plan_bundle(bundle, label, _corpus_name(bundle))
        events = as_stored(plan.events)
        inputs = trial_inputs(events)
    except (BundleError, InputError, TrialInputsError) as exc:
        raise CurationError(f"{label} cannot be read as a recorded trial: {exc}") from None
    return Candidate(inputs, label, frozenset({str(bundle.resolve())})), events


def from_runs_request(request: CurateRequest) -> CurateResult:
    """Curate the trials under run or bundle directories; ``exclusions`` keys are any
    spelling of a bundle directory's path."""
    check_destination(
        request.into,
        replace=request.replace,
        nests_with=[*(("--source", s) for s in request.sources), ("--ledger", request.ledger)],
    )
    excluded = {str(Path(k).resolve()): v for k, v in request.exclusions.items()}
    candidates: list[Candidate] = []
    events: dict[str, list[StoredEvent]] = {}
    for candidate, evs in _read_run_bundles(_discovered(request.sources), request.workers):
        candidates.append(candidate)
        events[candidate.label] = evs
    curation = curate_trials(
        candidates, criterion=request.criterion, curated_at=now_utc(), exclusions=excluded
    )
    streams = {c.label: c.inputs.stream for c in candidates}
    return _finish(_result(request, curation, streams), events, log_size=None)


# --------------------------------------------------------------------------- from the log


def selected_trials(ledger_dir: Path, where: str | None) -> frozenset[str] | None:
    """The trial streams the ``--where`` predicate selects over the ``trials`` view."""
    if where is None:
        return None
    sql = f"SELECT trial FROM trials WHERE ({where})"
    try:
        table = analytics.query(ledger_dir, sql)
    except analytics.SqlRefused as exc:
        raise CurationError(
            f"--where {where!r}: {exc}; write a predicate over the trials view, e.g. "
            "\"corpus = 'run-a' AND task_id = 'notes_add_note'\""
        ) from None
    except analytics.SqlQueryError as exc:
        raise CurationError(
            f"--where {where!r} is not a predicate over the trials view: {exc}; "
            "e.g. \"corpus = 'run-a'\""
        ) from None
    return frozenset(table.column("trial").to_pylist())


def _ledger_candidate(stream: str, evs: Sequence[StoredEvent]) -> Candidate:
    try:
        inputs = trial_inputs(evs)
    except TrialInputsError as exc:
        raise CurationError(f"{stream} cannot be read as a recorded trial: {exc}") from None
    keys = {stream, recorded_location(inputs).source}
    return Candidate(inputs, stream, frozenset(keys))


def from_ledger_request(request: CurateRequest) -> CurateResult:
    """Curate trials already ingested: the bundles are rebuilt from their events.
    ``exclusions`` keys are a trial stream or its recorded source path
    (``<run-id>/trials/<task-id>/<index>``)."""
    ledger_dir, where = request.ledger, request.where
    check_destination(request.into, replace=request.replace, nests_with=[("--ledger", ledger_dir)])
    selected = selected_trials(ledger_dir, where)
    with contextlib.ExitStack() as stack:
        with open_ledger(ledger_dir) as lg:
            size = lg.size()
            read = lg.read(stream_prefix="trial/", types=_TRIAL_TYPES, to_seq=size - 1)
            groups = group_trials(read, streams=selected)
            root = lg.root(size).hex()
            heads = {stream: evs[-1].seq for stream, evs in groups.items()}
            write = not request.dry_run
            kept = stack.enter_context(kept_bundles(lg, heads, full=request.full, write=write))
        done = _from_groups(request, groups, size, kept.render)
        if done.written:
            kept.save(size, root)
        return done


def _from_groups(
    request: CurateRequest, groups: Mapping[str, Sequence[StoredEvent]], size: int,
    render: Callable[[Sequence[StoredEvent]], dict[str, bytes]],
) -> CurateResult:  # fmt: skip
    ledger_dir, where = request.ledger, request.where
    candidates = [_ledger_candidate(stream, evs) for stream, evs in groups.items()]
    if not candidates:
        raise CurationError(
            f"no trial in the ledger at {ledger_dir}"
            + (f" matches --where {where!r}" if where else "")
            + "; ingest the runs first (`vledger ingest RUN_DIR`) or curate with --source"
        )
    curation = curate_trials(
        candidates, criterion=request.criterion, curated_at=now_utc(),
        exclusions=request.exclusions,
    )  # fmt: skip
    streams = {c.label: c.label for c in candidates}
    return _finish(_result(request, curation, streams), groups, log_size=size, render=render)
