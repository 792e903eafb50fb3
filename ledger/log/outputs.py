"""Where a command may write a file of its own: never inside a ledger directory.

A ledger directory holds only what the store writes; any other output there could
overwrite it (``sql --out LEDGER/events.duckdb`` replaced the store) or sit beside it as
something a later reader trusts. Every command that writes a file asks
:func:`check_output_path` first; it is the one place the rule lives.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ledger.errors import LedgerError, OutputInLedger
from ledger.log.layout import CHECKPOINT_DIR, DB_FILE, PROJECTIONS_DIR

# What makes a directory a ledger: the store, or (a store held elsewhere, only segments
# copied) the segment manifest. Kept literal so this module imports nothing heavy.
_LEDGER_MARKERS = ("events.duckdb", "segments/manifest.json")


def is_ledger_dir(directory: Path) -> bool:
    return any((directory / marker).exists() for marker in _LEDGER_MARKERS)


# What a ledger directory holds (ledger.log.layout; DuckDB's WAL and spill folder beside
# the store): all an aborted ingest may have added to a folder that held other files.
_LEDGER_ENTRIES = frozenset({DB_FILE, f"{DB_FILE}.wal", f"{DB_FILE}.tmp", CHECKPOINT_DIR,
                             PROJECTIONS_DIR, "segments"})  # fmt: skip


def remove_new_ledger(root: Path, before: frozenset[str] | None) -> None:
    """Undo a ledger a command created and could not fill: the directory it made
    (``before`` None), or, in a directory that held other files first, only the ledger's
    entries it added (a file someone else wrote there meanwhile stays)."""
    if before is None:
        shutil.rmtree(root, ignore_errors=True)
        return
    for name in (set(os.listdir(root)) - before) & _LEDGER_ENTRIES:
        made = root / name
        if made.is_dir() and not made.is_symlink():
            shutil.rmtree(made, ignore_errors=True)
        else:
            made.unlink(missing_ok=True)


def ledger_containing(path: Path, ledger_dir: Path | None = None) -> Path | None:
    """The ledger directory ``path`` would land in (itself or an ancestor, symlinks
    followed), or ``None``. ``ledger_dir`` (the command's ``--ledger``) counts even before
    it holds a store."""
    target = path.expanduser().resolve()
    if ledger_dir is not None:
        own = ledger_dir.expanduser().resolve()
        if target == own or own in target.parents:
            return ledger_dir
    for directory in (target, *target.parents):
        if is_ledger_dir(directory):
            return directory
    return None


def check_output_path(path: Path, ledger_dir: Path | None = None, *, what: str = "output") -> None:
    """Raise :class:`OutputInLedger` when writing ``path`` would write into a ledger."""
    found = ledger_containing(path, ledger_dir)
    if found is not None:
        raise OutputInLedger(path, found, what)


def write_output(path: Path, data: bytes, *, what: str = "output") -> None:
    """Write a command's own output file, making its folder as ``keygen`` and
    ``checkpoint --out`` do; a write that fails names the file instead of a traceback."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    except OSError as exc:
        raise LedgerError(
            f"cannot write the {what} {str(path)!r}: {exc.strerror or exc}; choose another --out"
        ) from None
