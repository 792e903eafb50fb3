"""A real reconciliation's corpus read: ingested into the ledger, each bundle's stream and
planned event ids kept so the caller need not read it again, and each trial read back from
the ledger."""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ledger.app.ingest_read import ids_digest
from ledger.app.ingest_stat import Resolver
from ledger.app.reconcile_extend import Base, Carried
from ledger.app.reconcile_packs import Pack, ReconcileError
from ledger.sources.corpus import Corpus
from ledger.sources.in_memory import as_stored, plan_bundle
from reconcile.trials import UnreadableBundle, graded_values, recorded_tools
from replay.timeline.trial_inputs import TrialInputs, trial_inputs
from replay.trace_checks.authoring import inspect_trace_checks
from schemas.canonical import digest
from schemas.envelope import StoredEvent


def ingest_corpus(
    lg: Any, root: Path, workers: int | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> dict[Path, tuple[str, bytes]]:  # fmt: skip
    """A real run: the corpus into the ledger (idempotent; bad bundles recorded as skipped),
    read by ``workers`` processes as ``vledger ingest --workers`` reads (default: the cores
    available). Each bundle read, by resolved directory: its stream and the digest of its
    planned event ids (``ingest_read.ids_digest``), so the caller need not read it again. A
    bundle the ledger holds byte for byte is not parsed (``ledger.app.ingest_known``).
    ``progress``: as ``ingest_into`` calls it."""
    from ledger.app.ingest import IngestError, ingest_into  # noqa: PLC0415 - a dry run never ingests

    planned: dict[Path, tuple[str, bytes]] = {}
    resolve = Resolver()

    def seen(path: Path, read: Any) -> None:
        planned[resolve(path)] = (read.head.stream, read.digest)

    try:
        ingest_into(
            lg, [str(root)], root.resolve().name, skip_bad=True, keep_inconsistent=True,
            on_unit=seen, workers=workers, progress=progress,
        )  # fmt: skip
    except IngestError as exc:
        raise ReconcileError(f"ingesting {root} into the ledger: {exc}") from None
    return planned


def trial_inputs_of(
    directory: Path, label: str, corpus: str, manifests: dict[Path, Corpus],
    ingested: Ingested | None,
) -> tuple[str, str, TrialInputs]:  # fmt: skip
    """(stream, stream digest, TrialInputs) for one bundle: from the ledger on a real run,
    where ingest has read the bundle already (one it could not read is read again here, so
    the error names the trial as every other reconcile message does)."""
    if ingested is None:  # a dry run: the bundle as the ledger would hold it
        plan = plan_bundle(directory, label, corpus, manifests)
        ids = [e.event_id for e in plan.events]
        return plan.stream, digest([plan.stream, ids]), trial_inputs(as_stored(plan.events))
    seen = ingested.planned.get(directory.resolve())
    if seen is None:  # ingest could not read it: read again, so the error names the trial
        plan = plan_bundle(directory, label, corpus, manifests)
        seen = plan.stream, ids_digest([e.event_id for e in plan.events])
    stream, planned = seen
    events = ingested.events(stream)
    ids = [e.event_id for e in events]
    if ids_digest(ids) != planned:
        held = "no events" if not events else f"{len(events)} events of other content"
        raise UnreadableBundle(
            f"the ledger's stream {stream!r} holds {held}, not this bundle as it is on "
            "disk (ingest skipped it or ingested an earlier version) — see `vledger ingest`"
        )
    return stream, digest([stream, ids]), trial_inputs(events)


@dataclass
class Ingested:
    """A real run's corpus after ingest: each bundle's planned stream and event-id digest,
    the kept observations carried forward, and the ledger's events of the other streams —
    read in one pass over their common prefix when many (one query per trial scanned the
    log once per trial), one stream at a time when few. The pass reads only as far as the
    stream asked for needs (:meth:`events`): a stream is handed over once the pass has read
    as many of its events as the log holds (counted first), so it holds the streams read
    past but not yet asked for — none beyond the one asked, when they are asked for in the
    order they were appended (a corpus ingested in one go is read back in that order)."""

    lg: Any
    planned: dict[Path, tuple[str, bytes]]
    carried: dict[Path, Carried] = field(default_factory=dict)
    held: dict[str, list[StoredEvent]] = field(default_factory=dict)
    left: dict[str, int] = field(default_factory=dict)  # stream -> its events yet to be read
    stream: Iterator[StoredEvent] = field(default_factory=lambda: iter(()))  # the pass

    @staticmethod
    def of(
        lg: Any, root: Path, find: Callable[[], Base | None] | None = None, source: str = "",
        label: Callable[[Path], str | None] = str, workers: int | None = None,
        planned: dict[Path, tuple[str, bytes]] | None = None,
        progress: Callable[[int, int, str], None] | None = None,
    ) -> Ingested:  # fmt: skip
        """``root`` ingested (by ``workers`` reading processes), unless ``planned`` is what
        its ingest in this run planned already; with ``find`` (the earlier run, asked for
        once the ingest is done), each bundle (named ``label(resolved path)`` in corpus
        ``source``) whose earlier observation still holds is carried, not read."""
        out = Ingested(lg, planned if planned is not None else
                       ingest_corpus(lg, root, workers, progress))  # fmt: skip
        prior = None if find is None else find()
        if prior is not None and out.planned:
            prior.look(lg)  # the log as this ingest left it
            for path, (stream, ids) in out.planned.items():
                name = label(path)
                if name is not None and (kept := prior.carry(source, name, stream, ids)):
                    out.carried[path] = kept
        wanted = {s for path, (s, _) in out.planned.items() if path not in out.carried}
        out.start(wanted, 0 if prior is None else prior.size)
        return out

    def start(self, wanted: set[str], since: int) -> None:
        """Set up the one pass over the ``wanted`` streams' common prefix, from seq ``since``
        (extending: the base's checkpoint, where a new stream is whole; one that began
        before is read on its own) — unless they are few: then each is read on its own."""
        if len(wanted) <= FEW_STREAMS:
            return
        prefix = os.path.commonprefix(sorted(wanted))
        self.left = stream_counts(self.lg, prefix, since, wanted)
        self.stream = iter(self.lg.read(stream_prefix=prefix, from_seq=since))

    def events(self, stream: str) -> list[StoredEvent]:
        """The stream's events, handed over once (a stream asked for again, two bundles
        planned as one stream, one that began before the pass, or one of few, is read on
        its own)."""
        got = self._take(stream)
        if got is not None and got[0].stream_version == 0:
            return got
        return list(self.lg.read(stream=stream))

    def _take(self, stream: str) -> list[StoredEvent] | None:
        """The stream's events in the pass, reading on until it has them all; None when
        the pass has none of them to give (not wanted, or handed over already)."""
        if stream not in self.left:
            return None
        while self.left[stream]:
            ev = next(self.stream, None)
            if ev is None:  # never: the pass reads what was counted
                del self.left[stream]
                self.held.pop(stream, None)
                return None
            n = self.left.get(ev.stream)
            if n:
                self.held.setdefault(ev.stream, []).append(ev)
                self.left[ev.stream] = n - 1
        del self.left[stream]
        return self.held.pop(stream)


def stream_counts(lg: Any, prefix: str, since: int, wanted: set[str]) -> dict[str, int]:
    """How many events of each ``wanted`` stream the log holds from seq ``since`` on (the
    stream names of one window at a time: never an event decoded)."""
    import pyarrow.compute as pc  # noqa: PLC0415 - only a pass over many streams counts

    out: dict[str, int] = {}
    for lo in range(since, lg.size(), COUNT_WINDOW):
        table = lg.read_arrow(stream_prefix=prefix, from_seq=lo, to_seq=lo + COUNT_WINDOW - 1)
        counted = pc.value_counts(table.column("stream"))
        names, counts = counted.field("values").to_pylist(), counted.field("counts").to_pylist()
        for name, n in zip(names, counts, strict=True):
            if name in wanted:
                out[name] = out.get(name, 0) + n
    return out


def settled(
    inputs: TrialInputs, trial: str, stream: str, ctx: Any, claimed: Collection[str],
    gated: set[tuple[str, str]],
) -> TrialInputs | Carried:  # fmt: skip
    """A real run's readable trial as the values its observation reads, its candidate
    computed now if a claim (``claimed``: their task ids) may ask for it, so the folding of
    its events is let go at once: read again in full, a corpus held every trial's until the
    reports (~36 KB a trial). UnreadableBundle as ``graded_values``. ``inputs`` as they are
    when its pack is missing or the gate or the candidate raises: the reports raise it,
    where and as they always did. ``ctx``: the run's (its packs and evaluator)."""
    grade, grading = graded_values(inputs)
    task_id = inputs.registered.task_id
    pack = ctx.packs_by_task.get(task_id)
    if pack is None:
        return inputs
    try:
        authoring_gate(pack, inputs, trial, gated)
        candidate = ctx.evaluator(inputs, pack) if task_id in claimed else None
    except Exception:  # noqa: BLE001 - raised again where the reports label the trial
        return inputs
    # what a carried trial holds, but nothing kept: the run keeps it anew (kept_records)
    return Carried(stream, "", task_id=task_id, grade=grade, grading=grading, candidate=candidate)


def authoring_gate(
    pack: Pack, inputs: TrialInputs, trial: str, checked: set[tuple[str, str]]
) -> None:
    """The pack's block against the tools this bundle recorded: a constraint naming a tool
    the corpus never had would fail every trial and read as a disagreement with the judge."""
    if pack.trace_checks is None:
        return
    tools = recorded_tools(inputs)
    key = (str(pack.directory), digest(tools))
    if key in checked:
        return
    checked.add(key)
    errors = [f for f in inspect_trace_checks(pack.trace_checks, tools) if f.klass == "error"]
    if errors:
        raise ReconcileError(
            f"{pack.directory}'s trace_checks cannot be graded against the tools {trial} "
            "recorded: " + "; ".join(f"{f.address}: {f.message}" for f in errors)
        )


FEW_STREAMS = 64  # up to this many, a query per stream beats a pass over the corpus prefix
# seqs whose stream names one query counts: the rows come whole (payloads too), and are
# dropped at once, so a small window keeps that off the peak
COUNT_WINDOW = 8192
