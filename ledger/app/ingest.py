"""``ingest``: recorded trials, corpora, packs and verdict-core runs into the ledger.

One call is one transaction: every PATH is detected, every file read and turned into
events first, and only then is everything new appended in a single atomic batch. Any
unreadable input (bad YAML, wrong shape, unknown key or type, a file over the size
limit) aborts the whole call with an :class:`IngestError` naming the file, the key and
what was expected — the ledger is untouched. With ``skip_bad=True`` each such input is
instead recorded as an ``ingest.skipped`` event (stream ``ingest/skipped``) and the rest
is ingested.

**Re-ingest and change.** Event ids are content-derived (``ledger.sources.tolokaforge``),
so each input's stream is compared with the stream already in the ledger: the same ids
in the same order → *already present*, nothing appended; no stream → *new*; anything
else → *changed*: the input's content differs from what was ingested (its first
differing position is named). A changed input is never merged into the old stream: it
aborts the ingest like a bad input, or with ``skip_bad`` is recorded as skipped.

**Inconsistent views.** A bundle whose message view and tool-call record disagree (G6b /
G7: a record or ``role: tool`` message naming an undeclared call, a tool-name mismatch)
is readable evidence of a harness bug. By default it aborts the ingest with the
timeline's :class:`~schemas.timeline.TimelineInconsistencyError` text (key and position).
With ``keep_inconsistent=True`` it is ingested — raw events intact — and its timeline is
one ``timeline.event`` carrying ``inconsistency`` instead of trace events, so retrace
reports it as not re-checkable and names the key. With only ``skip_bad`` it is skipped
with that reason.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any, Protocol

from ledger.sources import inspect_log
from ledger.sources.detect import (
    DetectError,
    PathKind,
    detect,
    discover,
    discover_bundles,
    discover_packs,
)
from ledger.sources.files import InputError
from ledger.sources.shape import BundleError
from ledger.sources.tolokaforge import (
    BundleContext,
    BundlePlan,
    Corpus,
    PlannedEvent,
    bundle_events,
    bundle_location,
    event_id,
    in_run_layout,
    pack_events,
    read_bundle,
    read_corpus,
    read_pack,
    trial_name,
)
from ledger.sources.verdict_core import run_events
from ledger.sources.yaml_safe import DEFAULT_LIMITS, YamlLimits
from schemas.envelope import NewEvent

SKIP_STREAM = "ingest/skipped"

Progress = Callable[[int, int, str], None]


class IngestError(Exception):
    """The ingest was aborted; the ledger is unchanged. ``source`` names the input."""

    def __init__(self, source: str, message: str, kind: str = "bad_input") -> None:
        self.source = source
        # bad_input | changed | inconsistent | duplicate | no_input | missing_extra
        self.kind = kind
        super().__init__(message)


class _LedgerLike(Protocol):
    def append(self, events: Iterable[NewEvent]) -> Any: ...
    def streams(self, prefix: str | None = None) -> list[str]: ...
    def read_arrow(self, *args: Any, **kwargs: Any) -> Any: ...


@dataclass(frozen=True, slots=True)
class Unit:
    """One input's events, ready to compare with the ledger."""

    kind: str  # bundle | pack | run
    source: str  # how the input is named in messages (PATH as given + the part below it)
    stream: str
    events: tuple[PlannedEvent, ...]
    inconsistent: str | None = None
    trial: bool = False
    # issue 19: events identified by content alone (an inspect log's scores), appended when
    # their id is not yet in the stream and left out of the changed/present comparison
    additive: tuple[PlannedEvent, ...] = ()


@dataclass
class IngestReport:
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
    first_seq: int | None = None
    last_seq: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "paths": self.paths,
            "trials": {"new": self.trials_new, "already_present": self.trials_present},
            "packs": {"new": self.packs_new, "already_present": self.packs_present},
            "runs": {"new": self.runs_new, "already_present": self.runs_present},
            "events": {"new": self.events_new, "already_present": self.events_present},
            "inconsistent": self.inconsistent,
            "skipped": self.skipped,
            "trial_streams": self.trial_streams,
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


# --------------------------------------------------------------------------- planning


@dataclass(frozen=True, slots=True)
class _Task:
    """A unit of reading work: what to read and how to name it."""

    kind: str
    path: Path
    source: str
    corpus: str | None = None
    corpus_doc: Corpus | None = None


def _label(given: str, path: Path, root: Path) -> str:
    rel = path.relative_to(root).as_posix()
    return given if rel == "." else f"{given.rstrip('/')}/{rel}"


