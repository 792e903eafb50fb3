"""A reconciliation that carries forward an earlier one's per-trial observations.

Inputs match when the config digest does (:func:`config_digest`): the code version of the
per-trial reading (:data:`RECONCILE_PROJECTION`), the packs as loaded (every grading and
migration document), the directories searched, the base and the corpus selection. A
trial's observation — its recorded grade and grading, the pack's candidate label, or its
exclusion — is a function of its stream's events and its pack. So a bundle planned as the
same stream with the same event ids as when the earlier reconciliation read it, whose
stream has no event after that reconciliation's checkpoint, is observed as it was then, and
its observation is carried forward. Every other bundle — new, re-scored on disk, appended
to, or unreadable before — is read from the ledger again. The bar, κ and the
counterfactual are then computed over all observations as a full run computes them, so the
report, the ``--json`` document and the outputs digest are a full run's.

Each recorded run keeps its observations in ``<ledger>/projections/reconcile-<config
digest>.results`` (:mod:`ledger.app.reconcile_kept`). The trailer names the run's
``reconcile.completed`` event; the file is used only if that event is there, with the same
run id, tree head, config and outputs digests, and a digest of the lines
(``observations_digest`` in the event) that the lines as read hash to.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from ledger.app.reconcile_counted import Counted
from ledger.app.reconcile_kept import Carried, KeptReader, open_kept, read_records
from ledger.log.layout import TRIAL_PREFIX
from reconcile.inputs import Candidate, CandidateEvaluation, TrialObservation
from replay.grading.grade import GRADING_VERSION
from replay.timeline.build import TIMELINE_VERSION
from replay.trace_checks import TRACE_CHECKS_VERSION
from schemas.canonical import digest

# Bump when a trial's observation would differ for the same events and pack (the folding
# of its events, the reading of its grade and grading, the candidate label's rules).
RECONCILE_PROJECTION = (
    f"reconcile-observation/1 ({GRADING_VERSION}, {TIMELINE_VERSION}, {TRACE_CHECKS_VERSION})"
)


def config_digest(config: dict[str, Any]) -> str:
    """The digest two reconciliations must share for one to carry the other's observations:
    ``config`` is the run's selection and packs (the caller's), with the projection's
    code version added here."""
    return digest({"projection": RECONCILE_PROJECTION, **config})


# ------------------------------------------------------------------ one observation as kept


def evaluated(obs: TrialObservation) -> Candidate | None:
    """The observation's candidate if this run computed (or carried) it, else None."""
    c = obs.candidate
    if not callable(c):
        return c
    if isinstance(c, _FromLedger):
        return c.value
    info = getattr(c, "cache_info", None)
    return c() if info is not None and info().currsize else None


def finite(c: Carried) -> bool:
    """No NaN or infinity among its numbers (JSON would not give them back as the same
    floats; such a trial is not kept, and the next run reads it again)."""
    numbers: list[Any] = []
    if c.grade is not None:
        numbers += [c.grade.score, *c.grade.components.values()]
        numbers += [r.score for r in c.grade.criterion_results or ()]
    if c.grading is not None:
        numbers += [c.grading.pass_threshold, *c.grading.weights.values()]
        numbers += [r.weight for r in c.grading.rubric or ()]
    if isinstance(c.candidate, CandidateEvaluation):
        numbers.append(c.candidate.component)
    return all(math.isfinite(n) for n in numbers if isinstance(n, float))


# ------------------------------------------------------------------ the base a run extends


