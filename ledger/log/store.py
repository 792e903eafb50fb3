"""The embedded event store: one DuckDB file inside the ledger directory (DESIGN.md § 4).

A ledger is a directory::

    <dir>/events.duckdb      events, Merkle interior nodes, tree state, metadata
    <dir>/checkpoints/       signed checkpoint notes (C2SP tlog-checkpoint), one per size
    <dir>/segments/          sealed Parquet segments + manifest.json

Guarantees (each pinned by ``tests/store_contract.py``):

* one ``append`` call is one DuckDB transaction: all events commit or none do, and the
  commit is durable (DuckDB fsyncs its WAL) when ``append`` returns;
* ``seq`` is dense from 0 and assigned under the single writer, so commit order = seq order;
* ``expected_version`` is checked against the stream as it stood before the batch;
* ``event_id`` is the idempotency key. When the caller gives none, it is derived from the
  content: the hex ``sha256(canonical_json([stream, type, schema_version]) + b"\\n" +
  payload)`` (:func:`derive_event_id`). So re-appending identical content to the same
  stream without ids is a no-op: callers who want two identical events in one stream must
  give them distinct ``event_id`` s;
* there is no update or delete method;
* the Merkle frontier (O(log n) hashes) lives in the ``tree_state`` row and each interior
  node from level :data:`NODE_MIN_LEVEL` up is stored once when complete, so appends never
  re-read history; a root or proof reads O(log n) stored nodes plus, for its few lower
  nodes, at most ``2 ** (NODE_MIN_LEVEL - 1)`` leaf hashes each (one batched read).

DuckDB allows one read-write process per file: :func:`open_ledger` retries the file lock
for ``busy_timeout`` seconds and then raises :class:`LedgerBusy`. Each connection caps
DuckDB's buffer pool (``$VLEDGER_DUCKDB_MEMORY``, default 128MB) so a long-running writer's
memory stays flat; bigger queries spill to disk.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import math
import operator
import os
import random
import re
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import ValidationError

from ledger.errors import (
    CheckpointError,
    EventIdConflict,
    InvalidEvent,
    LedgerBusy,
    LedgerError,
    LedgerExists,
    LedgerNotFound,
    ProofError,
    StreamSealed,
    StreamVersionConflict,
    TamperDetected,
)
from ledger.log import hashing, merkle
from ledger.log.note import (
    Checkpoint,
    InvalidSignature,
    MalformedNote,
    NoVerifiableSignatures,
    Signer,
    Verifier,
    format_checkpoint,
    note_text,
    open_note,
    parse_checkpoint,
    sign_note,
)
from ledger.log.seen import Bloom, Seen
from schemas.canonical import canonical_json
from schemas.envelope import ARROW_SCHEMA, NewEvent, StoredEvent
from schemas.events import EXT_PREFIX, PAYLOAD_MODELS, PayloadError, validate_payload
from schemas.payload_check import payload_checker

if TYPE_CHECKING:
    from ledger.log.segments import SegmentInfo
    from ledger.log.verify import OutsideCheckpoint, VerifyReport

DB_FILE = "events.duckdb"
TRIAL_PREFIX = "trial/"
CHECKPOINT_DIR = "checkpoints"
# 2: interior nodes are stored from NODE_MIN_LEVEL up (1 stored every node)
FORMAT_VERSION = "2"
# Interior nodes below this level are not stored: a proof recomputes one from at most
# 2 ** (NODE_MIN_LEVEL - 1) leaf hashes, while storing them would write about as many node
# rows as events (measured: ~0.9 µs of DuckDB work per appended event; from level 6 up it
# is one node row per 64 events).
NODE_MIN_LEVEL = 6
DEFAULT_BUSY_TIMEOUT = 5.0
DEFAULT_DUCKDB_MEMORY = "128MB"
READ_WINDOW = 65_536  # seq range scanned per query when streaming reads

_DDL = """
CREATE TABLE events (
    seq UBIGINT NOT NULL,
    stream VARCHAR NOT NULL,
    stream_version UINTEGER NOT NULL,
    event_id VARCHAR NOT NULL,
    type VARCHAR NOT NULL,
    schema_version USMALLINT NOT NULL,
    recorded_at TIMESTAMPTZ NOT NULL,
    payload BLOB NOT NULL,
    leaf_hash BLOB NOT NULL
);
CREATE TABLE nodes (
    level UTINYINT NOT NULL,
    idx UBIGINT NOT NULL,
    last_leaf UBIGINT NOT NULL,
    hash BLOB NOT NULL
);
CREATE TABLE tree_state (size UBIGINT NOT NULL, frontier BLOB NOT NULL);
CREATE TABLE meta (key VARCHAR NOT NULL, value VARCHAR NOT NULL);
"""

_NODE_SCHEMA = pa.schema(
    [
        pa.field("level", pa.uint8(), nullable=False),
        pa.field("idx", pa.uint64(), nullable=False),
        pa.field("last_leaf", pa.uint64(), nullable=False),
        pa.field("hash", pa.binary(32), nullable=False),
    ]
)

_NODE_WINDOW_SQL = (
    "SELECT level, idx, hash FROM nodes WHERE last_leaf BETWEEN ? AND ? ORDER BY level, idx"
)

# A string orjson writes as anything other than '"' + s + '"': it holds a quote, a backslash
# or a control character (orjson escapes exactly those; non-ASCII is written as UTF-8).
JSON_ESCAPED_RE = '[\\x00-\\x1f"\\\\]'

# ``0x00 || envelope_bytes`` (schemas/envelope.py) assembled by DuckDB for rows whose strings
# need no JSON escaping: the header is then plain concatenation (unsigned ints print the
# same in SQL and JSON; ``encode`` is the UTF-8 bytes, where a ``::BLOB`` cast would read
# backslash escapes and refuse non-ASCII). Rows that do need escaping get NULL and are encoded in Python.
# tests/test_store_fastpath.py pins this to envelope_bytes for arbitrary strings.
ENTRY_SQL = """
SELECT seq,
       CASE WHEN regexp_matches(stream || event_id || type, $1) THEN NULL
            ELSE '\\x00'::BLOB
                 || encode('[' || seq || ',"' || stream || '",' || stream_version || ',"'
                           || event_id || '","' || type || '",' || schema_version || ']' || chr(10))
                 || payload
       END AS entry,
       leaf_hash
