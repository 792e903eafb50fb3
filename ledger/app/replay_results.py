"""A replay's per-trial results, kept next to the log so the next retrace can extend it.

Each trial's outcome is one record of four byte strings: its stream, the fields the corpus
report folds (``fold``), the differences and replayed grade (``detail``) and the canonical
JSON of its output row (``row``, the bytes the outputs digest hashes). A results file is
the records in stream order, then a JSON trailer naming the replay they belong to::

    MAGIC | record* | trailer JSON | u64 trailer length
    record = u32 len(stream) | u32 len(fold) | u32 len(detail) | u32 len(row) | the four

The file is derived data, never evidence: an extension checks it against the replay's
receipt (every row re-hashed to the receipt's outputs digest) before using a byte of it,
and a file that is missing or does not check is ignored (the retrace is then full).
Files live in ``<ledger>/projections/``, one per config digest (the latest replay with it);
an in-memory store keeps them in memory for as long as it lives.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import mmap
import os
import struct
import tempfile
import weakref
import zlib
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, overload

import orjson

from ledger.errors import LedgerError
from ledger.log.layout import derived_temp, keep_per_config, projections_of
from replay.grading.retrace import RECORD_DETAIL, TrialRetrace, outcome_from_record, outcome_record
from schemas.canonical import canonical_json
from schemas.retrace_status import RetraceStatus

RESULTS_FORMAT = "vledger-retrace-results/1"
MAGIC = RESULTS_FORMAT.encode() + b"\n"
_HEAD = struct.Struct("<IIII")
_TRAILER_LEN = struct.Struct("<Q")
MAX_TRAILER = 1 << 16  # a trailer is a few hundred bytes; a larger one is not ours


Buffer = bytes | memoryview


class ResultsUnreadable(LedgerError):
    """A results file that is not one this version wrote whole (the retrace is then full)."""


def output_row(o: TrialRetrace) -> dict[str, Any]:
    """What the outputs digest binds of one trial: status, differences, replayed grade."""
    return {
        "trial": o.trial,
        "status": o.status,
        "differences": [d.as_json() for d in o.differences],
        "replayed": o.replayed,
    }


class ListHasher:
    """``digest(rows)`` of a list of rows, fed one row's canonical JSON at a time."""

    def __init__(self) -> None:
        self._hasher = hashlib.sha256(b"[")
        self._sep = b""

    def add(self, row: Any) -> None:
        self.add_bytes(canonical_json(row))

    def add_bytes(self, row: bytes) -> None:
        self._hasher.update(self._sep)
        self._hasher.update(row)
        self._sep = b","

    def digest(self) -> str:
        done = self._hasher.copy()
        done.update(b"]")
        return "sha256:" + done.hexdigest()


class RecordsCheck:
    """The CRC-32 of a results file's records as stored, in order (its trailer's
    ``records_crc32``): the outputs digest binds only each record's row, and the report's
    constraint table and evidence line fold the rest, so a damaged record is found before
    its fields are used. A check against damage, not tampering (a rewritten file can carry
    its own), so a CRC: twice as fast here as SHA-256 over the ~3 KB a trial it reads and
    writes. Records are self-delimiting: their concatenation is unambiguous."""

    def __init__(self) -> None:
        self._crc = zlib.crc32(MAGIC)

    def add(self, chunk: Buffer) -> None:
        self._crc = zlib.crc32(chunk, self._crc)

    def value(self) -> int:
        return self._crc


@dataclass(frozen=True, slots=True)
class Record:
    stream: str
    fold: Buffer
    detail: Buffer
    row: Buffer
    raw: Buffer | None = None  # the whole record as stored, when read from a file

    @staticmethod
    def of(o: TrialRetrace) -> Record:
        rec = outcome_record(o)
        detail = {k: rec.pop(k) for k in RECORD_DETAIL}
        return Record(
            o.trial, orjson.dumps(rec), orjson.dumps(detail), canonical_json(output_row(o))
        )

    def folded(self) -> TrialRetrace:
        """The outcome as the report folds it (no differences, no replayed grade); a record
        that does not read back as one of this stream's is unreadable (the run is then full)."""
        try:
            o = outcome_from_record(orjson.loads(self.fold))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise ResultsUnreadable(f"{self.stream}: {exc}") from None
        if o.trial != self.stream or o.status not in STATUSES:
            raise ResultsUnreadable(f"{self.stream}: the record names another trial or status")
        return o

    def outcome(self) -> TrialRetrace:
        return outcome_from_record({**orjson.loads(self.fold), **orjson.loads(self.detail)})


class FoldCache:
    """Carried records' folded outcomes, shared between trials whose folded fields are the
    same but for the trial's name (most trials of a task): parsed once. The report's fold
    reads a trial's name only to name it in a refusal, and a refused extension is run in
    full, so a shared outcome folds exactly as the trial's own would."""

    LIMIT = 4096  # distinct outcomes kept: memory stays flat in ledger size

    def __init__(self) -> None:
        self._seen: dict[bytes, TrialRetrace] = {}

    def folded(self, rec: Record) -> TrialRetrace:
        fold = bytes(rec.fold)
        cut = fold.find(_AFTER_TRIAL)  # the trial's name is the first field, and only it
        key = fold[cut:] if cut > 0 else b""
        o = self._seen.get(key) if key else None
        if o is None:
            o = rec.folded()
            if key and len(self._seen) < self.LIMIT:
                self._seen[key] = o
        return o