def _corpus_tasks(
    given: str, root: Path, corpus_dir: Path, name: str, limits: YamlLimits
) -> list[_Task]:
    label = _label(given, corpus_dir, root)
    corpus = read_corpus(corpus_dir, label, limits)
    bundles = list(discover_bundles(corpus_dir))
    present = {b.name for b in bundles if b.parent == corpus_dir}
    for i, d in enumerate(corpus.entries):
        if d not in present:
            raise BundleError(
                f"{label}/corpus.yaml",
                f"bundles[{i}].directory",
                "a bundle directory (holding trajectory.yaml) beside corpus.yaml",
                f"{d!r}, which is not there",
            )
    return [
        _Task("bundle", b, _label(given, b, root), corpus=name, corpus_doc=corpus) for b in bundles
    ]


def _tasks_for(given: str, corpus: str | None, limits: YamlLimits) -> tuple[PathKind, list[_Task]]:
    path = Path(given)
    found = detect(path)
    root = found.path
    kind = found.kind
    if kind is PathKind.BUNDLE:
        return kind, [_single_bundle_task(given, root, corpus, limits)]
    if kind is PathKind.VERDICT_RUN:
        return kind, [_Task("run", root, given)]
    if kind in (PathKind.INSPECT_LOG, PathKind.INSPECT_LOGS):
        return kind, _inspect_tasks(given, root, kind, corpus)
    if kind in (PathKind.PACK, PathKind.PACK_SET):
        return kind, [_Task("pack", p, _label(given, p, root)) for p in discover_packs(root)]
    name = corpus or root.resolve().name
    if kind is PathKind.CORPUS:
        return kind, _corpus_tasks(given, root, root, name, limits)
    if kind is PathKind.MULTI_CORPUS:
        tasks: list[_Task] = []
        for part in sorted(p for p in root.iterdir() if (p / "corpus.yaml").is_file()):
            tasks += _corpus_tasks(given, root, part, name, limits)
        return kind, tasks
    # a collection or run dir: every bundle, pack and run below it; a bundle sitting beside
    # a corpus.yaml still gets its row
    corpora: dict[Path, Corpus] = {}
    tasks = []
    for found_kind, p in discover(root):
        label = _label(given, p, root)
        if found_kind is PathKind.PACK:
            tasks.append(_Task("pack", p, label))
            continue
        if found_kind is PathKind.VERDICT_RUN:
            tasks.append(_Task("run", p, label))
            continue
        doc = None
        if (p.parent / "corpus.yaml").is_file():
            if p.parent not in corpora:
                corpora[p.parent] = read_corpus(p.parent, _label(given, p.parent, root), limits)
            doc = corpora[p.parent]
        tasks.append(_Task("bundle", p, label, corpus=name, corpus_doc=doc))
    return kind, tasks


def _inspect_tasks(given: str, root: Path, kind: PathKind, corpus: str | None) -> list[_Task]:
    """One task per log; the corpus is --corpus, else the log directory's name."""
    if kind is PathKind.INSPECT_LOG:
        return [_Task("inspect", root, given, corpus=corpus or root.resolve().parent.name)]
    name = corpus or root.resolve().name
    return [
        _Task("inspect", p, _label(given, p, root), corpus=name)
        for p in inspect_log.discover_logs(root)
    ]


def _inspect_units(task: _Task) -> list[Unit]:
    log = inspect_log.read_log(task.path, task.source)
    plans = inspect_log.log_plans(
        log, task.corpus or "", task.source, inspect_log.log_name(task.path)
    )
    return [
        Unit(
            "bundle",
            p.label,
            p.stream,
            p.events,
            inconsistent=None if p.inconsistency is None else str(p.inconsistency),
            trial=True,
            additive=p.scores,
        )
        for p in plans
    ]


def _units(task: _Task, limits: YamlLimits) -> list[Unit]:
    return _inspect_units(task) if task.kind == "inspect" else [_unit(task, limits)]


def _single_bundle_task(given: str, bundle: Path, corpus: str | None, limits: YamlLimits) -> _Task:
    """A bundle named on its own is named as if its container had been ingested."""
    bundle = bundle.resolve() if bundle.name in ("", ".", "..") else bundle
    parent = bundle.parent
    if (parent / "corpus.yaml").is_file():
        c = read_corpus(parent, str(Path(given).parent), limits)
        return _Task("bundle", bundle, given, corpus=corpus or parent.resolve().name, corpus_doc=c)
    if in_run_layout(bundle.resolve()):
        run = bundle.resolve().parent.parent.parent
        return _Task("bundle", bundle, given, corpus=corpus or run.name)
    return _Task("bundle", bundle, given, corpus=corpus or parent.resolve().name)