FROM events WHERE seq BETWEEN $2 AND $3
"""

# What the native leaf hasher reads per window (storage order, unchecked).
_COLUMNS_SQL = (
    "SELECT seq, stream, stream_version, event_id, type, schema_version, payload, leaf_hash "
    "FROM events WHERE seq BETWEEN $1 AND $2"
)

EXPECTED_WORDS = ("any", "no_stream", "exists")
_EXPECTED_SET = frozenset(EXPECTED_WORDS)
F = TypeVar("F", bound=Callable[..., Any])

# One lock per ledger file per process: DuckDB shares one database instance between
# connections of a process, so two Ledger objects on one path must not interleave appends.
_PROCESS_LOCKS: dict[Path, threading.RLock] = {}
_PROCESS_LOCKS_GUARD = threading.Lock()
# The id and stream filters of each ledger file this process appended to (ledger.log.seen), used
# and replaced only under that file's lock; each knows the log state it describes.
_SEEN: dict[Path, Seen] = {}


# The store file this process opened last: a driver error that escapes a command
# (a damaged block read mid-way) is reported against the file (damaged_store_error).
_OPENED: list[Path] = []


def damaged_store_error(exc: duckdb.Error) -> TamperDetected:
    """The typed error for a DuckDB error that escaped a command: names the store file."""
    where = str(_OPENED[-1]) if _OPENED else DB_FILE
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return TamperDetected(
        where, f"cannot be read ({first}); the file is damaged or was altered — run `vledger verify`"
    )


@dataclass(frozen=True, slots=True)
class Duplicate:
    """An event of the batch that was already stored (same ``event_id``, same content)."""

    index: int
    event_id: str
    seq: int


@dataclass(frozen=True, slots=True)
class AppendResult:
    """What one ``append`` did. ``first_seq``/``last_seq`` are ``None`` when nothing was new.

    ``seqs[i]`` is the position of the batch's event ``i``: new, or the original one for a
    duplicate.
    """

    first_seq: int | None
    last_seq: int | None
    appended: int
    duplicates: tuple[Duplicate, ...]
    seqs: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class _Prepared:
    stream: str
    type: str
    schema_version: int
    event_id: str
    payload: bytes
    expected: int | str


# --- opening --------------------------------------------------------------------------


def init_ledger(path: str | Path, *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> Ledger:
    """Create the ledger directory and its store; refuse if one exists there already."""
    root = Path(path)
    if (root / DB_FILE).exists():
        raise LedgerExists(root)
    root.mkdir(parents=True, exist_ok=True)
    (root / CHECKPOINT_DIR).mkdir(exist_ok=True)
    con = _connect(root / DB_FILE, busy_timeout)
    try:
        con.execute("BEGIN")
        con.execute(_DDL)
        con.execute("INSERT INTO tree_state VALUES (0, ''::BLOB)")
        origin = f"vledger.local/{hashlib.sha256(str(root.resolve()).encode() + _nonce()).hexdigest()[:16]}"
        con.executemany(
            "INSERT INTO meta VALUES (?, ?)",
            [["format_version", FORMAT_VERSION], ["origin", origin], ["sealed_upto", "0"]],
        )
        con.execute("COMMIT")
    except BaseException:
        con.close()
        raise
    return Ledger(root, con)


def open_ledger(
    path: str | Path,
    *,
    create: bool = False,
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
    read_only: bool = False,
    recover: bool = True,
) -> Ledger:
    """Open the ledger at ``path``; with ``create=True`` make it first if absent.

    Raises :class:`LedgerNotFound` when there is no ledger (a mistyped ``--ledger`` never
    creates an empty one silently) and :class:`LedgerBusy` when another process holds it
    for longer than ``busy_timeout`` seconds.

    ``read_only=True`` (``verify``, ``log``, ``prove``) opens DuckDB read-only and writes
    nothing anywhere: no format upgrade, no finishing of an interrupted seal (those are
    findings for ``verify`` to report). ``recover=False`` (``repair``) opens for writing
    but leaves an interrupted seal as it is, so it can be shown before it is finished.
    """
    root = Path(path)
    if not (root / DB_FILE).exists():
        if create and not read_only:
            try:
                return init_ledger(root, busy_timeout=busy_timeout)
            except LedgerExists:
                pass  # another process created it meanwhile: open theirs
        else:
            raise LedgerNotFound(root)
    lg = Ledger(root, _connect(root / DB_FILE, busy_timeout, read_only=read_only))
    try:
        version = lg.meta("format_version")
        if version == "1" and not read_only:
            lg._upgrade_from_1()
            version = FORMAT_VERSION
        if version == "1":
            raise LedgerError(
                f"ledger {str(root)!r} has format version '1'; reading it needs an upgrade, "
                "which this read-only command never writes: run `vledger repair --apply` first"
            )
        if version != FORMAT_VERSION:
            raise LedgerError(
                f"ledger {str(root)!r} has format version {version!r}; this vledger reads "
                f"{FORMAT_VERSION!r} (upgrade vledger, or migrate the ledger)"
            )
        if recover and not read_only:
            lg._recover()
    except duckdb.Error as exc:  # a damaged store can open and then fail its first query
        lg.close()
        raise TamperDetected(str(root / DB_FILE), f"cannot be read ({exc}); the file is damaged") from None
    except BaseException:
        lg.close()
        raise
    return lg


def _nonce() -> bytes:
    return random.SystemRandom().randbytes(16)


def duckdb_memory_limit() -> str:
    """``$VLEDGER_DUCKDB_MEMORY`` (e.g. ``2GB``) or the default ``128MB``; validated."""
    value = os.environ.get("VLEDGER_DUCKDB_MEMORY", DEFAULT_DUCKDB_MEMORY).strip()
    if not re.fullmatch(
        r"[0-9]+(\.[0-9]+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)", value, re.IGNORECASE
    ):
        raise LedgerError(f"VLEDGER_DUCKDB_MEMORY={value!r} is not a size like '256MB' or '2GB'")
    return value


def _connect(
    db: Path, busy_timeout: float, *, read_only: bool = False
) -> duckdb.DuckDBPyConnection:
    """Connect, retrying the process-level file lock with jittered backoff."""
    start = time.monotonic()
    delay = 0.005
    while True:
        try:
            con = _duckdb_connect(db, read_only)
            con.execute("SET TimeZone = 'UTC'")
            con.execute("SET enable_progress_bar = false")  # stdout belongs to the CLI
            # Bound DuckDB's buffer pool so a long-running writer's memory does not grow
            # with the log; larger queries spill to <db>.tmp instead.
            con.execute(f"SET memory_limit = '{duckdb_memory_limit()}'")
            return con
        except duckdb.IOException as exc:
            text = str(exc)
            if "lock" not in text.lower():
                raise LedgerError(f"cannot open {str(db)!r}: {text}") from None
            waited = time.monotonic() - start
            if waited >= busy_timeout:
                raise LedgerBusy(db.parent, waited) from None
            time.sleep(min(delay * (0.5 + random.random()), max(busy_timeout - waited, 0.001)))
            delay = min(delay * 2, 0.1)
        except duckdb.Error as exc:  # e.g. a corrupted file: say so, never leak the driver error
            raise TamperDetected(
                str(db), f"DuckDB cannot open it ({exc}); the file is damaged"
            ) from None


def _duckdb_connect(db: Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection; read-only ones replay a WAL in memory and spill outside the
    ledger, so they leave every file of the ledger directory as it was."""
    if not read_only:
        return duckdb.connect(str(db))
    try:
        con = duckdb.connect(str(db), read_only=True)
    except duckdb.ConnectionException as exc:
        # This process already holds the file read-write (DuckDB shares one instance per
        # process and refuses a second configuration): use that instance; opening it
        # again writes nothing, and read-only opens skip recovery and upgrades anyway.
        if "different configuration" not in str(exc):
            raise
        return duckdb.connect(str(db))
    con.execute(f"SET temp_directory = '{_verify_spill_dir()}'")
    return con


