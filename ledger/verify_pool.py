"""Leaf hashing for ``verify`` in worker processes, so it runs beside the main thread.

``verify`` must compute two SHA-256 per event (the leaf and, on average, one interior
node). CPython's hashlib holds the GIL for inputs under 2 KiB, so threads cannot share the
~400-byte leaf hashes; worker processes can. Each window's ``entry`` column (``0x00 ||
envelope_bytes`` assembled by DuckDB, see ``ledger.store.ENTRY_SQL``) is shipped to a
worker as one byte string plus its offsets, and the worker returns the window's leaf
hashes as one 32·k-byte string. The main thread keeps everything else (the tree, every
comparison, the row-by-row fallback), so a pooled run reports exactly what a serial one
does: only *where* the leaf hashes are computed changes.

The pool costs a process start and a copy of every entry byte, so it is used only for logs
of at least :data:`PARALLEL_MIN_EVENTS` events and only with two or more workers
(``$VLEDGER_VERIFY_WORKERS``, default ``min(2, os.cpu_count())``; ``1`` or ``0`` turns it
off).
"""

from __future__ import annotations

import hashlib
import mmap
import multiprocessing
import os
from array import array
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor

import pyarrow as pa

from ledger.errors import LedgerError

PARALLEL_MIN_EVENTS = 50_000
WORKERS_ENV = "VLEDGER_VERIFY_WORKERS"

Window = tuple[int, int, pa.Table, pa.Table]


def verify_workers() -> int:
    """``$VLEDGER_VERIFY_WORKERS`` or ``min(2, os.cpu_count())``; validated."""
    raw = os.environ.get(WORKERS_ENV)
    if raw is None or not raw.strip():
        return min(2, os.cpu_count() or 1)
    try:
        n = int(raw)
    except ValueError:
        n = -1
    if n < 0:
        raise LedgerError(
            f"{WORKERS_ENV}={raw!r} is not a worker count; write a whole number such as 2 "
            "(0 or 1 hashes in the main process)"
        )
    return n


CHUNK_ROWS = 8_192  # entries per job
CHUNK_BYTES = 16 << 20  # slot size; a bigger chunk is hashed in the main process
_SHARED: mmap.mmap | None = None  # the slots, inherited by the forked workers


def hash_leaves(data: memoryview | bytes, offsets: Sequence[int], base: int = 0) -> bytes:
    """The SHA-256 of each ``data[offsets[i] - base : offsets[i+1] - base]``, concatenated."""
    view = memoryview(data)
    sha = hashlib.sha256
    return b"".join(
        [sha(view[a - base : b - base]).digest() for a, b in zip(offsets, offsets[1:])]  # noqa: B905
    )


def _init_worker(shared: mmap.mmap) -> None:
    global _SHARED
    _SHARED = shared


def _hash_slot(slot: int, offsets: bytes, fmt: str) -> None:
    """Worker job: hash the entries in ``slot`` (``offsets``: raw Arrow offsets, the first
    one at the slot's start), write their leaves after the slot's data area."""
    if _SHARED is None:
        raise AssertionError("bad wiring in verify_pool: worker started without its slots")
    offs = array(fmt)
    offs.frombytes(offsets)
    at = slot * _SLOT
    leaves = hash_leaves(memoryview(_SHARED)[at : at + CHUNK_BYTES], offs, offs[0])
    _SHARED[at + CHUNK_BYTES : at + CHUNK_BYTES + len(leaves)] = leaves


_SLOT = CHUNK_BYTES + 32 * CHUNK_ROWS


class _Window:
    """A window waiting for its chunks' leaf hashes."""

    def __init__(self, window: Window, chunks: int) -> None:
        self.window = window
        self.parts: list[bytes | None] = [None] * chunks


