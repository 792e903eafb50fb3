"""The fast paths of the log: batch SHA-256, payload encoding and the append filters.

Each has a pure-Python reference (``py_*``; for the filters, looking every key up) and a
native path through the optional C accelerator, chosen in the operation's public function
from :data:`NATIVE`; the tests hold the two equal. Why, and how a filter is tied to one
``(size, frontier)`` state so a stale one is never trusted: docs/readme/store.md.
"""

from __future__ import annotations

import hashlib
import os
from array import array
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import accumulate
from types import ModuleType
from typing import TYPE_CHECKING, Any

import orjson

from schemas.canonical import canonical_json

if TYPE_CHECKING:  # pyarrow is imported where a path needs it (start-up, benchmarks/startup.py)
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


STORED_COLUMNS = (
    "seq",
    "stream",
    "stream_version",
    "event_id",
    "type",
    "schema_version",
    "payload",
)


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
    import pyarrow as pa  # noqa: PLC0415 - loaded by whoever built the column

    arr = _one(col).cast(pa.uint64())
    return memoryview(arr.buffers()[1])[arr.offset * 8 : (arr.offset + len(arr)) * 8]


def _one(col: pa.Array | pa.ChunkedArray) -> pa.Array:
    if not hasattr(col, "num_chunks"):  # an Array (pyarrow is not imported here)
        return col
    # one chunk is the usual case; combine_chunks would copy it even then
    return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()


def string_column(col: pa.Array | pa.ChunkedArray) -> tuple[memoryview, memoryview, int]:
    """(offsets, data, offset width) of a string or binary column, without copying: what
    the native functions take for a variable-width column."""
    import pyarrow as pa  # noqa: PLC0415 - loaded by whoever built the column

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
        raise RuntimeError("ledger.log.native is not built (check fast.NATIVE first)")
    return _native


def py_encode_payloads(objs: list[Any]) -> list[bytes]:
    """Each payload's canonical JSON, copied to its exact size (orjson leaves each result in
    a ~4 KiB allocation: ~40 MB per 10k-event batch otherwise). TypeError: not JSON."""
    return [bytes(memoryview(canonical_json(p))) for p in objs]


@dataclass(frozen=True, slots=True)
class Binary:
    """Byte strings laid out as an Arrow ``binary`` column: ``n + 1`` int32 offsets into one
    data buffer. Plain bytes, so a small append never imports pyarrow; :meth:`arrow` wraps
    the same buffers without a copy for the Arrow path."""

    offsets: bytes
    data: bytes

    @staticmethod
    def of(values: Sequence[bytes]) -> Binary:
        """OverflowError past 2 GiB of data, which int32 offsets cannot address."""
        return Binary(array("i", accumulate(map(len, values), initial=0)).tobytes(), b"".join(values))

    def __len__(self) -> int:
        return len(self.offsets) // 4 - 1

    @property
    def nbytes(self) -> int:
        return len(self.offsets) + len(self.data)

    def to_list(self) -> list[bytes]:
        at = memoryview(self.offsets).cast("i")
        data = self.data
        return [data[at[i] : at[i + 1]] for i in range(len(at) - 1)]

    def arrow(self) -> pa.BinaryArray:
        import pyarrow as pa  # noqa: PLC0415 - the Arrow path only

        buffers = [None, pa.py_buffer(self.offsets), pa.py_buffer(self.data)]
        return pa.BinaryArray.from_buffers(pa.binary(), len(self), buffers)


def encode_payloads(objs: list[Any]) -> tuple[Binary, list[int]] | None:
    """:func:`py_encode_payloads` as one :class:`Binary` column, and the indexes of the
    payloads holding a JSON ``null`` (where a NaN or Infinity may hide); None if one cannot
    be encoded.

    Natively, the whole list is encoded in one orjson call and split at its top-level
    commas: the same bytes per payload, without one small object per payload.
    """
    try:
        if _native is not None:
            split = _native.split_json_array(canonical_json(objs), len(objs))
            if split is not None:
                data, offsets, with_null = split
                return Binary(offsets, data), with_null
        payloads = py_encode_payloads(objs)
    except TypeError:  # orjson: a value JSON cannot carry
        return None
    with_null = [i for i, p in enumerate(payloads) if b"null" in p]
    return Binary.of(payloads), with_null


# --- the append filters (native only: without them append looks every key up) -------------

PROBES = 6  # k: with 16 bits per key, ~0.05% of absent keys answer "maybe"
BITS_PER_KEY = 16
MIN_BYTES = 1 << 17  # 128 KiB: room for 65,536 keys (a multiple of the 64-byte blocks)
MAX_BYTES = 1 << 24  # 16 MiB per filter (~8.4M keys at the designed rate)

State = tuple[int, bytes]  # (log size, frontier hashes concatenated)


def _bytes_for(keys: int) -> int:
    want = max(MIN_BYTES, keys * BITS_PER_KEY // 8)
    size = 1 << (want - 1).bit_length()
    return min(size, MAX_BYTES)


@dataclass
class Bloom:
    """A Bloom filter over strings (their UTF-8 bytes), sized for ``capacity`` keys."""

    capacity: int
    bits: bytearray = field(init=False)
    count: int = 0

    def __post_init__(self) -> None:
        self.bits = bytearray(_bytes_for(self.capacity))
        # what the bits hold at the designed rate (the minimum size holds more than asked)
        self.capacity = max(self.capacity, len(self.bits) * 8 // BITS_PER_KEY)

    @staticmethod
    def of(bits: bytearray, capacity: int, count: int) -> Bloom:
        """A filter holding ``bits`` (as :mod:`ledger.log.seen_file` kept them)."""
        bloom = Bloom.__new__(Bloom)
        bloom.capacity, bloom.bits, bloom.count = capacity, bits, count
        return bloom

    @property
    def full(self) -> bool:
        """More keys than it was sized for, and still room to grow."""
        return self.count > self.capacity and len(self.bits) < MAX_BYTES

    def add(self, keys: list[str]) -> None:
        native().bloom_add(self.bits, keys, PROBES)
        self.count += len(keys)

    def add_column(self, column: tuple[memoryview, memoryview, int], rows: int) -> None:
        native().bloom_add_column(self.bits, column, rows, PROBES)
        self.count += rows

    def maybe(self, keys: list[str]) -> list[str]:
        """The keys that may have been added (never misses one that was)."""
        return [keys[i] for i in native().bloom_maybe(self.bits, keys, PROBES)]


@dataclass
class Seen:
    """The ids and streams of a log at ``state``."""

    state: State
    ids: Bloom
    streams: Bloom

    @property
    def full(self) -> bool:
        return self.ids.full or self.streams.full

    @staticmethod
    def build(state: State, id_columns: Iterable[pa.Array], size: int, streams: pa.Array) -> Seen:
        """The filters of a log at ``state`` from its id column (in windows, so the build
        never holds it whole) and its distinct streams, sized for four times as many."""
        ids, names = Bloom(4 * size), Bloom(4 * len(streams))
        for col in id_columns:
            ids.add_column(string_column(col), len(col))
        names.add_column(string_column(streams), len(streams))
        return Seen(state, ids, names)

    def record(self, ids: list[str], streams: Iterable[str], state: State) -> None:
        """A batch committed: its new ids and streams are now in the log at ``state``."""
        self.ids.add(ids)
        self.streams.add(list(set(streams)))
        self.state = state
