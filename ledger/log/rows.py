"""The rows one append writes — its events and the Merkle nodes it completes — and their
insert, on one of two paths that store the same values (``tests/test_store_rows.py``).

From :data:`ARROW_FROM_ROWS` events, Arrow tables (the fast path for ingest-sized batches);
below it, plain lists handed to DuckDB as list parameters, so a small command (a retrace
of a few trials appends ~20 events) never imports pyarrow and numpy, which were a fifth of
its start-up (issue 17; measured: 1,000 rows 11 ms this way, ~3 ms through Arrow, while
the import is ~0.1 s).
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ledger.log import fast, merkle
from ledger.log.layout import NODE_MIN_LEVEL

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from ledger.log.batch import Batch

ARROW_FROM_ROWS = 1024

# Positional, in the DDL's column order (ledger.log.layout); unnests of one SELECT advance
# together, row i of every list forming row i (one vector: under 2,048 rows, in order).
_EVENTS_SQL = (
    "INSERT INTO events SELECT unnest($1::UBIGINT[]), unnest($2::VARCHAR[]), "
    "unnest($3::UINTEGER[]), unnest($4::VARCHAR[]), unnest($5::VARCHAR[]), "
    "unnest($6::USMALLINT[]), $7::TIMESTAMPTZ, unnest($8::BLOB[]), unnest($9::BLOB[])"
)
_NODES_SQL = (
    "INSERT INTO nodes SELECT unnest($1::UTINYINT[]), unnest($2::UBIGINT[]), "
    "unnest($3::UBIGINT[]), unnest($4::BLOB[])"
)


def insert_rows(
    con: duckdb.DuckDBPyConnection,
    new: Batch,
    size: int,
    frontier: list[bytes],
    versions: dict[str, int],
    now: datetime | None = None,
) -> None:
    """Insert the ``events`` rows of ``new`` appended at ``size`` (its streams at
    ``versions``) and the stored ``nodes`` rows it completes; ``frontier`` becomes the new
    one. ``now`` stamps the rows (default: the current time)."""
    now = datetime.now(UTC) if now is None else now
    if len(new) >= ARROW_FROM_ROWS:
        events, nodes = arrow_rows(new, size, frontier, versions, now)
        con.from_arrow(events).insert_into("events")  # by position, no view to register
        if nodes is not None:
            con.from_arrow(nodes).insert_into("nodes")
        return
    stream_versions = _stream_versions(new.streams, versions)
    payloads = new.payloads.to_list()
    leaves = fast.py_envelope_leaf_hashes(
        size, new.streams, stream_versions, new.event_ids, new.types, new.schema_versions,
        payloads,
    )  # fmt: skip
    seqs = list(range(size, size + len(new)))
    ids, types, svs = new.event_ids, new.types, new.schema_versions
    con.execute(
        _EVENTS_SQL,
        [seqs, new.streams, stream_versions, ids, types, svs, now, payloads, fast.split(leaves)],
    )
    nodes = _node_columns(_stored_runs(frontier, size, leaves))
    if nodes[0]:
        con.execute(_NODES_SQL, [*nodes[:3], fast.split(nodes[3])])


def _stream_versions(streams: list[str], versions: dict[str, int]) -> list[int]:
    """Each event's version in its stream, counting on from ``versions``."""
    next_version = dict(versions)
    out: list[int] = []
    push = out.append
    get = next_version.get
    for stream in streams:
        v = get(stream, -1) + 1
        next_version[stream] = v
        push(v)
    return out


def _stored_runs(frontier: list[bytes], size: int, leaves: bytes) -> list[tuple[int, int, bytes]]:
    """The interior nodes the leaves complete that the store keeps (``frontier`` becomes
    the new one)."""
    return [run for run in merkle.push_run(frontier, size, leaves) if run[0] >= NODE_MIN_LEVEL]


def _node_columns(
    runs: list[tuple[int, int, bytes]],
) -> tuple[list[int], list[int], list[int], bytes]:
    """``(level, idx, last_leaf, hashes concatenated)`` of the nodes in ``runs``."""
    levels: list[int] = []
    idxs: list[int] = []
    last: list[int] = []
    for lv, first, hs in runs:
        span = range(first, first + len(hs) // 32)
        levels.extend([lv] * len(span))
        idxs.extend(span)
        last.extend(((i + 1) << lv) - 1 for i in span)
    return levels, idxs, last, b"".join(hs for _, _, hs in runs)


def arrow_rows(
    new: Batch, size: int, frontier: list[bytes], versions: dict[str, int], now: datetime
) -> tuple[pa.Table, pa.Table | None]:
    """The Arrow path of :func:`insert_rows`: the ``events`` table and the ``nodes`` table
    (None if no node is completed)."""
    import pyarrow as pa  # noqa: PLC0415 - the Arrow path only

    from schemas.envelope import ARROW_SCHEMA  # noqa: PLC0415

    n = len(new)
    payloads = new.payloads.arrow()
    columns = [
        pa.array(range(size, size + n), pa.uint64()),
        pa.array(new.streams, pa.string()),
        pa.array(_stream_versions(new.streams, versions), pa.uint32()),
        pa.array(new.event_ids, pa.string()),
        pa.array(new.types, pa.string()),
        pa.array(new.schema_versions, pa.uint16()),
    ]
    leaves = fast.column_leaf_hashes(size, *columns, payloads)
    stored = _stored_runs(frontier, size, leaves)
    table = pa.table(
        [
            *columns,
            pa.repeat(pa.scalar(now, pa.timestamp("us", tz="UTC")), n),
            payloads,
            _hash_array(leaves),
        ],
        schema=ARROW_SCHEMA,
    )
    return table, node_table(stored) if stored else None


def _hash_array(hashes: bytes) -> pa.FixedSizeBinaryArray:
    """Concatenated 32-byte digests as one Arrow array over the same buffer (no copy)."""
    import pyarrow as pa  # noqa: PLC0415

    if len(hashes) % 32:  # never: SHA-256 digests; keep the buffer honest
        raise AssertionError("bad math in _hash_array: not a whole number of 32-byte hashes")
    return pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(32), len(hashes) // 32, [None, pa.py_buffer(hashes)]
    )


@functools.cache
def _node_schema() -> Any:
    import pyarrow as pa  # noqa: PLC0415

    return pa.schema(
        [
            pa.field("level", pa.uint8(), nullable=False),
            pa.field("idx", pa.uint64(), nullable=False),
            pa.field("last_leaf", pa.uint64(), nullable=False),
            pa.field("hash", pa.binary(32), nullable=False),
        ]
    )


def node_table(runs: list[tuple[int, int, bytes]]) -> pa.Table:
    """Arrow rows for the interior nodes :func:`merkle.push_run` completed."""
    import pyarrow as pa  # noqa: PLC0415

    levels, idxs, last, hashes = _node_columns(runs)
    return pa.table(
        [
            pa.array(levels, pa.uint8()),
            pa.array(idxs, pa.uint64()),
            pa.array(last, pa.uint64()),
            _hash_array(hashes),
        ],
        schema=_node_schema(),
    )