@dataclass
class Base:
    """The reconciliation being extended: its kept observations and what its receipt binds."""

    records: dict[tuple[str, str], Carried]
    run_id: str
    seq: int
    size: int
    root: str
    outputs_digest: str
    streams_read: dict[str, int] = field(default_factory=dict)  # (KeptReader.streams_read)
    touched: set[str] = field(default_factory=set)  # trial streams with an event since
    read_to: int = 0  # the log size ``touched`` was read to
    carried: int = 0
    counted: Counted | None = None  # the records only counted (read from the ledger)
    reader: KeptReader | None = None  # what read the records (their file, still open)

    def link(self) -> dict[str, Any]:
        """What the extending run's receipt names: the run and its tree head."""
        return {"run_id": self.run_id, "seq": self.seq,
                "checkpoint": {"size": self.size, "root": self.root},
                "outputs_digest": self.outputs_digest}  # fmt: skip

    def look(self, lg: Any) -> None:
        """Note the trial streams with an event since the base's checkpoint (again after
        each corpus is ingested: this run's ingest appends too)."""
        size = lg.size()
        if self.read_to < size:
            frm = max(self.read_to, self.size)
            self.touched.update(lg.streams(TRIAL_PREFIX, from_seq=frm))
            self.read_to = size

    def expand(self, source: str) -> None:
        """``source``'s counted and lazily held records carried as objects instead (its
        streams are listed again, so each must be known by name)."""
        mine = None if self.counted is None else self.counted.sources.pop(source, None)
        if mine is None or self.reader is None:
            return
        for at, size in itertools.chain(zip(mine.at, mine.size, strict=True),
                                        zip(mine.lazy_at, mine.lazy_size, strict=True)):  # fmt: skip
            key, kept = self.reader.record(orjson.loads(self.reader.body.line_at(at, size)), at)
            self.records[key] = kept

    def close(self) -> None:
        if self.reader is not None:
            self.reader.body.close()

    def carry(self, source: str, trial: str, stream: str, planned: bytes) -> Carried | None:
        """The bundle's kept observation, if it still holds: the same stream, planned as
        the same event ids, with no event on it since the base's checkpoint (as of the
        last :meth:`look`). Each is asked for once: its record is let go here (a carried one
        is held by the run's read from then on)."""
        kept = self.records.pop((source, trial), None)
        if kept is None or kept.stream != stream or kept.planned != planned.hex():
            return None
        return None if stream in self.touched else kept


def check_base(lg: Any, config_digest: str) -> dict[str, Any] | None:
    """The trailer of the latest recorded reconciliation with ``config_digest`` whose
    observations were kept, if this log holds its event as the trailer names it (run id,
    tree head, config, outputs and observations digests); its records are not read."""
    kept = open_kept(lg, config_digest, records=False)
    if kept is None:
        return None
    t = kept[1]
    try:
        seq, size, root = int(t["seq"]), int(t["size"]), str(t["root"])
        run_id, outputs, obs = str(t["run_id"]), str(t["outputs_digest"]), str(t["observations"])
    except (KeyError, TypeError, ValueError):
        return None
    if t.get("config_digest") != config_digest or not 0 < size <= seq < lg.size():
        return None
    ev = next(iter(lg.read(from_seq=seq, to_seq=seq)), None)
    if ev is None or ev.type != "reconcile.completed":
        return None
    data = receipt_tail(ev.payload)
    if data is None:
        return None
    receipt = data.get("receipt") if isinstance(data.get("receipt"), dict) else {}
    if (
        data.get("run_id") != run_id
        or data.get("observations_digest") != obs
        or receipt.get("checkpoint") != {"size": size, "root": root}
        or receipt.get("outputs_digest") != outputs
        or receipt.get("config_digest") != config_digest
        or lg.root(size).hex() != root
    ):
        return None
    return t


def receipt_tail(payload: bytes) -> dict[str, Any] | None:
    """The top-level fields of a ``reconcile.completed`` payload from ``observations_digest``
    on (``receipt``, ``run_id``), parsed without its ``config`` (which names every trial:
    parsed whole, ~6x the payload's size). Payloads are canonical JSON (sorted keys,
    compact), so they end the object; the last such key nested deeper, or in a string
    (quotes escaped), leaves no object that parses to the end: None, as with no tail."""
    at = payload.rfind(b',"observations_digest":')
    try:
        tail = orjson.loads(b"{" + payload[at + 1 :]) if at >= 0 else None
    except orjson.JSONDecodeError:
        return None
    return tail if isinstance(tail, dict) else None


