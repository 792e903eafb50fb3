"""Where a reconciliation keeps its per-trial observations, and how they are written and read
back (:mod:`ledger.app.reconcile_extend` decides when they are used).

``<ledger>/projections/reconcile-<config digest>.results`` (derived data, never evidence:
deleting it costs one full run)::

    MAGIC line | one JSON line per part or record | trailer JSON | u64 trailer length

Many trials share equal parts — a task's grading, a criterion's results, a candidate — so
each distinct part is written once, as ``{"part": n, "kind": …, "value": …}`` before the
first record naming it, and records name parts by ``n``. Read back, every record naming a
part holds the one object built from it: the file is written and read in time and memory
proportional to its distinct parts plus a small line per trial, and the counterfactual
recomposes each shared combination once (``reconcile.counterfactual``).

A part is parsed when a record held as an object first names it (:class:`KeptReader`).
Carried records of a corpus read from the ledger are not held as objects
(:mod:`ledger.app.reconcile_counted`). An extension copies the line of every trial it
carries as written, after every part line of the file it read (so part numbers hold), then
writes what it read anew (:meth:`KeptWriter.finish`): a part only records it no longer
carries named stays until a full run, which writes each distinct part once.
"""

from __future__ import annotations

import hashlib
import heapq
import io
import itertools
import os
import struct
import tempfile
import weakref
from array import array
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson

from ledger.app.reconcile_counted import Counted, CountedSource
from ledger.app.replay_results import BUFFER, MAX_TRAILER
from ledger.log.layout import derived_temp, keep_per_config, projections_of
from reconcile.inputs import (
    Candidate,
    CandidateEvaluation,
    CriterionResult,
    CriterionShape,
    RecordedGrade,
    RecordedGrading,
    Unavailable,
)

KEPT_FORMAT = "vledger-reconcile-observations/2"
MAGIC = KEPT_FORMAT.encode() + b"\n"
_TRAILER_LEN = struct.Struct("<Q")
_PENDING_IN_MEMORY = 8 << 20  # lines written anew beyond this wait in a temporary file


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
    # read back from a kept file: where its line is there (copied as written; not a value)
    at: int = field(default=-1, compare=False)


# ------------------------------------------------------------------ the parts, by kind


def _results(value: list[dict[str, Any]]) -> tuple[CriterionResult, ...]:
    return tuple(CriterionResult(**x) for x in value)


def _components(value: dict[str, Any]) -> dict[str, Any]:
    return value


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


# kind -> how a part's JSON value becomes the object records share
PART_KINDS: dict[str, Callable[[Any], Any]] = {
    "results": _results, "components": _components, "grading": _grading,
    "candidate": _candidate,
}  # fmt: skip


# a kept trial's task id, grade, grading and candidate (None: not evaluated then)
Observed = tuple[str, RecordedGrade, RecordedGrading, Candidate | None]


class RecordHasher:
    """The digest of the kept lines, in order (what ``observations_digest`` binds)."""

    def __init__(self) -> None:
        self._h = hashlib.sha256(MAGIC)

    def add(self, line: bytes) -> None:
        self._h.update(len(line).to_bytes(8, "little") + line)

    def digest(self) -> str:
        return "sha256:" + self._h.hexdigest()


# ------------------------------------------------------------------ reading

_PART = b'{"part":'  # how a part line starts (KeptWriter._part writes it so)


class KeptBody:
    """A kept file's lines up to its trailer, each with its offset; and a line read again
    by its offset (a part parsed when first named, a counted record copied or read)."""

    def __init__(self, file: IO[bytes], end: int) -> None:
        self._file, self._end = file, end

    @classmethod
    def of(cls, data: bytes, end: int | None = None) -> KeptBody:
        """The body of ``data`` (a whole file, from its magic line), in memory."""
        return cls(io.BytesIO(data), len(data) if end is None else end)

    def lines(self) -> Iterator[tuple[int, bytes]]:
        """Every line (without its newline) and where it starts; ValueError past the end."""
        f = self._file
        pos = f.seek(len(MAGIC))
        if pos == self._end:
            return
        for line in f:
            at, pos = pos, pos + len(line)
            if pos > self._end or not line.endswith(b"\n"):
                raise ValueError("a kept line runs past the trailer")
            yield at, line[:-1]
            if pos == self._end:
                return

    def line_at(self, at: int, size: int) -> bytes:
        if isinstance(self._file, io.BytesIO):  # (a view: the whole buffer is not copied)
            return bytes(self._file.getbuffer()[at : at + size])
        return os.pread(self._file.fileno(), size, at)

    def close(self) -> None:
        self._file.close()


