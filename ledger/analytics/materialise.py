"""Kept views: the per-event rows the views fold, stored with the log position they reflect
and brought up to date on read (docs/readme/analytics.md § Kept views).

Every view groups, picks the latest of, or counts rows the log's events map to one by one:
a trial's registration and end, each grade's scalar fields, body and nested results, each
usage record. Parsing those out of every event's JSON is what a query over a long history
pays for. The views in :data:`KEPT` are such maps (each row depends on its own event
alone, and they read ``_ev`` or kept views only), so their rows over the first ``size``
events stay right once the log grows: bringing them up to date appends the rows of the
events after ``size`` (for the per-key sums of :data:`ADDED`, adds theirs), in one
transaction with the new position. What a later event can change (the latest
registration, a re-score, a replay's ``replay.completed``) is decided above them, at
query time, by the same SQL as before.

The rows live in ``<ledger>/projections/views.duckdb``: derived data, never evidence;
deleting the file costs one build. Before they are used, the file's position is checked
against the log: the same :data:`VERSION` of the kept views' SQL, a size no larger than
the log's, and the log's root at that size equal to the one recorded. Anything off, or
``full``, and the rows are built again from the whole log. A reader that cannot write the
file (a read-only directory, another reader bringing it up to date) uses it as it is when
it is current, and otherwise computes the views in memory as if no file existed.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb
import orjson

from ledger.analytics import views
from ledger.analytics.view_kit import sql_str
from ledger.errors import ProofError
from ledger.log import merkle
from ledger.log.layout import PROJECTIONS_DIR
from ledger.log.raw import read_stored_hashes

KEPT: tuple[str, ...] = (  # in creation order: a kept view reads _ev or one before it
    "_registered",
    "_ended",
    "_grade_rows",
    "_trace_rows",
    "_criteria_rows",
    "_accounting_rows",
    "_usage_registered",
    "_usage_judge",
    "_stream_counts",
)
# Kept views that are sums per key, not rows per event: the sums over the new events are
# added to the kept ones (a new key is inserted). Key, then the summed columns.
ADDED: dict[str, tuple[str, tuple[str, ...]]] = {
    "_stream_counts": ("stream", ("n_messages", "n_tool_calls")),
}
FILE = "views.duckdb"
ALIAS = "kept_views"  # the attached file's catalog name on a query connection
_FORMAT = "1"  # the file's own layout: the position table below


def _version() -> str:
    """Digest of the kept views' SQL: a release that changes one never reuses older rows."""
    h = hashlib.sha256(_FORMAT.encode())
    for name in ("_ev", *KEPT):
        h.update(f"\0{name}\0{views.BY_NAME[name].sql}".encode())
    return h.hexdigest()[:32]


VERSION = _version()

# DuckDB's "Could not set lock on file … Conflicting lock is held"; a bare "lock" would
# also match "block" in a checksum failure, and read a damaged store as a busy one.
_LOCK_ERROR = re.compile(r"\block\b|conflicting|already", re.IGNORECASE)


def is_lock_error(exc: duckdb.Error) -> bool:
    return _LOCK_ERROR.search(str(exc)) is not None


@dataclass(frozen=True)
class Kept:
    """What a read did with the kept rows, and the log position they reflect."""

    action: str  # built | extended | reused | in_memory
    size: int  # log size the rows reflect (in_memory: the log's size, computed afresh)
    root: str  # the log's root at that size, hex
    folded: int  # events whose rows this read appended
    reason: str = ""  # why built afresh, or why computed in memory

    @property
    def attached(self) -> bool:
        return self.action != "in_memory"


def replacements(kept: Kept | None) -> dict[str, str]:
    """The SQL each kept view reads instead of its own, for ``views.create_views``."""
    if kept is None or not kept.attached:
        return {}
    return {name: f'SELECT * FROM {ALIAS}."{name}"' for name in KEPT}


def reads_kept(con: duckdb.DuckDBPyConnection, statements: Sequence[str] | None) -> bool:
    """Whether ``statements`` may read a kept view (directly or through others): only then
    is a query worth bringing the kept rows up to date for. Unsure (None, or a statement
    DuckDB cannot serialise) counts as yes; either way the results are the same."""
    if statements is None:
        return True
    closure = _reads()
    for text in statements:
        names = _table_names(con, text)
        if names is None or any(KEPT_SET & closure.get(n, set()) for n in names):
            return True
    return False


KEPT_SET = frozenset(KEPT)


