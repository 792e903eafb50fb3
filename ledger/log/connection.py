"""Connecting to a ledger's DuckDB file: the file lock, busy retry, read-only opens, memory.

DuckDB allows one read-write process per file: :func:`connect` retries the file lock for
``busy_timeout`` seconds and then raises :class:`LedgerBusy`. Each connection caps DuckDB's
buffer pool (``$VLEDGER_DUCKDB_MEMORY``, default 128MB) so a long-running writer's memory
stays flat; bigger queries spill to disk. Between the windows of a streaming read and after
each append the pool is trimmed to :data:`TRIM_TO` (:func:`trim_buffer_pool`), and an
append of ordinary size runs within it (:func:`append_pool`). A writer checkpoints in row
groups DuckDB never rewrites to merge them (:data:`CHECKPOINT_ROWS`, :class:`Checkpoints`),
and a small WAL is left for the next open rather than checkpointed at close (:data:`KEEP_WAL`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import random
import re
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import duckdb

from ledger.defaults import DEFAULT_DUCKDB_MEMORY
from ledger.errors import LedgerBusy, LedgerError, TamperDetected
from ledger.log.layout import DB_FILE

# What the buffer pool keeps between two steps of a streaming read or write. It
# only caches blocks such a reader or writer will not read again, and DuckDB evicts only
# under pressure: left alone it filled to the cap, so ingest and retrace peaked 1.5-1.9x
# higher over 10,000 bundles than over 1,000. A lower cap instead refused big rows (one
# trial with a 48 MiB trajectory: "Out of Memory" at 32MB, taken at 128MB), so one step
# may still use the whole cap; only what it leaves cached is trimmed.
TRIM_TO = "24MB"
# An append's rows at the steady pool: ingest's ~4 MiB batches, retrace's ~1.5 MiB parts.
# A bigger one gets the cap (one trial with an 8 MiB trajectory passes at 20MB, 16MB
# refuses it: this leaves a third to spare at 24MB).
LARGE_APPEND_BYTES = 6 << 20
# DuckDB writes the rows committed since its last checkpoint as new row groups, and each
# checkpoint also merges adjacent row groups that fit in fewer (up to four into three),
# reading and rewriting them. At its default trigger (16 MiB of WAL) a log of ~400-byte
# events checkpointed every ~50k rows and every other checkpoint rewrote the 50k before
# with its own: within the steady pool that one commit spilled ~95 MB to the temp file
# (benchmarks/store's appends, measured). A row group of more than 3/4 of DuckDB's
# 122,880 rows is never merged (DuckDB 2.0.1, measured): a writer checkpoints once this
# many of its rows wait (Checkpoints), and DuckDB's own trigger is raised to
# CHECKPOINT_WAL, which bounds the WAL of wider rows.
CHECKPOINT_ROWS = 92_161
CHECKPOINT_WAL = "64MB"
# A WAL up to this size is left at close for the next open to replay (+2 ms at 0.8 MB,
# measured) instead of checkpointed (8-12 ms, a fifth of a small retrace's own work,
# benchmarks/startup.py): every commit in it is durable, and one larger is checkpointed at close as
# before, so what an open replays stays bounded. It holds no large row (Checkpoints
# checkpoints one at once), so its checkpoint fits the steady pool.
KEEP_WAL = 1 << 20
F = TypeVar("F", bound=Callable[..., Any])

# One lock per ledger file per process: DuckDB shares one database instance between
# connections of a process, so two Ledger objects on one path must not interleave appends.
_PROCESS_LOCKS: dict[Path, threading.RLock] = {}
_PROCESS_LOCKS_GUARD = threading.Lock()
# The store file this process opened last: a driver error that escapes a command
# (a damaged block read mid-way) is reported against the file (damaged_store_error).
OPENED: list[Path] = []


def process_lock(db: Path) -> threading.RLock:
    """The re-entrant lock every object of this process shares for the file ``db``."""
    with _PROCESS_LOCKS_GUARD:
        return _PROCESS_LOCKS.setdefault(db, threading.RLock())


def locked(fn: F) -> F:
    """Run a method under its object's ``_lock``: queries on the shared connection never see
    (or disturb) another thread's half-done append transaction."""

    @functools.wraps(fn)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return fn(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


def damaged_store_error(exc: duckdb.Error) -> LedgerError:
    """The typed error for a DuckDB error that escaped a command: names the store file."""
    where = str(OPENED[-1]) if OPENED else DB_FILE
    if isinstance(exc, duckdb.OutOfMemoryException):  # a cap too low, not a damaged file
        return out_of_memory(exc, f"reading {where}")
    return TamperDetected(
        where,
        f"cannot be read ({_first_line(exc)}); the file is damaged or was altered — run "
        "`vledger verify`",
    )


def append_error(path: Path, exc: duckdb.Error) -> LedgerError:
    """An append DuckDB refused (its transaction rolled back, so the ledger is unchanged)."""
    if isinstance(exc, duckdb.OutOfMemoryException):
        return out_of_memory(exc, f"appending to {str(path)!r} (the ledger is unchanged)")
    return LedgerError(f"append to {str(path)!r} failed in DuckDB: {exc}")


def out_of_memory(exc: duckdb.Error, doing: str) -> LedgerError:
    """DuckDB needed more than the buffer-pool cap: say which cap and how to raise it."""
    return LedgerError(
        f"DuckDB ran out of memory under its cap of {duckdb_memory_limit()} while {doing} "
        f"({_first_line(exc)}); raise the cap for this command, e.g. "
        "VLEDGER_DUCKDB_MEMORY=1GB (docs/readme/store.md)"
    )


def _first_line(exc: duckdb.Error) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def duckdb_memory_limit() -> str:
    """``$VLEDGER_DUCKDB_MEMORY`` (e.g. ``2GB``) or the default ``128MB``; validated."""
    value = os.environ.get("VLEDGER_DUCKDB_MEMORY", DEFAULT_DUCKDB_MEMORY).strip()
    if not _SIZE.fullmatch(value):
        raise LedgerError(f"VLEDGER_DUCKDB_MEMORY={value!r} is not a size like '256MB' or '2GB'")
    return value


def trim_buffer_pool(con: duckdb.DuckDBPyConnection) -> None:
    """Evict cached blocks down to :data:`TRIM_TO`, the cap unchanged: lowering DuckDB's
    memory_limit evicts (what is pinned stays), restoring it lets the next step grow."""
    _set_pool(con, _steady())
    _set_pool(con, duckdb_memory_limit())


def size_pool_for(con: duckdb.DuckDBPyConnection, payload_bytes: int) -> None:
    """The pool for inserting ``payload_bytes``: the steady :data:`TRIM_TO` (which also
    bounds what the commit's checkpoint caches), the whole cap for a big one."""
    _set_pool(con, duckdb_memory_limit() if is_large(payload_bytes) else _steady())


@contextlib.contextmanager
def append_pool(con: duckdb.DuckDBPyConnection, payload_bytes: int) -> Iterator[None]:
    """:func:`size_pool_for` while an append runs; the cap again after it."""
    size_pool_for(con, payload_bytes)
    try:
        yield
    finally:
        restore_cap(con)


@contextlib.contextmanager
def one_thread(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """DuckDB's work done on the calling thread alone while the block runs (its thread
    count restored after). For ``append_parts``, whose parts are made while it inserts by
    work that keeps the cores busy (ingest's reading, retrace's replay): DuckDB splitting
    an insert over its own threads only adds work beside that. Measured, the 263k events of
    10,000 generated bundles appended in 4 MiB parts: 1.80 s of CPU with DuckDB's two
    threads, 1.54 s with one; the driver process of a 2-worker ingest of them: 3.81 s and
    3.62 s (means of six runs each)."""
    before = first_row(con.execute("SELECT current_setting('threads')"))
    _set_threads(con, 1)
    try:
        yield
    finally:
        if before is not None:
            _set_threads(con, int(before[0]))


def _set_threads(con: duckdb.DuckDBPyConnection, threads: int) -> None:
    with contextlib.suppress(duckdb.Error):  # never an error: only how DuckDB spreads work
        con.execute(f"SET threads = {threads}")


def restore_cap(con: duckdb.DuckDBPyConnection) -> None:
    """The pool at the whole cap again (after :func:`size_pool_for` set it steady)."""
    _set_pool(con, duckdb_memory_limit())


def close_steady(con: duckdb.DuckDBPyConnection, wal: Path, *, at_cap: bool) -> None:
    """Close ``con``: a WAL of at most :data:`KEEP_WAL` bytes stays as it is; a larger one is
    checkpointed within the steady pool unless ``at_cap`` (a large row may be in the WAL:
    DuckDB cannot checkpoint a row bigger than its pool). Left at the cap, closing after a
    corpus-sized append of small rows peaked anywhere up to 1.6x higher
    (benchmarks/memory_flat.py); a checkpoint that fails leaves the WAL, replayed on open."""
    keep = wal_bytes(wal) <= KEEP_WAL
    with contextlib.suppress(duckdb.Error):  # a read-only connection checkpoints nothing
        con.execute(f"PRAGMA {'disable' if keep else 'enable'}_checkpoint_on_shutdown")
    if not at_cap and not keep:
        _set_pool(con, _steady())
    con.close()


def wal_bytes(wal: Path) -> int:
    """The size of the WAL file ``wal`` (0 when there is none)."""
    try:
        return wal.stat().st_size
    except FileNotFoundError:
        return 0


class Checkpoints:
    """When a writer checkpoints: once :data:`CHECKPOINT_ROWS` rows it committed wait in
    the WAL (within the pool as it is), and at once after a large row, within the cap (a
    later checkpoint within the steady pool could not write it)."""

    def __init__(self, wal: Path) -> None:
        self.wal = wal
        self.waiting = 0  # rows committed since the last checkpoint

    def committed(self, con: duckdb.DuckDBPyConnection, rows: int, *, large: bool) -> None:
        if not self.wal.exists():  # DuckDB checkpointed at the commit itself
            self.waiting = 0
            return
        self.waiting += rows
        if not large and self.waiting < CHECKPOINT_ROWS:
            return
        if large:
            _set_pool(con, duckdb_memory_limit())
        try:
            con.execute("CHECKPOINT")
        except duckdb.Error:
            return  # refused (another transaction open): the WAL stays, durable, till later
        self.waiting = 0


def is_large(payload_bytes: int) -> bool:
    """An append that gets the whole cap (:func:`size_pool_for`)."""
    return payload_bytes > LARGE_APPEND_BYTES


def _steady() -> str:
    cap = duckdb_memory_limit()
    return TRIM_TO if _bytes(cap) > _bytes(TRIM_TO) else cap


def _reserve_steady_blocks(con: duckdb.DuckDBPyConnection) -> None:
    """The steady pool's blocks from DuckDB's own block allocator: without one, each block
    evicted within the steady pool was freed to the process allocator, which DuckDB then
    flushes (malloc_trim), and the next one faulted in afresh. Measured: benchmarks/store's
    appends 3-5 % faster, the memory_flat commands' peak RSS 5-13 MiB higher. Never an
    error: DuckDB refuses to shrink it for a second connection under a smaller cap."""
    with contextlib.suppress(duckdb.Error):
        con.execute(f"SET block_allocator_memory = '{_steady()}'")


def _set_pool(con: duckdb.DuckDBPyConnection, limit: str) -> None:
    # never an error: more pinned than ``limit`` (a cursor mid-read, a big uncommitted
    # part) only means less was evicted, and the pool stays where it was
    with contextlib.suppress(duckdb.Error):
        con.execute(f"SET memory_limit = '{limit}'")


_SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)", re.IGNORECASE)
_UNITS = {"b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4,
          "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}  # fmt: skip


def _bytes(size: str) -> float:
    """A size :func:`duckdb_memory_limit` accepted, in bytes (DuckDB's units: MB = 1000²)."""
    m = _SIZE.fullmatch(size.strip())
    return float(m.group(1)) * _UNITS[m.group(2).lower()] if m else 0.0


def connect(db: Path, busy_timeout: float, *, read_only: bool = False) -> duckdb.DuckDBPyConnection:
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
            con.execute(f"SET checkpoint_threshold = '{CHECKPOINT_WAL}'")
            _reserve_steady_blocks(con)
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


@contextlib.contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """One DuckDB transaction: committed when the block ends, rolled back if it raises."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield
        con.execute("COMMIT")
    except BaseException:
        # If the transaction is already gone, the original error is what matters.
        with contextlib.suppress(duckdb.Error):
            con.execute("ROLLBACK")
        raise


def first_row(result: duckdb.DuckDBPyConnection) -> tuple[Any, ...] | None:
    """The first row, consuming the whole result: DuckDB 2 refuses further work (e.g.
    ``register``) on a connection whose last result was not fetched to the end."""
    rows = result.fetchall()
    return rows[0] if rows else None
