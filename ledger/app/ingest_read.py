"""Ingest's reading, in worker processes (or Ray tasks) or here: the same function either way.

Each :class:`~ledger.app.ingest_inputs.Task` is read, bounded and turned into its streams'
planned events where it runs (:func:`read_task`); what comes back is plain data — each
stream's head, the digest of its event ids and its events already as the spool's bytes
(``ledger.app.ingest_spool.parked``), or a :class:`Refusal` — so a result crosses a process
intact and the driver only writes bytes and compares. The driver consumes the results in
task order (``ledger.engines.ordered``), so the plan, and the log appended from it, is the
same for any number of workers.
"""

from __future__ import annotations

import gc
import hashlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from itertools import islice
from typing import Any

from ledger.app.ingest_inputs import Task, Unit, read_units
from ledger.app.ingest_spool import Row, parked_rows, prepared_rows, unparked
from ledger.app.ingest_stat import one_resolver
from ledger.defaults import default_workers
from ledger.errors import InvalidEvent
from ledger.sources import inspect_log
from ledger.sources.corpus import Corpus
from ledger.sources.files import InputError
from ledger.sources.shape import BundleError
from ledger.sources.yaml_safe import YamlLimits

# the fewest tasks per worker call that pays for the call (~0.2 ms of pickling and IPC
# alone, against 2-5 ms of parsing a bundle): a pool is started only for whole chunks
CHUNK = 16
# tasks per worker call while many remain (:func:`chunks`). On cores the workers keep busy
# a call costs more than alone (the tasks' pickling, the result's, its future, each thread
# waiting for the GIL): 10,000 bundles read by 2 workers in 625 calls of 16, then in these
# 178, took the driver 3.44 s and 3.29 s of CPU, the workers 15.4 s and 15.1 s (means of
# six interleaved runs); the in-flight window (3 calls a worker) holds ~1 MB a call.
LARGEST_CHUNK = 64
# fewer inputs than this are read here even when workers are asked for: starting a pool
# costs ~0.3 s (measured: the 17-bundle notes corpus read in 0.12 s here, 0.40 s with two
# workers), about what 128 bundles' parsing (2-5 ms each) saves on a second core
POOL_FROM = 128