def load_base(
    lg: Any, config_digest: str, checked: dict[str, Any],
    covered: Mapping[str, Collection[str]] | None = None,
) -> Base | None:  # fmt: skip
    """The base :func:`check_base` vouched for (``checked``: its trailer), its records read
    now, if the file still has that trailer and its records hash to the digest it binds.
    ``covered`` (corpora read from the ledger -> the task ids their claims cover): the
    records only counted (:class:`Counted`), the streams touched since noted first (such a
    run appends nothing before its corpora are read)."""
    kept = open_kept(lg, config_digest)
    if kept is None or kept[1] != checked:
        return None
    body, t = kept
    touched: set[str] = set()
    if covered:
        touched.update(lg.streams(TRIAL_PREFIX, from_seq=int(t["size"])))
    counted = Counted(covered, touched) if covered else None
    try:
        records, reader = read_records(body, counted)
        if counted is not None:
            counted.settle()
        whole = len(records) + (sum(map(counted.listed, counted.sources)) if counted else 0)
        ok = reader.hasher.digest() == t["observations"] and whole == t.get("count")
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, IndexError):
        ok = False
    if not ok:
        body.close()
        return None
    return Base(records, str(t["run_id"]), int(t["seq"]), int(t["size"]), str(t["root"]),
                str(t["outputs_digest"]), reader.streams_read, touched,
                lg.size() if counted else 0,
                counted=counted, reader=reader)  # fmt: skip


class LazyBase:
    """The base a run extends: checked at once, while the run holds little; its records
    read on first use, after the first corpus is ingested, so the ingest's working set and
    the kept observations are not held at the same time (the checks hold as well then: its
    ingest appends after the base's event, never before)."""

    def __init__(
        self, lg: Any, config_digest: str, covered: Mapping[str, Collection[str]] | None = None
    ) -> None:
        checked = check_base(lg, config_digest)
        # the checkpoint of the run extended (None: no run to extend), known before its
        # records are read
        self.size: int | None = None if checked is None else int(checked["size"])
        self._find: Callable[[], Base | None] | None = (
            None if checked is None
            else functools.partial(load_base, lg, config_digest, checked, covered)
        )  # fmt: skip
        self._base: Base | None = None

    def __call__(self) -> Base | None:
        if self._find is not None:
            self._base, self._find = self._find(), None
        return self._base


def kept_records(reads: Iterable[Any]) -> Iterator[tuple[str, str, Carried]]:
    """What the next run may carry forward of this one: every excluded bundle and readable
    trial ingest planned (unreadable ones are read again); a carried one as it was kept,
    unless this run evaluated the candidate it lacked."""
    for read in reads:  # a carried bundle was planned as its Carried says (Base.carry)
        for trial, _ in read.excluded:
            kept = read.carried.get(trial)
            if kept is None and trial in read.planned:
                stream, ids = read.planned[trial]
                kept = Carried(stream, ids.hex(), excluded=True)
            if kept is not None:
                yield read.source, trial, kept
        for (ref, _), obs, digest_ in zip(read.trials, read.observed, read.digests, strict=True):
            kept = read.carried.get(ref.trial)
            if kept is None and ref.trial not in read.planned:
                continue
            candidate = evaluated(obs)
            if kept is not None and (kept.candidate is not None or candidate is None):
                yield read.source, ref.trial, kept
                continue
            ids = kept.planned if kept is not None else read.planned[ref.trial][1].hex()
            kept = Carried(ref.stream, ids, digest_, False, obs.task_id, obs.grade, obs.grading,
                           candidate)  # fmt: skip
            if finite(kept):
                yield read.source, ref.trial, kept


Lazy = Callable[[], Candidate]


def lazy_from_ledger(lg: Any, stream: str, evaluate: Callable[[list[Any]], Candidate]) -> Lazy:
    """A carried trial's candidate, if a claim asks for one the earlier run never computed:
    its stream read from the ledger (unchanged since, so the events it was observed from)."""
    return _FromLedger(lg, stream, evaluate)


class _FromLedger:
    """:func:`lazy_from_ledger`'s value, computed on first call and kept (a slotted object:
    one per carried trial, most never called, so no ``functools.cache`` wrapper each)."""

    __slots__ = ("_lg", "_stream", "_evaluate", "_value")

    def __init__(self, lg: Any, stream: str, evaluate: Callable[[list[Any]], Candidate]) -> None:
        self._lg, self._stream, self._evaluate = lg, stream, evaluate
        self._value: Candidate | None = None

    def __call__(self) -> Candidate:
        if self._value is None:
            self._value = self._evaluate(list(self._lg.read(stream=self._stream)))
        return self._value

    @property
    def value(self) -> Candidate | None:
        """The candidate if computed already, else None."""
        return self._value