def _verify_spill_dir() -> str:
    """Where a read-only connection spills (DuckDB's default is ``<db>.tmp`` beside the
    file, i.e. inside the ledger directory)."""
    return str(Path(tempfile.gettempdir()) / f"vledger-ro-{os.getpid()}").replace("'", "''")


# --- preparing a batch (pure) -----------------------------------------------------------


def derive_event_id(stream: str, type: str, schema_version: int, payload: bytes) -> str:
    """Content-derived idempotency key: sha256 hex of the canonical content tuple."""
    head = canonical_json([stream, type, schema_version])
    return hashlib.sha256(head + b"\n" + payload).hexdigest()


def prepare_event(index: int, ev: NewEvent) -> _Prepared:
    """Validate one offered event and canonicalise its payload, or raise InvalidEvent."""
    if not isinstance(ev, NewEvent):
        raise InvalidEvent(index, f"expected a NewEvent, got {type(ev).__name__}")
    if not isinstance(ev.stream, str) or not ev.stream:
        raise InvalidEvent(index, "stream must be a non-empty string (e.g. 'run/<run_id>')")
    if not isinstance(ev.type, str) or not ev.type:
        raise InvalidEvent(index, "type must be a non-empty string")
    if not isinstance(ev.schema_version, int) or not 0 <= ev.schema_version < 2**16:
        raise InvalidEvent(
            index, f"schema_version must be an int in [0, 65535], got {ev.schema_version!r}"
        )
    _check_expected_form(index, ev.expected_version)
    try:
        validate_payload(ev.type, ev.payload)
        payload = bytes(memoryview(canonical_json(ev.payload)))  # exact size, see prepare_batch
    except PayloadError as exc:
        raise InvalidEvent(index, str(exc)) from None
    except TypeError as exc:  # orjson: a value JSON cannot carry
        raise InvalidEvent(index, f"payload is not JSON-serialisable: {exc}") from None
    if b"null" in payload:  # orjson writes NaN/Infinity as null: refuse, never rewrite
        where = _non_finite_path(ev.payload, "payload")
        if where is not None:
            raise InvalidEvent(
                index,
                f"{where} is NaN or Infinity, which JSON cannot carry; store it as a string or null",
            )
    event_id = ev.event_id
    if event_id is None:
        event_id = derive_event_id(ev.stream, ev.type, ev.schema_version, payload)
    elif not isinstance(event_id, str) or not event_id:
        raise InvalidEvent(index, f"event_id must be a non-empty string or None, got {event_id!r}")
    return _Prepared(ev.stream, ev.type, ev.schema_version, event_id, payload, ev.expected_version)


@dataclass(slots=True)
class _Batch:
    """A prepared batch as columns (the hot path works on lists, not per-event objects);
    the canonical payloads as one Arrow array, which is what the insert and the leaf hasher
    read."""

    streams: list[str]
    types: list[str]
    schema_versions: list[int]
    event_ids: list[str]
    payload_array: pa.BinaryArray
    expected: list[int | str]

    def __len__(self) -> int:
        return len(self.streams)

    @property
    def payloads(self) -> list[bytes]:
        return self.payload_array.to_pylist()

    def rows(self) -> list[_Prepared]:
        return [
            _Prepared(*r)
            for r in zip(
                self.streams,
                self.types,
                self.schema_versions,
                self.event_ids,
                self.payloads,
                self.expected,
                strict=True,
            )
        ]

    @staticmethod
    def of(rows: list[_Prepared]) -> _Batch:
        return _Batch(
            [p.stream for p in rows],
            [p.type for p in rows],
            [p.schema_version for p in rows],
            [p.event_id for p in rows],
            pa.array([p.payload for p in rows], pa.binary()),
            [p.expected for p in rows],
        )


def prepare_batch(events: Iterable[NewEvent]) -> _Batch:
    """:func:`prepare_event` over a batch, column-wise; same results and the same errors.

    Checks run as whole-column comprehensions; if any fails, the batch is re-prepared
    event by event so the error names the first bad index exactly as prepare_event does.
    """
    evs = list(events)
    if set(map(type, evs)) - {NewEvent}:
        return _Batch.of([prepare_event(i, e) for i, e in enumerate(evs)])
    streams = list(map(_STREAM, evs))
    types = list(map(_TYPE, evs))
    svs = list(map(_SCHEMA_VERSION, evs))
    expected = list(map(_EXPECTED, evs))
    objs = list(map(_PAYLOAD, evs))
    # whole-column checks run in C (map, set, min/max), not a Python frame per event
    ok = (
        set(map(type, streams)) == {str}
        and all(streams)
        and set(map(type, types)) == {str}
        and all(types)
        and set(map(type, svs)) == {int}
        and min(svs) >= 0
        and max(svs) < 65536
        and _expected_forms_ok(expected)
        and _payloads_valid(types, objs)
    )
    if not ok:
        return _Batch.of([prepare_event(i, e) for i, e in enumerate(evs)])
    encoded = _encode_payloads(objs)
    if encoded is None:  # a value JSON cannot carry: prepare_event names it
        return _Batch.of([prepare_event(i, e) for i, e in enumerate(evs)])
    payloads, with_null = encoded
    for i in with_null:  # orjson writes NaN/Infinity as null: find them
        if _non_finite_path(objs[i], "payload") is not None:
            prepare_event(i, evs[i])  # raises the precise InvalidEvent
    ids = list(map(_EVENT_ID, evs))
    if set(map(type, ids)) != {str} or not all(ids):
        raw = payloads.to_pylist() if None in ids else []  # one conversion, not one per id
        for i, x in enumerate(ids):
            if x is None:
                ids[i] = derive_event_id(streams[i], types[i], svs[i], raw[i])
            elif type(x) is not str or not x:
                prepare_event(i, evs[i])  # raises the precise InvalidEvent
    return _Batch(streams, types, svs, ids, payloads, expected)


def _encode_payloads(objs: list[Any]) -> tuple[pa.BinaryArray, list[int]] | None:
    """Each payload's canonical JSON as one Arrow array, and the indexes of those holding a
    JSON ``null`` (where a NaN or Infinity may hide); None if one cannot be encoded.

    Natively, the whole list is encoded in one orjson call and split at its top-level
    commas (``ledger.log.native.split_json_array``): the same bytes per payload, without
    10k small objects (orjson leaves each of those in a ~4 KiB allocation, ~40 MB per
    10k-event batch). Otherwise each payload is encoded and copied to its exact size.
    """
    try:
        if hashing.NATIVE:
            split = hashing.native().split_json_array(canonical_json(objs), len(objs))
            if split is not None:
                data, offsets, with_null = split
                buffers = [None, pa.py_buffer(offsets), pa.py_buffer(data)]
                return pa.BinaryArray.from_buffers(pa.binary(), len(objs), buffers), with_null
        payloads = [bytes(memoryview(canonical_json(p))) for p in objs]
    except TypeError:  # orjson: a value JSON cannot carry
        return None
    with_null = [i for i, p in enumerate(payloads) if b"null" in p]
    return pa.array(payloads, pa.binary()), with_null


