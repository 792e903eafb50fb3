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
digest>.results`` (derived data, never evidence: deleting it costs one full run)::

    MAGIC line | one JSON record per line | trailer JSON | u64 trailer length

The trailer names the run's ``reconcile.completed`` event; the file is used only if that
event is there, with the same run id, tree head, config and outputs digests, and a digest
of the records (``observations_digest`` in the event) that the records as read hash to.
"""

from __future__ import annotations

import functools
import hashlib
import io
import math
import os
import struct
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson

from ledger.app.replay_results import BUFFER, MAX_TRAILER, PROJECTIONS_DIR
from ledger.log.layout import DB_FILE, TRIAL_PREFIX, derived_temp, keep_per_config
from reconcile.inputs import (
    Candidate,
    CandidateEvaluation,
    CriterionResult,
    CriterionShape,
    RecordedGrade,
    RecordedGrading,
    TrialObservation,
    Unavailable,
)
from replay.grading.grade import GRADING_VERSION
from replay.timeline.build import TIMELINE_VERSION
from replay.trace_checks import TRACE_CHECKS_VERSION
from schemas.canonical import digest

# Bump when a trial's observation would differ for the same events and pack (the folding
# of its events, the reading of its grade and grading, the candidate label's rules).
RECONCILE_PROJECTION = (
    f"reconcile-observation/1 ({GRADING_VERSION}, {TIMELINE_VERSION}, {TRACE_CHECKS_VERSION})"
)
KEPT_FORMAT = "vledger-reconcile-observations/1"
MAGIC = KEPT_FORMAT.encode() + b"\n"
_TRAILER_LEN = struct.Struct("<Q")


def config_digest(config: dict[str, Any]) -> str:
    """The digest two reconciliations must share for one to carry the other's observations:
    ``config`` is the run's selection and packs (the caller's), with the projection's
    code version added here."""
    return digest({"projection": RECONCILE_PROJECTION, **config})


# ------------------------------------------------------------------ one observation as kept


@dataclass(frozen=True, slots=True)
class Carried:
    """A bundle as an earlier reconciliation observed it: excluded, or a trial's values."""

    stream: str
    planned: str  # hex digest of the event ids the bundle was planned as
    stream_digest: str = ""  # what the inputs digest binds of the trial
    excluded: bool = False
    task_id: str = ""
    grade: RecordedGrade | None = None
    grading: RecordedGrading | None = None
    candidate: Candidate | None = None  # None: not evaluated then (no claim asked for it)


def record(source: str, trial: str, c: Carried) -> dict[str, Any]:
    """One kept line: the bundle (by its corpus and name) and what it was observed as (the
    values as orjson writes dataclasses: their fields, in order)."""
    out: dict[str, Any] = {"source": source, "trial": trial, "stream": c.stream,
                           "planned": c.planned}  # fmt: skip
    if c.excluded:
        return {**out, "excluded": True}
    cand = c.candidate
    return {
        **out,
        "stream_digest": c.stream_digest,
        "task_id": c.task_id,
        "grade": c.grade,
        "grading": c.grading,
        "candidate": None if cand is None else [type(cand).__name__, cand],
    }


def carried_of(rec: dict[str, Any], shared: dict[bytes, Any] | None = None) -> Carried:
    """A kept line read back (KeyError / TypeError / ValueError: not one this version wrote).
    ``shared``: the values already read back, by their JSON — equal parts of many trials
    (a task's grading, a criterion's result) are then held once, not once per trial."""
    if rec.get("excluded"):
        return Carried(str(rec["stream"]), str(rec["planned"]), excluded=True)
    memo: dict[bytes, Any] = {} if shared is None else shared
    g, r, cand = rec["grade"], rec["grading"], rec["candidate"]

    def once(value: Any, make: Callable[[Any], Any]) -> Any:
        key = orjson.dumps([make.__name__, value])
        got = memo.get(key)
        if got is None:
            got = memo[key] = make(value)
        return got

    def rows(results: list[Any]) -> tuple[CriterionResult, ...]:
        return tuple(once(x, _result) for x in results)

    results = g["criterion_results"]
    grade = RecordedGrade(
        once(g["judge_status"], _same), None if results is None else once(results, rows),
        once(g["components"], _same), g["score"], g["binary_pass"], g["trace_gate_failed"],
    )  # fmt: skip
    grading = once(r, _grading)
    candidate: Candidate | None = None
    if cand is not None:
        candidate = once(cand, _candidate)
    return Carried(str(rec["stream"]), str(rec["planned"]), str(rec["stream_digest"]),
                   task_id=once(str(rec["task_id"]), _same), grade=grade, grading=grading,
                   candidate=candidate)  # fmt: skip


