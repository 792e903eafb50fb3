"""What each ingest PATH holds, and the events each input it holds becomes.

A PATH is detected (``ledger.sources.detect``) and expanded into :class:`Task` s, one per
input (bundle, pack, verdict-core run, inspect log); reading a task gives its
:class:`Unit` s, each one stream's planned events, ready to compare with the ledger.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ledger.app.ingest_key import read_keyed
from ledger.app.ingest_stat import Resolver
from ledger.sources import inspect_log
from ledger.sources.corpus import Corpus, read_corpus
from ledger.sources.detect import (
    NEVER_DISCOVERED,
    PathKind,
    detect,
    discover,
    discover_bundles,
    discover_packs,
    relative_posix,
)
from ledger.sources.inspect_sets import LogSet
from ledger.sources.packs import pack_events, read_pack
from ledger.sources.plan import PlannedEvent
from ledger.sources.shape import BundleError
from ledger.sources.tolokaforge import bundle_context, bundle_events, in_run_layout, read_bundle
from ledger.sources.verdict_core import run_events
from ledger.sources.yaml_safe import YamlLimits


@dataclass(frozen=True, slots=True)
class Unit:
    """One input's events, ready to compare with the ledger."""

    kind: str  # bundle | pack | run
    source: str  # how the input is named in messages (PATH as given + the part below it)
    stream: str
    events: tuple[PlannedEvent, ...]
    inconsistent: str | None = None
    trial: bool = False
    # Events identified by content alone (an inspect log's scores), appended when
    # their id is not yet in the stream and left out of the changed/present comparison
    additive: tuple[PlannedEvent, ...] = ()
    key: Any = None  # a bundle keyed where it was read: its ``ingest_key.BundleKey``


@dataclass(frozen=True, slots=True)
class Task:
    """A unit of reading work: what to read and how to name it."""

    kind: str
    path: Path
    source: str
    corpus: str | None = None
    corpus_doc: Corpus | None = None
    root: Path | None = None  # what a log's reads are confined to (the PATH as given)
    log_set: LogSet | None = None  # shared by the logs of one PATH (inspect_sets)
    keyed: bool = False  # a bundle to key by the bytes it is read from (``ingest_key``)


def _label(given: str, path: Path, root: Path) -> str:
    rel = relative_posix(path, root)
    return given if rel == "." else f"{given.rstrip('/')}/{rel}"


def _corpus_tasks(
    given: str, root: Path, corpus_dir: Path, name: str, limits: YamlLimits
) -> list[Task]:
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
        Task("bundle", b, _label(given, b, root), corpus=name, corpus_doc=corpus) for b in bundles
    ]


def tasks_for(given: str, corpus: str | None, limits: YamlLimits) -> tuple[PathKind, list[Task]]:
    """What PATH ``given`` is, and one task per input it holds (in a stable order)."""
    path = Path(given)
    found = detect(path)
    root = found.path
    kind = found.kind
    if kind is PathKind.BUNDLE:
        return kind, [_single_bundle_task(given, root, corpus, limits)]
    if kind is PathKind.VERDICT_RUN:
        return kind, [Task("run", root, given)]
    if kind in (PathKind.INSPECT_LOG, PathKind.INSPECT_LOGS):
        return kind, _inspect_tasks(given, root, kind, corpus)
    if kind in (PathKind.PACK, PathKind.PACK_SET):
        return kind, [Task("pack", p, _label(given, p, root)) for p in discover_packs(root)]
    name = corpus or root.resolve().name
    if kind is PathKind.CORPUS:
        tasks = _corpus_tasks(given, root, root, name, limits)
        return kind, tasks + _logs_beside(given, root, tasks, corpus)
    if kind is PathKind.MULTI_CORPUS:
        tasks = []
        for part in sorted(p for p in root.iterdir() if (p / "corpus.yaml").is_file()):
            tasks += _corpus_tasks(given, root, part, name, limits)
        return kind, tasks + _logs_beside(given, root, tasks, corpus)
    # a collection or run dir: every bundle, pack and run below it; a bundle sitting beside
    # a corpus.yaml still gets its row
    corpora: dict[Path, Corpus] = {}
    tasks = []
    for found_kind, p in discover(root):
        label = _label(given, p, root)
        if found_kind is PathKind.PACK:
            tasks.append(Task("pack", p, label))
            continue
        if found_kind is PathKind.VERDICT_RUN:
            tasks.append(Task("run", p, label))
            continue
        doc = None
        if (p.parent / "corpus.yaml").is_file():
            if p.parent not in corpora:
                corpora[p.parent] = read_corpus(p.parent, _label(given, p.parent, root), limits)
            doc = corpora[p.parent]
        tasks.append(Task("bundle", p, label, corpus=name, corpus_doc=doc))
    return kind, tasks + _logs_beside(given, root, tasks, corpus)


