"""What a ledger directory holds, and how its files are written (docs/readme/store.md)::

<dir>/events.duckdb      events, Merkle interior nodes, tree state, metadata
<dir>/checkpoints/       signed checkpoint notes (C2SP tlog-checkpoint), one per size
<dir>/segments/          sealed Parquet segments + manifest.json (ledger.log.segments)
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
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
# Per-config results kept of each kind (``retrace-``, ``reconcile-<config>.results``), the
# most recently written: each is as large as its run's outcomes (~3 KB a trial for retrace)
# and every edit of a replacement config is another config, so kept without bound a rubric
# iterated over a 100,000-trial ledger would leave ~300 MB per edit.
KEPT_CONFIGS = 4
# A temporary file under projections/ whose writer is gone (killed before its rename) is
# removed once it has not been written to for this long: a live writer on another host (a
# shared filesystem, where its pid means nothing here) writes to its file as it runs.
ORPHAN_SECONDS = 3600.0

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
        handle, name = derived_temp(path.parent, path.name)
        try:
            with os.fdopen(handle, "wb", buffering=1 << 16) as f:
                for chunk in chunks:
                    f.write(chunk)
            os.replace(name, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(name)
            raise


def projections_of(store: object) -> Path | None:
    """``<ledger>/projections`` of an on-disk store (one with a ``path`` holding the store
    file); None for a store held in memory, whose derived data lives as long as it does."""
    root = Path(getattr(store, "path", ""))
    return root / PROJECTIONS_DIR if (root / DB_FILE).is_file() else None


def derived_temp(folder: Path, stem: str) -> tuple[int, str]:
    """A new temporary file in ``folder`` (``mkstemp``) named ``.<stem>-<pid>-<random>.tmp``:
    the writer's pid, for :func:`prune_derived` to tell one left by a killed writer."""
    return tempfile.mkstemp(prefix=f".{stem}-{os.getpid()}-", suffix=".tmp", dir=folder)


def keep_per_config(temp: Path, path: Path) -> None:
    """Rename the finished ``temp`` to ``path`` (``<kind>-<config>.results``), then prune
    that kind's older files (:func:`prune_derived`)."""
    os.replace(temp, path)
    prune_derived(path.parent, path.name.split("-", 1)[0])


def prune_derived(folder: Path, kind: str) -> None:
    """Remove all but the :data:`KEPT_CONFIGS` most recently written ``<kind>-*.results`` in ``folder``,
    and every temporary file there whose writer is gone (:data:`ORPHAN_SECONDS`). Never an
    error: a file another process removed or still holds open is simply left to it."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    kept: list[tuple[int, str, str]] = []
    now = time.time()
    for e in entries:
        try:
            if e.name.startswith(f"{kind}-") and e.name.endswith(".results"):
                kept.append((e.stat(follow_symlinks=False).st_mtime_ns, e.name, e.path))
            elif e.name.startswith(".") and e.name.endswith(".tmp") and _orphan(e, now):
                os.unlink(e.path)
        except OSError:
            continue
    for _, _, path in sorted(kept, reverse=True)[KEPT_CONFIGS:]:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _orphan(entry: os.DirEntry, now: float) -> bool:
    """A temporary file of :func:`derived_temp` not written to for :data:`ORPHAN_SECONDS`
    whose writer is not a live process here (one without a pid in its name: by age alone)."""
    if now - entry.stat(follow_symlinks=False).st_mtime < ORPHAN_SECONDS:
        return False
    parts = entry.name[: -len(".tmp")].rsplit("-", 2)
    pid = parts[1] if len(parts) == 3 else ""
    return not (pid.isdigit() and pid_alive(int(pid)))


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (one of another user counts: a reused pid)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    except (OverflowError, OSError):
        return False
    return True