def _unit(task: _Task, limits: YamlLimits) -> Unit:
    if task.kind == "run":
        stream, events = run_events(task.path, task.source, limits.max_bytes)
        return Unit("run", task.source, stream, events)
    if task.kind == "pack":
        raw = read_pack(task.path, task.source, limits)
        resolved = task.path.resolve()
        # like bundle_path: the same however the PATH named the pack
        stream, events = pack_events(raw, f"{resolved.parent.name}/{resolved.name}")
        return Unit("pack", task.source, stream, events)
    raw = read_bundle(task.path, task.source, limits)
    entry = task.corpus_doc.entries.get(task.path.name) if task.corpus_doc else None
    resolved = task.path.resolve()
    ctx = BundleContext(
        corpus=task.corpus or resolved.parent.name,
        trial=trial_name(resolved),
        bundle_path=bundle_location(resolved),
        corpus_file=f"{resolved.parent.name}/corpus.yaml" if task.corpus_doc else None,
        criterion=task.corpus_doc.criterion if task.corpus_doc else None,
        entry=entry,
    )
    plan: BundlePlan = bundle_events(raw, ctx)
    bad = str(plan.inconsistency) if plan.inconsistency is not None else None
    return Unit("bundle", task.source, plan.stream, plan.events, inconsistent=bad, trial=True)


# --------------------------------------------------------------------------- ingest


def _skip_event(source: str, kind: str, reason: str, exc: BaseException | None) -> NewEvent:
    payload: dict[str, Any] = {"source": source, "kind": kind, "reason": reason}
    if isinstance(exc, BundleError):
        payload.update(file=exc.file, key=exc.key, expected=exc.expected)
    elif isinstance(exc, InputError):
        payload["file"] = exc.path
    # position 0 for every skip: the id is a function of the skip's content alone, so the
    # same bad input skipped twice is recorded once
    return NewEvent(
        SKIP_STREAM,
        "ingest.skipped",
        payload,
        event_id=event_id(SKIP_STREAM, 0, "ingest.skipped", payload),
    )


# The event types ingest writes. Only these are compared on re-ingest, so an event another
# component appends to the same stream later (an annotation, a replay) is not "a change".
INGEST_TYPES = frozenset(
    {
        "trial.registered", "trial.message", "trial.tool_call", "trial.ended", "state.recorded",
        "grade.recorded", "timeline.event", "pack.registered", "migration.declared",
        "run.event", "receipt.issued",
    }
)  # fmt: skip


def _existing_ids(ledger: _LedgerLike, streams: Sequence[str]) -> dict[str, list[tuple[str, str]]]:
    """``(id, type)`` of the ingest-written events of each of ``streams``, in stream order."""
    wanted = set(streams)
    prefixes = sorted(
        {
            s.rsplit("/", 2)[0] + "/" if s.startswith("trial/") else s.split("/", 1)[0] + "/"
            for s in wanted
        }
    )
    out: dict[str, list[tuple[int, str, str]]] = {}
    for prefix in prefixes:
        if not any(s in wanted for s in ledger.streams(prefix=prefix)):
            continue
        table = ledger.read_arrow(stream_prefix=prefix)
        cols = table.select(["stream", "stream_version", "event_id", "type"]).to_pydict()
        rows = zip(
            cols["stream"], cols["stream_version"], cols["event_id"], cols["type"], strict=True
        )
        for s, v, e, t in rows:
            if s in wanted and t in INGEST_TYPES:
                out.setdefault(s, []).append((v, e, t))
    return {s: [(e, t) for _, e, t in sorted(rows)] for s, rows in out.items()}


def _first_difference(old: Sequence[str], new: Sequence[PlannedEvent]) -> str:
    for i, (a, b) in enumerate(zip(old, new, strict=False)):
        if a != b.event_id:
            return f"event {i} ({b.type}) differs"
    if len(old) != len(new):
        return f"the stream holds {len(old)} events, the input gives {len(new)}"
    return "no difference"  # pragma: no cover - callers only ask when ids differ


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while planning.

    Parsing allocates millions of short-lived, acyclic dicts and lists (freed by reference
    counting); the generational collector re-scanning every live container as they pile
    up made a 10,000-trial re-ingest 2.6× slower (67 s vs 26 s, measured).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def ingest(
    ledger: _LedgerLike,
    paths: Sequence[str | Path],
    corpus: str | None = None,
    skip_bad: bool = False,
    progress: Progress | None = None,
    *,
    keep_inconsistent: bool = False,
    limits: YamlLimits = DEFAULT_LIMITS,
) -> IngestReport:
    """Ingest every PATH in one transaction; see the module docstring for the rules.

    Raises :class:`IngestError` (nothing appended) unless ``skip_bad``; ``progress`` is
    called as ``progress(done, total, source)`` while inputs are read.

    Example::

        with open_ledger(".vledger", create=True) as lg:
            report = ingest(lg, ["corpora/notes_duplicate_check"])
            print(report.summary())   # "… new, 0 already present (17 new trial(s) …"
    """
    with _gc_paused():
        return _ingest(ledger, paths, corpus, skip_bad, progress, keep_inconsistent, limits)


