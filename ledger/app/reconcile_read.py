"""One corpus as a reconciliation read it (:class:`Read`), and the reading of a corpus as the
ledger holds it (:func:`read_held`, ``reconcile --from-ledger``).

Read from the ledger, a declared corpus is every trial stream ingest recorded under its
name (``trial/<corpus>/…``, the corpus directory's name as ingest names it) up to the
log's head: nothing on disk is listed, keyed or parsed, so a run that extends an earlier
one costs what changed in the log since, not the size of the corpus
(docs/readme/reconcile.md § Reading the corpus from the ledger).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ledger.app.reconcile_corpus import Ingested, settled
from ledger.app.reconcile_counted import CountedSource
from ledger.app.reconcile_extend import Base, Carried
from ledger.app.reconcile_kept import KeptReader, Observed
from ledger.app.reconcile_packs import ReconcileError
from ledger.log.layout import TRIAL_PREFIX
from reconcile.inputs import TrialObservation
from reconcile.reconcile import Claim
from reconcile.trials import UnreadableBundle, graded_values, never_ran
from replay.timeline.trial_inputs import TrialInputs, TrialInputsError, trial_inputs
from schemas.canonical import digest

NEVER_RAN = "no task.yaml: the trial never ran"


@dataclass
class Ticks:
    """A run's progress: the trials (and, from disk, the bundles to ingest) it has to read so
    far (``on_total``, growing as each corpus is listed; carried trials are not read) and
    each one read (``on_done``)."""

    on_total: Callable[[int], None] | None = None
    on_done: Callable[[int], None] | None = None
    total: int = 0

    def more(self, n: int) -> None:
        self.total += n
        if self.on_total is not None and n:
            self.on_total(self.total)

    def done(self) -> None:
        if self.on_done is not None:
            self.on_done(1)

    def follow(self) -> Callable[[int, int, str], None] | None:
        """An ingest's ``progress(done, total, source)`` counted here too (None when nothing
        listens): a run from disk starts by ingesting its corpus, held bundles unparsed."""
        if self.on_total is None and self.on_done is None:
            return None
        seen = [0, 0]  # the ingest's total and done as counted so far

        def tick(done: int, total: int, source: str) -> None:
            self.more(total - seen[0])
            if self.on_done is not None and done > seen[1]:
                self.on_done(done - seen[1])
            seen[:] = [total, max(done, seen[1])]

        return tick


@dataclass(frozen=True, slots=True)  # one per trial: no __dict__ each
class TrialRef:
    """A readable trial: how it is shown, its stream, every spelling a waiver may use."""

    trial: str
    stream: str
    keys: Collection[str]


class HeldKeys(Collection[str]):
    """The spellings a waiver may use for a trial read from the ledger: its label, and the
    label after the corpus value's ``cut`` characters (the path in the corpus), that one
    spelt only when asked for (a string per trial less to hold)."""

    __slots__ = ("label", "cut")

    def __init__(self, label: str, cut: int) -> None:
        self.label, self.cut = label, cut

    def _spellings(self) -> tuple[str, ...]:
        label, rel = self.label, self.label[self.cut :]
        return (label,) if rel == label else (label, rel) if label < rel else (rel, label)

    def __contains__(self, spelling: object) -> bool:
        return spelling == self.label or spelling == self.label[self.cut :]

    def __iter__(self) -> Iterator[str]:
        return iter(self._spellings())

    def __len__(self) -> int:
        return len(self._spellings())


# a trial held lazily, read back: its name, stream, spellings and what was observed of it
Lazy = tuple[str, str, "HeldKeys", Observed]


@dataclass
class Read:
    """One corpus as read: readable trials (with their inputs), unreadable and excluded rows."""

    source: str
    corpus_value: str | None
    trials: list[tuple[TrialRef, TrialInputs | Carried]] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    excluded: list[tuple[str, str]] = field(default_factory=list)
    digests: list[str] = field(default_factory=list)
    planned: dict[str, tuple[str, bytes]] = field(default_factory=dict)  # trial -> as ingested
    # (a carried trial is not among them: its Carried holds the same, checked by carry)
    carried: dict[str, Carried] = field(default_factory=dict)  # trial -> its earlier observation
    observed: list[TrialObservation] = field(default_factory=list)
    held: dict[str, Any] | None = None  # read from the ledger: the corpus's name, its layout
    # read from the ledger: the carried trials of tasks no claim covers, only counted, and
    # those of covered tasks, held lazily (read back by ``reader`` as the report reaches them)
    counted: CountedSource | None = None
    reader: KeptReader | None = None

    def carried_counted(self) -> int:
        """The carried trials only counted (in no entry)."""
        return 0 if self.counted is None else self.counted.carried

    def carried_lazy(self) -> int:
        """The carried trials held lazily (not in ``trials``)."""
        return 0 if self.counted is None else len(self.counted.lazy_at)

    def rows(self) -> int:
        """Its bundles (read from the ledger: its streams), readable or not."""
        return (len(self.trials) + self.carried_counted() + self.carried_lazy()
                + len(self.excluded) + len(self.unreadable))  # fmt: skip

    def readable(self) -> Iterator[tuple[TrialRef, TrialInputs | Carried] | Lazy]:
        """Every readable trial in the order of the report (by name, then stream): those in
        ``trials`` as (ref, inputs), and those held lazily as :data:`Lazy`, each read back
        as it comes."""
        if not self.carried_lazy():
            return iter(self.trials)
        return self._merged()

    def _merged(self) -> Iterator[tuple[TrialRef, TrialInputs | Carried] | Lazy]:
        # the few trials read among the many held lazily: one comparison per trial (each
        # list is in (name, stream) order, and no two trials share both)
        trials, i = self.trials, 0
        for lazy in self._lazy():
            while i < len(trials) and (trials[i][0].trial, trials[i][0].stream) < lazy[:2]:
                yield trials[i]
                i += 1
            yield lazy
        yield from trials[i:]

    def _lazy(self) -> Iterator[Lazy]:
        c, reader = self.counted, self.reader
        assert c is not None and reader is not None
        prefix = f"{self.source.rstrip('/')}/"
        for i in c.lazy_order:
            trial, stream, observed = reader.lazy(c, i)  # (a line changed since: refused)
            yield trial, stream, HeldKeys(trial, len(prefix) if trial.startswith(prefix) else 0), observed

    def input_digests(self) -> list[str]:
        """What the inputs digest binds of its trials: each readable one's stream digest."""
        counted = () if self.counted is None else self.counted.digest_strings()
        return [*self.digests, *counted]

    def record(self) -> dict[str, Any]:
        """What a receipt keeps of this read, enough to redo everything after it: read from
        the ledger, the corpus's name and layout, as its trials are every stream under that
        name in the log prefix the receipt names (:func:`recompute_held`)."""
        if self.held is not None:
            return {"source": self.source, "corpus_value": self.corpus_value, "held": self.held}
        return {
            "source": self.source,
            "corpus_value": self.corpus_value,
            "trials": [[r.trial, r.stream, list(r.keys)] for r, _ in self.trials],
            "unreadable": [list(u) for u in self.unreadable],
            "excluded": [list(x) for x in self.excluded],
        }