_AFTER_TRIAL = b',"task_id":'


class ResultsWriter:
    """Records appended in stream order to ``file``; :meth:`finish` writes the trailer."""

    def __init__(self, file: IO[bytes], path: Path | None = None) -> None:
        self.file = file
        self.path = path  # None: an anonymous file (a dry run, an in-memory store)
        self.offsets = array("q")
        self.records = RecordsCheck()
        self._end = file.write(MAGIC)  # the file is only appended to (views read by pread)

    def add(self, rec: Record) -> None:
        self.offsets.append(self._end)
        if rec.raw is not None:  # carried forward: its bytes as they were
            self.records.add(rec.raw)
            self._end += self.file.write(rec.raw)
            return
        parts = (rec.stream.encode(), rec.fold, rec.detail, rec.row)
        for chunk in (_HEAD.pack(*(len(p) for p in parts)), *parts):
            self.records.add(chunk)
            self._end += self.file.write(chunk)

    def finish(self, trailer: dict[str, Any]) -> None:
        body = orjson.dumps({"format": RESULTS_FORMAT, "count": len(self.offsets),
                             "records_crc32": self.records.value(), **trailer})  # fmt: skip
        self.file.write(body + _TRAILER_LEN.pack(len(body)))
        self.file.flush()

    def view(self, tail: Sequence[TrialRetrace] = ()) -> RecordsView:
        """The records written (by the time it is read), read back by index, then ``tail``."""
        return RecordsView(self.file, self.offsets, tail)


class RecordsView(Sequence[TrialRetrace]):
    """The outcomes of a results file, each read back when indexed or iterated, then the
    few ``tail`` outcomes held in memory (bundles that never became trials)."""

    def __init__(self, file: IO[bytes], offsets: array, tail: Sequence[TrialRetrace]) -> None:
        self._file = file
        self._offsets = offsets
        self._tail = list(tail)

    def __len__(self) -> int:
        return len(self._offsets) + len(self._tail)

    @overload
    def __getitem__(self, i: int) -> TrialRetrace: ...
    @overload
    def __getitem__(self, i: slice) -> list[TrialRetrace]: ...
    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if not -len(self) <= i < len(self):
            raise IndexError("results index out of range")
        i %= len(self)
        if i >= len(self._offsets):
            return self._tail[i - len(self._offsets)]
        self._file.flush()
        fd, at = self._file.fileno(), self._offsets[i]
        sizes = _HEAD.unpack(os.pread(fd, _HEAD.size, at))
        body = os.pread(fd, sum(sizes), at + _HEAD.size)
        a, b, c, _ = sizes
        return Record("", body[a : a + b], body[a + b : a + b + c], b"").outcome()

    def __iter__(self) -> Iterator[TrialRetrace]:
        for i in range(len(self)):
            yield self[i]


