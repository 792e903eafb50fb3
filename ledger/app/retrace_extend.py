"""A retrace that extends an earlier replay instead of re-deriving every trial.

Inputs match when the config record's digest does: it binds the grading projection's code
version (``PROJECTION_VERSION``), the trial selection and the replacement config — or none,
and then each trial's recorded snapshot, which is part of the trial's own stream. A trial
whose stream has no event after the earlier replay's checkpoint has exactly the events that
replay read, so the same outcome: it is carried forward from the replay's kept results
(:mod:`ledger.app.replay_results`). Every trial with an event since — a new trial, a
re-scored one — is evaluated. Carried and evaluated outcomes are merged in stream order,
the order a full replay folds them in, so the report, the outputs digest and the trial
rows are the full replay's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ledger.app.replay_results import (
    FoldCache,
    ListHasher,
    Record,
    RecordsCheck,
    ResultsFile,
    ResultsUnreadable,
    Tally,
    discard_results,
    new_results,
    open_results,
    output_row,
)
from ledger.engines.base import Progress, TrialSelection
from ledger.engines.parked import Parked
from ledger.errors import LedgerError
from ledger.log.layout import TRIAL_PREFIX
from replay.grading.retrace import Override, TrialRetrace, retrace_trial
from replay.grading.retrace_report import RetraceReportError, build_report
from schemas.envelope import StoredEvent
from schemas.views import Mapped


@dataclass(frozen=True)
class Base:
    """The replay being extended: its kept results and what its receipt binds."""

    results: ResultsFile
    replay_id: str
    seq: int  # its replay.completed event
    size: int
    root: str
    outputs_digest: str

    def link(self) -> dict[str, Any]:
        """What the extending replay's receipt names: the replay and its tree head."""
        return {
            "replay_id": self.replay_id,
            "seq": self.seq,
            "checkpoint": {"size": self.size, "root": self.root},
            "outputs_digest": self.outputs_digest,
        }


def find_base(lg: Any, config: dict[str, Any], config_digest: str, size: int) -> Base | None:
    """The latest replay with ``config_digest`` whose results were kept, if this log still
    holds it as written: its receipt event where the results say, naming the same replay,
    checkpoint and outputs digest, and the log's prefix of that size with that root; and
    if no replay since may have re-graded its trials under other inputs (``current_grades``
    prefers the latest replayed grade, so carrying forward past one would change it)."""
    res = open_results(lg, config_digest)
    if res is None:
        return None
    t = res.trailer
    try:
        seq, base_size, root = int(t["seq"]), int(t["size"]), str(t["root"])
        replay_id, outputs = str(t["replay_id"]), str(t["outputs_digest"])
    except (KeyError, TypeError, ValueError):
        return None
    if t.get("config_digest") != config_digest or not 0 < base_size <= seq < size:
        return None
    ev = next(iter(lg.read(from_seq=seq, to_seq=seq)), None)
    if ev is None or ev.type != "replay.completed":
        return None
    data = ev.data()
    receipt = data.get("receipt") if isinstance(data.get("receipt"), dict) else {}
    if (
        data.get("replay_id") != replay_id
        or receipt.get("checkpoint") != {"size": base_size, "root": root}
        or receipt.get("outputs_digest") != outputs
        or receipt.get("config_digest") != config_digest
        or lg.root(base_size).hex() != root
    ):
        return None
    for later in lg.read(type="replay.completed", from_seq=seq + 1, to_seq=size - 1):
        other = later.data()
        if other.get("receipt", {}).get("config_digest") != config_digest and not disjoint(
            config, other.get("config") or {}
        ):
            return None
    return Base(res, replay_id, seq, base_size, root, outputs)


