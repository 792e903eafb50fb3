"""Bundle files kept between curations from the log (docs/readme/curate.md § From the log,
again): rendering every admitted trial's YAML is most of what ``curate --from-ledger``
costs, and a trial whose stream did not change renders to the same bytes.

A bundle's files are a function of its stream's events (``export_bundle.bundle_files``),
and a stream only grows: the same stream with the same last event read has the same
events. So the rendered files are kept in ``<ledger>/projections/curate-bundles.duckdb``
keyed by stream and that last event's seq, with the log position they were kept at and
the digest of the rendering code. Before any is used the position is checked against the
log (the same code digest, a size no larger than the log's, the log's root at that size
equal to the one recorded); anything off, or ``full``, and every bundle is rendered again.
A dry run reads kept files but writes none; a curation that cannot open the file renders
everything, as without it. Derived data, never evidence: deleting the file costs one full
rendering.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from ledger.analytics.materialise import is_lock_error
from ledger.log.layout import projections_of
from ledger.sources import export_bundle, yaml_emit
from schemas.envelope import StoredEvent

FILE = "curate-bundles.duckdb"
_FORMAT = "1"


def _version() -> str:
    """Digest of the rendering code: a release that renders differently reuses nothing."""
    h = hashlib.sha256(_FORMAT.encode())
    for module in (export_bundle, yaml_emit):
        h.update(Path(module.__file__ or "").read_bytes())
    return h.hexdigest()[:32]


VERSION = _version()


class KeptBundles:
    """The kept files of the streams about to be rendered, and the newly rendered ones."""

    def __init__(
        self, con: duckdb.DuckDBPyConnection | None, kept: dict[tuple[str, int], dict[str, bytes]]
    ) -> None:
        self.con = con
        self.kept = kept
        self.new: dict[tuple[str, int], dict[str, bytes]] = {}
        self.reused = 0

    def render(self, events: Sequence[StoredEvent]) -> dict[str, bytes]:
        key = (events[0].stream, events[-1].seq)
        files = self.kept.get(key)
        if files is not None:
            self.reused += 1
            return files
        files = export_bundle.bundle_files(events)
        self.new[key] = files
        return files

    def save(self, size: int, root: str) -> None:
        """Keep the newly rendered files and the log position they are valid at."""
        if self.con is None:
            return
        rows = [
            (s, seq, name, body)
            for (s, seq), files in self.new.items()
            for name, body in files.items()
        ]
        table = pa.table(
            {
                "stream": pa.array([r[0] for r in rows], pa.string()),
                "head": pa.array([r[1] for r in rows], pa.uint64()),
                "name": pa.array([r[2] for r in rows], pa.string()),
                "body": pa.array([r[3] for r in rows], pa.binary()),
            }
        )
        con = self.con
        con.execute("BEGIN TRANSACTION")
        try:
            con.register("fresh", table)
            # a stream rendered again replaces what was kept of it at an older head
            con.execute("DELETE FROM files WHERE stream IN (SELECT DISTINCT stream FROM fresh)")
            con.execute("INSERT INTO files SELECT * FROM fresh")
            con.execute("DELETE FROM position")
            con.execute("INSERT INTO position VALUES (?, ?, ?)", [VERSION, size, root])
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise


def _path(lg: Any) -> Path | None:
    folder = projections_of(lg)
    return None if folder is None else folder / FILE


def _open(path: Path | None, write: bool) -> duckdb.DuckDBPyConnection | None:
    """The kept file; None when there is none to read, or it cannot be opened (another
    curation holds it, or the directory is read-only): then everything is rendered."""
    if path is None or (not write and not path.is_file()):
        return None
    for attempt in (1, 2):
        try:
            if write:
                path.parent.mkdir(exist_ok=True)
            return duckdb.connect(str(path), read_only=not write)
        except OSError:
            return None
        except duckdb.Error as exc:
            if not write or attempt == 2 or is_lock_error(exc):
                return None
            path.unlink(missing_ok=True)  # damaged: derived data, rendered again
    return None


def _usable(con: duckdb.DuckDBPyConnection, lg: Any, full: bool) -> bool:
    """Whether the kept files may be used over this log."""
    try:
        rows = con.execute("SELECT version, size, root FROM position").fetchall()
        row = rows[0] if rows else None
    except duckdb.Error:
        return False
    if full or row is None or row[0] != VERSION or int(row[1]) > lg.size():
        return False
    return bool(lg.root(int(row[1])).hex() == row[2])


def _load(
    con: duckdb.DuckDBPyConnection, lg: Any, heads: Mapping[str, int], full: bool, write: bool
) -> dict[tuple[str, int], dict[str, bytes]]:
    if not _usable(con, lg, full):
        if write:
            con.execute("DROP TABLE IF EXISTS files")
            con.execute("DROP TABLE IF EXISTS position")
            con.execute("CREATE TABLE position (version VARCHAR, size UBIGINT, root VARCHAR)")
            con.execute(
                "CREATE TABLE files (stream VARCHAR, head UBIGINT, name VARCHAR, body BLOB)"
            )
        return {}
    wanted = pa.table({"stream": pa.array(list(heads), pa.string()),
                       "head": pa.array(list(heads.values()), pa.uint64())})  # fmt: skip
    con.register("wanted", wanted)
    rows = con.execute(
        "SELECT f.stream, f.head, f.name, f.body FROM files f JOIN wanted w "
        "ON f.stream = w.stream AND f.head = w.head"
    ).fetchall()
    out: dict[tuple[str, int], dict[str, bytes]] = {}
    for stream, head, name, body in rows:
        out.setdefault((stream, int(head)), {})[name] = bytes(body)
    return {k: dict(sorted(v.items())) for k, v in out.items()}


@contextlib.contextmanager
def kept_bundles(
    lg: Any, heads: Mapping[str, int], *, full: bool = False, write: bool = True
) -> Iterator[KeptBundles]:
    """The kept files of ``heads`` (stream -> seq of its last event read) over ``lg``;
    ``write``: the newly rendered ones may be kept (not on a dry run)."""
    con = _open(_path(lg), write)
    if con is None:
        yield KeptBundles(None, {})
        return
    try:
        try:
            kept = _load(con, lg, heads, full, write)
        except duckdb.Error:
            kept = {}
        yield KeptBundles(con if write else None, kept)
    finally:
        con.close()