def flat(root: Path) -> bool:
    """A corpus with one ``corpus.yaml`` at its root (else a directory of parts, each with
    its own): how its trials are named (:func:`held_label`)."""
    return (root / "corpus.yaml").is_file()


def held_label(value: str, is_flat: bool, inputs: TrialInputs | None, stream: str) -> str:
    """A trial stream's name in the report, as its bundle is shown when the corpus is read
    from disk: ``<corpus value>/<path in the corpus>``, the path being the recorded
    ``bundle_path`` (``<part>/<bundle>``), or its last step in a flat corpus (one
    ``corpus.yaml`` at its root); a stream that does not read as a trial, by its trial name."""
    recorded = None if inputs is None else inputs.registered.payload.get("bundle_path")
    if not isinstance(recorded, str) or not recorded:
        recorded = stream.rsplit("/", 1)[-1]
    relative = recorded.rsplit("/", 1)[-1] if is_flat else recorded
    return f"{value.rstrip('/')}/{relative}"


def read_held(ctx: Any, value: str, root: Path, claims: Sequence[Claim]) -> Read:
    """The corpus declared as ``value`` (resolved to ``root``) as the ledger holds it: every
    trial stream under the name ingest gives ``root``, carried forward from ``ctx.prior``
    where the stream has no event since that run's checkpoint, read from the log otherwise,
    each in the order the log first met it. ``ctx``: the run's (its ledger, packs,
    evaluator and the run it extends)."""
    lg, corpus = ctx.ledger, root.name
    prefix = f"{TRIAL_PREFIX}{corpus}/"
    is_flat = flat(root)
    claimed = {t for c in claims for t in c.task_ids}
    gated: set[tuple[str, str]] = set()

    def settle(inputs: TrialInputs, label: str, stream: str) -> TrialInputs | Carried:
        # at once: the events' folding is let go (reconcile_corpus.settled)
        return settled(inputs, label, stream, ctx, claimed, gated)

    # A stream with an event since the base's checkpoint is read whatever the base kept
    # (Base.carry): read before the base's records are loaded, so that reading and those
    # records are not held at the same time.
    since = None if ctx.prior is None else ctx.prior.size
    fresh = [] if since is None else lg.streams(prefix, by_first_seq=True, from_seq=since)
    early = dict(zip(fresh, _read_streams(ctx, value, is_flat, fresh, since or 0, settle),
                     strict=True))  # fmt: skip
    base = None if ctx.prior is None else ctx.prior()
    streams, named = _streams(lg, prefix, value, base)
    counted = None if base is None else base.counted  # (their streams are not listed)
    if not streams and not (counted is not None and counted.listed(value)):
        raise ReconcileError(
            f"the ledger holds no trial of corpus {corpus!r} (declared as {value!r}"
            f"{_held_corpora(lg)}) — ingest it first (`vledger ingest {value}`), or reconcile "
            "without --from-ledger"
        )
    rows: list[_Row] = []  # sorted below: the carried ones now, the others as they are read
    unread: list[str] = []
    for stream in streams:
        row = early.pop(stream, None)
        if row is not None:
            rows.append(row)
            continue
        label = named.get(stream)
        kept = None if base is None or label is None else base.carry(value, label, stream, b"")
        if kept is None:
            unread.append(stream)
            continue
        assert label is not None
        rows.append((label, kept.stream, kept, kept.stream_digest, True))  # the stream as kept
    del streams, named  # (the listing's copies of the names let go)
    rows += early.values()  # (none: every stream since is listed)
    rows += _read_streams(ctx, value, is_flat, unread, 0 if base is None else base.size, settle)
    out = _read(value, rows, {"corpus": corpus, "flat": is_flat})
    if base is not None and base.counted is not None:
        out.counted, out.reader = base.counted.sources.get(value), base.reader
    return out


