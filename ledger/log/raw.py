"""Queries that check nothing: rows exactly as stored (tampered or not) for ``verify`` and
sealing, the lookups ``append`` makes, and the marks opening and sealing write.

:class:`RawReads` is that part of :class:`ledger.log.store.Ledger`; :func:`verify_windows`
streams the whole log to verify in seq windows fetched ahead on worker threads.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import duckdb

from ledger.errors import ProofError, StreamSealed
from ledger.log import connection, fast, merkle
from ledger.log.connection import first_row, locked, transaction
from ledger.log.layout import FORMAT_VERSION, NODE_MIN_LEVEL, READ_WINDOW, TRIAL_PREFIX

if TYPE_CHECKING:
    import pyarrow as pa

NODE_WINDOW_SQL = (
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
COLUMNS_SQL = (
    "SELECT seq, stream, stream_version, event_id, type, schema_version, payload, leaf_hash "
    "FROM events WHERE seq BETWEEN $1 AND $2"
)


def verify_windows(
    lg: RawReads,
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
    :func:`ledger.log.fast.stored_leaf_hashes` takes them (the native accelerator builds the
    entries itself, cheaper than SQL). ``nodes`` is :meth:`RawReads.stored_node_table` for
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
            entries = cur.sql(COLUMNS_SQL, params=[lo, hi]).to_arrow_table()
        else:
            entries = cur.sql(ENTRY_SQL, params=[JSON_ESCAPED_RE, lo, hi]).to_arrow_table()
        nodes = cur.sql(NODE_WINDOW_SQL, params=[lo, hi]).to_arrow_table()
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


# stored_rows' form (schemas.envelope): the table's columns, the time as an int
TUPLE_COLUMNS = (
    "seq, stream, stream_version, event_id, type, schema_version, epoch_us(recorded_at), "
    "payload, leaf_hash"
)


def read_filters(
    stream: str | None, type: str | None, types: Sequence[str] | None, prefix: str | None
) -> list[tuple[str, Any]]:
    """The SQL condition and parameter of each filter a read was given."""
    conditions = [
        ("stream = ?", stream),
        ("starts_with(stream, ?)", prefix),
        ("type = ?", type),
        ("type IN (SELECT unnest(?::VARCHAR[]))", None if types is None else list(types)),
    ]
    return [(sql, value) for sql, value in conditions if value is not None]


def window_bounds(size: int, from_seq: int | None, to_seq: int | None) -> Iterator[tuple[int, int]]:
    """A read's seq windows (both ends inclusive): a large log is never sorted or held in
    memory at once."""
    lo = max(from_seq or 0, 0)
    hi = size - 1 if to_seq is None else min(to_seq, size - 1)
    while lo <= hi:
        top = min(lo + READ_WINDOW - 1, hi)
        yield lo, top
        lo = top + 1


class RawReads:
    """Unchecked reads of a store's tables (mixed into ``Ledger``, which sets these)."""

    _con: duckdb.DuckDBPyConnection
    _lock: threading.RLock

    def read_window(
        self, lo: int, top: int, where: list[tuple[str, Any]], *, tuples: bool = False
    ) -> Any:
        """The rows with ``lo <= seq <= top`` matching ``where`` (:func:`read_filters`), in
        seq order, on their own cursor: an Arrow table, or :data:`TUPLE_COLUMNS` tuples."""
        sql = (
            f"SELECT {TUPLE_COLUMNS if tuples else '*'} FROM events WHERE seq BETWEEN ? AND ?"
            + "".join(f" AND {sql}" for sql, _ in where)
            + " ORDER BY seq"
        )
        cur = self._con.cursor()
        try:
            params = [lo, top, *(value for _, value in where)]
            if tuples:  # a window too small to fill the pool: nothing to trim
                return cur.execute(sql, params).fetchall()
            table = cur.sql(sql, params=params).to_arrow_table()
            connection.trim_buffer_pool(cur)  # the window's blocks will not be read again
            return table
        finally:
            cur.close()

    @locked
    def max_stored_seq(self) -> int | None:
        row = first_row(self._con.execute("SELECT max(seq) FROM events"))
        return None if row is None or row[0] is None else int(row[0])

    @locked
    def raw_rows(self, lo: int, hi: int, *, ordered: bool = True) -> pa.Table:
        """Stored rows with ``lo <= seq <= hi``, without any checking.

        ``ordered=False`` skips the sort and returns storage order (= seq order unless the
        file was tampered with; verify checks and sorts itself).
        """
        order = " ORDER BY seq" if ordered else ""
        return self._con.sql(
            "SELECT * FROM events WHERE seq BETWEEN ? AND ?" + order, params=[lo, hi]
        ).to_arrow_table()

    @locked
    def stored_nodes(self, first_leaf: int, last_leaf: int) -> list[tuple[int, int, bytes]]:
        """Stored interior nodes completed by leaves in ``[first_leaf, last_leaf]``."""
        rows = self._con.execute(
            "SELECT level, idx, hash FROM nodes WHERE last_leaf BETWEEN ? AND ? "
            "ORDER BY last_leaf, level",
            [first_leaf, last_leaf],
        ).fetchall()
        return [(int(lv), int(i), bytes(h)) for lv, i, h in rows]

    @locked
    def stored_node_table(self, first_leaf: int, last_leaf: int) -> pa.Table:
        """Stored nodes completed by leaves in ``[first_leaf, last_leaf]``: columns
        ``level, idx, hash`` ordered by level then idx (verify's fast comparison)."""
        return self._con.sql(NODE_WINDOW_SQL, params=[first_leaf, last_leaf]).to_arrow_table()

    def first_version_break(self) -> tuple[int, str, int, int] | None:
        """First ``(seq, stream, stored version, expected version)`` out of 0, 1, 2… order.

        Runs on its own cursor (one SQL window query over the whole table), so verify can
        run it alongside its scan.
        """
        cur = self._con.cursor()
        try:
            row = first_row(
                cur.execute(
                    "SELECT seq, stream, stream_version, rn FROM (SELECT seq, stream, "
                    "stream_version, row_number() OVER (PARTITION BY stream ORDER BY seq) - 1 "
                    "AS rn FROM events) WHERE rn != stream_version ORDER BY seq LIMIT 1"
                )
            )
        finally:
            cur.close()
        return None if row is None else (int(row[0]), row[1], int(row[2]), int(row[3]))

    @locked
    def count_nodes_from(self, first_leaf: int) -> int:
        row = first_row(
            self._con.execute("SELECT count(*) FROM nodes WHERE last_leaf >= ?", [first_leaf])
        )
        return int(row[0]) if row else 0

    # sealing

    @locked
    def sealed_upto(self) -> int:
        """Events with seq below this are (being) sealed into segments."""
        row = first_row(self._con.execute("SELECT value FROM meta WHERE key = 'sealed_upto'"))
        return int(row[0]) if row else 0

    def _set_sealed_upto(self, n: int) -> None:
        """Record the new sealing boundary (before the segment files are written)."""
        with self._lock, transaction(self._con):
            self._con.execute("DELETE FROM meta WHERE key = 'sealed_upto'")
            self._con.execute("INSERT INTO meta VALUES ('sealed_upto', ?)", [str(n)])

    @locked
    def trial_spans(self, start: int, end: int) -> list[tuple[int, int]]:
        """``(min_seq, max_seq)`` of each trial stream's events within ``[start, end)``."""
        rows = self._con.execute(
            "SELECT min(seq), max(seq) FROM events WHERE seq >= ? AND seq < ? "
            "AND starts_with(stream, ?) GROUP BY stream",
            [start, end, TRIAL_PREFIX],
        ).fetchall()
        return [(int(a), int(b)) for a, b in rows]

    @locked
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

    # lookups append makes, and the marks opening and sealing write

    def _upgrade_from_1(self) -> None:
        """Format 1 stored every interior node; drop those below NODE_MIN_LEVEL (each is a
        function of leaf hashes that stay, so nothing is lost) and mark the ledger 2."""
        with self._lock, transaction(self._con):
            self._con.execute("DELETE FROM nodes WHERE level < ?", [NODE_MIN_LEVEL])
            self._con.execute(
                "UPDATE meta SET value = ? WHERE key = 'format_version'", [FORMAT_VERSION]
            )

    def _refuse_sealed_trials(self, existing_trials: list[str]) -> None:
        """A trial stream already in a segment takes no more events (trials never split)."""
        if not existing_trials:
            return
        sealed = self.sealed_upto()
        if sealed == 0:
            return
        row = first_row(
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

    def _build_seen(self, size: int, frontier: list[bytes]) -> fast.Seen:
        """The filters of the table as this connection sees it, at ``(size, frontier)``."""
        return fast.Seen.build(
            (size, b"".join(frontier)), self._ids_from(0, size), size, self._streams_from(0)
        )

    def _ids_from(self, lo: int, size: int) -> Iterator[pa.Array]:
        """The event ids of seqs ``lo`` .. ``size - 1``, in seq windows (never the whole
        column at once)."""
        sql = "SELECT event_id FROM events WHERE seq BETWEEN ? AND ?"
        for start in range(lo, size, READ_WINDOW):
            top = min(start + READ_WINDOW, size) - 1
            yield self._con.sql(sql, params=[start, top]).to_arrow_table().column(0)

    def _streams_from(self, lo: int) -> pa.Array:
        """The distinct streams of the events from seq ``lo`` on."""
        sql = "SELECT DISTINCT stream FROM events WHERE seq >= ?"
        return self._con.sql(sql, params=[lo]).to_arrow_table().column(0)

    def _versions_of(self, streams: list[str]) -> dict[str, int]:
        rows = self._con.execute(
            "SELECT stream, max(stream_version) FROM events "
            "WHERE stream IN (SELECT unnest($1::VARCHAR[])) GROUP BY stream",
            [streams],
        ).fetchall()
        return {r[0]: int(r[1]) for r in rows}


class Sealing:
    """The on-disk store as sealing sees it (:class:`ledger.log.protocol.Sealable`): its
    public reads, plus the two operations only sealing performs — sizing rows and recording
    the sealing boundary — which the store keeps off its public surface (nothing else may
    move that boundary; ``tests/store_contract.py`` reviews every public store method)."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.path = store.path

    def size(self) -> int:
        return int(self._store.size())

    def root(self, size: int | None = None) -> bytes:
        return bytes(self._store.root(size))

    def sealed_upto(self) -> int:
        return int(self._store.sealed_upto())

    def trial_spans(self, start: int, end: int) -> list[tuple[int, int]]:
        return list(self._store.trial_spans(start, end))

    def raw_rows(self, lo: int, hi: int, *, ordered: bool = True) -> Any:
        return self._store.raw_rows(lo, hi, ordered=ordered)

    def row_sizes(self, start: int, end: int) -> list[int]:
        return list(self._store._row_sizes(start, end))  # noqa: SLF001 - this is its seam

    def record_sealed_upto(self, n: int) -> None:
        self._store._set_sealed_upto(n)  # noqa: SLF001 - this is its seam


def read_stored_hashes(
    con: duckdb.DuckDBPyConnection,
    indexes: Sequence[merkle.HashIndex],
    events: str = "events",
    nodes: str = "nodes",
) -> list[bytes]:
    """:class:`merkle.HashReader` over a store's tables on ``con``: leaves from ``events``
    (a table or a relation with ``seq, leaf_hash``), nodes from level
    :data:`NODE_MIN_LEVEL` up from ``nodes``, and lower nodes hashed up from their (at most
    ``2 ** (NODE_MIN_LEVEL - 1)``) leaves. Also read by the analytics views, over a store
    attached read-only."""
    node_keys = sorted({(lv, i) for lv, i in indexes if lv >= NODE_MIN_LEVEL})
    low = sorted({(lv, i) for lv, i in indexes if 0 < lv < NODE_MIN_LEVEL})
    leaf_seqs = sorted(
        {i for lv, i in indexes if lv == 0}
        | {s for lv, i in low for s in range(i << lv, (i + 1) << lv)}
    )
    found: dict[merkle.HashIndex, bytes] = {}
    if leaf_seqs:
        rows = con.execute(
            f"SELECT seq, leaf_hash FROM {events} WHERE seq IN (SELECT unnest($1::UBIGINT[]))",
            [leaf_seqs],
        ).fetchall()
        found.update({(0, int(s)): bytes(h) for s, h in rows})
    if node_keys:
        rows = con.execute(
            f"SELECT level, idx, hash FROM {nodes} WHERE last_leaf IN "
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
