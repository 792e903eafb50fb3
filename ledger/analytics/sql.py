"""Read-only SQL over a ledger: the documented views on an in-memory DuckDB.

The store is attached READ_ONLY (or, while a writer holds it, its sealed segments are
read), every statement is classified as a read by DuckDB's own parser before anything
runs, and the connection is sandboxed to the views' sources (docs/readme/analytics.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import orjson
import pyarrow as pa

from ledger.analytics import materialise, views
from ledger.analytics.view_kit import sql_str
from ledger.app.context import LedgerArg, ledger_path
from ledger.app.result import Result
from ledger.errors import LedgerError
from schemas.errors import BUSY, UsageError

DB_FILE = "events.duckdb"  # the store's file name (ledger/log/store.py DB_FILE)
SEGMENTS_DIR = "segments"  # sealed Parquet segments: seg-<first>-<last>.parquet

# Statement types that only read. EXPLAIN is a read unless it is EXPLAIN ANALYZE of a
# write (which executes it), so its inner statement is classified too.
_READ_TYPES = frozenset({"SELECT", "EXPLAIN"})
_EXPLAIN_PREFIX = re.compile(r"^\s*explain(\s+analy[sz]e)?\s+", re.IGNORECASE)

ENVELOPE_COLUMNS = (
    "seq, stream, stream_version, event_id, type, schema_version, "
    "recorded_at::TIMESTAMPTZ AS recorded_at, payload, leaf_hash"
)


class SqlRefused(LedgerError):
    """A statement that is not a read; names it and says what to run instead."""

    def __init__(self, statement_type: str, statement: str) -> None:
        self.statement_type = statement_type
        self.statement = statement
        short = " ".join(statement.split())[:80]
        super().__init__(
            f"refused: `vledger sql` is read-only and this is a {statement_type} statement "
            f"({short!r}); nothing was changed. Query the views with SELECT (or EXPLAIN); "
            "the log itself changes only through `vledger` commands that append events"
        )


class SqlQueryError(LedgerError):
    """The query did not parse, bind or run; carries DuckDB's message."""

    def __init__(self, message: str) -> None:
        self.detail = message
        super().__init__(
            f"query failed: {message} (list views and columns with `vledger sql --schema`)"
        )


class StoreHeld(LedgerError):
    """A writer holds the store and no sealed segment can stand in for it: busy, the code
    every command gives a ledger another process holds."""

    exit_code = BUSY


class NoLedger(LedgerError):
    def __init__(self, path: Path) -> None:
        self.path = path
        super().__init__(
            f"no ledger at {str(path)!r}: neither {DB_FILE} nor sealed segments found; "
            "pass --ledger DIR or set VLEDGER_HOME"
        )


@dataclass(frozen=True)
class Source:
    """Where the rows came from: the store itself, or only its sealed segments."""

    kind: str  # "store" | "segments"
    detail: str
    relation: str = ""  # the SQL of the envelope rows the views were created over
    kept: materialise.Kept | None = None  # what became of the kept view rows (store only)


def check_read_only(sql: str) -> list[str]:
    """Classify every statement with DuckDB's parser; raise :class:`SqlRefused` on a write.

    Returns the statements' texts. Raises :class:`SqlQueryError` when the text does not parse.
    """
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise SqlQueryError(str(exc).strip()) from None
    if not statements:
        raise SqlQueryError("no statement given")
    texts = []
    for st in statements:
        kind = st.type.name
        text = st.query
        if kind == "EXPLAIN":
            inner = _EXPLAIN_PREFIX.sub("", text, count=1)
            if inner != text:
                try:
                    inner_types = [s.type.name for s in duckdb.extract_statements(inner)]
                except duckdb.Error:
                    inner_types = ["UNKNOWN"]
                bad = [t for t in inner_types if t not in _READ_TYPES]
                if bad:
                    raise SqlRefused(f"EXPLAIN {bad[0]}", text)
        if kind not in _READ_TYPES:
            raise SqlRefused(kind, text)
        texts.append(text)
    return texts


def _segment_files(ledger_dir: Path) -> list[Path]:
    return sorted((ledger_dir / SEGMENTS_DIR).glob("seg-*.parquet"))