def _read_streams(
    ctx: Any, value: str, is_flat: bool, streams: list[str], since: int,
    settle: Callable[[TrialInputs, str, str], TrialInputs | Carried],
) -> list[_Row]:  # fmt: skip
    """Each of ``streams`` read from the ledger (in one pass from seq ``since`` when many:
    ``Ingested.start``) into its row."""
    reader = Ingested(ctx.ledger, {})
    reader.start(set(streams), since)
    ctx.ticks.more(len(streams))
    rows = []
    for stream in streams:
        rows.append(_classify(value, is_flat, stream, reader.events(stream), settle))
        ctx.ticks.done()
    return rows


def _held_corpora(lg: Any, most: int = 10) -> str:
    """What corpora the ledger does hold trials of, for a refusal to name (ingest names a
    corpus by its directory's name, or ``--corpus NAME``: only the first is looked for)."""
    names = sorted({s.split("/", 2)[1] for s in lg.streams(TRIAL_PREFIX) if s.count("/") >= 2})
    if not names:
        return ""
    shown = ", ".join(repr(n) for n in names[:most]) + (", …" if len(names) > most else "")
    return (f"; it holds trials of {shown}: a corpus is read under its directory's name, "
            "not a name given to `vledger ingest --corpus`")  # fmt: skip