_STREAM = operator.attrgetter("stream")
_TYPE = operator.attrgetter("type")
_SCHEMA_VERSION = operator.attrgetter("schema_version")
_EXPECTED = operator.attrgetter("expected_version")
_PAYLOAD = operator.attrgetter("payload")
_EVENT_ID = operator.attrgetter("event_id")


def _expected_forms_ok(expected: list[Any]) -> bool:
    """Every expected_version is a word or an int >= 0 (bools are not versions)."""
    try:
        if set(expected) <= _EXPECTED_SET:
            return True
    except TypeError:  # an unhashable value: certainly not a version
        return False
    return all(
        x in _EXPECTED_SET if type(x) is str else type(x) is int and x >= 0 for x in expected
    )


def _non_finite_path(value: Any, path: str) -> str | None:
    """Path of the first NaN/Infinity float inside ``value`` (JSON has no such numbers)."""
    if isinstance(value, float):
        return None if math.isfinite(value) else path
    if isinstance(value, dict):
        for k, v in value.items():
            found = _non_finite_path(v, f"{path}.{k}")
            if found:
                return found
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            found = _non_finite_path(v, f"{path}[{i}]")
            if found:
                return found
    return None


def _payloads_valid(types: list[str], payloads: list[Any]) -> bool:
    """True when every payload passes ``validate_payload`` (grouped by type, no raising)."""
    for t in set(types):
        if t.startswith(EXT_PREFIX):
            if len(t) == len(EXT_PREFIX):
                return False
            continue
        if t not in PAYLOAD_MODELS:
            return False
    if set(map(type, payloads)) != {dict}:
        return False
    # one bound validator per distinct type, looked up once per batch (None: ext.* is any object)
    validators = {
        t: None if t.startswith(EXT_PREFIX) else payload_checker(PAYLOAD_MODELS[t])
        for t in set(types)
    }
    try:
        if len(validators) == 1:
            only = next(iter(validators.values()))
            if only is not None:  # map drained by a zero-length deque: the loop runs in C
                deque(map(only, payloads), maxlen=0)
        else:
            for t, p in zip(types, payloads, strict=True):
                v = validators[t]
                if v is not None:
                    v(p)
    except ValidationError:
        return False
    return True


def _check_expected_form(index: int, expected: Any) -> None:
    if expected in EXPECTED_WORDS and isinstance(expected, str):
        return
    if isinstance(expected, int) and not isinstance(expected, bool) and expected >= 0:
        return
    raise InvalidEvent(
        index,
        f"expected_version {expected!r} is not one of 'any', 'no_stream', 'exists' "
        "or an int >= 0 (the version of the stream's last event)",
    )


def check_expected(stream: str, expected: int | str, actual: int | None) -> None:
    """Raise StreamVersionConflict unless ``actual`` satisfies ``expected``."""
    if expected == "any":
        return
    if expected == "no_stream":
        ok = actual is None
    elif expected == "exists":
        ok = actual is not None
    else:
        ok = actual == expected
    if not ok:
        raise StreamVersionConflict(stream, expected, actual)


def content_differences(a: _Prepared, stored: tuple[str, str, int, bytes]) -> list[str]:
    """Names of the content fields that differ between an offered and a stored event."""
    stream, type_, schema_version, payload = stored
    out = []
    if a.stream != stream:
        out.append(f"stream ({a.stream!r} vs stored {stream!r})")
    if a.type != type_:
        out.append(f"type ({a.type!r} vs stored {type_!r})")
    if a.schema_version != schema_version:
        out.append(f"schema_version ({a.schema_version} vs stored {schema_version})")
    if a.payload != payload:
        out.append("payload")
    return out


# --- the ledger -------------------------------------------------------------------------


