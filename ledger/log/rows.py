"""The rows one append writes — its events and the Merkle nodes it completes — and their
insert, on one of two paths that store the same values (``tests/test_store_rows.py``).

From :data:`ARROW_FROM_ROWS` events, Arrow tables (the fast path for ingest-sized batches);
below it, plain lists handed to DuckDB as list parameters, so a small command (a retrace
of a few trials appends ~20 events) never imports pyarrow and numpy, which were a fifth of
its start-up (benchmarks/startup.py; measured: 1,000 rows 11 ms this way, ~3 ms through
Arrow, while the import is ~0.1 s).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ledger.log import connection, fast, merkle
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
    stream_versions = _stream_versions(new.streams, versions)
    # a large payload too: as a list parameter DuckDB converted it at ~4x its size more
    # (one 19 MB reconcile receipt: +249 MiB peak RSS, +158 MiB through Arrow; measured)
    if len(new) >= ARROW_FROM_ROWS or connection.is_large(new.payloads.nbytes):
        events, leaves = arrow_events(new, size, stream_versions, now)
        con.from_arrow(events).insert_into("events")  # by position, no view to register
    else:
        ids, types, svs, payloads = (
            new.event_ids,
            new.types,
            new.schema_versions,
            new.payloads.to_list(),
        )
        leaves = fast.py_envelope_leaf_hashes(
            size, new.streams, stream_versions, ids, types, svs, payloads
        )
        seqs = list(range(size, size + len(new)))
        columns = [seqs, new.streams, stream_versions, ids, types, svs, now, payloads]
        con.execute(_EVENTS_SQL, [*columns, fast.split(leaves)])
    runs = merkle.push_run(frontier, size, leaves)
    insert_nodes(con, [run for run in runs if run[0] >= NODE_MIN_LEVEL])


def insert_nodes(con: duckdb.DuckDBPyConnection, runs: list[tuple[int, int, bytes]]) -> None:
    """Insert the interior nodes :func:`merkle.push_run` completed (a batch completes one
    per 64 events from level 6: few enough for list parameters on either path)."""
    levels: list[int] = []
    idxs: list[int] = []
    last: list[int] = []
    for lv, first, hs in runs:
        span = range(first, first + len(hs) // 32)
        levels.extend([lv] * len(span))
        idxs.extend(span)
        last.extend(((i + 1) << lv) - 1 for i in span)
    if levels:
        hashes = fast.split(b"".join(hs for _, _, hs in runs))
        con.execute(_NODES_SQL, [levels, idxs, last, hashes])


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


def arrow_events(
    new: Batch, size: int, stream_versions: list[int], now: datetime
) -> tuple[pa.Table, bytes]:
    """The Arrow path's ``events`` table and its leaf hashes, concatenated."""
    import pyarrow as pa  # noqa: PLC0415 - the Arrow path only

    from schemas.envelope import ARROW_SCHEMA  # noqa: PLC0415

    n = len(new)
    payloads = new.payloads.arrow()
    columns = [
        pa.array(range(size, size + n), pa.uint64()),
        pa.array(new.streams, pa.string()),
        pa.array(stream_versions, pa.uint32()),
        pa.array(new.event_ids, pa.string()),
        pa.array(new.types, pa.string()),
        pa.array(new.schema_versions, pa.uint16()),
    ]
    leaves = fast.column_leaf_hashes(size, *columns, payloads)
    if len(leaves) != 32 * n:  # never: SHA-256 digests; keep the buffer honest
        raise AssertionError("bad math in arrow_events: not one 32-byte hash per row")
    hashes = pa.FixedSizeBinaryArray.from_buffers(pa.binary(32), n, [None, pa.py_buffer(leaves)])
    time = pa.repeat(pa.scalar(now, pa.timestamp("us", tz="UTC")), n)
    return pa.table([*columns, time, payloads, hashes], schema=ARROW_SCHEMA), leaves