def _named(base: Base, value: str) -> dict[str, str]:
    """The streams the base kept an observation of in corpus ``value``, with their labels."""
    return {c.stream: trial for (src, trial), c in base.records.items() if src == value}


def _streams(
    lg: Any, prefix: str, value: str, base: Base | None
) -> tuple[list[str], dict[str, str]]:
    """The corpus's trial streams, in the order the log first met them. Extending a run that
    kept an observation of every stream it read (as many as it noted), they are those (in
    its order) and then the streams with an event since its checkpoint (in the log's): the
    log before it is not listed again. With them, the base's streams of the corpus and their
    labels (:func:`_named`)."""
    if base is None:
        return lg.streams(prefix, by_first_seq=True), {}
    base.look(lg)
    kept = _named(base, value)
    counted = 0 if base.counted is None else base.counted.listed(value)
    if len(kept) + counted != base.streams_read.get(value):  # some were not kept (unreadable)
        base.expand(value)  # every stream is listed: each one carried must be known by name
        return lg.streams(prefix, by_first_seq=True), _named(base, value)
    since = lg.streams(prefix, by_first_seq=True, from_seq=base.size)
    return [*kept, *(s for s in since if s not in kept)], kept


def recompute_held(lg: Any, record: dict[str, Any], size: int) -> Read:
    """A corpus read from the ledger as the receipt's ``record`` names it, redone from the
    log prefix of ``size`` events: every stream under its name there, read to that prefix,
    each trial kept as its inputs (as :func:`read_held` reads one it does not carry)."""
    value, held = str(record["corpus_value"]), record["held"]
    prefix = f"{TRIAL_PREFIX}{held['corpus']}/"

    def check(inputs: TrialInputs, label: str, stream: str) -> TrialInputs:
        graded_values(inputs)  # unreadable as settled finds it
        return inputs

    rows = [
        _classify(value, bool(held["flat"]), s, list(lg.read(stream=s, to_seq=size - 1)), check)
        for s in (lg.streams(prefix, by_first_seq=True, to_seq=size - 1) if size else [])
    ]
    return _read(value, rows, held)


def _classify(
    value: str, is_flat: bool, stream: str, events: list[Any],
    settle: Callable[[TrialInputs, str, str], TrialInputs | Carried],
) -> _Row:  # fmt: skip
    """One stream read: its row, readable, excluded (never ran) or unreadable."""
    ids = digest([stream, [e.event_id for e in events]])
    label = held_label(value, is_flat, None, stream)
    try:
        inputs = trial_inputs(events)
        label = held_label(value, is_flat, inputs, stream)
        got = inputs if never_ran(inputs) else settle(inputs, label, stream)
        return (label, stream, got, ids, False)
    except (TrialInputsError, UnreadableBundle) as exc:
        return (label, stream, str(exc), ids, False)


# label, stream, what was read (its error if unreadable), the stream's digest, carried
_Row = tuple[str, str, Carried | TrialInputs | str, str, bool]


def _read(value: str, rows: list[_Row], held: dict[str, Any]) -> Read:
    """The corpus's rows as a :class:`Read`, in the order of their labels, as bundles read
    from disk are."""
    out = Read(value, value, held=held)
    prefix = f"{value.rstrip('/')}/"
    for label, stream, got, ids, kept in sorted(rows):  # by label, then (unique) stream
        if isinstance(got, str):
            out.unreadable.append((label, got))
            continue
        if kept:
            out.carried[label] = got  # type: ignore[assignment]  (a Carried)
        else:
            out.planned[label] = (stream, b"")  # kept anew by this run (kept_records)
        if got.excluded if isinstance(got, Carried) else never_ran(got):
            out.excluded.append((label, NEVER_RAN))
            continue
        cut = len(prefix) if label.startswith(prefix) else 0
        out.trials.append((TrialRef(label, stream, HeldKeys(label, cut)), got))
        out.digests.append(ids)
    return out