@functools.cache
def _reads() -> dict[str, frozenset[str]]:
    """Each view, and every view it reads through others (itself included). A view's SQL
    names the views it reads as words; a word that only looks like one (a CTE or a column
    of that name) can only make a query bring the kept rows up to date needlessly."""
    names = "|".join(re.escape(v.name) for v in views.VIEWS)
    word = re.compile(rf"(?<![\w.'\"])({names})(?![\w'\"])")
    out: dict[str, frozenset[str]] = {}
    for v in views.VIEWS:  # creation order: a view reads only views before it
        direct = {m.group(1) for m in word.finditer(v.sql)}
        out[v.name] = frozenset({v.name}).union(*(out.get(d, {d}) for d in direct))
    return out


def _table_names(con: duckdb.DuckDBPyConnection, text: str) -> set[str] | None:
    """The relation names a SELECT refers to, from DuckDB's own parse tree (no binding)."""
    try:
        tree = orjson.loads(con.execute("SELECT json_serialize_sql(?)", [text]).fetchall()[0][0])
    except (duckdb.Error, orjson.JSONDecodeError, TypeError):
        return None
    if not isinstance(tree, dict) or tree.get("error"):
        return None
    found: set[str] = set()
    todo: list[object] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            if node.get("type") == "BASE_TABLE" and isinstance(node.get("table_name"), str):
                found.add(node["table_name"].lower())
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return found


def bring_up_to_date(
    con: duckdb.DuckDBPyConnection, ledger_dir: Path, rel: str, *, full: bool = False
) -> Kept:
    """Attach the kept rows of the store attached as ``store`` (its envelope rows: ``rel``)
    read-only as :data:`ALIAS`, first bringing them up to date; or say why not."""
    try:
        size, root = _head(con, rel)
    except (duckdb.Error, ValueError) as exc:  # a store without a tree, or out of step with it
        return Kept("in_memory", 0, "", 0, f"no tree head to keep rows against: {exc}")
    path = ledger_dir / PROJECTIONS_DIR / FILE
    if not full and path.is_file():  # current: read as it is, never opened for writing
        current = _as_it_is(con, path, size, root, "")
        if current.attached:
            return current
    try:
        path.parent.mkdir(exist_ok=True)
        con.execute(f"ATTACH {sql_str(str(path))} AS {ALIAS}")
    except OSError as exc:
        return _as_it_is(con, path, size, root, f"cannot write {path.parent}: {exc}")
    except duckdb.Error as exc:
        if is_lock_error(exc):
            return _as_it_is(con, path, size, root, f"{path} is being written: {exc}")
        try:  # damaged (or not ours to write): derived data, built again next time
            path.unlink(missing_ok=True)
        except OSError as denied:  # a read-only directory: the file is used as it is, or not
            return _as_it_is(con, path, size, root, f"cannot write {path.parent}: {denied}")
        return Kept("in_memory", size, root, 0, f"{path} could not be read ({exc}); removed")
    try:
        kept = _update(con, rel, size, root, full)
    except duckdb.Error as exc:
        _detach(con)
        path.unlink(missing_ok=True)
        return Kept("in_memory", size, root, 0, f"{path} could not be updated ({exc}); removed")
    _detach(con)
    try:
        con.execute(f"ATTACH {sql_str(str(path))} AS {ALIAS} (READ_ONLY)")
    except duckdb.Error as exc:  # another reader took it for writing meanwhile
        return Kept("in_memory", size, root, 0, f"{path} could not be read back ({exc})")
    return kept


def _head(con: duckdb.DuckDBPyConnection, rel: str) -> tuple[int, str]:
    """The store's tree size and root, checked to cover exactly the rows the views read."""
    rows = con.execute("SELECT size, frontier FROM store.tree_state").fetchall()
    size, blob = rows[0] if rows else (0, b"")
    (events,) = con.execute(f"SELECT coalesce(max(seq) + 1, 0) FROM ({rel})").fetchall()[0]
    if int(size) != int(events):
        raise ValueError(f"the tree holds {size} events, the events table {events}")
    blob = bytes(blob)
    frontier = [blob[i : i + 32] for i in range(0, len(blob), 32)]
    return int(size), merkle.frontier_root(frontier).hex()


def _detach(con: duckdb.DuckDBPyConnection) -> None:
    with contextlib.suppress(duckdb.Error):
        con.execute(f"DETACH {ALIAS}")


def _position(con: duckdb.DuckDBPyConnection) -> tuple[str, int, str] | None:
    try:
        rows = con.execute(f"SELECT version, size, root FROM {ALIAS}._position").fetchall()
    except duckdb.Error:
        return None  # a new (or foreign) file: no position
    return (str(rows[0][0]), int(rows[0][1]), str(rows[0][2])) if rows else None