def _same(value: Any) -> Any:
    return value


def _result(x: dict[str, Any]) -> CriterionResult:
    return CriterionResult(**x)


def _grading(r: dict[str, Any]) -> RecordedGrading:
    rubric = r["rubric"]
    return RecordedGrading(
        None if rubric is None else tuple(CriterionShape(**x) for x in rubric),
        r["weights"], r["method"], r["pass_threshold"],
    )  # fmt: skip


def _candidate(cand: list[Any]) -> Candidate:
    kind, body = cand
    kinds: dict[str, Any] = {"CandidateEvaluation": CandidateEvaluation, "Unavailable": Unavailable}
    return kinds[kind](**body)


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
    touched: set[str] = field(default_factory=set)  # trial streams with an event since
    read_to: int = 0  # the log size ``touched`` was read to
    carried: int = 0

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
            self.touched.update(
                ev.stream for ev in lg.read(stream_prefix=TRIAL_PREFIX, from_seq=frm)
            )
            self.read_to = size

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
    kept = _open(lg, config_digest, records=False)
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


def load_base(lg: Any, config_digest: str, checked: dict[str, Any]) -> Base | None:
    """The base :func:`check_base` vouched for (``checked``: its trailer), its records read
    now, if the file still has that trailer and its records hash to the digest it binds."""
    kept = _open(lg, config_digest)
    if kept is None or kept[1] != checked:
        return None
    body, t = kept
    hasher = RecordHasher()
    records: dict[tuple[str, str], Carried] = {}
    shared: dict[bytes, Any] = {}
    try:
        for line in body:
            hasher.add(line)
            rec = orjson.loads(line)
            records[(str(rec["source"]), str(rec["trial"]))] = carried_of(rec, shared)
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None
    if hasher.digest() != t["observations"] or len(records) != t.get("count"):
        return None
    return Base(records, str(t["run_id"]), int(t["seq"]), int(t["size"]), str(t["root"]),
                str(t["outputs_digest"]))  # fmt: skip


class LazyBase:
    """The base a run extends: checked at once, while the run holds little; its records
    read on first use, after the first corpus is ingested, so the ingest's working set and
    the kept observations are not held at the same time (the checks hold as well then: its
    ingest appends after the base's event, never before)."""

    def __init__(self, lg: Any, config_digest: str) -> None:
        checked = check_base(lg, config_digest)
        self._find: Callable[[], Base | None] | None = (
            None if checked is None else functools.partial(load_base, lg, config_digest, checked)
        )
        self._base: Base | None = None

    def __call__(self) -> Base | None:
        if self._find is not None:
            self._base, self._find = self._find(), None
        return self._base


class RecordHasher:
    """The digest of the kept lines, in order (what ``observations_digest`` binds)."""

    def __init__(self) -> None:
        self._h = hashlib.sha256(MAGIC)

    def add(self, line: bytes) -> None:
        self._h.update(len(line).to_bytes(8, "little"))
        self._h.update(line)

    def digest(self) -> str:
        return "sha256:" + self._h.hexdigest()


# ------------------------------------------------------------------ where they are kept

_IN_MEMORY: weakref.WeakKeyDictionary[Any, dict[str, bytes]] = weakref.WeakKeyDictionary()


def _directory(lg: Any) -> Path | None:
    root = Path(getattr(lg, "path", ""))
    return root / PROJECTIONS_DIR if (root / DB_FILE).is_file() else None


def _name(config_digest: str) -> str:
    return f"reconcile-{config_digest.removeprefix('sha256:')[:32]}.results"


