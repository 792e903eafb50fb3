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
"""

from __future__ import annotations

import hashlib
import io
import os
import struct
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

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


class RecordHasher:
    """The digest of the kept lines, in order (what ``observations_digest`` binds)."""

    def __init__(self) -> None:
        self._h = hashlib.sha256(MAGIC)

    def add(self, line: bytes) -> None:
        self._h.update(len(line).to_bytes(8, "little") + line)

    def digest(self) -> str:
        return "sha256:" + self._h.hexdigest()


# ------------------------------------------------------------------ reading


class KeptReader:
    """Kept lines read back in order: parts as they come, records into :class:`Carried`
    values (KeyError / TypeError / ValueError / IndexError: not a file this version wrote)."""

    def __init__(self) -> None:
        self.parts: list[Any] = []
        self.grades: dict[tuple[Any, ...], RecordedGrade] = {}
        self.once: dict[str, str] = {}
        self.streams_read: dict[str, int] = {}  # corpus read from the ledger -> its streams
        self.hasher = RecordHasher()

    def read(self, line: bytes) -> tuple[tuple[str, str], Carried] | None:
        """The record ``line`` holds, by (source, trial); None for a part."""
        self.hasher.add(line)
        rec = orjson.loads(line)
        if "streams_read" in rec:
            self.streams_read = {str(k): int(v) for k, v in rec["streams_read"].items()}
            return None
        if "part" in rec:
            if rec["part"] != len(self.parts):
                raise ValueError("a part out of order")
            self.parts.append(PART_KINDS[rec["kind"]](rec["value"]))
            return None
        # as written (the lines hash to the receipt's digest); names many records share, once
        key = (self.once.setdefault(rec["source"], rec["source"]), rec["trial"])
        stream, planned = rec["stream"], rec["planned"]
        if rec.get("excluded"):
            return key, Carried(stream, planned, excluded=True)
        parts, g = self.parts, rec["grade"]
        results = g["criterion_results"]
        score = g["score"]  # by repr: 1 and 1.0, or 0.0 and -0.0, are not one score
        shape = (g["judge_status"], results, g["components"], repr(score), g["binary_pass"],
                 g["trace_gate_failed"])  # fmt: skip
        grade = self.grades.get(shape)  # equal grades (their parts are shared) held once
        if grade is None:
            grade = self.grades[shape] = RecordedGrade(
                shape[0], None if results is None else parts[results], parts[shape[2]],
                score, *shape[4:],
            )  # fmt: skip
        cand = rec["candidate"]
        task_id = self.once.setdefault(rec["task_id"], rec["task_id"])
        return key, Carried(stream, planned, rec["stream_digest"], task_id=task_id,
                            grade=grade, grading=parts[rec["grading"]],
                            candidate=None if cand is None else parts[cand])  # fmt: skip


def read_records(lines: Iterable[bytes]) -> tuple[dict[tuple[str, str], Carried], KeptReader]:
    """Every record of ``lines`` by (source, trial), and the reader (the digest of the lines,
    what else they noted)."""
    reader = KeptReader()
    records: dict[tuple[str, str], Carried] = {}
    for line in lines:
        got = reader.read(line)
        if got is not None:
            records[got[0]] = got[1]
    return records, reader


# ------------------------------------------------------------------ writing


class KeptWriter:
    """This run's observations, one line each (and each distinct part once, before the
    first record naming it), then (once its event is appended) the trailer."""

    def __init__(self, lg: Any) -> None:
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
        # a part by identity (holding it, so its id stays its own), and by its JSON
        self._by_id: dict[tuple[str, int], tuple[int, Any]] = {}
        self._by_json: dict[tuple[str, bytes], int] = {}

    def add(self, source: str, trial: str, c: Carried) -> None:
        """One bundle's observation (the values as orjson writes dataclasses: their fields)."""
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
        self.count += 1

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
            n = self._by_json[(kind, body)] = len(self._by_json)
            self._line(b'{"part":%d,"kind":"%s","value":%s}' % (n, kind.encode(), body))
        self._by_id[(kind, id(value))] = (n, value)
        return n

    def _line(self, line: bytes) -> None:
        self.hasher.add(line)
        self.file.write(line + b"\n")

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


# ------------------------------------------------------------------ where they are kept

_IN_MEMORY: weakref.WeakKeyDictionary[Any, dict[str, bytes]] = weakref.WeakKeyDictionary()


def _name(config_digest: str) -> str:
    return f"reconcile-{config_digest.removeprefix('sha256:')[:32]}.results"


def open_kept(
    lg: Any, config_digest: str, records: bool = True
) -> tuple[Iterator[bytes], Any] | None:
    """The kept lines (lazily; none unless ``records``) and the trailer, or None (not ours)."""
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
