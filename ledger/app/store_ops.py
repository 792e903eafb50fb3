"""The store verbs, one function each: ``vledger append | log | keygen | checkpoint | prove |
seal | repair`` (``init`` and ``open`` are the store's own functions, ``verify`` is
ledger/app/verify.py). Each takes the command's keywords and returns what ``--json`` prints.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ledger.app.context import LedgerArg, ledger_path, opened
from ledger.app.result import Result
from ledger.defaults import DEFAULT_BUSY_TIMEOUT, DEFAULT_MAX_ROWS
from ledger.errors import InvalidEvent, LedgerError
from ledger.log import keys, segments
from ledger.log.layout import write_atomic
from ledger.log.note import TlogProof, format_tlog_proof, note_text, parse_checkpoint
from ledger.log.outputs import check_output_path
from ledger.sources import strict_json
from ledger.sources.files import InputError, read_input
from schemas.envelope import NewEvent, StoredEvent
from schemas.errors import FAILED, OK, UsageError
from schemas.events import PROJECTION_WRITERS

PathArg = str | os.PathLike[str]
MAX_APPEND_BYTES = 1 << 30


class AppendFileError(LedgerError):
    """A line of an ``append`` file that is not an event; nothing was appended."""


class _Line(BaseModel):
    """One line of an ``append`` file."""

    model_config = ConfigDict(extra="forbid", strict=True)
    stream: str
    type: str
    payload: dict[str, Any]
    event_id: str | None = None
    expected_version: int | str = "any"
    schema_version: int = 1


def read_jsonl(path: Path) -> tuple[list[NewEvent], list[int]]:
    """Parse an events file (at most 1 GiB, one bounded reader); raise naming the first bad
    line. Blank lines skip. Returns the events and their line numbers."""
    try:
        # `-`, a pipe or a process substitution (`<(generate)`) too, to its end, bounded
        data = read_input(path, max_bytes=MAX_APPEND_BYTES, allow_stdin=True, allow_pipe=True)
    except InputError as exc:
        raise AppendFileError(f"{exc}; nothing appended") from None
    events: list[NewEvent] = []
    lines: list[int] = []
    for n, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            line = _Line.model_validate(strict_json.loads(raw, str(path), line=n))
        except strict_json.JsonSyntaxError as exc:
            raise AppendFileError(
                f"{path} line {n}: not JSON ({exc.detail}); nothing appended"
            ) from None
        except InputError as exc:  # faithful or refused: duplicate key, NaN, 65-bit int
            raise AppendFileError(f"{exc}; nothing appended") from None
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "<line>"
            raise AppendFileError(
                f"{path} line {n}: field {where!r}: {err['msg']}; each line is "
                '{"stream", "type", "payload", "event_id"?, "expected_version"?}; nothing appended'
            ) from None
        writer = PROJECTION_WRITERS.get(line.type)
        if writer is not None:  # derived from the log by its command, never appended by hand
            raise AppendFileError(
                f"{path} line {n}: event type {line.type!r} is a projection's output, written "
                f"only by `{writer[0]}` from the events in the log; run that command instead "
                "(append recorded facts: a built-in input type or ext.<name>); nothing appended"
            )
        events.append(NewEvent(**line.model_dump()))
        lines.append(n)
    return events, lines


@dataclass(frozen=True)
class AppendedDuplicate:
    line: int
    event_id: str
    seq: int


@dataclass(frozen=True)
class AppendFileResult(Result):
    first_seq: int | None
    last_seq: int | None
    appended: int
    duplicates: tuple[AppendedDuplicate, ...]


def append(
    file: PathArg, *, ledger: LedgerArg = None, busy_timeout: float = DEFAULT_BUSY_TIMEOUT
) -> AppendFileResult:
    """``vledger append FILE``: every event of the JSONL file as one atomic batch."""
    events, lines = read_jsonl(Path(file))
    with opened(ledger, busy_timeout=busy_timeout) as lg:
        try:
            res = lg.append(events)
        except InvalidEvent as exc:  # its batch index becomes the file's line number
            raise LedgerError(
                f"{file} line {lines[exc.index]}: {exc.detail}; nothing appended"
            ) from None
    dups = tuple(AppendedDuplicate(lines[d.index], d.event_id, d.seq) for d in res.duplicates)
    return AppendFileResult(res.first_seq, res.last_seq, res.appended, dups)


def event_json(e: StoredEvent) -> dict[str, Any]:
    """One event as ``vledger log --json`` prints it (the envelope's fields, in order)."""
    return {
        "seq": e.seq, "stream": e.stream, "stream_version": e.stream_version,
        "event_id": e.event_id, "type": e.type, "schema_version": e.schema_version,
        "recorded_at": e.recorded_at.isoformat(), "payload": e.data(),
        "leaf_hash": e.leaf_hash.hex(),
    }  # fmt: skip


@dataclass(frozen=True)
class EventsResult(Result):
    # read lazily while the store stays open (an open store the caller passed, or one
    # opened for a ``lazy`` read); a tuple otherwise
    events: Iterable[StoredEvent]
    _close: Callable[[], None] | None = field(default=None, repr=False, compare=False)

    def json_rows(self) -> Iterator[dict[str, Any]]:
        """Each event as ``vledger log --json`` prints it, as they are read."""
        return map(event_json, self.events)

    def to_json(self) -> list[dict[str, Any]]:  # type: ignore[override]  # --json: an array
        return list(self.json_rows())

    def close(self) -> None:
        """Close the store a ``lazy`` read opened (nothing otherwise)."""
        if self._close is not None:
            self._close()

    def __enter__(self) -> EventsResult:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def events(
    *, ledger: LedgerArg = None, stream: str | None = None, type: str | None = None,
    from_seq: int | None = None, to_seq: int | None = None, limit: int | None = None,
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT, lazy: bool = False,
) -> EventsResult:  # fmt: skip
    """``vledger log``: events in seq order (``--from``/``--to`` are ``from_seq``/``to_seq``).

    ``lazy``: the store a path names stays open and rows are read as they are iterated,
    so a long log never sits in memory; use the result as a context manager (it closes
    the store)."""
    with ExitStack() as stack:
        lg = stack.enter_context(opened(ledger, read_only=True, busy_timeout=busy_timeout))
        read = lg.read(stream=stream, type=type, from_seq=from_seq, to_seq=to_seq)
        rows = itertools.islice(read, limit)  # a generator: nothing past the limit is read
        if lg is ledger or lazy:
            return EventsResult(rows, stack.pop_all().close)  # the store stays open
        return EventsResult(tuple(rows))


@dataclass(frozen=True)
class KeygenResult(Result):
    private_key: Path
    public_key: Path
    verifier: str


def keygen(
    out: PathArg, *, name: str = keys.DEFAULT_KEY_NAME, ledger: LedgerArg = None
) -> KeygenResult:
    """``vledger keygen --out FILE``: an Ed25519 checkpoint key, never inside a ledger."""
    out = Path(out)
    verifier = keys.keygen(out, name, ledger_dir=ledger_path(ledger))
    return KeygenResult(out, keys.pub_path(out), verifier.format())


@dataclass(frozen=True)
class CheckpointResult(Result):
    """A signed note as data: its body's fields, the whole note text, where it was copied."""

    origin: str
    size: int
    root: str
    note: str
    out: Path | None


def checkpoint(
    *, ledger: LedgerArg = None, key: PathArg | None, out: PathArg | None = None,
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
) -> CheckpointResult:  # fmt: skip
    """``vledger checkpoint --key FILE [--out COPY]``: sign the current tree head and store
    it; ``out`` also writes it where whoever can rewrite the ledger cannot reach it."""
    if key is None:  # the command's $VLEDGER_KEY is None too when unset
        raise UsageError(
            "pass --key FILE (made by `vledger keygen --out FILE`) or set VLEDGER_KEY"
        )
    out = None if out is None else Path(out)
    if out is not None:
        check_output_path(out, ledger_path(ledger), what="checkpoint copy")
    signer = keys.load_signer(Path(key))
    with opened(ledger, busy_timeout=busy_timeout) as lg:
        note = lg.checkpoint(signer)
    if out is not None:
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(out, note.encode("utf-8"))
        except OSError as exc:
            msg = f"cannot write the checkpoint copy {str(out)!r}: {exc.strerror}"
            raise LedgerError(msg) from None
    cp = parse_checkpoint(note_text(note))
    return CheckpointResult(cp.origin, cp.size, cp.root.hex(), note, out)


@dataclass(frozen=True)
class ProveResult(Result):
    seq: int
    size: int
    root: str
    path: tuple[str, ...]
    checkpoint: str
    tlog_proof: str


def prove(
    seq: int, *, ledger: LedgerArg = None, size: int | None = None,
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
) -> ProveResult:  # fmt: skip
    """``vledger prove SEQ``: the C2SP tlog-proof of SEQ against a stored checkpoint."""
    with opened(ledger, read_only=True, busy_timeout=busy_timeout) as lg:
        proof = prove_record(lg, seq, size)
    cp = parse_checkpoint(note_text(proof.checkpoint_note))
    hexes = tuple(h.hex() for h in proof.path)
    text = format_tlog_proof(proof)
    return ProveResult(proof.index, cp.size, cp.root.hex(), hexes, proof.checkpoint_note, text)


def prove_record(lg: Any, seq: int, size: int | None) -> TlogProof:
    """The tlog-proof of ``seq`` against the stored checkpoint of ``size`` (default latest)."""
    stored = {parse_checkpoint(note_text(n)).size: n for _, n in lg.checkpoints()}
    if not stored:
        raise LedgerError("no checkpoint yet: run `vledger checkpoint --key FILE` first")
    size = max(stored) if size is None else size
    if size not in stored:
        raise LedgerError(f"no checkpoint of size {size}; stored sizes: {sorted(stored)}")
    if not 0 <= seq < size:
        raise LedgerError(
            f"seq {seq} is not in the checkpoint of size {size} (need 0 <= seq < {size})"
        )
    return TlogProof(seq, tuple(lg.prove_inclusion(seq, size)), stored[size])


@dataclass(frozen=True)
class SealResult(Result):
    segments: tuple[segments.SegmentInfo, ...]

    def to_json(self) -> list[dict[str, Any]]:  # type: ignore[override]  # --json: an array
        return [m.model_dump() for m in self.segments]


def seal(
    *, ledger: LedgerArg = None, max_rows: int = DEFAULT_MAX_ROWS,
    max_bytes: int | None = None, busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
) -> SealResult:  # fmt: skip
    """``vledger seal``: unsealed events into immutable Parquet segments (trials stay whole)."""
    with opened(ledger, busy_timeout=busy_timeout) as lg:
        return SealResult(tuple(lg.seal(max_rows, max_bytes)))


@dataclass(frozen=True)
class RepairResult(Result):
    applied: bool
    needed: bool  # the store records more sealed than the manifest lists
    recorded_sealed_upto: int
    manifest_sealed_upto: int
    manifest_exists: bool
    steps: tuple[segments.SegmentStep, ...]  # what finishing the seal takes (when needed)

    @property
    def conflicts(self) -> list[segments.SegmentStep]:
        return [st for st in self.steps if st.action == "conflict"]

    @property
    def refusal(self) -> str | None:
        """Why nothing changed when a segment on disk disagrees with the store."""
        if not self.conflicts:
            return None
        bad = self.conflicts[0]
        return (
            f"{segments.SEGMENT_DIR}/{bad.file}: {bad.detail}; refusing to overwrite a "
            "sealed segment that disagrees with the store, nothing changed"
        )

    @property
    def exit_code(self) -> int:
        return FAILED if self.conflicts else OK


def repair(
    *, ledger: LedgerArg = None, apply: bool = False, busy_timeout: float = DEFAULT_BUSY_TIMEOUT
) -> RepairResult:
    """``vledger repair [--apply]``: finish an interrupted seal; a dry run unless ``apply``.
    Only a seal the store recorded is repair's to finish (sealing new events is ``seal``'s),
    and a segment that disagrees with the store is never overwritten."""
    with opened(ledger, busy_timeout=busy_timeout, read_only=not apply, recover=False) as lg:
        plan, made = lg.finish_seal(apply)
    steps = plan.steps if plan.interrupted else ()
    return RepairResult(apply and bool(made), plan.interrupted, plan.recorded, plan.start,
                        plan.manifest_exists, steps)  # fmt: skip
