"""Batch SHA-256 for the log's hot paths, with and without the optional C accelerator.

The ``py_*`` functions are the definitions: leaf hashes of envelope rows, RFC 9162 tree
levels, hashes of slices. When ``ledger.log.native`` was built at install time (a C compiler
and OpenSSL's headers; see ``setup.py``), :func:`tree_level`, :func:`column_leaf_hashes`
and :func:`stored_leaf_hashes` hash a whole batch in one native call with the GIL released,
reading Arrow buffers directly. ``NATIVE`` says whether it was; ``tests/test_hashing.py``
holds the native results equal to the definitions on generated inputs.

Why: the log hashes every entry (~400 bytes) and about one interior node per entry, and
hashlib's per-call interpreter overhead is as large as the hashing itself at these sizes.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from types import ModuleType

import orjson
import pyarrow as pa

try:  # built by setup.py when the machine can compile it; VLEDGER_PURE=1 opts out
    if os.environ.get("VLEDGER_PURE") == "1":
        raise ImportError("VLEDGER_PURE=1")
    from ledger.log import native as _native
except ImportError:
    _native = None

NATIVE: bool = _native is not None
HASH = 32


def py_hash_slices(data: bytes | memoryview, offsets: Sequence[int]) -> bytes:
    """SHA-256 of each ``data[offsets[i]:offsets[i + 1]]``, digests concatenated."""
    view = memoryview(data)
    sha = hashlib.sha256
    return b"".join(sha(view[a:b]).digest() for a, b in zip(offsets, offsets[1:]))  # noqa: B905


def py_tree_level(children: bytes) -> bytes:
    """RFC 9162 ``SHA-256(0x01 || left || right)`` of each consecutive pair of hashes."""
    if len(children) % (2 * HASH):
        raise ValueError("children must be pairs of 32-byte hashes")
    sha = hashlib.sha256
    return b"".join(
        sha(b"\x01" + children[i : i + 2 * HASH]).digest()
        for i in range(0, len(children), 2 * HASH)
    )


def py_envelope_leaf_hashes(
    first_seq: int,
    streams: list[str],
    versions: list[int],
    event_ids: list[str],
    types: list[str],
    schema_versions: list[int],
    payloads: list[bytes],
) -> bytes:
    """RFC 9162 leaf hash of each row's envelope (``schemas.envelope.envelope_bytes``),
    row ``i`` at ``seq = first_seq + i``; digests concatenated."""
    sha = hashlib.sha256
    dumps = orjson.dumps
    join = b"".join
    return join(
        sha(join((b"\x00", dumps([first_seq + i, s, v, e, t, sv]), b"\n", p))).digest()
        for i, (s, v, e, t, sv, p) in enumerate(
            zip(streams, versions, event_ids, types, schema_versions, payloads, strict=True)
        )
    )


def tree_level(children: bytes) -> bytes:
    """:func:`py_tree_level`, natively when built."""
    if _native is not None:
        return _native.tree_level(children)
    return py_tree_level(children)


def split(hashes: bytes) -> list[bytes]:
    """Concatenated 32-byte digests as a list."""
    return [hashes[i : i + HASH] for i in range(0, len(hashes), HASH)]


STORED_COLUMNS = ("seq", "stream", "stream_version", "event_id", "type", "schema_version", "payload")


def stored_leaf_hashes(t: pa.Table, first_seq: int) -> tuple[bytes, int] | None:
    """Leaf hashes of stored rows straight from their Arrow columns, natively, and the entry
    bytes hashed; ``None`` when the accelerator is not built, a column holds a NULL, the
    seqs are not ``first_seq, first_seq + 1, …`` or a string needs a JSON escape (the caller
    then takes its Python path)."""
    if _native is None:
        return None
    return _arrow_leaf_hashes(first_seq, *(t.column(c) for c in STORED_COLUMNS))


def column_leaf_hashes(first_seq: int, *columns: pa.Array | pa.ChunkedArray) -> bytes:
    """Leaf hashes of rows given as the seven envelope columns (:data:`STORED_COLUMNS`
    order, seqs ``first_seq, first_seq + 1, …``): natively when built and no string needs a
    JSON escape, else through :func:`py_envelope_leaf_hashes`."""
    if _native is not None:
        hashed = _halves(first_seq, columns) if len(columns[0]) >= SPLIT_MIN_ROWS else None
        if hashed is None:
            whole = _arrow_leaf_hashes(first_seq, *columns)
            hashed = None if whole is None else whole[0]
        if hashed is not None:
            return hashed
    _, streams, versions, event_ids, types, svs, payloads = (c.to_pylist() for c in columns)
    return py_envelope_leaf_hashes(first_seq, streams, versions, event_ids, types, svs, payloads)


# From this many rows, column_leaf_hashes hashes the two halves on two threads (the native
# hasher releases the GIL).
SPLIT_MIN_ROWS = 4096
_second_half: ThreadPoolExecutor | None = None


def _halves(first_seq: int, columns: tuple[pa.Array | pa.ChunkedArray, ...]) -> bytes | None:
    """Native leaf hashes of the rows, the second half hashed on a helper thread."""
    global _second_half
    if _second_half is None:
        _second_half = ThreadPoolExecutor(1, thread_name_prefix="vledger-hash")
    mid = len(columns[0]) // 2
    late = _second_half.submit(
        _arrow_leaf_hashes, first_seq + mid, *(c.slice(mid) for c in columns)
    )
    early = _arrow_leaf_hashes(first_seq, *(c.slice(0, mid) for c in columns))
    rest = late.result()
    if early is None or rest is None:
        return None
    return early[0] + rest[0]


def _arrow_leaf_hashes(
    first_seq: int, *columns: pa.Array | pa.ChunkedArray
) -> tuple[bytes, int] | None:
    seq, stream, version, event_id, type_, sv, payload = columns
    if any(c.null_count for c in columns):
        return None
    if not len(seq):
        return b"", 0
    ints = [_u64(c) for c in (seq, version, sv)]
    var = [string_column(c) for c in (stream, event_id, type_, payload)]
    return native().envelope_leaf_hashes_arrow(len(seq), first_seq, *ints, *var)


def _u64(col: pa.Array | pa.ChunkedArray) -> memoryview:
    arr = _one(col).cast(pa.uint64())
    return memoryview(arr.buffers()[1])[arr.offset * 8 : (arr.offset + len(arr)) * 8]


def _one(col: pa.Array | pa.ChunkedArray) -> pa.Array:
    return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col


def string_column(col: pa.Array | pa.ChunkedArray) -> tuple[memoryview, memoryview, int]:
    """(offsets, data, offset width) of a string or binary column, without copying: what
    the native functions take for a variable-width column."""
    arr = _one(col)
    if not len(arr):
        return memoryview(bytes(8)), memoryview(b""), 8
    if arr.type not in (pa.binary(), pa.string(), pa.large_binary(), pa.large_string()):
        arr = arr.cast(pa.large_binary())
    width = 8 if arr.type in (pa.large_binary(), pa.large_string()) else 4
    _, off, data = arr.buffers()
    offsets = memoryview(off)[arr.offset * width : (arr.offset + len(arr) + 1) * width]
    return offsets, memoryview(data) if data is not None else memoryview(b""), width


def native() -> ModuleType:
    """The accelerator module; only for callers that checked :data:`NATIVE`."""
    if _native is None:
        raise RuntimeError("ledger.log.native is not built (check hashing.NATIVE first)")
    return _native