def _ingest(
    ledger: _LedgerLike,
    paths: Sequence[str | Path],
    corpus: str | None,
    skip_bad: bool,
    progress: Progress | None,
    keep_inconsistent: bool,
    limits: YamlLimits,
) -> IngestReport:
    report = IngestReport()
    skips: list[NewEvent] = []

    def bad(source: str, kind: str, exc: BaseException | str, why: str = "bad_input") -> None:
        text = str(exc)
        if not skip_bad:
            raise IngestError(source, text, why) from (
                exc if isinstance(exc, BaseException) else None
            )
        report.skipped.append({"source": source, "kind": kind, "reason": text})
        skips.append(
            _skip_event(source, kind, text, exc if isinstance(exc, BaseException) else None)
        )

    tasks: list[_Task] = []
    for given in paths:
        try:
            kind, found = _tasks_for(str(given), corpus, limits)
        except (DetectError, BundleError, InputError) as exc:
            bad(str(given), "path", exc)
            continue
        report.paths.append({"path": str(given), "kind": kind.value})
        tasks += found

    units: dict[str, Unit] = {}
    total = len(tasks)
    for done, task in enumerate(tasks, start=1):
        if progress is not None:
            progress(done - 1, total, task.source)
        try:
            found_units = _units(task, limits)
        except inspect_log.InspectUnavailable as exc:
            # the environment, not the input: never skipped, whatever --skip-bad says
            raise IngestError(task.source, str(exc), "missing_extra") from None
        except (BundleError, InputError) as exc:
            bad(task.source, task.kind, exc)
            continue
        for unit in found_units:
            _plan_unit(unit, units, bad, keep_inconsistent)
    if progress is not None:
        progress(total, total, "")

    existing = _existing_ids(ledger, list(units))
    new_events: list[PlannedEvent] = []
    for stream, unit in units.items():
        held = existing.get(stream)
        additive_types = {e.type for e in unit.additive}
        old = None if held is None else [e for e, t in held if t not in additive_types]
        if old is None:
            new_events += unit.events
            if unit.inconsistent is not None:
                report.inconsistent.append(
                    {"source": unit.source, "stream": stream, "reason": unit.inconsistent}
                )
            _count(report, unit, new=True)
        elif old == [e.event_id for e in unit.events]:
            _count(report, unit, new=False)
        else:
            bad(
                unit.source,
                unit.kind,
                f"{unit.source} changed since it was ingested as {stream!r}: "
                f"{_first_difference(old, unit.events)}; it is not merged — ingest it under "
                "another --corpus name to keep both",
                "changed",
            )
            continue
        # issue 19: content-identified events (re-scored scores) join beside the old ones
        present = {e for e, _ in held or ()}
        added = [e for e in unit.additive if e.event_id not in present]
        new_events += added
        report.events_new += len(added)
        report.events_present += len(unit.additive) - len(added)
    if not units and not skips and not report.paths:
        raise IngestError(", ".join(map(str, paths)), "nothing to ingest", "no_input")
    # decoded one at a time as the store consumes them: the plan stays compact bytes
    result = ledger.append(chain((e.new_event() for e in new_events), skips))
    report.first_seq = getattr(result, "first_seq", None)
    report.last_seq = getattr(result, "last_seq", None)
    return report


def _plan_unit(
    unit: Unit,
    units: dict[str, Unit],
    bad: Callable[..., None],
    keep_inconsistent: bool,
) -> None:
    """Admit one read input into the plan, or report it through ``bad``."""
    if unit.inconsistent is not None and not keep_inconsistent:
        bad(
            unit.source,
            unit.kind,
            f"{unit.source}: the message view and the tool-call record disagree: "
            f"{unit.inconsistent} (pass --keep-inconsistent to ingest it with the "
            "disagreement recorded)",
            "inconsistent",
        )
        return
    seen = units.get(unit.stream)
    if seen is not None:
        if [e.event_id for e in seen.events] != [e.event_id for e in unit.events]:
            bad(
                unit.source,
                unit.kind,
                f"{unit.source} and {seen.source} are both stream {unit.stream!r} "
                "with different content; ingest them under different --corpus names",
                "duplicate",
            )
        return
    units[unit.stream] = unit


def _count(report: IngestReport, unit: Unit, *, new: bool) -> None:
    """Count one ingested (new) or already-present input."""
    events = len(unit.events)
    kind = unit.kind
    if unit.trial:
        report.trial_streams.append(unit.stream)
    if new:
        report.events_new += events
    else:
        report.events_present += events
    attr = {"bundle": "trials", "pack": "packs", "run": "runs"}[kind] + (
        "_new" if new else "_present"
    )
    setattr(report, attr, getattr(report, attr) + 1)