def _logs_beside(given: str, root: Path, tasks: list[Task], corpus: str | None) -> list[Task]:
    """The inspect_ai logs in a directory of bundles, packs or runs, outside each of them
    (a directory holding both reads both)."""
    held = frozenset(os.path.join(root, relative_posix(t.path, root)) for t in tasks)
    logs = inspect_log.discover_logs(root, held, NEVER_DISCOVERED)
    log_set, name = LogSet(), corpus or inspect_log.CORPUS
    return [
        Task("inspect", p, _label(given, p, root), corpus=name, root=root, log_set=log_set)
        for p in logs
    ]


def _inspect_tasks(given: str, root: Path, kind: PathKind, corpus: str | None) -> list[Task]:
    """One task per log; the corpus is --corpus, else inspect_log.CORPUS, never the log's
    folder (a trial is one whatever file holds it)."""
    name = corpus or inspect_log.CORPUS
    logs = LogSet()
    if kind is PathKind.INSPECT_LOG:  # named on the command line: its link is followed
        return [Task("inspect", root, given, corpus=name, root=root, log_set=logs)]
    return [
        Task("inspect", p, _label(given, p, root), corpus=name, root=root, log_set=logs)
        for p in inspect_log.discover_logs(root)
    ]


def _inspect_units(task: Task, limits: YamlLimits) -> Iterator[Unit]:
    """One unit per sample × epoch, each planned as its sample is read (one at a time)."""
    samples = inspect_log.log_samples(
        task.path, task.source, limits.max_bytes, limits.max_nodes, task.root or task.path
    )
    corpus = task.corpus or inspect_log.CORPUS
    logs = task.log_set if task.log_set is not None else LogSet()
    opened = None
    for spec, sample in samples:
        if opened is not spec:
            opened = spec
            logs.opened(spec, task.source)
        if not logs.first_run(spec, sample):
            continue  # a retry's copy of a sample an earlier attempt ran: that trial
        p = inspect_log.sample_plan(spec, sample, corpus, task.source)
        yield Unit(
            "bundle",
            p.label,
            p.stream,
            p.events,
            inconsistent=None if p.inconsistency is None else str(p.inconsistency),
            trial=True,
            additive=p.scores,
        )


def read_units(task: Task, limits: YamlLimits) -> Iterable[Unit]:
    """The streams one input becomes (an inspect log holds many, read lazily; every other
    input one)."""
    return _inspect_units(task, limits) if task.kind == "inspect" else [_unit(task, limits)]


def _single_bundle_task(given: str, bundle: Path, corpus: str | None, limits: YamlLimits) -> Task:
    """A bundle named on its own is named as if its container had been ingested."""
    bundle = bundle.resolve() if bundle.name in ("", ".", "..") else bundle
    parent = bundle.parent
    if (parent / "corpus.yaml").is_file():
        c = read_corpus(parent, str(Path(given).parent), limits)
        return Task("bundle", bundle, given, corpus=corpus or parent.resolve().name, corpus_doc=c)
    if in_run_layout(bundle.resolve()):
        run = bundle.resolve().parent.parent.parent
        return Task("bundle", bundle, given, corpus=corpus or run.name)
    return Task("bundle", bundle, given, corpus=corpus or parent.resolve().name)


def _unit(task: Task, limits: YamlLimits) -> Unit:
    if task.kind == "run":
        stream, events = run_events(task.path, task.source, limits.max_bytes)
        return Unit("run", task.source, stream, events)
    if task.kind == "pack":
        raw = read_pack(task.path, task.source, limits)
        resolved = task.path.resolve()
        # like bundle_path: the same however the PATH named the pack
        stream, events = pack_events(raw, f"{resolved.parent.name}/{resolved.name}")
        return Unit("pack", task.source, stream, events)
    got = read_keyed(task, limits) if task.keyed else None
    if got is None:
        return bundle_unit(task, limits)
    files, key = got
    return replace(bundle_unit(task, limits, files), key=key)


def bundle_unit(task: Task, limits: YamlLimits, files: Mapping[str, bytes] | None = None) -> Unit:
    """A bundle task's unit; ``files``: its files' bytes, read already (``ingest_key``)."""
    raw = read_bundle(task.path, task.source, limits, files)
    resolved = raw.resolved or Resolver()(task.path)  # (keyed: resolved already, to key it)
    corpus = task.corpus or resolved.parent.name
    plan = bundle_events(raw, bundle_context(task.path, corpus, task.corpus_doc, resolved))
    bad = str(plan.inconsistency) if plan.inconsistency is not None else None
    return Unit("bundle", task.source, plan.stream, plan.events, inconsistent=bad, trial=True)


def first_difference(old: Sequence[str], new: Sequence[PlannedEvent]) -> str:
    """Where an ingested stream's ids (``old``) and an input's planned events part."""
    for i, (a, b) in enumerate(zip(old, new, strict=False)):
        if a != b.event_id:
            return f"event {i} ({b.type}) differs"
    if len(old) != len(new):
        return f"the stream holds {len(old)} events, the input gives {len(new)}"
    return "no difference"  # pragma: no cover - callers only ask when ids differ