def disjoint(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two replays' selections can share no trial: different corpora or tasks
    named by both, or disjoint exact stream sets (anything else may overlap)."""
    for key in ("corpus", "task"):
        if a.get(key) is not None and b.get(key) is not None and a[key] != b[key]:
            return True
    streams_a, streams_b = a.get("streams"), b.get("streams")
    return streams_a is not None and streams_b is not None and not set(streams_a) & set(streams_b)


def changed_trials(
    lg: Any, since: int, select: TrialSelection
) -> tuple[frozenset[str], dict[str, list[StoredEvent]]]:
    """The trial streams with an event in ``[since, select.to_seq]``, and those of them the
    selection keeps with all their events (a stream that began earlier is read whole)."""
    touched: dict[str, list[StoredEvent]] = {}
    if since <= select.to_seq:
        for ev in lg.read(stream_prefix=TRIAL_PREFIX, from_seq=since, to_seq=select.to_seq):
            if select.streams is None or ev.stream in select.streams:
                touched.setdefault(ev.stream, []).append(ev)
    # a re-scored trial's earlier events are before ``since``: read them too, one stream at a
    # time when they are few, else in one pass over the log before ``since``
    older = {stream for stream, evs in touched.items() if evs[0].stream_version != 0}
    events: list[StoredEvent] = []
    if len(older) > MANY_RESCORED and since > 0:
        for ev in lg.read(stream_prefix=TRIAL_PREFIX, to_seq=since - 1):
            if ev.stream in older:
                events.append(ev)
    else:
        for stream in sorted(older):
            events.extend(lg.read(stream=stream, to_seq=since - 1))
    for evs in touched.values():
        events.extend(evs)
    return frozenset(touched), select.group(events)


MANY_RESCORED = 64  # above this many, one pass over the log beats a query per stream


def evaluate_changed(
    groups: dict[str, list[StoredEvent]], override: Override,
    on_total: Progress | None = None, on_done: Progress | None = None,
) -> Parked:  # fmt: skip
    """The changed trials' outcomes, parked in stream order (on the driver: they are few)."""
    if on_total:
        on_total(len(groups))

    def pairs() -> Iterator[tuple[str, TrialRetrace]]:
        for stream, evs in groups.items():
            yield stream, retrace_trial(evs, override)
            if on_done:
                on_done(1)

    return Parked(pairs())


def merged(
    base: Iterable[Any], key: Any, changed: frozenset[str], fresh: Iterable[TrialRetrace]
) -> Iterator[Any]:
    """``base``'s items whose stream (``key(item)``) did not change, and ``fresh``'s
    outcomes, in stream order (both come sorted by stream)."""
    todo = iter(fresh)
    nxt = next(todo, None)
    for item in base:
        stream = key(item)
        while nxt is not None and nxt.trial < stream:
            yield nxt
            nxt = next(todo, None)
        if stream not in changed:
            yield item
    while nxt is not None:
        yield nxt
        nxt = next(todo, None)


@dataclass
class Extension:
    """One extension's merge: the base's records checked against its receipt as they are
    read, the changed trials' outcomes, and how many of each there were."""

    base: Base
    changed: frozenset[str]
    fresh: Parked
    carried: int = 0
    base_count: int = 0
    base_hasher: ListHasher | None = None
    base_records: RecordsCheck | None = None

    def items(self) -> Iterator[Record | TrialRetrace]:
        """Carried records and evaluated outcomes, in stream order."""
        self.base_hasher, self.base_records = ListHasher(), RecordsCheck()
        self.base_count = self.carried = 0

        def base_records() -> Iterator[Record]:
            assert self.base_hasher is not None and self.base_records is not None
            for rec in self.base.results.records():
                self.base_hasher.add_bytes(rec.row)
                self.base_records.add(rec.raw if rec.raw is not None else b"")
                self.base_count += 1
                yield rec

        for item in merged(base_records(), _stream_of, self.changed, self.fresh):
            if isinstance(item, Record):
                self.carried += 1
            yield item

    def base_checks(self) -> bool:
        """The base's results hash to the outputs digest its receipt binds, all of them, and
        its records as stored to the CRC its file names (the fields the row leaves out)."""
        t = self.base.results.trailer
        return (
            self.base_hasher is not None
            and self.base_records is not None
            and self.base_hasher.digest() == self.base.outputs_digest
            and self.base_records.value() == t.get("records_crc32")
            and self.base_count == t.get("count")
        )

    @property
    def evaluated(self) -> int:
        return len(self.fresh)


def _stream_of(rec: Record) -> str:
    return rec.stream


def extend(
    lg: Any, base: Base, select: TrialSelection, override: Override,
    on_total: Progress | None = None, on_done: Progress | None = None,
) -> Extension:  # fmt: skip
    changed, groups = changed_trials(lg, base.size, select)
    return Extension(base, changed, evaluate_changed(groups, override, on_total, on_done))


# ------------------------------------------------------------------ recomputing a receipt


class RecomputeError(LedgerError):
    """The replay an extended replay names cannot be recomputed to what its receipt binds."""


Inputs = Callable[[StoredEvent], tuple[Override, TrialSelection]]
FullRun = Callable[[TrialSelection, Override], Sequence[TrialRetrace]]


def recomputed_outcomes(lg: Any, ev: StoredEvent, inputs: Inputs, full: FullRun) -> Sequence[Any]:
    """The outcomes of the replay whose receipt is ``ev``, recomputed from the log: a full
    replay by ``full``; an extension from the replay it extends — itself recomputed and
    checked against the outputs digest of that replay's receipt — and the trials with an
    event after that replay's checkpoint, evaluated again."""
    override, select = inputs(ev)
    link = (ev.data().get("receipt") or {}).get("extends")
    if link is None:
        return full(select, override)
    base_ev = _extended_receipt(lg, ev, link)
    base = recomputed_outcomes(lg, base_ev, inputs, full)
    hasher = ListHasher()
    for o in base:
        hasher.add(output_row(o))
    bound = base_ev.data()["receipt"]["outputs_digest"]
    if hasher.digest() != bound:
        raise RecomputeError(
            f"the replay it extends ({link.get('replay_id')}, seq {base_ev.seq}) recomputes "
            f"to {hasher.digest()}, but its receipt binds {bound}"
        )
    changed, groups = changed_trials(lg, int(link["checkpoint"]["size"]), select)
    fresh = evaluate_changed(groups, override)
    return Parked((o.trial, o) for o in merged(base, _trial_of, changed, fresh))


def _trial_of(o: TrialRetrace) -> str:
    return o.trial


def _extended_receipt(lg: Any, ev: StoredEvent, link: Any) -> StoredEvent:
    """The replay.completed event an extension's ``extends`` names, as it names it."""
    try:
        seq = int(link["seq"])
        checkpoint = link["checkpoint"]
    except (KeyError, TypeError, ValueError):
        raise RecomputeError(f"seq {ev.seq}: receipt.extends is malformed: {link!r}") from None
    found = list(lg.read(from_seq=seq, to_seq=seq)) if 0 <= seq < ev.seq else []
    base = found[0] if found else None
    receipt = base.data().get("receipt") if base is not None else None
    if base is None or base.type != ev.type or not isinstance(receipt, dict):
        raise RecomputeError(f"seq {ev.seq} extends seq {seq}, which is no replay receipt")
    if receipt.get("checkpoint") != checkpoint or receipt.get("config_digest") != (
        ev.data()["receipt"].get("config_digest")
    ):
        raise RecomputeError(
            f"seq {ev.seq} extends seq {seq}, whose receipt binds another checkpoint or config"
        )
    return base


# ------------------------------------------------------------------ one extending run


@dataclass
class Run:
    """One pass's report, its tally, and where its outcomes are (an extension's own)."""

    report: dict[str, Any]
    tally: Tally
    outcomes: Sequence[TrialRetrace]
    ext: Extension | None = None


def extended_run(
    lg: Any, base: Base, select: TrialSelection, override: Override,
    tail: Sequence[TrialRetrace], progress: dict[str, Progress | None], *, keep: bool,
) -> Run | None:  # fmt: skip
    """The replay extending ``base`` (its results ``keep``-t for the next run unless dry);
    None when its kept results do not check against its receipt (then the run is full)."""
    ext = extend(lg, base, select, override, **progress)
    tally = Tally(new_results(lg, keep=keep))
    assert tally.writer is not None
    cache = FoldCache()

    def outcomes() -> Iterator[TrialRetrace]:
        for item in ext.items():
            if isinstance(item, Record):
                yield tally.take(cache.folded(item), item)
            else:
                yield tally.take(item)
        yield from map(tally.take, tail)

    view = tally.writer.view(tail)
    try:  # a corpus the report refuses is refused again by the full run, if it really is
        report = build_report(outcomes(), Mapped(view, TrialRetrace.as_dict))
    except (ResultsUnreadable, RetraceReportError):
        report = None
    if report is None or not ext.base_checks():
        discard_results(tally.writer)
        return None
    return Run(report, tally, view, ext)
