"""Shared set-up for the DuckDB store tests: a populated ledger, raw access for tampering."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pytest

from ledger.log.keys import keygen, load_signer
from ledger.log.layout import DB_FILE
from ledger.log.note import Signer, Verifier
from ledger.log.store import Ledger, init_ledger
from schemas.envelope import NewEvent


def sample_events(n: int, start: int = 0, corpus: str = "c") -> list[NewEvent]:
    """``n`` events over three trial streams and a run stream, ~100-byte payloads."""
    out = []
    for i in range(start, start + n):
        stream = f"trial/{corpus}/task{i % 3}/0" if i % 4 else "run/r1"
        out.append(NewEvent(stream, "ext.sample", {"i": i, "text": f"event {i} " + "x" * 80}))
    return out


def make_key(tmp: Path, name: str = "test.example/log") -> tuple[Signer, Verifier, Path]:
    key_file = tmp / f"key-{name.replace('/', '_')}"
    verifier = keygen(key_file, name)
    return load_signer(key_file), verifier, key_file


def populated(path: Path, batches: list[int]) -> Ledger:
    lg = init_ledger(path)
    seq = 0
    for k in batches:
        lg.append(sample_events(k, seq))
        seq += k
    return lg


def swap_store(source: Path, target: Path) -> None:
    """Put ``source``'s store in ``target``'s place: the DuckDB file and the WAL a small
    command leaves beside it (connection.KEEP_WAL), as an attacker with disk access would."""
    for name in (DB_FILE, f"{DB_FILE}.wal"):
        (target / name).unlink(missing_ok=True)
        if (source / name).exists():
            shutil.copy(source / name, target / name)


@contextmanager
def raw(ledger_dir: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """Direct SQL on a closed ledger's DuckDB file: what an attacker with disk access does."""
    con = duckdb.connect(str(ledger_dir / DB_FILE))
    try:
        yield con
    finally:
        con.close()


@contextmanager
def core_checks_only() -> Iterator[None]:
    """Run verify without the application's checks (ledger.app.verify.CHECKS): these tests
    pin the store's core checks, and the application's have their own rules about stream
    names and types."""
    from ledger.app import verify

    saved = verify.CHECKS
    verify.CHECKS = ()
    try:
        yield
    finally:
        verify.CHECKS = saved


@pytest.fixture
def no_extra_checks() -> Iterator[None]:
    with core_checks_only():
        yield


def stored_log(path: Path) -> tuple[list[tuple], str]:
    """Every event as stored (recorded_at aside, which no hash covers) and the tree root."""
    from ledger.log.store import open_ledger

    with open_ledger(path) as lg:
        rows = [
            (e.seq, e.stream, e.stream_version, e.event_id, e.type, e.schema_version,
             e.payload, e.leaf_hash)
            for e in lg.read()
        ]  # fmt: skip
        return rows, lg.root(lg.size()).hex()


@contextmanager
def another_reader(where: Path) -> Iterator[None]:
    """Another process holding the ledger at ``where`` open read-only (DuckDB's shared lock)
    while the block runs, as a long `vledger verify` or a notebook would."""
    code = ("import sys; from ledger.log.store import open_ledger; "
            "lg = open_ledger(sys.argv[1], read_only=True); print('open', flush=True); "
            "sys.stdin.read(); lg.close()")  # fmt: skip
    root = Path(__file__).resolve().parents[1]
    reader = subprocess.Popen([sys.executable, "-c", code, str(where)], cwd=root,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert reader.stdout is not None and reader.stdout.readline().strip() == "open"
        yield
    finally:
        reader.communicate("")
