"""``ingest``: recorded trials, corpora, packs and verdict-core runs into the ledger.

All or nothing per call: every PATH is detected and every input read, turned into events and
checked, each new stream inserted as it is read into ONE transaction that commits after the
last input (``ledger.app.ingest_append``). Inputs are read in worker processes (or Ray tasks) and
taken back in input order (``ledger.app.ingest_read``), so the plan — and the log — is the
same for any number of workers. Any unreadable input (bad YAML, wrong shape, unknown key or
type, a file over the size limit) aborts the call with an :class:`IngestError` naming the
file, the key and what was expected, the transaction rolled back and the ledger untouched;
with ``skip_bad=True`` it is recorded as an ``ingest.skipped`` event (stream
``ingest/skipped``) instead. A crash leaves the ledger as it was; the same ingest run again
appends everything, once.

**Re-ingest and change.** Event ids are content-derived (``ledger.sources.plan``), so
each input's stream is compared with the one already in the ledger: the same ids in the
same order → *already present*; no stream → *new*; else *changed* (its first differing
position is named). A changed input is never merged into the old stream: it aborts the
ingest like a bad input, or with ``skip_bad`` is recorded as skipped.

**Inconsistent views.** A bundle whose message view and tool-call record disagree (G6b /
G7: a record or ``role: tool`` message naming an undeclared call, a tool-name mismatch)
is readable evidence of a harness bug. By default it aborts the ingest with the
timeline's :class:`~schemas.timeline.TimelineInconsistencyError` text (key and position).
With ``keep_inconsistent=True`` it is ingested — raw events intact — and its timeline is
one ``timeline.event`` carrying ``inconsistency`` instead of trace events, so retrace
reports it as not re-checkable and names the key. With only ``skip_bad`` it is skipped.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ledger.app.context import LedgerArg, ledger_path, opened
from ledger.app.ingest_append import append_streamed
from ledger.app.ingest_existing import existing_ids, held_streams
from ledger.app.ingest_inputs import Unit, first_difference, tasks_for
from ledger.app.ingest_known import KnownBundles
from ledger.app.ingest_read import (
    Derive,
    ReadStream,
    Refusal,
    gc_paused,
    ids_digest,
    pool_size,
    refusal,
)  # fmt: skip
from ledger.app.ingest_spool import (
    Row,
    park_bytes,
    park_value,
    record_rows,
    rows_of,
    spool,
    unpark,
    unpark_new,
    unpark_value,
)  # fmt: skip
from ledger.app.result import Result
from ledger.defaults import DEFAULT_BUSY_TIMEOUT, DEFAULT_MAX_BYTES
from ledger.engines import check_address, get_engine
from ledger.engines.ordered import start_server
from ledger.errors import LedgerError
from ledger.log.outputs import is_ledger_dir, remove_new_ledger
from ledger.sources import inspect_log
from ledger.sources.detect import DetectError
from ledger.sources.files import InputError
from ledger.sources.plan import PlannedEvent, event_id
from ledger.sources.shape import BundleError
from ledger.sources.yaml_safe import DEFAULT_LIMITS, YamlLimits
from schemas.envelope import NewEvent

SKIP_STREAM = "ingest/skipped"

Progress = Callable[[int, int, str], None]


class IngestError(LedgerError):
    """The ingest was aborted; the ledger is unchanged. ``source`` names the input."""

    def __init__(self, source: str, message: str, kind: str = "bad_input") -> None:
        self.source = source
        # bad_input | changed | inconsistent | duplicate | no_input | missing_extra
        self.kind = kind
        super().__init__(message)


@dataclass(frozen=True, slots=True, kw_only=True)
class IngestRequest:
    """What one ingest reads and how strictly (the CLI's options; the module docstring)."""

    paths: tuple[str, ...]
    corpus: str | None = None
    skip_bad: bool = False
    keep_inconsistent: bool = False
    limits: YamlLimits = DEFAULT_LIMITS
    workers: int | None = None  # processes reading the inputs; None: the cores available
    engine: str = "local"  # or "ray": the inputs read as Ray tasks (docs/readme/ray.md)
    address: str | None = None  # the Ray cluster to join (engine "ray")

    def reader(self, inputs: int) -> Any:
        """The engine whose ``map_inputs`` reads ``inputs`` inputs (``ledger.app.ingest_read``)."""
        options = {"address": self.address} if self.engine == "ray" else {}
        return get_engine(self.engine, workers=pool_size(self.workers, inputs), **options)


@dataclass(frozen=True)
class IngestResult(Result):
    """What one ingest did. ``new``/``present`` count inputs (trials, packs, runs)."""

    paths: list[dict[str, str]] = field(default_factory=list)
    trials_new: int = 0
    trials_present: int = 0
    packs_new: int = 0
    packs_present: int = 0
    runs_new: int = 0
    runs_present: int = 0
    events_new: int = 0
    events_present: int = 0
    inconsistent: list[dict[str, str]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    trial_streams: list[str] = field(default_factory=list)  # every trial read, new or present
    # inspect tasks whose logs hold several attempts (eval_set retries): ledger.sources.inspect_sets
    retried_tasks: list[dict[str, Any]] = field(default_factory=list)
    first_seq: int | None = None
    last_seq: int | None = None

    def to_json(self) -> dict[str, Any]:
        """What ``vledger ingest --json`` prints."""
        pair = lambda kind: {  # noqa: E731
            "new": getattr(self, f"{kind}_new"),
            "already_present": getattr(self, f"{kind}_present"),
        }
        return {
            "paths": self.paths,
            **{kind: pair(kind) for kind in ("trials", "packs", "runs", "events")},
            "inconsistent": self.inconsistent,
            "skipped": self.skipped,
            "trial_streams": self.trial_streams,
            # only inspect eval-set directories have any: bundle ingests keep their shape
            **({"retried_tasks": self.retried_tasks} if self.retried_tasks else {}),
            "first_seq": self.first_seq,
            "last_seq": self.last_seq,
        }

    def summary(self) -> str:
        return (
            f"{self.events_new} new, {self.events_present} already present "
            f"({self.trials_new} new trial(s), {self.trials_present} already present; "
            f"{self.packs_new + self.packs_present} pack(s), {self.runs_new + self.runs_present} run(s)"
            + (f"; {len(self.skipped)} skipped" if self.skipped else "")
            + (f"; {len(self.inconsistent)} with inconsistent views" if self.inconsistent else "")
            + ")"
        )


def ingest(
    *paths: str | Path | Sequence[str | Path],
    ledger: LedgerArg = None,
    corpus: str | None = None,
    skip_bad: bool = False,
    keep_inconsistent: bool = False,
    max_file_bytes: int = DEFAULT_MAX_BYTES,
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
    progress: Progress | None = None,
    workers: int | None = None,
    engine: str = "local",
    address: str | None = None,
) -> IngestResult:
    """``vledger ingest PATH…``: every PATH into ``ledger`` (created if absent; one this
    call created is removed again if the ingest aborts). Raises :class:`IngestError`.
    A list of paths counts as its paths (``ingest([a, b])`` is ``ingest(a, b)``).

    The inputs are read in ``workers`` processes (default: the cores available), or as
    Ray tasks with ``engine="ray"`` (``address``: a cluster to join); the log appended is
    the same, event for event, for any of them (docs/readme/ingest.md § Reading in parallel).

    Example::

        result = ledger.ingest("corpora/notes_duplicate_check", ledger="/tmp/lg")
        print(result.summary())   # "… new, 0 already present (17 new trial(s) …"
    """
    check_address(engine, address)  # before anything is read or created
    limits = YamlLimits(max_bytes=max_file_bytes)
    flat = [p for arg in paths for p in (arg if isinstance(arg, list | tuple) else [arg])]
    request = IngestRequest(
        paths=tuple(map(str, flat)), corpus=corpus, skip_bad=skip_bad, limits=limits,
        keep_inconsistent=keep_inconsistent, workers=workers, engine=engine, address=address,
    )  # fmt: skip
    root = ledger_path(ledger)
    fresh = (ledger is None or isinstance(ledger, (str, os.PathLike))) and not is_ledger_dir(root)
    before = frozenset(os.listdir(root)) if fresh and root.is_dir() else None
    held = False  # an open refused (busy: another process made it) removes nothing
    try:
        with opened(ledger, create=True, busy_timeout=busy_timeout) as lg:
            held = True
            return run(lg, request, progress)
    except (LedgerError, KeyboardInterrupt):
        if fresh and held:  # a mistyped PATH, or a Ctrl-C, leaves no new ledger behind
            remove_new_ledger(root, before)
        raise


def ingest_into(
    ledger: Any,
    paths: Sequence[str | Path],
    corpus: str | None = None,
    skip_bad: bool = False,
    progress: Progress | None = None,
    *,
    keep_inconsistent: bool = False,
    limits: YamlLimits = DEFAULT_LIMITS,
    on_unit: Callable[[Path, ReadStream], None] | None = None,
    workers: int | None = None,
    engine: str = "local",
    address: str | None = None,
    derive: Derive | None = None,
    on_derived: Callable[[str, Any], None] | None = None,
) -> IngestResult:
    """:func:`ingest` into an open store, for callers that hold one (retrace, reconcile).
    ``on_unit(path, read)`` sees each input's planned stream as it is read, admitted or not
    (reconcile reads each bundle once that way). ``derive`` runs where each stream is read
    (a worker); ``on_derived(stream, value)`` gets its value for each stream this ingest
    adds to the log (retrace --source: ``ledger.app.retrace_source``)."""
    request = IngestRequest(
        paths=tuple(map(str, paths)), corpus=corpus, skip_bad=skip_bad, limits=limits,
        keep_inconsistent=keep_inconsistent, workers=workers, engine=engine, address=address,
    )  # fmt: skip
    return run(ledger, request, progress, on_unit, (derive, on_derived))


def run(
    ledger: Any,
    request: IngestRequest,
    progress: Progress | None = None,
    on_unit: Callable[[Path, ReadStream], None] | None = None,
    derived: tuple[Derive | None, Callable[[str, Any], None] | None] = (None, None),
) -> IngestResult:
    """The use case: plan every input, compare with ``ledger``, append what is new — in
    one transaction the reading feeds as it goes (``ledger.app.ingest_append``).

    ``progress`` is called as ``progress(done, total, source)`` while inputs are read.
    """
    with gc_paused(), spool() as file:
        job = _Ingest(request, file, *derived, known=KnownBundles.of(ledger))
        job.held = held_streams(ledger)  # before the transaction opens
        groups = job.plan(progress, on_unit)
        first, last = append_streamed(ledger, groups, lambda: job.tail(ledger))
        job.known.save(ledger, job.planned, job.accepted())  # not parsed again
        return job.result(first, last)


@dataclass(frozen=True, slots=True)
class _Planned:
    """One planned stream, its events parked in the spool at ``offset`` (-1: appended as
    read, with no additive events to look up again)."""

    unit: Unit  # without its events (those are in the spool, or already appended)
    size: int
    additive: int  # how many content-identified events follow them
    digest: bytes  # of its event ids, in order
    offset: int
    derived: int | None = None  # the spool offset of what ``derive`` made of it


class _Ingest:
    """One ingest's state while it plans and compares: :meth:`plan` then :meth:`tail`
    yield what to append, in order, and raise on a refused input (the caller's transaction
    then rolls back)."""

    def __init__(
        self, request: IngestRequest, file: IO[bytes], derive: Derive | None = None,
        on_derived: Callable[[str, Any], None] | None = None, known: KnownBundles | None = None,
    ) -> None:  # fmt: skip
        self.request = request
        self.file = file  # the spool
        self.derive, self.on_derived, self.known = derive, on_derived, known or KnownBundles()
        self.planned: dict[str, _Planned] = {}
        self.skips: list[NewEvent] = []
        self.paths: list[dict[str, str]] = []
        self.counts: Counter[str] = Counter()
        self.lists: dict[str, list[Any]] = {
            "inconsistent": [], "skipped": [], "trial_streams": [], "retried_tasks": []
        }  # fmt: skip
        # content-identified events (re-scores) a later input of an already planned stream
        # adds: a log and its re-scored copy read in one ingest both count
        self.extra: dict[str, dict[str, PlannedEvent]] = {}
        self.held: frozenset[str] = frozenset()  # the streams the ledger held before
        self.changed: set[str] = set()  # held streams found changed (skipped)

    def tail(self, ledger: Any) -> Iterator[Iterable[Row]]:
        """What to append once :meth:`plan` (which yields each stream new to the ledger as
        it is read, in input order: the same for any number of workers) has read the last
        input: what comparing the held streams adds, then the skips."""
        if not self.planned and not self.skips and not self.paths:
            raise IngestError(", ".join(self.request.paths), "nothing to ingest", "no_input")
        held = [s for s in self.known.unread(self.planned) if s in self.held]
        yield from self.compare(existing_ids(ledger, held) if held else {})
        yield rows_of(self.skips)

    def bad(self, source: str, kind: str, why: Refusal | str, code: str = "bad_input") -> None:
        """Abort on a bad input, or with ``skip_bad`` record it as skipped."""
        text, fields = (why.text, why.fields) if isinstance(why, Refusal) else (why, {})
        if not self.request.skip_bad:
            raise IngestError(source, text, code)
        self.lists["skipped"].append({"source": source, "kind": kind, "reason": text})
        self.skips.append(_skip_event(source, kind, text, fields))

    def plan(
        self, progress: Progress | None, on_unit: Callable[..., None] | None
    ) -> Iterator[Iterable[Row]]:
        tasks = []
        limits = self.request.limits
        if self.request.engine == "local" and pool_size(self.request.workers, 1 << 30) > 1:
            start_server(["ledger.app.ingest_read"])  # imports while the inputs are listed
        for given in self.request.paths:
            try:
                kind, found = tasks_for(given, self.request.corpus, limits)
            except (DetectError, BundleError, InputError) as exc:
                self.bad(given, "path", refusal(exc))
                continue
            self.paths.append({"path": given, "kind": kind.value})
            tasks += found
        total = len(tasks)
        # read in workers, consumed here in task order: the plan is the same for any number
        reads = self.known.reads(tasks, self.request, self.derive)  # held ones: not parsed
        for done, (task, read) in enumerate(zip(tasks, reads, strict=True)):
            if progress is not None:
                progress(done, total, task.source)
            if isinstance(read, Refusal):
                if read.missing_extra:  # the environment, not the input: never skipped
                    raise IngestError(task.source, read.text, "missing_extra")
                self.bad(task.source, task.kind, read)
                continue
            try:  # an inspect log's streams are read lazily, one sample at a time
                for stream in read:
                    if on_unit is not None:
                        on_unit(task.path, stream)
                    new = self.admit(stream)
                    if new is not None:
                        yield new
            except inspect_log.InspectUnavailable as exc:
                raise IngestError(task.source, str(exc), "missing_extra") from None
            except (BundleError, InputError) as exc:
                self.bad(task.source, task.kind, refusal(exc))
        if progress is not None:
            progress(total, total, "")
        for log_set in {id(t.log_set): t.log_set for t in tasks if t.log_set}.values():
            self.lists["retried_tasks"] += log_set.summary()

    def admit(self, read: ReadStream) -> Iterator[Row] | None:
        """Admit one read stream into the plan, or report it through :meth:`bad`; the rows
        to append now when the ledger holds no such stream."""
        unit = read.head
        if unit.inconsistent is not None and not self.request.keep_inconsistent:
            return self.bad(
                unit.source,
                unit.kind,
                f"{unit.source}: the message view and the tool-call record disagree: "
                f"{unit.inconsistent} (pass --keep-inconsistent to ingest it with the "
                "disagreement recorded)",
                "inconsistent",
            )
        digest = read.digest
        seen = self.planned.get(unit.stream)
        if seen is None:
            fresh = unit.stream not in self.held
            if unit.trial:  # in input order, new or present (a changed one is dropped)
                self.lists["trial_streams"].append(unit.stream)
            parked = not fresh or read.additive  # compared later, or re-scores may join it
            offset = park_bytes(self.file, read.record) if parked else -1
            held = None if read.derived is None or fresh else park_value(self.file, read.derived)
            p = _Planned(unit, read.size, read.additive, digest, offset, held)
            self.planned[unit.stream] = p
            if fresh:
                return self.added(p, record_rows(read.record), read.derived)
        elif seen.digest == digest:
            if read.additive:
                extra = self.extra.setdefault(unit.stream, {})
                extra.update((e.event_id, e) for e in read.unit().additive)
        else:
            self.bad(
                unit.source,
                unit.kind,
                f"{unit.source} and {seen.unit.source} are both stream {unit.stream!r} "
                "with different content; ingest them under different --corpus names",
                "duplicate",
            )
        return None

    def compare(self, existing: dict[str, list[tuple[str, str]]]) -> list[Iterable[Row]]:
        """Count each planned stream as new, present or changed; what to append, in order.

        A stream's events are read back from the spool only to append them (lazily, as the
        append reaches them), to add re-scores or to name a change: never all at once.
        A stream appended as it was read only gets the re-scores a later input added."""
        groups: list[Any] = []
        for stream, p in self.planned.items():
            if self.known.present.get(stream) == p.digest:  # held as planned: ids not read
                self.count(p, new=False)
                continue
            held = existing.get(stream)
            extra = self.extra.get(stream, {})
            if held is None:
                if stream in self.held:  # held, but none of ingest's events: new here
                    derived = None if p.derived is None else unpark_value(self.file, p.derived)
                    groups.append(self.added(p, unpark_new(self.file, p.offset), derived))
                if extra:
                    parked = (
                        {e.event_id for e in unpark(self.file, p.offset)[1]}
                        if p.additive
                        else set()
                    )
                    added = [e for i, e in extra.items() if i not in parked]
                    groups.append(rows_of(added))
                    self.counts["events_new"] += len(added)
                continue
            additive = unpark(self.file, p.offset)[1] if p.additive else []
            have = {a.event_id for a in additive}
            additive += [e for i, e in extra.items() if i not in have]
            additive_types = {e.type for e in additive}
            old = [e for e, t in held if t not in additive_types]
            if ids_digest(old) != p.digest:
                events = unpark(self.file, p.offset)[0]
                self.bad(
                    p.unit.source,
                    p.unit.kind,
                    f"{p.unit.source} changed since it was ingested as {stream!r}: "
                    f"{first_difference(old, events)}; it is not merged — ingest it under "
                    "another --corpus name to keep both",
                    "changed",
                )
                self.changed.add(stream)
                continue
            self.count(p, new=False)
            if additive:  # content-identified events (re-scores) join the old ones
                present = {e for e, _ in held}
                added = [e for e in additive if e.event_id not in present]
                groups.append(rows_of(added))
                self.counts["events_new"] += len(added)
                self.counts["events_present"] += len(additive) - len(added)
        return groups

    def added(self, p: _Planned, rows: Iterator[Row], derived: Any) -> Iterator[Row]:
        """Count a stream new to the ledger; its rows, to append."""
        if self.on_derived is not None and derived is not None:
            self.on_derived(p.unit.stream, derived)
        if p.unit.inconsistent is not None:
            reason = {"source": p.unit.source, "stream": p.unit.stream}
            self.lists["inconsistent"].append({**reason, "reason": p.unit.inconsistent})
        self.count(p, new=True)
        self.counts["events_new"] += p.additive
        return rows

    def count(self, p: _Planned, *, new: bool) -> None:
        """Count one ingested (new) or already-present input."""
        kind = {"bundle": "trials", "pack": "packs", "run": "runs"}[p.unit.kind]
        suffix = "_new" if new else "_present"
        self.counts["events" + suffix] += p.size
        self.counts[kind + suffix] += 1

    def accepted(self) -> list[str]:
        """Every trial stream read, new or already present, in input order (not a changed
        one, which was skipped)."""
        return [s for s in self.lists["trial_streams"] if s not in self.changed]

    def result(self, first_seq: int | None, last_seq: int | None) -> IngestResult:
        lists = {**self.lists, "trial_streams": self.accepted()}
        return IngestResult(
            self.paths, **self.counts, **lists, first_seq=first_seq, last_seq=last_seq
        )  # type: ignore[arg-type]


def _skip_event(source: str, kind: str, reason: str, fields: dict[str, Any]) -> NewEvent:
    # fields: the file (and for a wrong shape the key and what was expected) it names
    payload: dict[str, Any] = {"source": source, "kind": kind, "reason": reason, **fields}
    # position 0 for every skip: the id is a function of the skip's content alone, so the
    # same bad input skipped twice is recorded once
    return NewEvent(
        SKIP_STREAM,
        "ingest.skipped",
        payload,
        event_id=event_id(SKIP_STREAM, 0, "ingest.skipped", payload),
    )