@dataclass
class ResultsFile:
    """An open results file: its trailer, and its records read in order (once)."""

    file: IO[bytes]
    trailer: dict[str, Any]
    end: int  # where the records stop (the trailer's first byte)

    @staticmethod
    def open(file: IO[bytes]) -> ResultsFile:
        try:
            total = file.seek(0, os.SEEK_END)
            if total < len(MAGIC) + _TRAILER_LEN.size:
                raise ResultsUnreadable("too short")
            file.seek(total - _TRAILER_LEN.size)
            (n,) = _TRAILER_LEN.unpack(file.read(_TRAILER_LEN.size))
            end = total - _TRAILER_LEN.size - n
            if n > MAX_TRAILER or end < len(MAGIC):
                raise ResultsUnreadable("no trailer")
            file.seek(end)
            trailer = orjson.loads(file.read(n))
            file.seek(0)
            if file.read(len(MAGIC)) != MAGIC or not isinstance(trailer, dict):
                raise ResultsUnreadable(f"not a {RESULTS_FORMAT} file")
        except (OSError, orjson.JSONDecodeError) as exc:
            raise ResultsUnreadable(str(exc)) from None
        return ResultsFile(file, trailer, end)

    def records(self) -> Iterator[Record]:
        """Every record in order, sliced from the mapped file (no copy until used)."""
        data, release = self._mapped()
        pos, end = len(MAGIC), self.end
        while pos < end:
            release(pos)
            if pos + _HEAD.size > end:
                raise ResultsUnreadable("a record is cut short")
            a, b, c, d = _HEAD.unpack_from(data, pos)
            start = pos + _HEAD.size
            stop = start + a + b + c + d
            if stop > end:
                raise ResultsUnreadable("a record runs past the trailer")
            try:
                stream = bytes(data[start : start + a]).decode()
            except UnicodeDecodeError as exc:
                raise ResultsUnreadable(f"a record's stream: {exc}") from None
            fold = data[start + a : start + a + b]
            yield Record(stream, fold, data[start + a + b : stop - d], data[stop - d : stop],
                         data[pos:stop])  # fmt: skip
            pos = stop

    def _mapped(self) -> tuple[memoryview, Callable[[int], None]]:
        """The file's bytes, and a call that lets go of the pages before an offset."""
        if isinstance(self.file, io.BytesIO):
            return self.file.getbuffer(), lambda _pos: None
        try:
            mm = mmap.mmap(self.file.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as exc:
            raise ResultsUnreadable(str(exc)) from None
        return memoryview(mm), _Release(mm)


class _Release:
    """Drops the mapped pages already read from the process, a window at a time: read in
    order, a mapped file's pages would otherwise all count in its resident memory, so the
    peak would grow with the ledger (measured: 300 MB of results at 100,000 trials). The
    mapping is read-only and file-backed, so a page read again is faulted back in from
    the file, never lost."""

    WINDOW = 16 << 20

    def __init__(self, mm: mmap.mmap) -> None:
        self.mm = mm
        self.done = 0  # pages before this offset were let go

    def __call__(self, pos: int) -> None:
        upto = pos - pos % mmap.PAGESIZE
        if upto - self.done >= self.WINDOW:
            with contextlib.suppress(OSError, ValueError, AttributeError):
                self.mm.madvise(mmap.MADV_DONTNEED, self.done, upto - self.done)
            self.done = upto


# ------------------------------------------------------------------ where they are kept

_IN_MEMORY: weakref.WeakKeyDictionary[Any, dict[str, bytes]] = weakref.WeakKeyDictionary()


def _name(config_digest: str) -> str:
    return f"retrace-{config_digest.removeprefix('sha256:')[:32]}.results"


def open_results(lg: Any, config_digest: str) -> ResultsFile | None:
    """The kept results of the latest replay with ``config_digest``, if any (and readable)."""
    folder = projections_of(lg)
    try:
        if folder is None:
            body = _IN_MEMORY.get(lg, {}).get(config_digest)
            if body is None:
                return None
            file: IO[bytes] = io.BytesIO(body)
        else:
            path = folder / _name(config_digest)
            if not path.is_file():
                return None
            file = open(path, "rb")  # noqa: SIM115 - read after this returns
        return ResultsFile.open(file)
    except (OSError, ResultsUnreadable):
        return None


def new_results(lg: Any, keep: bool) -> ResultsWriter:
    """A writer for this replay's results: beside the log when they are to be ``keep``-t."""
    folder = projections_of(lg) if keep else None
    if folder is None:
        return ResultsWriter(tempfile.TemporaryFile(prefix="vledger-results-", buffering=BUFFER))  # noqa: SIM115
    folder.mkdir(exist_ok=True)
    handle, name = derived_temp(folder, "retrace")
    return ResultsWriter(os.fdopen(handle, "w+b", buffering=BUFFER), Path(name))


BUFFER = 1 << 20  # records are a few KiB: written in MiB, not a system call every two


def keep_results(lg: Any, config_digest: str, writer: ResultsWriter) -> None:
    """Make ``writer``'s finished file the one the next retrace with this config reads."""
    if writer.path is not None:  # no fsync: a file cut short by a crash fails its checks
        writer.file.flush()
        keep_per_config(writer.path, writer.path.with_name(_name(config_digest)))
        writer.path = None
        return
    if projections_of(lg) is None:  # an in-memory store: kept as long as the store lives
        writer.file.seek(0)
        _IN_MEMORY.setdefault(lg, {})[config_digest] = writer.file.read()


def discard_results(writer: ResultsWriter) -> None:
    """Remove a results file that will not be kept (a failed or dry run)."""
    if writer.path is not None:
        writer.path.unlink(missing_ok=True)
        writer.path = None


STATUSES = tuple(str(s) for s in RetraceStatus)  # the receipt's count order, as text
# the trials a summary names one by one; the rest it only counts
NOTABLE = frozenset({str(RetraceStatus.DISAGREED), str(RetraceStatus.NOT_RECHECKED)})


class Tally:
    """One pass over a replay's outcomes, in order: the status counts and the outputs
    digest, and (with a writer) each trial's record for the results file."""

    def __init__(self, writer: ResultsWriter | None = None) -> None:
        self.statuses = dict.fromkeys(STATUSES, 0)
        self.hasher = ListHasher()
        self.writer = writer
        self.notable: list[dict[str, Any]] = []  # the rows of NOTABLE trials, in order

    def take(self, o: TrialRetrace, rec: Record | None = None) -> TrialRetrace:
        """Count ``o`` (whose record, if already at hand, is ``rec``) and return it."""
        self.statuses[o.status] += 1
        if o.status in NOTABLE:  # a carried outcome is folded only: its differences are in rec
            whole = o if rec is None or rec.raw is None else rec.outcome()
            self.notable.append(whole.as_dict())
        keep = self.writer is not None and o.readable  # an unreadable bundle is no trial
        if rec is None and keep:
            rec = Record.of(o)
        if rec is None:
            self.hasher.add(output_row(o))
            return o
        self.hasher.add_bytes(rec.row)
        if keep:
            assert self.writer is not None
            self.writer.add(rec)
        return o