class _Hashes:
    """The store's stored hashes, read over the query connection (a merkle.HashReader)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, rel: str) -> None:
        self.con, self.rel = con, rel

    def read_hashes(self, indexes: Sequence[merkle.HashIndex]) -> list[bytes]:
        return read_stored_hashes(self.con, indexes, events=f"({self.rel})", nodes="store.nodes")


def stale(
    at: tuple[str, int, str] | None, con: duckdb.DuckDBPyConnection, rel: str, size: int
) -> str:
    """Why rows recorded at position ``at`` cannot be extended over this log ('' if they can)."""
    if at is None:
        return "no kept rows yet"
    version, at_size, at_root = at
    if version != VERSION:
        return "the kept views' code changed"
    if at_size > size:
        return f"kept at size {at_size}, beyond this log's {size}"
    try:
        at_size_root = merkle.tree_hash(at_size, _Hashes(con, rel)).hex()
    except ProofError as exc:
        return f"this log's root at size {at_size} cannot be read ({exc})"
    if at_size_root != at_root:
        return f"this log's root at size {at_size} is not the kept one"
    return ""


def _update(con: duckdb.DuckDBPyConnection, rel: str, size: int, root: str, full: bool) -> Kept:
    at = _position(con)
    why = "--full" if full else stale(at, con, rel, size)
    start = 0 if why or at is None else at[1]
    if start == size and not why:
        return Kept("reused", size, root, 0)
    _delta_views(con, rel, start, size)  # on the in-memory catalog: before the transaction
    con.execute("BEGIN TRANSACTION")  # one transaction writes one database: the kept file
    try:
        if why:
            for name in ("_position", *KEPT):
                con.execute(f'DROP TABLE IF EXISTS {ALIAS}."{name}"')
            con.execute(
                f"CREATE TABLE {ALIAS}._position (version VARCHAR, size UBIGINT, root VARCHAR)"
            )
        for name in KEPT:
            if why:
                order = "" if name in ADDED else " ORDER BY seq"
                con.execute(f'CREATE TABLE {ALIAS}."{name}" AS SELECT * FROM {name}{order}')
            elif name in ADDED:
                _add(con, name, *ADDED[name])
            else:
                con.execute(f'INSERT INTO {ALIAS}."{name}" SELECT * FROM {name} ORDER BY seq')
        con.execute(f"DELETE FROM {ALIAS}._position")
        con.execute(f"INSERT INTO {ALIAS}._position VALUES (?, ?, ?)", [VERSION, size, root])
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return Kept("built" if why else "extended", size, root, size - start, why)


def _add(con: duckdb.DuckDBPyConnection, name: str, key: str, sums: tuple[str, ...]) -> None:
    """Add the sums over the new events to the kept ones; insert the keys not kept yet."""
    kept = f'{ALIAS}."{name}"'
    add = ", ".join(f"{c} = k.{c} + d.{c}" for c in sums)
    con.execute(f"UPDATE {kept} AS k SET {add} FROM {name} AS d WHERE k.{key} = d.{key}")
    con.execute(
        f"INSERT INTO {kept} SELECT * FROM {name} WHERE {key} NOT IN (SELECT {key} FROM {kept})"
    )


def _delta_views(con: duckdb.DuckDBPyConnection, rel: str, start: int, size: int) -> None:
    """The kept views' own SQL over only events ``[start, size)`` (replaced afterwards by
    ``views.create_views``): their rows are what gets appended."""
    delta = f"SELECT * FROM ({rel}) WHERE seq >= {start} AND seq < {size}"
    con.execute(f"CREATE OR REPLACE VIEW _raw_events AS {delta}")
    for name in ("_ev", *KEPT):
        con.execute(f"CREATE OR REPLACE VIEW {name} AS {views.BY_NAME[name].sql}")


def _as_it_is(con: duckdb.DuckDBPyConnection, path: Path, size: int, root: str, why: str) -> Kept:
    """Rows this reader cannot update: used read-only when they are exactly current."""
    if not path.is_file():
        return Kept("in_memory", size, root, 0, why)
    try:
        con.execute(f"ATTACH {sql_str(str(path))} AS {ALIAS} (READ_ONLY)")
    except duckdb.Error as exc:
        return Kept("in_memory", size, root, 0, f"{why}; {exc}".strip("; "))
    at = _position(con)
    if at == (VERSION, size, root):
        return Kept("reused", size, root, 0)
    _detach(con)
    return Kept("in_memory", size, root, 0, f"{why}; the kept rows are not current")