class KeptReader:
    """Kept lines read back in order: parts when a record first names them, records into
    :class:`Carried` values, or into ``counted`` (KeyError / TypeError / ValueError /
    IndexError: not a file this version wrote)."""

    def __init__(self, body: KeptBody, counted: Counted | None = None) -> None:
        self.body, self.counted = body, counted
        self.parts: list[Any] = []  # a part's object once parsed, else None
        self.kinds: dict[int, str] = {}  # the parsed ones' kinds
        self._at, self._size = array("Q"), array("I")  # each part's line
        self.grades: dict[tuple[Any, ...], RecordedGrade] = {}
        self.once: dict[str, str] = {}
        self.streams_read: dict[str, int] = {}  # corpus read from the ledger -> its streams
        self.hasher = RecordHasher()

    def read(self, at: int, line: bytes) -> tuple[tuple[str, str], Carried] | None:
        """The record ``line`` (at offset ``at``) holds, by (source, trial); None for a part,
        a note or a counted record."""
        self.hasher.add(line)
        if line.startswith(_PART):
            if int(line[len(_PART) : line.index(b",")]) != len(self.parts):
                raise ValueError("a part out of order")
            self.parts.append(None)
            self._at.append(at)
            self._size.append(len(line))
            return None
        rec = orjson.loads(line)
        if "streams_read" in rec:
            self.streams_read = {str(k): int(v) for k, v in rec["streams_read"].items()}
            return None
        if self.counted is not None and self.counted.takes(rec["source"], rec, at, line):
            return None
        return self.record(rec, at)

    def record(self, rec: dict[str, Any], at: int) -> tuple[tuple[str, str], Carried]:
        """The record ``rec`` (its line at offset ``at``) as a value, by (source, trial)."""
        # as written (the lines hash to the receipt's digest); names many records share, once
        key = (self.once.setdefault(rec["source"], rec["source"]), rec["trial"])
        stream, planned = rec["stream"], rec["planned"]
        if rec.get("excluded"):
            return key, Carried(stream, planned, excluded=True, at=at)
        task_id, grade, grading, candidate = self._observed(rec)
        return key, Carried(stream, planned, rec["stream_digest"], task_id=task_id, grade=grade,
                            grading=grading, candidate=candidate, at=at)  # fmt: skip

    def lazy(self, source: CountedSource, i: int) -> tuple[str, str, Observed]:
        """``source``'s lazy record ``i`` (its line checked: ReconcileError): its trial, its
        stream and what was observed of it (no :class:`Carried` built: it is counted and
        let go)."""
        rec = orjson.loads(source.lazy_line(i, self.body.line_at))
        return rec["trial"], rec["stream"], self._observed(rec)

    def _observed(self, rec: dict[str, Any]) -> Observed:
        part, g = self._part, rec["grade"]
        results = g["criterion_results"]
        score = g["score"]  # by repr: 1 and 1.0, or 0.0 and -0.0, are not one score
        shape = (g["judge_status"], results, g["components"], repr(score), g["binary_pass"],
                 g["trace_gate_failed"])  # fmt: skip
        grade = self.grades.get(shape)  # equal grades (their parts are shared) held once
        if grade is None:
            grade = self.grades[shape] = RecordedGrade(
                shape[0], None if results is None else part(results), part(shape[2]),
                score, *shape[4:],
            )  # fmt: skip
        cand = rec["candidate"]
        task_id = self.once.setdefault(rec["task_id"], rec["task_id"])
        return task_id, grade, part(rec["grading"]), None if cand is None else part(cand)

    def _part(self, n: int) -> Any:
        if not 0 <= n < len(self.parts):
            raise IndexError("a part named before it is written")
        got = self.parts[n]
        if got is None:
            rec = orjson.loads(self.body.line_at(self._at[n], self._size[n]))
            if rec["part"] != n:
                raise ValueError("a part out of place")
            got = self.parts[n] = PART_KINDS[rec["kind"]](rec["value"])
            self.kinds[n] = rec["kind"]
        return got


def read_records(
    body: KeptBody, counted: Counted | None = None
) -> tuple[dict[tuple[str, str], Carried], KeptReader]:
    """Every record of ``body`` held as an object, by (source, trial), and the reader (the
    digest of the lines, what else they noted; ``counted``: the records only counted)."""
    reader = KeptReader(body, counted)
    records: dict[tuple[str, str], Carried] = {}
    for at, line in body.lines():
        got = reader.read(at, line)
        if got is not None:
            records[got[0]] = got[1]
    return records, reader


# ------------------------------------------------------------------ writing