def _parquet_relation(files: list[Path]) -> str:
    listing = ", ".join(sql_str(str(f)) for f in files)
    return f"SELECT {ENVELOPE_COLUMNS} FROM read_parquet([{listing}])"


def attach_source(con: duckdb.DuckDBPyConnection, ledger_dir: Path) -> tuple[str, Source]:
    """Attach the ledger read-only and return the SQL relation of its envelope rows."""
    db = ledger_dir / DB_FILE
    segments = _segment_files(ledger_dir)
    if db.exists():
        try:
            con.execute(f"ATTACH {sql_str(str(db))} AS store (READ_ONLY)")
        except duckdb.Error as exc:
            if not materialise.is_lock_error(exc):
                raise SqlQueryError(f"cannot open {db}: {exc}") from None
            if not segments:
                raise StoreHeld(
                    f"ledger busy: {db} is held by a writer and no sealed segment exists yet "
                    f"under {ledger_dir / SEGMENTS_DIR}; retry when the writer is done"
                ) from None
            return _parquet_relation(segments), Source(
                "segments", f"{len(segments)} sealed segment(s); the store is held by a writer"
            )
        rel = f"SELECT {ENVELOPE_COLUMNS} FROM store.events"
        if segments:
            # A store that drops sealed rows keeps them only in segments: take those below
            # the store's first seq, never a row twice.
            rel = (
                f"{rel} UNION ALL SELECT * FROM ({_parquet_relation(segments)}) "
                "WHERE seq < coalesce((SELECT min(seq) FROM store.events), 18446744073709551615)"
            )
        return rel, Source("store", str(db))
    if segments:
        return _parquet_relation(segments), Source("segments", f"{len(segments)} sealed segment(s)")
    raise NoLedger(ledger_dir)  # a folder (or file) with neither is no ledger, not an empty one


class SqlSandboxed(LedgerError):
    """A query that reached for a file, URL or extension outside the ledger's views."""

    def __init__(self, message: str) -> None:
        self.detail = message
        super().__init__(
            f"refused: `vledger sql` reads only the ledger's views; files, URLs and extensions "
            f"outside them are off (read_csv, read_text, read_blob, glob, read_parquet of a "
            f"path or URL, …) — {message}; nothing was read. Query the views "
            "(`vledger sql --schema`)"
        )


def _sandbox(con: duckdb.DuckDBPyConnection, readable: list[Path]) -> None:
    """Close the connection to everything but the views' own sources, for good.

    The store is already attached and the views defined, so external access can go: a
    query may then read only the files in ``readable`` (the sealed segments the views
    name), never a host file or a URL, nor install or load an extension (DuckDB would
    download one into $HOME). ``lock_configuration`` keeps a query from turning it back.
    """
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    con.execute("SET allowed_paths = ?", [[str(p) for p in readable]])
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


@contextmanager
def connect(
    ledger_dir: Path | str, *, full: bool = False, statements: list[str] | None = None
) -> Iterator[tuple[duckdb.DuckDBPyConnection, Source]]:
    """An in-memory connection with every view defined over the ledger, closed on exit.

    Over the store, the views' per-event rows are the kept ones, brought up to date first
    (``ledger.analytics.materialise``; ``full``: built again from the whole log), unless
    the ``statements`` to be run read none of them (None: any view may be read).
    Sandboxed (:func:`_sandbox`) before it is handed out: only the views' sources are
    readable through it."""
    con = duckdb.connect(":memory:")
    try:
        rel, source = attach_source(con, Path(ledger_dir))
        kept = None
        if source.kind == "store" and materialise.reads_kept(con, statements):
            kept = materialise.bring_up_to_date(con, Path(ledger_dir), rel, full=full)
        views.create_views(con, rel, materialise.replacements(kept))
        _sandbox(con, _segment_files(Path(ledger_dir)) if "read_parquet" in rel else [])
        yield con, Source(source.kind, source.detail, rel, kept)
    finally:
        con.close()