def pool_size(asked: int | None, inputs: int) -> int:
    """Workers to read ``inputs`` inputs with: as asked (default: the cores available), but
    no more than there are whole chunks for — each worker pays an interpreter's imports."""
    workers = default_workers() if asked is None else asked
    return max(1, min(workers, inputs // CHUNK))


@dataclass(frozen=True, slots=True)
class Refusal:
    """An input that cannot be read, as data (the readers' exceptions take keyword
    arguments and do not survive pickling): the message, the ``ingest.skipped`` payload's
    file / key / expected, and whether the environment (a missing optional extra), not the
    input, is at fault."""

    text: str
    fields: dict[str, Any]
    missing_extra: bool = False


@dataclass(frozen=True, slots=True)
class ReadStream:
    """One stream read from an input: ``head`` is its :class:`Unit` without events, which
    travel as ``record`` (the spool's bytes: events, then the additive ones)."""

    head: Unit
    size: int
    additive: int
    digest: bytes  # of its event ids, in order
    record: bytes
    derived: Any = None  # what the caller's Derive computed from it, in the worker

    def unit(self) -> Unit:
        """The whole :class:`Unit` again (for a caller that looks at each input's events)."""
        events, additive = unparked(self.record)
        return replace(self.head, events=tuple(events), additive=tuple(additive))


TaskRead = tuple[ReadStream, ...] | Refusal
# fn(unit, params), run in the worker on each stream it reads (retrace --source projects
# each trial there: ledger.app.retrace_source); picklable, as the tasks are
Derive = tuple[Callable[[Unit, Any], Any], Any]


def ids_digest(ids: Sequence[str]) -> bytes:
    return hashlib.sha256("".join(ids).encode()).digest()  # ids are 32 hex digits each


def read_task(task: Task, limits: YamlLimits, derive: Derive | None = None) -> TaskRead:
    """One input's streams, or why it cannot be read."""
    return _streams(_units(task, limits), None, derive)


def _units(task: Task, limits: YamlLimits) -> list[Unit] | Refusal:
    try:
        return list(read_units(task, limits))
    except inspect_log.InspectUnavailable as exc:
        return Refusal(str(exc), {}, missing_extra=True)
    except (BundleError, InputError) as exc:
        return refusal(exc)


def _streams(
    units: list[Unit] | Refusal, rows: Iterator[Row] | None, derive: Derive | None
) -> TaskRead:
    """The :class:`ReadStream` s of one input's units, their events as prepared rows: taken
    from ``rows`` (prepared for a whole chunk at once) or, without it, prepared here stream
    by stream, an event the store would refuse making the input a :class:`Refusal`."""
    if isinstance(units, Refusal):
        return units
    out = []
    for unit in units:
        events = (*unit.events, *unit.additive)
        if rows is not None:
            prepared = list(islice(rows, len(events)))
        else:
            try:
                prepared = _prepared(unit)
            except BundleError as exc:
                return refusal(exc)
        out.append(_stream(unit, prepared, derive))
    return tuple(out)


def _prepared(unit: Unit) -> list[Row]:
    """``unit``'s events (then its additive ones) as prepared rows; an event the store would
    refuse is a wrong shape of the input, named by its event type (a BundleError)."""
    events = (*unit.events, *unit.additive)
    try:
        return prepared_rows(events)
    except InvalidEvent as exc:
        raise BundleError(
            unit.source,
            f"<{events[exc.index].type} payload>",
            "a payload the ledger accepts",
            exc.detail,
        ) from None


def refusal(exc: Exception) -> Refusal:
    """What an ``ingest.skipped`` event records of a reader's error: the file, and for a
    wrong shape the key and what was expected."""
    if isinstance(exc, BundleError):
        return Refusal(str(exc), {"file": exc.file, "key": exc.key, "expected": exc.expected})
    if isinstance(exc, InputError):
        return Refusal(str(exc), {"file": exc.path})
    return Refusal(str(exc), {})


def _stream(unit: Unit, rows: list[Row], derive: Derive | None) -> ReadStream:
    return ReadStream(
        replace(unit, events=(), additive=()),
        len(unit.events),
        len(unit.additive),
        ids_digest([e.event_id for e in unit.events]),
        parked_rows(rows[: len(unit.events)], rows[len(unit.events) :]),
        None if derive is None else derive[0](unit, derive[1]),
    )


def read_chunk(job: tuple[Sequence[Task], YamlLimits, Derive | None]) -> list[TaskRead]:
    """A worker's call: a few tasks, read in order. Their events are prepared for the
    store in one call (per-call costs, and validators grouped by type over more events);
    if one is refused, stream by stream instead, to refuse only its input."""
    tasks, limits, derive = job
    with gc_paused(), one_resolver():  # a chunk's bundles share parents: each resolved once
        read = [_units(t, limits) for t in tasks]
        events = [
            e for units in read if not isinstance(units, Refusal)
            for u in units for e in (*u.events, *u.additive)
        ]  # fmt: skip
        try:
            rows: Iterator[Row] | None = iter(prepared_rows(events))
        except InvalidEvent:
            rows = None
        return [_streams(units, rows, derive) for units in read]


def read_tasks(
    tasks: Sequence[Task], limits: YamlLimits, engine: Any, derive: Derive | None = None
) -> Iterator[TaskRead | Iterator[ReadStream]]:
    """Every task's :data:`TaskRead`, in task order. An inspect log is read here, one
    sample at a time as the caller iterates (its reader's errors surface then), so memory
    stays near one sample's; the runs of other inputs between logs go to :func:`_read_run`."""
    start = 0
    for i, task in enumerate([*tasks, None]):
        if task is not None and task.kind != "inspect":
            continue
        if start < i:
            yield from _read_run(tasks[start:i], limits, engine, derive)
        if task is not None:
            yield (_stream(u, _prepared(u), derive) for u in read_units(task, limits))
        start = i + 1


def _read_run(
    tasks: Sequence[Task], limits: YamlLimits, engine: Any, derive: Derive | None
) -> Iterator[TaskRead]:
    """Read by ``engine`` (its ``map_inputs``: here with one worker) once there are
    :data:`POOL_FROM` of them."""
    if len(tasks) < POOL_FROM:
        yield from read_chunk((tasks, limits, derive))
        return
    workers = max(1, getattr(engine, "workers", 1))
    jobs = ((list(map(_alone, part)), limits, derive) for part in chunks(tasks, workers))
    for part in engine.map_inputs(read_chunk, jobs):
        yield from part


def chunks(tasks: Sequence[Task], workers: int) -> Iterator[Sequence[Task]]:
    """``tasks`` as consecutive worker calls: each a quarter of a worker's share of the
    tasks left, from :data:`CHUNK` / 4 to :data:`LARGEST_CHUNK` — so calls shrink toward
    the end and the workers finish together (a last call of 64 bundles would keep one
    core busy alone for ~0.1 s). Read here (one worker) a call crosses no process: at
    most :data:`CHUNK`, whose parsed bundles are all a call holds (64 held 9 MiB more)."""
    largest = LARGEST_CHUNK if workers > 1 else CHUNK
    at = 0
    while at < len(tasks):
        size = max(CHUNK // 4, min(largest, (len(tasks) - at) // (4 * workers)))
        yield tasks[at : at + size]
        at += size


def _alone(task: Task) -> Task:
    """``task`` carrying only its own corpus.yaml row: a corpus of N bundles would
    otherwise be pickled with each of its N tasks."""
    doc = task.corpus_doc
    if doc is None or len(doc.entries) <= 1:
        return task
    name = task.path.name
    own = {name: doc.entries[name]} if name in doc.entries else {}
    return replace(task, corpus_doc=Corpus(doc.label, doc.criterion, own))


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while reading and planning.

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