class KeptWriter:
    """This run's observations, one line each (and each distinct part once, before the
    first record naming it), then (once its event is appended) the trailer. Extending a
    run (``base``: what read its file), a carried record's line is copied as written and
    what the run read anew is written after them (:meth:`finish`)."""

    def __init__(self, lg: Any, base: KeptReader | None = None) -> None:
        folder = projections_of(lg)
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
        self.broken = False  # the lines copied were not those read: nothing is kept
        # a part by identity (holding it, so its id stays its own), and by its JSON
        self._by_id: dict[tuple[str, int], tuple[int, Any]] = {}
        self._by_json: dict[tuple[str, bytes], int] = {}
        self._parts = 0  # parts written so far (with a base: its parts, copied by finish)
        self._base = base
        self._copy = array("Q")  # where the carried records' lines are in the base's file
        # the lines written anew, held back until the carried ones are copied
        self._pending: IO[bytes] | None = None
        if base is not None:  # beside the file it becomes part of (in memory: in memory)
            self._pending = (
                io.BytesIO() if self.path is None
                else tempfile.SpooledTemporaryFile(_PENDING_IN_MEMORY, dir=self.path.parent)  # noqa: SIM115 - closed by finish or discard
            )  # fmt: skip
            self._parts = len(base.parts)
            for n, kind in base.kinds.items():  # the parts parsed: reused by identity
                self._by_id[(kind, id(base.parts[n]))] = (n, base.parts[n])

    def add(self, source: str, trial: str, c: Carried) -> None:
        """One bundle's observation (the values as orjson writes dataclasses: their fields);
        one read back from the base's file is copied as written."""
        self.count += 1
        if c.at >= 0 and self._base is not None:
            self._copy.append(c.at)
            return
        rec: dict[str, Any] = {"source": source, "trial": trial, "stream": c.stream,
                               "planned": c.planned}  # fmt: skip
        if c.excluded:
            rec["excluded"] = True
        else:
            g = c.grade
            assert g is not None
            results = g.criterion_results
            rec |= {
                "stream_digest": c.stream_digest,
                "task_id": c.task_id,
                "grade": {
                    "judge_status": g.judge_status,
                    "criterion_results": None if results is None else self._part("results", results),
                    "components": self._part("components", g.components),
                    "score": g.score, "binary_pass": g.binary_pass,
                    "trace_gate_failed": g.trace_gate_failed,
                },  # fmt: skip
                "grading": self._part("grading", c.grading),
                "candidate": None if c.candidate is None else self._part("candidate", c.candidate),
            }
        self._line(orjson.dumps(rec))

    def finish(self, counted: Collection[CountedSource], digest: str) -> None:
        """With a base, after every record is added: its part lines, then the lines of the
        records carried (those added as read, and ``counted``'s), copied as the file holds
        them, then the lines written anew. The file is read again whole: if its lines no
        longer hash to ``digest`` (what was read of it), nothing is kept."""
        if self._base is None or self._pending is None:
            return
        pending, self._pending = self._pending, None
        self.count += sum(c.carried + len(c.lazy_at) for c in counted)
        copy = self._copy  # added in the report's order, mostly the file's: no list of ints
        if any(a > b for a, b in itertools.pairwise(copy)):
            copy = array("Q", sorted(copy))
        wanted = heapq.merge(copy, *(c.lines() for c in counted))
        nxt = next(wanted, None)
        again = RecordHasher()
        for at, line in self._base.body.lines():
            again.add(line)
            if at == nxt:
                self._line(line)
                nxt = next(wanted, None)
            elif line.startswith(_PART):
                self._line(line)
            if nxt is not None and nxt <= at:  # no line starts there, or named twice
                break
        self.broken = again.digest() != digest or nxt is not None
        pending.seek(0)
        for line in pending:
            self._line(line[:-1])
        pending.close()

    def note_streams(self, counts: dict[str, int]) -> None:
        """How many trial streams each corpus read from the ledger has (``reconcile_read``):
        a run naming as many kept streams need not list the corpus's streams again."""
        self._line(orjson.dumps({"streams_read": counts}))

    def _part(self, kind: str, value: Any) -> int:
        hit = self._by_id.get((kind, id(value)))
        if hit is not None:
            return hit[0]
        body = orjson.dumps([type(value).__name__, value] if kind == "candidate" else value)
        n = self._by_json.get((kind, body))
        if n is None:
            n = self._by_json[(kind, body)] = self._parts
            self._parts += 1
            self._line(b'{"part":%d,"kind":"%s","value":%s}' % (n, kind.encode(), body))
        self._by_id[(kind, id(value))] = (n, value)
        return n

    def _line(self, line: bytes) -> None:
        if self._pending is not None:  # hashed when written, after the copied ones
            self._pending.write(line + b"\n")
            return
        self.hasher.add(line)
        self.file.write(line + b"\n")

    def keep(self, lg: Any, config_digest: str, trailer: dict[str, Any]) -> None:
        """Finish the file and make it the one the next run with this config extends."""
        if self.broken:
            self.discard()
            return
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
        if self._pending is not None:
            self._pending.close()
        self.file.close()
        if self.path is not None:
            self.path.unlink(missing_ok=True)
            self.path = None


# ------------------------------------------------------------------ where they are kept

_IN_MEMORY: weakref.WeakKeyDictionary[Any, dict[str, bytes]] = weakref.WeakKeyDictionary()


def _name(config_digest: str) -> str:
    return f"reconcile-{config_digest.removeprefix('sha256:')[:32]}.results"


def open_kept(lg: Any, config_digest: str, records: bool = True) -> tuple[KeptBody, Any] | None:
    """The kept lines (none unless ``records``; the body, open, is the caller's to close)
    and the trailer, or None (not ours)."""
    folder = projections_of(lg)
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
        return KeptBody.of(MAGIC), trailer
    return KeptBody(file, end), trailer