def run(con: duckdb.DuckDBPyConnection, sql: str) -> pa.Table:
    """Run a read-only query on a connection from :func:`connect`."""
    texts = check_read_only(sql)
    try:
        for text in texts[:-1]:  # run, their rows dropped; the last one's are the result
            con.execute(text)
            finish = getattr(con, "complete", None)  # DuckDB 2: a result left pending blocks
            if finish is not None:  # the next statement ("unfinished result from execute()")
                finish()
        rel = con.sql(texts[-1])
        if rel is None:  # a statement that returns no relation (never a read, but be safe)
            return pa.table({})
        _names_once(rel.columns)
        return _mark_json(rel.to_arrow_table(), [str(t) for t in rel.types])
    except duckdb.PermissionException as exc:
        raise SqlSandboxed(str(exc).strip().splitlines()[0]) from None
    except duckdb.Error as exc:
        raise SqlQueryError(str(exc).strip()) from None


def _names_once(columns: list[str]) -> None:
    """A result names each column once: a row is an object in JSON output, and two columns
    of one name (``t.status, c.status`` in a join) would print as one."""
    seen: set[str] = set()
    for name in columns:
        if name in seen:
            raise SqlQueryError(
                f"the result has two columns named {name!r}; give one another name "
                f"(... AS {name}_2)"
            )
        seen.add(name)


JSON_METADATA = {b"duckdb_type": b"JSON"}


def _mark_json(table: pa.Table, types: list[str]) -> pa.Table:
    """Tag JSON-typed columns in the Arrow schema so printers can emit them as JSON values."""
    fields = [
        f.with_metadata(JSON_METADATA) if t == "JSON" else f
        for f, t in zip(table.schema, types, strict=True)
    ]
    return table.cast(pa.schema(fields))


def is_json_field(field: pa.Field) -> bool:
    return bool(field.metadata) and field.metadata.get(b"duckdb_type") == b"JSON"


def rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict[str, Any]]:
    """:func:`run` as row dicts, for the report's panels."""
    return run(con, sql).to_pylist()


def query(ledger_dir: Path | str, sql: str, *, full: bool = False) -> pa.Table:
    """Run one read-only query over the ledger's views and return the rows as Arrow.

    >>> query(".vledger", "SELECT task_id, k, pass_at_k FROM pass_at_k WHERE level='task'")
    """
    return query_with_source(ledger_dir, sql, full=full)[0]


def query_with_source(
    ledger_dir: Path | str, sql: str, *, full: bool = False
) -> tuple[pa.Table, Source]:
    texts = check_read_only(sql)  # refuse before opening anything
    with connect(ledger_dir, full=full, statements=texts) as (con, source):
        return run(con, sql), source


def json_rows(table: pa.Table) -> list[dict[str, Any]]:
    """Row objects with JSON-typed columns embedded as values, not strings."""
    out = table.to_pylist()
    json_cols = [f.name for f in table.schema if is_json_field(f)]
    for r in out:
        for name in json_cols:
            if r[name] is not None:
                r[name] = orjson.loads(r[name])
    return out


def json_default(value: Any) -> Any:
    """What orjson cannot encode itself: bytes as hex, decimals as floats, the rest as text."""
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, Decimal):
        return float(value)
    return str(value)


def schema_table() -> pa.Table:
    """One row per documented view column: view, column, description."""
    docs = views.schema_rows()
    return pa.table({k: [d[k] for d in docs] for k in ("view", "column", "description")})


@dataclass(frozen=True)
class SqlResult(Result):
    """The rows of one query as Arrow, and where they were read from (None: the schema)."""

    table: pa.Table
    source: Source | None

    def to_json(self) -> Any:
        """``vledger sql --json``: the rows as JSON values, JSON-typed columns embedded."""
        return orjson.loads(orjson.dumps(json_rows(self.table), default=json_default))


def sql(
    query: str | None = None, *, ledger: LedgerArg = None, schema: bool = False, full: bool = False
) -> SqlResult:
    """Run one read-only ``query`` over the ledger's views; ``schema``: list the views'
    columns instead. A write is refused (:class:`SqlRefused`) with nothing changed.
    ``full``: build the kept view rows again from the whole log first."""
    if schema:
        return SqlResult(schema_table(), None)
    if not query:
        raise UsageError('give a QUERY (e.g. vledger sql "SELECT * FROM trials") or --schema')
    return SqlResult(*query_with_source(ledger_path(ledger), query, full=full))