def _locked(fn: F) -> F:
    """Run a method under the ledger's lock: queries on the shared connection never see
    (or disturb) another thread's half-done append transaction."""

    @functools.wraps(fn)
    def wrapper(self: Ledger, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return fn(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


class Ledger:
    """An open ledger. Use as a context manager, or call :meth:`close`.

    Thread-safe: appends and the small queries share one connection under a per-file
    re-entrant lock; ``read``/``read_arrow`` stream through their own cursor and only ever
    see committed batches.
    """

    def __init__(self, path: Path, con: duckdb.DuckDBPyConnection) -> None:
        self.path = path
        self._con = con
        key = (path / DB_FILE).resolve()
        self._db_key = key
        self._committing: tuple[Seen, _Batch, tuple[int, bytes]] | None = None
        self._appended = False  # has this object appended before (see _seen_at)
        with _PROCESS_LOCKS_GUARD:
            self._lock = _PROCESS_LOCKS.setdefault(key, threading.RLock())
        _OPENED[:] = [path / DB_FILE]  # only the latest is ever named

    # lifecycle

    def close(self) -> None:
        with self._lock:  # the filters are rebuilt by whoever appends next
            _SEEN.pop(self._db_key, None)
        self._con.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # small queries

    @_locked
    def meta(self, key: str) -> str:
        row = _first(self._con.execute("SELECT value FROM meta WHERE key = ?", [key]))
        if row is None:
            raise LedgerError(f"ledger {str(self.path)!r} has no meta key {key!r}")
        return row[0]

    @property
    def origin(self) -> str:
        """The checkpoint origin line: this log's unique name."""
        return self.meta("origin")

    def size(self) -> int:
        """Number of events in the log (= the next seq)."""
        return self._tree_state()[0]

    @_locked
    def stream_version(self, stream: str) -> int | None:
        """Version (0-based) of the stream's last event, or ``None`` if it has none."""
        row = _first(
            self._con.execute("SELECT max(stream_version) FROM events WHERE stream = ?", [stream])
        )
        return None if row is None or row[0] is None else int(row[0])

    @_locked
    def streams(self, prefix: str | None = None) -> list[str]:
        """Stream names (sorted), optionally only those starting with ``prefix``."""
        sql = "SELECT DISTINCT stream FROM events"
        params: list[Any] = []
        if prefix is not None:
            sql += " WHERE starts_with(stream, ?)"
            params.append(prefix)
        return [r[0] for r in self._con.execute(sql + " ORDER BY stream", params).fetchall()]

    @_locked
    def tree_state(self) -> tuple[int, list[bytes]]:
        """The stored ``(size, frontier)`` as is (verify compares it with the rebuilt tree)."""
        size, blob = _first(self._con.execute("SELECT size, frontier FROM tree_state"))
        blob = bytes(blob)
        return int(size), [blob[i : i + 32] for i in range(0, len(blob), 32)]

    def _tree_state(self) -> tuple[int, list[bytes]]:
        size, frontier = self.tree_state()
        if len(frontier) != len(merkle.frontier_levels(size)):
            raise LedgerError(
                f"tree_state of {str(self.path)!r} holds {len(frontier)} frontier hashes for "
                f"size {size}; run `vledger verify`"
            )
        return size, frontier

    # raw access for verify and sealing (rows exactly as stored, tampered or not)

    @_locked
    def max_stored_seq(self) -> int | None:
        row = _first(self._con.execute("SELECT max(seq) FROM events"))
        return None if row is None or row[0] is None else int(row[0])

    @_locked
    def raw_rows(self, lo: int, hi: int, *, ordered: bool = True) -> pa.Table:
        """Stored rows with ``lo <= seq <= hi``, without any checking.

        ``ordered=False`` skips the sort and returns storage order (= seq order unless the
        file was tampered with; verify checks and sorts itself).
        """
        order = " ORDER BY seq" if ordered else ""
        return self._con.sql(
            "SELECT * FROM events WHERE seq BETWEEN ? AND ?" + order, params=[lo, hi]
        ).to_arrow_table()

    @_locked
    def stored_nodes(self, first_leaf: int, last_leaf: int) -> list[tuple[int, int, bytes]]:
        """Stored interior nodes completed by leaves in ``[first_leaf, last_leaf]``."""
        rows = self._con.execute(
            "SELECT level, idx, hash FROM nodes WHERE last_leaf BETWEEN ? AND ? "
            "ORDER BY last_leaf, level",
            [first_leaf, last_leaf],
        ).fetchall()
        return [(int(lv), int(i), bytes(h)) for lv, i, h in rows]

    @_locked
    def stored_node_table(self, first_leaf: int, last_leaf: int) -> pa.Table:
        """Stored nodes completed by leaves in ``[first_leaf, last_leaf]``: columns
        ``level, idx, hash`` ordered by level then idx (verify's fast comparison)."""
        return self._con.sql(_NODE_WINDOW_SQL, params=[first_leaf, last_leaf]).to_arrow_table()

    def first_version_break(self) -> tuple[int, str, int, int] | None:
        """First ``(seq, stream, stored version, expected version)`` out of 0, 1, 2… order.

        Runs on its own cursor (one SQL window query over the whole table), so verify can
        run it alongside its scan.
        """
        cur = self._con.cursor()
        try:
            row = _first(
                cur.execute(
                    "SELECT seq, stream, stream_version, rn FROM (SELECT seq, stream, "
                    "stream_version, row_number() OVER (PARTITION BY stream ORDER BY seq) - 1 "
                    "AS rn FROM events) WHERE rn != stream_version ORDER BY seq LIMIT 1"
                )
            )
        finally:
            cur.close()
        return None if row is None else (int(row[0]), row[1], int(row[2]), int(row[3]))

    @_locked
    def count_nodes_from(self, first_leaf: int) -> int:
        row = _first(
            self._con.execute("SELECT count(*) FROM nodes WHERE last_leaf >= ?", [first_leaf])
        )
        return int(row[0]) if row else 0

    # sealing

    @_locked
    def sealed_upto(self) -> int:
        """Events with seq below this are (being) sealed into segments."""
        row = _first(self._con.execute("SELECT value FROM meta WHERE key = 'sealed_upto'"))
        return int(row[0]) if row else 0

    def _set_sealed_upto(self, n: int) -> None:
        """Record the new sealing boundary (before the segment files are written)."""
        with self._lock:
            self._con.execute("BEGIN TRANSACTION")
            try:
                self._con.execute("DELETE FROM meta WHERE key = 'sealed_upto'")
                self._con.execute("INSERT INTO meta VALUES ('sealed_upto', ?)", [str(n)])
                self._con.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise

    def _upgrade_from_1(self) -> None:
        """Format 1 stored every interior node; drop those below NODE_MIN_LEVEL (each is a
        function of leaf hashes that stay, so nothing is lost) and mark the ledger 2."""
        with self._lock:
            self._con.execute("BEGIN TRANSACTION")
            try:
                self._con.execute("DELETE FROM nodes WHERE level < ?", [NODE_MIN_LEVEL])
                self._con.execute(
                    "UPDATE meta SET value = ? WHERE key = 'format_version'", [FORMAT_VERSION]
                )
                self._con.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise

    def _recover(self) -> None:
        """Finish a seal a crash interrupted (DuckDB itself replays its WAL on connect)."""
        if self.sealed_upto() == 0:
            return
        from ledger.log import segments

        if segments.load_manifest(self.path).sealed_upto < self.sealed_upto():
            segments.seal(self, segments.DEFAULT_MAX_ROWS)

    @_locked
    def trial_spans(self, start: int, end: int) -> list[tuple[int, int]]:
        """``(min_seq, max_seq)`` of each trial stream's events within ``[start, end)``."""
        rows = self._con.execute(
            "SELECT min(seq), max(seq) FROM events WHERE seq >= ? AND seq < ? "
            "AND starts_with(stream, ?) GROUP BY stream",
            [start, end, TRIAL_PREFIX],
        ).fetchall()
        return [(int(a), int(b)) for a, b in rows]

    @_locked
    def _row_sizes(self, start: int, end: int) -> list[int]:
        """Uncompressed bytes of each row in ``[start, end)``, in seq order (segment sizing:
        variable columns plus 54 bytes of fixed-width ones)."""
        return (
            self._con.sql(
                "SELECT octet_length(payload) + strlen(stream) + strlen(event_id) + strlen(type) "
                "+ 54 AS n FROM events WHERE seq >= ? AND seq < ? ORDER BY seq",
                params=[start, end],
            )
            .to_arrow_table()
            .column("n")
            .to_pylist()
        )

    def seal(self, max_rows: int | None = None, max_bytes: int | None = None) -> list[SegmentInfo]:
        """Seal unsealed events into Parquet segments (see :mod:`ledger.log.segments`)."""
        from ledger.log import segments

        return segments.seal(
            self,
            max_rows or segments.DEFAULT_MAX_ROWS,
            max_bytes=max_bytes or segments.DEFAULT_MAX_BYTES,
        )

    def verify(
        self,
        pub: Verifier | None = None,
        *,
        deep: bool = False,
        anchor: OutsideCheckpoint | None = None,
    ) -> VerifyReport:
        """Recompute and check everything (see :mod:`ledger.log.verify`)."""
        from ledger.log.verify import verify_ledger

        return verify_ledger(self, pub, deep=deep, anchor=anchor)

    # appending

    def append(self, events: Iterable[NewEvent]) -> AppendResult:
        """Append ``events`` as one atomic, durable batch (see the module docstring)."""
        prepared = prepare_batch(events)
        if not len(prepared):
            return AppendResult(None, None, 0, (), ())
        with self._lock:
            self._con.execute("BEGIN TRANSACTION")
            self._committing = None
            try:
                result = self._append_in_tx(prepared)
                self._con.execute("COMMIT")
                if self._committing is not None:  # only what is durable enters the filter
                    seen, new, state = self._committing
                    try:
                        seen.record(new.event_ids, new.streams, state)
                    except Exception:  # the batch is committed: drop the filter, not the result
                        _SEEN.pop(self._db_key, None)
            except duckdb.Error as exc:
                self._rollback()
                raise LedgerError(f"append to {str(self.path)!r} failed in DuckDB: {exc}") from exc
            except BaseException:
                self._rollback()
                raise
            finally:
                self._appended = True
        return result

    def _rollback(self) -> None:
        # If the transaction is already gone, the original error is what matters.
        with contextlib.suppress(duckdb.Error):
            self._con.execute("ROLLBACK")

    def _append_in_tx(self, batch: _Batch) -> AppendResult:
        ids = batch.event_ids
        unique = list(set(ids))
        size, frontier = self._tree_state()
        seen = self._seen_at(size, frontier)
        # only ids the log may hold are looked up (order is irrelevant to the IN lookup)
        maybe = unique if seen is None else seen.ids.maybe(unique)
        stored = self._stored_by_id(maybe) if maybe else {}
        if not stored and len(unique) == len(ids):  # the common case: all new
            new, seqs, dups = batch, tuple(range(size, size + len(batch))), ()
        else:
            rows, seqs, dups = self._dedupe(batch.rows(), stored, size)
            new = _Batch.of(rows)
        n = len(new)
        if n:
            streams = sorted(set(new.streams))
            maybe = streams if seen is None else seen.streams.maybe(streams)
            versions = self._versions_of(maybe) if maybe else {}
            if set(new.expected) != {"any"}:
                for stream, expected in zip(new.streams, new.expected, strict=True):
                    check_expected(stream, expected, versions.get(stream))
            self._refuse_sealed_trials([s for s in versions if s.startswith(TRIAL_PREFIX)])
            self._insert(new, size, frontier, versions)  # frontier is now the new one
            if seen is not None:
                self._committing = (seen, new, (size + n, b"".join(frontier)))
            return AppendResult(size, size + n - 1, n, tuple(dups), tuple(seqs))
        return AppendResult(None, None, 0, tuple(dups), tuple(seqs))

    @staticmethod
    def _dedupe(
        batch: list[_Prepared],
        stored: dict[str, tuple[int, tuple[str, str, int, bytes]]],
        size: int,
    ) -> tuple[list[_Prepared], list[int], list[Duplicate]]:
        """Split a batch into new events and duplicates; raise EventIdConflict on a clash."""
        seqs: list[int] = []
        dups: list[Duplicate] = []
        new: list[_Prepared] = []
        seen: dict[str, tuple[_Prepared, int]] = {}  # batch-local event_id -> (first, its seq)
        for i, p in enumerate(batch):
            if p.event_id in stored:
                seq, content = stored[p.event_id]
                differs = content_differences(p, content)
                if differs:
                    raise EventIdConflict(p.event_id, seq, differs)
                dups.append(Duplicate(i, p.event_id, seq))
                seqs.append(seq)
            elif p.event_id in seen:
                first, seq = seen[p.event_id]
                key = (first.stream, first.type, first.schema_version, first.payload)
                differs = content_differences(p, key)
                if differs:
                    raise EventIdConflict(p.event_id, None, differs)
                dups.append(Duplicate(i, p.event_id, seq))
                seqs.append(seq)
            else:
                seen[p.event_id] = (p, size + len(new))
                seqs.append(size + len(new))
                new.append(p)
        return new, seqs, dups

    def _seen_at(self, size: int, frontier: list[bytes]) -> Seen | None:
        """The log's id and stream filters (:mod:`ledger.log.seen`), valid for this state: the
        process's filters when they describe it, else rebuilt from the table once this
        object appends a second time. None without the native accelerator."""
        if not hashing.NATIVE:
            return None
        state = (size, b"".join(frontier))
        current = _SEEN.get(self._db_key)
        if current is not None and current.state == state and not current.full:
            return current
        if not self._appended:
            # A one-off append (the CLI's, ingest's) pays two lookups in DuckDB; building
            # the filters scans every id first (0.11 s vs 0.01 s for 100 events into a 1M
            # log, measured), which only repeated appends earn back.
            return None
        ids = Bloom(4 * size)
        row = _first(self._con.execute("SELECT count(DISTINCT stream) FROM events"))
        streams = Bloom(4 * int(row[0] if row else 0))
        lo = 0
        while lo < size:  # in seq windows: the build never holds the whole column
            hi = lo + READ_WINDOW - 1
            col = self._con.sql(
                "SELECT event_id FROM events WHERE seq BETWEEN ? AND ?", params=[lo, hi]
            ).to_arrow_table().column(0)
            ids.add_column(hashing.string_column(col), len(col))
            lo = hi + 1
        col = self._con.sql("SELECT DISTINCT stream FROM events").to_arrow_table().column(0)
        streams.add_column(hashing.string_column(col), len(col))
        _SEEN[self._db_key] = current = Seen(state, ids, streams)
        return current

    def _refuse_sealed_trials(self, existing_trials: list[str]) -> None:
        """A trial stream already in a segment takes no more events (trials never split)."""
        if not existing_trials:
            return
        sealed = self.sealed_upto()
        if sealed == 0:
            return
        row = _first(
            self._con.execute(
                "SELECT min(stream) FROM events WHERE seq < $1 AND stream IN (SELECT unnest($2::VARCHAR[]))",
                [sealed, sorted(existing_trials)],
            )
        )
        if row and row[0] is not None:
            raise StreamSealed(row[0], sealed)

    def _stored_by_id(self, ids: list[str]) -> dict[str, tuple[int, tuple[str, str, int, bytes]]]:
        rows = self._con.execute(
            "SELECT event_id, seq, stream, type, schema_version, payload FROM events "
            "WHERE event_id IN (SELECT unnest($1::VARCHAR[]))",
            [ids],
        ).fetchall()
        return {r[0]: (int(r[1]), (r[2], r[3], int(r[4]), bytes(r[5]))) for r in rows}

    def _versions_of(self, streams: list[str]) -> dict[str, int]:
        rows = self._con.execute(
            "SELECT stream, max(stream_version) FROM events "
            "WHERE stream IN (SELECT unnest($1::VARCHAR[])) GROUP BY stream",
            [streams],
        ).fetchall()
        return {r[0]: int(r[1]) for r in rows}

    def _insert(
        self, new: _Batch, size: int, frontier: list[bytes], versions: dict[str, int]
    ) -> None:
        n = len(new)
        next_version = dict(versions)
        stream_versions: list[int] = []
        push = stream_versions.append
        get = next_version.get
        for stream in new.streams:
            v = get(stream, -1) + 1
            next_version[stream] = v
            push(v)
        columns = [
            pc.add_checked(_iota(n), pa.scalar(size, pa.uint64())),
            pa.array(new.streams, pa.string()),
            pa.array(stream_versions, pa.uint32()),
            pa.array(new.event_ids, pa.string()),
            pa.array(new.types, pa.string()),
            pa.array(new.schema_versions, pa.uint16()),
        ]
        entry = [*columns, new.payload_array]  # the envelope: every column but time and hash
        leaves = hashing.column_leaf_hashes(size, *entry)
        runs = merkle.push_run(frontier, size, leaves)
        now = datetime.now(UTC)
        table = pa.table(
            [
                *columns,
                pa.repeat(pa.scalar(now, pa.timestamp("us", tz="UTC")), n),
                new.payload_array,
                _hash_array(leaves),
            ],
            schema=ARROW_SCHEMA,
        )
        self._insert_arrow("events", table)
        stored = [run for run in runs if run[0] >= NODE_MIN_LEVEL]
        if stored:
            self._insert_arrow("nodes", _node_table(stored))
        self._con.execute(
            "UPDATE tree_state SET size = ?, frontier = ?", [size + n, b"".join(frontier)]
        )

    def _insert_arrow(self, table_name: str, data: pa.Table) -> None:
        # a relation over the Arrow table, inserted by position (no view to register and
        # drop: measured 2.7 vs 2.9 ms per 10k events, 0.6 vs 0.8 ms for a batch's nodes)
        self._con.from_arrow(data).insert_into(table_name)

    # reading

    def read_arrow(
        self,
        stream: str | None = None,
        type: str | None = None,
        from_seq: int | None = None,
        to_seq: int | None = None,
        types: Sequence[str] | None = None,
        stream_prefix: str | None = None,
    ) -> pa.Table:
        """The matching events as one Arrow table in ``ARROW_SCHEMA``, in seq order.

        ``from_seq`` and ``to_seq`` are both inclusive.
        """
        batches = list(self._batches(stream, type, from_seq, to_seq, types, stream_prefix))
        return pa.Table.from_batches(batches, schema=ARROW_SCHEMA)

    def read(
        self,
        stream: str | None = None,
        type: str | None = None,
        from_seq: int | None = None,
        to_seq: int | None = None,
        types: Sequence[str] | None = None,
        stream_prefix: str | None = None,
    ) -> Iterator[StoredEvent]:
        """Stream the matching events in seq order (``to_seq`` inclusive)."""
        for batch in self._batches(stream, type, from_seq, to_seq, types, stream_prefix):
            for row in batch.to_pylist():
                yield StoredEvent(**row)

    def _batches(
        self,
        stream: str | None,
        type: str | None,
        from_seq: int | None,
        to_seq: int | None,
        types: Sequence[str] | None,
        stream_prefix: str | None,
    ) -> Iterator[pa.RecordBatch]:
        where, params = _filters(stream, type, types, stream_prefix)
        size = self.size()
        lo = max(from_seq or 0, 0)
        hi = size - 1 if to_seq is None else min(to_seq, size - 1)
        cur = self._con.cursor()
        try:
            # Scan in seq windows so a large log is never sorted or held in memory at once.
            while lo <= hi:
                top = min(lo + READ_WINDOW - 1, hi)
                sql = (
                    "SELECT * FROM events WHERE seq BETWEEN ? AND ?"
                    + "".join(f" AND {w}" for w in where)
                    + " ORDER BY seq"
                )
                table = cur.sql(sql, params=[lo, top, *params]).to_arrow_table()
                if table.num_rows:
                    yield from table.cast(ARROW_SCHEMA).to_batches()
                lo = top + 1
        finally:
            cur.close()

    # Merkle tree

    @_locked
    def read_hashes(self, indexes: Sequence[merkle.HashIndex]) -> list[bytes]:
        """:class:`merkle.HashReader` over this store: leaves from events, nodes from level
        :data:`NODE_MIN_LEVEL` up from nodes, and lower nodes hashed up from their (at most
        ``2 ** (NODE_MIN_LEVEL - 1)``) leaves."""
        node_keys = sorted({(lv, i) for lv, i in indexes if lv >= NODE_MIN_LEVEL})
        low = sorted({(lv, i) for lv, i in indexes if 0 < lv < NODE_MIN_LEVEL})
        leaf_seqs = sorted(
            {i for lv, i in indexes if lv == 0}
            | {s for lv, i in low for s in range(i << lv, (i + 1) << lv)}
        )
        found: dict[merkle.HashIndex, bytes] = {}
        if leaf_seqs:
            rows = self._con.execute(
                "SELECT seq, leaf_hash FROM events WHERE seq IN (SELECT unnest($1::UBIGINT[]))",
                [leaf_seqs],
            ).fetchall()
            found.update({(0, int(s)): bytes(h) for s, h in rows})
        if node_keys:
            rows = self._con.execute(
                "SELECT level, idx, hash FROM nodes WHERE last_leaf IN "
                "(SELECT unnest($1::UBIGINT[])) ",
                [sorted({((i + 1) << lv) - 1 for lv, i in node_keys})],
            ).fetchall()
            found.update({(int(lv), int(i)): bytes(h) for lv, i, h in rows if lv >= NODE_MIN_LEVEL})
        for lv, i in low:
            leaves = [found.get((0, s)) for s in range((i << lv), (i + 1) << lv)]
            if all(h is not None for h in leaves):
                found[(lv, i)] = merkle.subtree_root(b"".join(leaves))  # type: ignore[arg-type]
        missing = [ix for ix in indexes if ix not in found]
        if missing:
            raise ProofError(f"read_hashes: stored hashes missing for (level, index) {missing[:5]}")
        return [found[ix] for ix in indexes]

    def root(self, size: int | None = None) -> bytes:
        """RFC 9162 root hash of the first ``size`` events (default: the whole log)."""
        current, frontier = self._tree_state()
        if size is None or size == current:
            return merkle.frontier_root(frontier)
        if not 0 <= size <= current:
            raise ProofError(f"root(size={size}): the log has {current} events")
        return merkle.tree_hash(size, self)

    def prove_inclusion(self, seq: int, size: int | None = None) -> list[bytes]:
        """RFC 9162 inclusion proof of event ``seq`` in the tree of ``size`` events."""
        size = self.size() if size is None else size
        self._check_size("prove_inclusion", size)
        return merkle.prove_inclusion(seq, size, self)

    def prove_consistency(self, old: int, new: int | None = None) -> list[bytes]:
        """RFC 9162 consistency proof from the tree of ``old`` events to that of ``new``."""
        new = self.size() if new is None else new
        self._check_size("prove_consistency", new)
        return merkle.prove_consistency(old, new, self)

    # checkpoints

    def checkpoints(self) -> list[tuple[Path, str]]:
        """Stored checkpoint notes ``(file, note)``, oldest (smallest size) first."""
        folder = self.path / CHECKPOINT_DIR
        if not folder.is_dir():
            return []
        return [(p, p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.note"))]

    def latest_checkpoint(self) -> Checkpoint | None:
        """The body of the largest stored checkpoint (its signatures are not checked here)."""
        stored = self.checkpoints()
        return parse_checkpoint(note_text(stored[-1][1])) if stored else None

    def checkpoint(self, signer: Signer) -> str:
        """Sign, store and return a C2SP checkpoint note of the current tree.

        Refuses (CheckpointError) when any stored checkpoint is not a prefix of the current
        tree, so the log never signs two checkpoints a consistency proof cannot join. A
        second signer at the same size adds its signature line to the same note.
        """
        with self._lock:
            size, frontier = self._tree_state()
            cp = Checkpoint(self.origin, size, merkle.frontier_root(frontier))
            text = format_checkpoint(cp)
            for path, stored in self.checkpoints():
                self._check_joinable(path, stored, cp, signer)
            target = checkpoint_file(self.path, size)
            if target.exists():
                existing = target.read_text(encoding="utf-8")
                if note_text(existing) != text:
                    raise CheckpointError(f"{target}: a different checkpoint of size {size} exists")
                if self._signed_by(existing, signer):
                    return existing
                extra = sign_note(text, [signer])[len(text) + 1 :]
                signed = existing + extra
            else:
                signed = sign_note(text, [signer])
            target.parent.mkdir(exist_ok=True)
            write_atomic(target, signed.encode("utf-8"))
            return signed

    @staticmethod
    def _signed_by(signed: str, signer: Signer) -> bool:
        try:
            open_note(signed, [signer.verifier()])
        except NoVerifiableSignatures:
            return False
        return True

    def _check_joinable(self, path: Path, stored: str, cp: Checkpoint, signer: Signer) -> None:
        """Raise CheckpointError unless the stored checkpoint is a prefix of ``cp``'s tree."""
        try:
            old = parse_checkpoint(note_text(stored))
            self._signed_by(stored, signer)  # raises InvalidSignature if our key's sig is bad
        except (MalformedNote, InvalidSignature) as exc:
            raise CheckpointError(
                f"refusing to sign: stored checkpoint {path} is bad: {exc}"
            ) from None
        if old.origin != cp.origin:
            raise CheckpointError(
                f"refusing to sign: {path} is for origin {old.origin!r}, this log is {cp.origin!r}"
            )
        if old.size > cp.size:
            raise CheckpointError(
                f"refusing to sign: {path} covers {old.size} events but the log has {cp.size}; "
                "the log lost events (run `vledger verify`)"
            )
        try:
            if old.size == 0:
                if old.root != merkle.EMPTY_ROOT:
                    raise ProofError("size-0 checkpoint with a non-empty root")
            else:
                proof = merkle.prove_consistency(old.size, cp.size, self)
                merkle.check_consistency(old.size, cp.size, old.root, cp.root, proof)
        except ProofError as exc:
            raise CheckpointError(
                f"refusing to sign size {cp.size}: not consistent with {path} (size {old.size}): {exc}"
            ) from None

    def _check_size(self, fn: str, size: int) -> None:
        current = self.size()
        if size > current:
            raise ProofError(f"{fn}: size {size} exceeds the log's {current} events")


def verify_windows(
    lg: Ledger,
    top: int,
    window: int,
    *,
    columns: bool = False,
    prepare: Callable[[int, pa.Table], Any] | None = None,
    depth: int = 2,
) -> Iterator[tuple[int, int, pa.Table, pa.Table, Any]]:
    """``(lo, hi, entries, nodes, prepared)`` for each seq window of ``[0, top]``, one
    window ahead.

    ``entries`` has columns ``seq`` (storage order, unchecked), ``entry`` (``0x00 ||
    envelope_bytes`` built in SQL, see :data:`ENTRY_SQL`; NULL where a string needs JSON
    escaping) and ``leaf_hash``; with ``columns`` it is the stored columns instead, as
    :func:`ledger.log.hashing.stored_leaf_hashes` takes them (the native accelerator builds the
    entries itself, cheaper than SQL). ``nodes`` is :meth:`Ledger.stored_node_table` for
    the window, and ``prepared`` is ``prepare(lo, entries)`` (``None`` without one), also
    computed ahead in the worker: verify hashes the next window's leaves there while it
    checks this one.
    Windows are fetched (and prepared) ``depth`` ahead by as many worker threads, each
    window on its own cursor (DuckDB and the native hasher release the GIL), so the next
    windows are assembled while the caller checks this one; they are yielded in order.
    """
    bounds: list[tuple[int, int]] = []
    lo = 0
    while lo <= top:  # windows grow from 4096 rows so the caller starts almost at once
        hi = min(lo + min(window, max(4096, lo)) - 1, top)
        bounds.append((lo, hi))
        lo = hi + 1
    depth = max(1, min(depth, len(bounds)))
    cursors = [lg._con.cursor() for _ in range(depth)]  # window i uses cursor i % depth

    def fetch(i: int) -> tuple[int, int, pa.Table, pa.Table, Any]:
        lo, hi = bounds[i]
        cur = cursors[i % depth]
        if columns:
            entries = cur.sql(_COLUMNS_SQL, params=[lo, hi]).to_arrow_table()
        else:
            entries = cur.sql(ENTRY_SQL, params=[JSON_ESCAPED_RE, lo, hi]).to_arrow_table()
        nodes = cur.sql(_NODE_WINDOW_SQL, params=[lo, hi]).to_arrow_table()
        return lo, hi, entries, nodes, prepare(lo, entries) if prepare else None

    pool = ThreadPoolExecutor(max_workers=depth, thread_name_prefix="vledger-verify")
    pending: deque[Future[tuple[int, int, pa.Table, pa.Table, Any]]] = deque()
    try:
        for i in range(len(bounds)):
            while len(pending) < depth and i + len(pending) < len(bounds):
                pending.append(pool.submit(fetch, i + len(pending)))
            yield pending.popleft().result()
    finally:
        for fut in pending:  # the caller stopped early: let the workers finish first
            fut.cancel() or fut.exception()
        pool.shutdown(wait=True)
        for cur in cursors:
            cur.close()


def _filters(
    stream: str | None,
    type: str | None,
    types: Sequence[str] | None,
    stream_prefix: str | None,
) -> tuple[list[str], list[Any]]:
    where: list[str] = []
    params: list[Any] = []
    if stream is not None:
        where.append("stream = ?")
        params.append(stream)
    if stream_prefix is not None:
        where.append("starts_with(stream, ?)")
        params.append(stream_prefix)
    if type is not None:
        where.append("type = ?")
        params.append(type)
    if types is not None:
        where.append("type IN (SELECT unnest(?::VARCHAR[]))")
        params.append(list(types))
    return where, params


def write_atomic(path: Path, data: bytes) -> None:
    """Write via a temporary file, fsync, rename: readers see the old or the new file."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def checkpoint_file(ledger_dir: Path, size: int) -> Path:
    return ledger_dir / CHECKPOINT_DIR / f"{size:020d}.note"


def _first(result: duckdb.DuckDBPyConnection) -> tuple[Any, ...] | None:
    """The first row, consuming the whole result: DuckDB 2 refuses further work (e.g.
    ``register``) on a connection whose last result was not fetched to the end."""
    rows = result.fetchall()
    return rows[0] if rows else None


@functools.lru_cache(maxsize=8)
def _iota(n: int) -> pa.UInt64Array:
    """0, 1, …, n - 1 (append adds its first seq in C instead of converting n ints)."""
    return pa.array(range(n), pa.uint64())


def _hash_array(hashes: bytes) -> pa.FixedSizeBinaryArray:
    """Concatenated 32-byte digests as one Arrow array over the same buffer (no copy)."""
    if len(hashes) % 32:  # never: SHA-256 digests; keep the buffer honest
        raise AssertionError("bad math in _hash_array: not a whole number of 32-byte hashes")
    return pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(32), len(hashes) // 32, [None, pa.py_buffer(hashes)]
    )


def _node_table(runs: list[tuple[int, int, bytes]]) -> pa.Table:
    """Arrow rows for the interior nodes :func:`merkle.push_run` completed."""
    levels: list[int] = []
    idxs: list[int] = []
    last: list[int] = []
    for lv, first, hs in runs:
        span = range(first, first + len(hs) // 32)
        levels.extend([lv] * len(span))
        idxs.extend(span)
        last.extend(((i + 1) << lv) - 1 for i in span)
    return pa.table(
        [
            pa.array(levels, pa.uint8()),
            pa.array(idxs, pa.uint64()),
            pa.array(last, pa.uint64()),
            _hash_array(b"".join(hs for _, _, hs in runs)),
        ],
        schema=_NODE_SCHEMA,
    )
