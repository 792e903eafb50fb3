"""The embedded event store: one DuckDB file inside the ledger directory (docs/readme/store.md;
the directory is :mod:`ledger.log.layout`, connecting :mod:`ledger.log.connection`).

It keeps guarantees 1-5 of docs/readme/store.md § Guarantees (each pinned by ``tests/store_contract.py``): one
``append`` is one durable DuckDB transaction, ``seq`` is assigned under the single writer,
``expected_version`` is checked against the stream as it stood before the batch, and
``event_id`` (content-derived when not given, :func:`ledger.log.batch.derive_event_id`)
is the idempotency key. The Merkle frontier (O(log n) hashes) lives in the ``tree_state``
row and each interior node from level :data:`NODE_MIN_LEVEL` up is stored once, so appends
never re-read history; a root or proof reads O(log n) stored nodes plus, per lower node,
at most ``2 ** (NODE_MIN_LEVEL - 1)`` leaf hashes (one batched read).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import duckdb

from ledger.defaults import DEFAULT_BUSY_TIMEOUT, DEFAULT_MAX_ROWS, DEFAULT_SEGMENT_BYTES
from ledger.errors import LedgerError, LedgerExists, LedgerNotFound, TamperDetected
from ledger.log import connection, fast, layout, merkle, seen_file
from ledger.log import rows as log_rows
from ledger.log.batch import (
    AppendResult,
    Batch,
    as_batch,
    check_expected,
    dedupe,
    joined_result,
    prepare_part,
)
from ledger.log.connection import first_row, locked, transaction
from ledger.log.layout import DB_FILE, needs_upgrade
from ledger.log.raw import RawReads, Sealing, read_filters, read_stored_hashes, window_bounds
from schemas.envelope import NewEvent, StoredEvent, stored_events, stored_rows

if TYPE_CHECKING:
    import pyarrow as pa

    from ledger.log.note import Checkpoint, Signer
    from ledger.log.segments import SealPlan, SegmentInfo

# The id and stream filters of each ledger file this process appended to (ledger.log.fast),
# used and replaced only under that file's lock; each knows the log state it describes.
_SEEN: dict[Path, fast.Seen] = {}


# --- opening --------------------------------------------------------------------------


def init_ledger(path: str | Path, *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> Ledger:
    """Create the ledger directory and its store; refuse if one exists there already."""
    root = Path(path)
    if (root / DB_FILE).exists():
        raise LedgerExists(root)
    root.mkdir(parents=True, exist_ok=True)
    (root / layout.CHECKPOINT_DIR).mkdir(exist_ok=True)
    con = connection.connect(root / DB_FILE, busy_timeout)
    try:
        with transaction(con):
            con.execute(layout.DDL)
            con.execute("INSERT INTO tree_state VALUES (0, ''::BLOB)")
            origin = f"vledger.local/{hashlib.sha256(str(root.resolve()).encode() + _nonce()).hexdigest()[:16]}"
            con.executemany(
                "INSERT INTO meta VALUES (?, ?)",
                [
                    ["format_version", layout.FORMAT_VERSION],
                    ["origin", origin],
                    ["sealed_upto", "0"],
                ],
            )
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
    lg = Ledger(root, connection.connect(root / DB_FILE, busy_timeout, read_only=read_only))
    try:
        if needs_upgrade(root, lg.meta("format_version"), read_only=read_only):
            lg._upgrade_from_1()
        if recover and not read_only:
            lg._recover()
    except duckdb.Error as exc:  # a damaged store can open and then fail its first query
        lg.close()
        raise TamperDetected(
            str(root / DB_FILE), f"cannot be read ({exc}); the file is damaged"
        ) from None
    except BaseException:
        lg.close()
        raise
    return lg


def _nonce() -> bytes:
    return random.SystemRandom().randbytes(16)


# --- the ledger -------------------------------------------------------------------------


class Ledger(RawReads, merkle.TreeReads):
    """An open ledger. Use as a context manager, or call :meth:`close`.

    Thread-safe: appends and the small queries share one connection under a per-file
    re-entrant lock; ``read``/``read_arrow`` stream through their own cursor and only ever
    see committed batches.
    """

    def __init__(self, path: Path, con: duckdb.DuckDBPyConnection) -> None:
        self.path = path
        self._con = con
        self._db_key = (path / DB_FILE).resolve()
        self._committing: tuple[fast.Seen, Batch, tuple[int, bytes]] | None = None
        self._appended = False  # has this object appended before (see _seen_at)
        wal = path / f"{DB_FILE}.wal"
        # a WAL left at close is small (connection.KEEP_WAL); a larger one is a crash's
        self._close_at_cap = connection.wal_bytes(wal) > connection.KEEP_WAL
        self._checkpoints = connection.Checkpoints(wal)
        self._lock = connection.process_lock(self._db_key)
        connection.OPENED[:] = [path / DB_FILE]  # only the latest is ever named

    def close(self) -> None:
        with self._lock:  # the filters are kept beside the log for whoever appends next
            if (seen := _SEEN.pop(self._db_key, None)) is not None and self._appended:
                seen_file.keep(self, seen)  # committed filters; a reader writes nothing
        connection.close_steady(self._con, self._checkpoints.wal, at_cap=self._close_at_cap)

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @locked
    def meta(self, key: str) -> str:
        row = first_row(self._con.execute("SELECT value FROM meta WHERE key = ?", [key]))
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

    @locked
    def stream_version(self, stream: str) -> int | None:
        """Version (0-based) of the stream's last event, or ``None`` if it has none."""
        row = first_row(
            self._con.execute("SELECT max(stream_version) FROM events WHERE stream = ?", [stream])
        )
        return None if row is None or row[0] is None else int(row[0])

    @locked
    def streams(self, prefix: str | None = None, by_first_seq: bool = False, to_seq: int | None
                = None, from_seq: int | None = None) -> list[str]:  # fmt: skip
        """Stream names (of ``prefix``, in the seq range): sorted, or as a pass meets them."""
        where = {"starts_with(stream, ?)": prefix, "seq <= ?": to_seq, "seq >= ?": from_seq}
        where = {k: v for k, v in where.items() if v is not None}
        sql = " AND ".join(["SELECT stream FROM events WHERE true", *where])
        sql += " GROUP BY stream ORDER BY " + ("min(seq)" if by_first_seq else "stream")
        return [r[0] for r in self._con.execute(sql, list(where.values())).fetchall()]

    @locked
    def tree_state(self) -> tuple[int, list[bytes]]:
        """The stored ``(size, frontier)`` as is (verify compares it with the rebuilt tree)."""
        size, blob = first_row(self._con.execute("SELECT size, frontier FROM tree_state"))
        blob = bytes(blob)
        return int(size), [blob[i : i + 32] for i in range(0, len(blob), 32)]

    def _head(self) -> tuple[int, bytes]:
        size, frontier = self._tree_state()
        return size, merkle.frontier_root(frontier)

    def _tree_state(self) -> tuple[int, list[bytes]]:
        size, frontier = self.tree_state()
        if len(frontier) != len(merkle.frontier_levels(size)):
            raise LedgerError(
                f"tree_state of {str(self.path)!r} holds {len(frontier)} frontier hashes for "
                f"size {size}; run `vledger verify`"
            )
        return size, frontier

    def _recover(self) -> None:
        """Finish a seal a crash interrupted (DuckDB itself replays its WAL on connect)."""
        if self.sealed_upto() == 0:
            return
        from ledger.log import segments  # pyarrow.parquet only when a seal is due

        if segments.load_manifest(self.path).sealed_upto < self.sealed_upto():
            segments.seal(Sealing(self), DEFAULT_MAX_ROWS)

    def seal(self, max_rows: int | None = None, max_bytes: int | None = None) -> list[SegmentInfo]:
        """Seal unsealed events into Parquet segments (see :mod:`ledger.log.segments`)."""
        from ledger.log import segments

        return segments.seal(
            Sealing(self),
            max_rows or DEFAULT_MAX_ROWS,
            max_bytes=max_bytes or DEFAULT_SEGMENT_BYTES,
        )

    def finish_seal(self, apply: bool = False) -> tuple[SealPlan, list[SegmentInfo]]:
        """What finishing an interrupted seal takes (``vledger repair``); with ``apply``,
        finish it — only a seal the store recorded, and never over a disagreeing file."""
        from ledger.log import segments

        plan = segments.plan_seal(Sealing(self))
        fix = apply and plan.interrupted and not plan.conflicts
        return plan, segments.apply_seal(Sealing(self), plan) if fix else []

    def append(self, events: Iterable[NewEvent] | Batch) -> AppendResult:
        """Append ``events`` as one atomic, durable batch (see the module docstring); a
        :class:`Batch` is taken as already prepared (:func:`~ledger.log.batch.as_batch`)."""
        prepared = as_batch(events)
        if not len(prepared):
            return AppendResult(None, None, 0, (), ())
        with self._lock:
            self._committing = None
            try:
                large = connection.is_large(prepared.payloads.nbytes)
                self._close_at_cap |= large
                with connection.append_pool(self._con, prepared.payloads.nbytes):
                    with transaction(self._con):
                        result = self._append_in_tx(prepared)
                    self._checkpoints.committed(self._con, result.appended, large=large)
                if self._committing is not None:  # only what is durable enters the filter
                    seen, new, state = self._committing
                    try:
                        seen.record(new.event_ids, new.streams, state)
                    except Exception:  # the batch is committed: drop the filter, not the result
                        _SEEN.pop(self._db_key, None)
            except duckdb.Error as exc:
                raise connection.append_error(self.path, exc) from exc
            finally:
                self._appended = True
        return result

    def append_parts(self, parts: Iterable[Iterable[NewEvent] | Batch]) -> AppendResult:
        """:meth:`append` of the events of every part, in order, as ONE atomic batch that
        is prepared and inserted a part at a time: memory holds one part, not the batch
        (retrace's replay of a whole corpus). The rows are those one ``append`` writes —
        one timestamp, same seqs, ids and Merkle nodes; a refused part rolls back all."""
        results: list[tuple[int, AppendResult]] = []
        offset = 0
        before: dict[str, int | None] = {}
        with self._lock:
            self._committing = None
            try:
                large = False
                with connection.append_pool(self._con, 0), connection.one_thread(self._con):
                    with transaction(self._con):
                        now = datetime.now(UTC)
                        seen = None
                        for part in _under_cap(self._con, parts):
                            prepared = prepare_part(part, offset)
                            if len(prepared):
                                connection.size_pool_for(self._con, prepared.payloads.nbytes)
                                large |= connection.is_large(prepared.payloads.nbytes)
                                self._close_at_cap |= large
                                size, frontier = self._tree_state()
                                if (
                                    fast.NATIVE
                                    and (seen is None or seen.full)
                                    and size >= log_rows.ARROW_FROM_ROWS
                                ):
                                    # its own filters (never _SEEN), earlier parts in: a part
                                    # scans only for ids they may hold, not every part (O(n²));
                                    # a small log is scanned (its filters would load pyarrow)
                                    seen = seen_file.filters(self, size, frontier)
                                done = self._append_in_tx(prepared, now, before, seen)
                                results.append((offset, done))
                            offset += len(prepared)
                        if not large:  # the commit's checkpoint caches within the steady pool
                            connection.size_pool_for(self._con, 0)
                    appended = sum(done.appended for _, done in results)
                    self._checkpoints.committed(self._con, appended, large=large)
                _SEEN.pop(self._db_key, None)  # the batch's own filters are kept instead
                if seen is not None and appended:
                    seen_file.keep(self, seen)
            except duckdb.Error as exc:
                raise connection.append_error(self.path, exc) from exc
            finally:
                self._appended |= offset > 0  # no parts (an ingest with nothing new): none
        return joined_result(results)

    def _append_in_tx(
        self, batch: Batch, now: datetime | None = None, before: dict | None = None,
        parts_seen: fast.Seen | None = None,
    ) -> AppendResult:  # fmt: skip
        """Insert ``batch`` in the open transaction. ``before``: it is a part of a larger
        batch (append_parts), and this holds each stream's version before that batch, which
        is what an expected_version is checked against; the committed filters are not used,
        only ``parts_seen`` (append_parts' own), which takes this part's ids in turn."""
        ids = batch.event_ids
        unique = list(set(ids))
        size, frontier = self._tree_state()
        seen = self._seen_at(size, frontier, batch) if before is None else parts_seen
        # only ids the log may hold are looked up (order is irrelevant to the IN lookup)
        maybe = unique if seen is None else seen.ids.maybe(unique)
        stored = self._stored_by_id(maybe) if maybe else {}
        if not stored and len(unique) == len(ids):  # the common case: all new
            new, seqs, dups = batch, range(size, size + len(batch)), ()
        else:
            rows, seqs, dups = dedupe(batch.rows(), stored, size)
            new = Batch.of(rows)
        n = len(new)
        if n:
            streams = sorted(set(new.streams))
            maybe = streams if seen is None else seen.streams.maybe(streams)
            versions = self._versions_of(maybe) if maybe else {}
            held: dict[str, int | None] = versions  # type: ignore[assignment]
            if before is not None:  # a stream's first part records its version before
                held = {t: before.setdefault(t, versions.get(t)) for t in streams}
            if set(new.expected) != {"any"}:  # "any" always holds: only the others are checked
                pairs = zip(new.streams, new.expected, strict=True)
                for stream, expected in [(s, e) for s, e in pairs if e != "any"]:
                    check_expected(stream, expected, held.get(stream))
            self._refuse_sealed_trials([s for s in versions if s.startswith(layout.TRIAL_PREFIX)])
            self._insert(new, size, frontier, versions, now)  # frontier is now the new one
            if seen is not None and before is not None:  # the transaction's own filters
                seen.record(new.event_ids, new.streams, (size + n, b"".join(frontier)))
            elif seen is not None:
                self._committing = (seen, new, (size + n, b"".join(frontier)))
            if before is None or type(seqs) is not range:  # a part keeps its range (joined_result)
                seqs = tuple(seqs)
            return AppendResult(size, size + n - 1, n, tuple(dups), seqs)
        return AppendResult(None, None, 0, tuple(dups), tuple(seqs))

    def _seen_at(self, size: int, frontier: list[bytes], batch: Batch) -> fast.Seen | None:
        """The log's id and stream filters (:mod:`ledger.log.fast`) valid for this state: the
        process's, else those kept beside the log, else rebuilt from the table once this
        object appends a second time. None without the native accelerator."""
        if not fast.NATIVE:
            return None
        state = (size, b"".join(frontier))
        current = _SEEN.get(self._db_key)
        if current is not None and current.state == state and not current.full:
            return current
        if not self._appended:  # a one-off append (the CLI's): kept filters or lookups;
            # a build scans every id, which only repeated appends earn back (docs/readme/store.md)
            if (current := seen_file.kept(self, size, frontier)) is not None:
                _SEEN[self._db_key] = current
            return current
        # the scan of every id caches within the steady pool, not the cap a large batch
        # gets (a 19 MB receipt after an ingest into 2.8M events: +31 MiB peak, measured)
        connection.size_pool_for(self._con, 0)
        try:
            _SEEN[self._db_key] = current = seen_file.filters(self, size, frontier)
        finally:
            connection.size_pool_for(self._con, batch.payloads.nbytes)
        return current

    def _insert(
        self, new: Batch, size: int, frontier: list[bytes], versions: dict, now: datetime | None
    ) -> None:
        log_rows.insert_rows(self._con, new, size, frontier, versions, now)  # frontier: the new one
        self._con.execute(
            "UPDATE tree_state SET size = ?, frontier = ?", [size + len(new), b"".join(frontier)]
        )

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
        import pyarrow as pa  # noqa: PLC0415 - only Arrow's callers pay for it

        from schemas.envelope import ARROW_SCHEMA  # noqa: PLC0415

        where = read_filters(stream, type, types, stream_prefix)
        batches = [
            b
            for lo, top in window_bounds(self.size(), from_seq, to_seq)
            for b in self.read_window(lo, top, where).cast(ARROW_SCHEMA).to_batches()
        ]
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
        """Stream the matching events in seq order (``to_seq`` inclusive). A window spanning
        fewer than ARROW_FROM_ROWS seqs is fetched as tuples (:mod:`ledger.log.rows`: no
        pyarrow for a small log); a larger one as Arrow, decoded column by column."""
        where = read_filters(stream, type, types, stream_prefix)
        for lo, top in window_bounds(self.size(), from_seq, to_seq):
            if top - lo + 1 < log_rows.ARROW_FROM_ROWS:
                yield from stored_rows(self.read_window(lo, top, where, tuples=True))
            else:
                table = self.read_window(lo, top, where)
                if table.num_rows:
                    yield from stored_events(table)

    # Merkle tree

    @locked
    def read_hashes(self, indexes: Sequence[merkle.HashIndex]) -> list[bytes]:
        """:class:`merkle.HashReader` over this store (:func:`read_stored_hashes`)."""
        return read_stored_hashes(self._con, indexes)

    def checkpoints(self) -> list[tuple[Path, str]]:
        """Stored checkpoint notes ``(file, note)``, oldest (smallest size) first."""
        return _checkpoints().stored_notes(self.path)

    def latest_checkpoint(self) -> Checkpoint | None:
        """The body of the largest stored checkpoint (its signatures are not checked here)."""
        return _checkpoints().latest(self.checkpoints())

    def checkpoint(self, signer: Signer) -> str:
        """Sign, store and return a C2SP tlog-checkpoint note of the current tree (the rules:
        :mod:`ledger.log.checkpoints`)."""
        with self._lock:
            size, frontier = self._tree_state()
            notes = _checkpoints()
            cp = notes.Checkpoint(self.origin, size, merkle.frontier_root(frontier))
            signed = notes.signed_checkpoint(cp, signer, self.checkpoints(), self)
            target = layout.checkpoint_file(self.path, size)
            if not target.exists() or target.read_text(encoding="utf-8") != signed:
                target.parent.mkdir(exist_ok=True)
                layout.write_atomic(target, signed.encode("utf-8"))
            return signed


def _checkpoints() -> ModuleType:
    """The checkpoint module, imported on first use: it loads the Ed25519 stack
    (cryptography), which appending and reading never need (start-up, benchmarks/startup.py)."""
    from ledger.log import checkpoints  # noqa: PLC0415

    return checkpoints


def _under_cap(con: Any, parts: Iterable[Any]) -> Iterator[Any]:
    """``parts``, each produced with DuckDB's pool at the whole cap: producing one may read
    the log (ingest compares the streams it holds once every input is read), which the
    steady pool an insert of small rows leaves could not hold beside the uncommitted batch
    (a re-read 100,000-trial corpus ran out of memory there)."""
    it = iter(parts)
    while True:
        connection.restore_cap(con)
        part = next(it, _END)
        if part is _END:
            return
        yield part


_END = object()