def _raw_parts(col: pa.ChunkedArray) -> tuple[memoryview, memoryview, str]:
    """Offsets (k + 1, as stored: int32 or int64) and data of a binary column."""
    arr = col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
    fmt = "i" if arr.type == pa.binary() else "q"
    if arr.type not in (pa.binary(), pa.large_binary()):
        arr = arr.cast(pa.large_binary())
    _, off_buf, data_buf = arr.buffers()
    offs = memoryview(off_buf).cast(fmt)[arr.offset : arr.offset + len(arr) + 1]
    data = memoryview(data_buf).cast("B") if data_buf is not None else memoryview(b"")
    return offs, data, fmt


class LeafPool:
    """Worker processes hashing each window's entries while the caller checks the last.

    Entries travel through shared memory (an anonymous ``MAP_SHARED`` mapping made before
    the fork, cut into slots of CHUNK_BYTES plus room for the leaves): a pipe would copy
    every byte several times, slower than hashing it.
    """

    def __init__(self, workers: int) -> None:
        self.slots = 2 * workers + 1
        self._mem = mmap.mmap(-1, self.slots * _SLOT)
        self._free = deque(range(self.slots))
        # fork, not spawn or forkserver: those re-import the caller's __main__, which
        # re-runs any script that calls verify without a __main__ guard. The executor
        # forks all workers at the first submit, done here, before verify starts its
        # prefetch thread: no thread of ours is inside DuckDB while we fork.
        self._pool = ProcessPoolExecutor(
            workers,
            mp_context=multiprocessing.get_context("fork"),
            initializer=_init_worker,
            initargs=(self._mem,),
        )
        self._pool.submit(int).result()
        # chunks in submission order: (window, part index, slot, rows, future)
        self._inflight: deque[tuple[_Window, int, int, int, Future[None]]] = deque()

    def _collect_oldest(self) -> None:
        win, part, slot, rows, fut = self._inflight.popleft()
        fut.result()
        at = slot * _SLOT + CHUNK_BYTES
        win.parts[part] = self._mem[at : at + 32 * rows]
        self._free.append(slot)

    def _submit(self, w: Window) -> _Window:
        entries = w[2]
        if entries.column("entry").num_chunks > 1:  # combine once, not here and in verify
            entries = entries.combine_chunks()
            w = (w[0], w[1], entries, w[3])
        col = entries.column("entry")
        k = entries.num_rows
        if not k or col.null_count:
            return _Window(w, 0)
        offs, data, fmt = _raw_parts(col)
        starts = range(0, k, CHUNK_ROWS)
        win = _Window(w, len(starts))
        for part, i in enumerate(starts):
            j = min(i + CHUNK_ROWS, k)
            a, b = offs[i], offs[j]
            if b - a > CHUNK_BYTES:  # large entries: hash them here
                win.parts[part] = hash_leaves(data, offs[i : j + 1])
                continue
            while not self._free:
                self._collect_oldest()
            slot = self._free.popleft()
            at = slot * _SLOT
            self._mem[at : at + b - a] = data[a:b]
            fut = self._pool.submit(_hash_slot, slot, offs[i : j + 1].tobytes(), fmt)
            self._inflight.append((win, part, slot, j - i, fut))
        return win

    def hashed(self, windows: Iterator[Window]) -> Iterator[tuple[Window, bytes | None]]:
        """Each window with its leaf hashes concatenated (None when no worker hashed it: an
        empty window or one with NULL entries), in order, one window ahead."""
        ready: deque[_Window] = deque()
        for w in windows:
            ready.append(self._submit(w))
            if len(ready) > 1:
                yield self._finish(ready.popleft())
        while ready:
            yield self._finish(ready.popleft())

    def _finish(self, win: _Window) -> tuple[Window, bytes | None]:
        while any(p is None for p in win.parts):
            self._collect_oldest()
        if not win.parts:
            return win.window, None
        return win.window, b"".join(win.parts)  # type: ignore[arg-type]

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._mem.close()


def leaf_pool(events: int) -> LeafPool | None:
    """A pool for a log of ``events`` events, or None when hashing in-process is better."""
    workers = verify_workers()
    if workers < 2 or events < PARALLEL_MIN_EVENTS:
        return None
    return LeafPool(workers)