def _open(lg: Any, config_digest: str, records: bool = True) -> tuple[Iterator[bytes], Any] | None:
    """The kept lines (lazily; none unless ``records``) and the trailer, or None (not ours)."""
    folder = _directory(lg)
    try:
        if folder is None:
            data = _IN_MEMORY.get(lg, {}).get(config_digest)
            if data is None:
                return None
            file: IO[bytes] = io.BytesIO(data)
        else:
            path = folder / _name(config_digest)
            if not path.is_file():
                return None
            file = open(path, "rb")  # noqa: SIM115 - read after this returns
        total = file.seek(0, os.SEEK_END)
        if total < len(MAGIC) + _TRAILER_LEN.size:
            return None
        file.seek(total - _TRAILER_LEN.size)
        (n,) = _TRAILER_LEN.unpack(file.read(_TRAILER_LEN.size))
        end = total - _TRAILER_LEN.size - n
        if n > MAX_TRAILER or end < len(MAGIC):
            return None
        file.seek(end)
        trailer = orjson.loads(file.read(n))
        file.seek(0)
        if file.read(len(MAGIC)) != MAGIC or not isinstance(trailer, dict):
            return None
    except (OSError, orjson.JSONDecodeError):
        return None
    if not records:
        file.close()
        return iter(()), trailer
    return _lines(file, end), trailer


def _lines(file: IO[bytes], end: int) -> Iterator[bytes]:
    with file:
        pos = file.seek(len(MAGIC))
        for line in file:
            pos += len(line)
            if pos > end or not line.endswith(b"\n"):
                raise ValueError("a kept line runs past the trailer")
            yield line[:-1]
            if pos == end:
                return


class KeptWriter:
    """This run's observations, one line each, then (once its event is appended) the trailer."""

    def __init__(self, lg: Any) -> None:
        folder = _directory(lg)
        self.path: Path | None = None
        if folder is None:
            self.file: IO[bytes] = io.BytesIO()
        else:
            folder.mkdir(exist_ok=True)
            handle, name = derived_temp(folder, "reconcile")
            self.file, self.path = os.fdopen(handle, "w+b", buffering=BUFFER), Path(name)
        self.file.write(MAGIC)
        self.hasher = RecordHasher()
        self.count = 0

    def add(self, rec: dict[str, Any]) -> None:
        line = orjson.dumps(rec)
        self.hasher.add(line)
        self.file.write(line + b"\n")
        self.count += 1

    def keep(self, lg: Any, config_digest: str, trailer: dict[str, Any]) -> None:
        """Finish the file and make it the one the next run with this config extends."""
        body = orjson.dumps({"format": KEPT_FORMAT, "count": self.count,
                             "config_digest": config_digest, **trailer})  # fmt: skip
        self.file.write(body + _TRAILER_LEN.pack(len(body)))
        self.file.flush()
        if self.path is not None:  # no fsync: a file cut short by a crash fails its checks
            keep_per_config(self.path, self.path.with_name(_name(config_digest)))
            self.file.close()
            self.path = None
            return
        assert isinstance(self.file, io.BytesIO)
        _IN_MEMORY.setdefault(lg, {})[config_digest] = self.file.getvalue()

    def discard(self) -> None:
        """Remove a file that will not be kept (the run failed)."""
        self.file.close()
        if self.path is not None:
            self.path.unlink(missing_ok=True)
            self.path = None


def kept_records(reads: Iterable[Any]) -> Iterator[dict[str, Any]]:
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
                yield record(read.source, trial, kept)
        for (ref, _), obs, digest_ in zip(read.trials, read.observed, read.digests, strict=True):
            kept = read.carried.get(ref.trial)
            if kept is None and ref.trial not in read.planned:
                continue
            candidate = evaluated(obs)
            if kept is not None and (kept.candidate is not None or candidate is None):
                yield record(read.source, ref.trial, kept)
                continue
            ids = kept.planned if kept is not None else read.planned[ref.trial][1].hex()
            kept = Carried(ref.stream, ids, digest_, False, obs.task_id, obs.grade, obs.grading,
                           candidate)  # fmt: skip
            if finite(kept):
                yield record(read.source, ref.trial, kept)


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
