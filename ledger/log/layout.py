"""What a ledger directory holds, and how its files are written (docs/readme/store.md)::

<dir>/events.duckdb      events, Merkle interior nodes, tree state, metadata
<dir>/checkpoints/       signed checkpoint notes (C2SP tlog-checkpoint), one per size
<dir>/segments/          sealed Parquet segments + manifest.json (ledger.log.segments)
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from ledger.errors import LedgerError

DB_FILE = "events.duckdb"
PROJECTIONS_DIR = "projections"  # derived results kept beside the log, never evidence
CHECKPOINT_DIR = "checkpoints"
TRIAL_PREFIX = "trial/"  # trial streams are never split across segments (ledger.log.segments)
# 2: interior nodes are stored from NODE_MIN_LEVEL up (1 stored every node)
FORMAT_VERSION = "2"
# Interior nodes below this level are not stored: a proof recomputes one from at most
# 2 ** (NODE_MIN_LEVEL - 1) leaf hashes, while storing them would write about as many node
# rows as events (measured: ~0.9 µs of DuckDB work per appended event; from level 6 up it
# is one node row per 64 events).
NODE_MIN_LEVEL = 6
READ_WINDOW = 65_536  # seq range scanned per query when streaming reads

# Payloads are zstd-compressed and leaf hashes (random bytes) stored as they are, rather than
# left to DuckDB's per-segment choice: its analysis of every candidate method was most of an
# insert, and it picked dictionary/FSST encodings that compress JSON payloads poorly.
# Measured on a 10,000-bundle ingest's 276,141 events (DuckDB 2.0.1): inserting and
# checkpointing took 0.46 s of CPU instead of 1.13 s, the file 24 MB instead of 72 MB;
# scans by stream, by seq window and of every payload took the same time or less. The
# filtered columns (stream, type, event_id) keep the dictionary encodings their lookups use.
DDL = """
CREATE TABLE events (
    seq UBIGINT NOT NULL,
    stream VARCHAR NOT NULL,
    stream_version UINTEGER NOT NULL,
    event_id VARCHAR NOT NULL,
    type VARCHAR NOT NULL,
    schema_version USMALLINT NOT NULL,
    recorded_at TIMESTAMPTZ NOT NULL,
    payload BLOB NOT NULL USING COMPRESSION zstd,
    leaf_hash BLOB NOT NULL USING COMPRESSION uncompressed
);
CREATE TABLE nodes (
    level UTINYINT NOT NULL,
    idx UBIGINT NOT NULL,
    last_leaf UBIGINT NOT NULL,
    hash BLOB NOT NULL
);
CREATE TABLE tree_state (size UBIGINT NOT NULL, frontier BLOB NOT NULL);
CREATE TABLE meta (key VARCHAR NOT NULL, value VARCHAR NOT NULL);
"""


def needs_upgrade(root: Path, version: str, *, read_only: bool) -> bool:
    """True when a format-1 store must be upgraded first; LedgerError when it cannot be read."""
    if version == "1" and not read_only:
        return True
    if version == "1":
        raise LedgerError(
            f"ledger {str(root)!r} has format version '1'; reading it needs an upgrade, "
            "which this read-only command never writes: run `vledger repair --apply` first"
        )
    if version != FORMAT_VERSION:
        raise LedgerError(
            f"ledger {str(root)!r} has format version {version!r}; this vledger reads "
            f"{FORMAT_VERSION!r} (upgrade vledger, or migrate the ledger)"
        )
    return False


def checkpoint_file(ledger_dir: Path, size: int) -> Path:
    return ledger_dir / CHECKPOINT_DIR / f"{size:020d}.note"


def write_atomic(path: Path, data: bytes) -> None:
    """Write via a temporary file, fsync, rename: readers see the old or the new file."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_derived(path: Path, chunks: Iterable[bytes]) -> None:
    """Replace the derived file ``path`` (under ``projections/``) whole with ``chunks``,
    written as they come. No fsync: a file cut short by a crash fails the checks its reader
    makes (the tree head it names, its digest). Never an error: a command does not fail for
    want of derived data, and a failed write leaves the old file and no temporary one."""
    with contextlib.suppress(OSError):
        path.parent.mkdir(exist_ok=True)
        handle, name = tempfile.mkstemp(prefix=f".{path.name}-", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(handle, "wb", buffering=1 << 16) as f:
                for chunk in chunks:
                    f.write(chunk)
            os.replace(name, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(name)
            raise
