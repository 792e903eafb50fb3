"""Hostile inputs: SQL confinement, store damage, control characters in output.

* ``vledger sql`` reads the views and nothing else: host files, globs and URLs are refused
  with one clear error (no traceback), and no extension is downloaded into $HOME;
* a damaged ``events.duckdb`` is one ``Error:`` line naming the file, whatever the command;
* ``vledger log`` prints one line per event whatever a stream name holds;
* ``receipt verify`` says a receipt is unsigned and what that does and does not prove.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from tests.adversarial.conftest import Built
from tests.adversarial.harness import (
    ROOT,
    event_count,
    no_traceback,
    refused,
    verify_unchanged,
    vledger,
)

# one xdist worker builds this module's shared fixture once (make test: --dist loadgroup)
pytestmark = pytest.mark.xdist_group("adversarial")


HOST_READS = {
    "read_csv": "SELECT * FROM read_csv('/etc/passwd')",
    "read_text": "SELECT content FROM read_text('/etc/passwd')",
    "read_blob": "SELECT content FROM read_blob('/etc/passwd')",
    "glob": "SELECT * FROM glob('/etc/*')",
    "url": "SELECT * FROM read_parquet('https://example.com/x.parquet')",
}


@pytest.mark.parametrize("case", list(HOST_READS))
def test_sql_reaches_nothing_outside_the_views(case: str, built: Built, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    res = vledger("sql", HOST_READS[case], "--ledger", built.ledger, home=home)
    refused(res, 1, "refused", "outside them are off")
    assert "root:" not in res.stdout and "passwd" not in res.stdout
    assert list(home.iterdir()) == []  # no extension installed into $HOME


def test_sql_views_and_out_keep_working_from_the_store_and_from_segments_only(
    built: Built, tmp_path: Path
) -> None:
    q = "SELECT count(*) AS n FROM events"
    res = vledger("sql", q, "--json", "--ledger", built.ledger)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == [{"n": event_count(built.ledger)}]
    only_segments = tmp_path / "segs"
    shutil.copytree(built.ledger / "segments", only_segments / "segments")
    out = tmp_path / "k.json"
    res = vledger(
        "sql",
        "SELECT count(*) AS n FROM pass_at_k",
        "--json",
        "--out",
        out,
        "--ledger",
        only_segments,
    )
    assert res.returncode == 0, res.stderr
    assert json.loads(out.read_text())[0]["n"] > 0


def _damage(db: Path, *, first: int = 12 * 1024 + 7, step: int = 4096) -> None:
    """Flip one bit in every ``step`` bytes from ``first`` (by default every 4 KiB block past
    the header): every read of data meets one."""
    data = bytearray(db.read_bytes())
    for off in range(first, len(data), step):
        data[off] ^= 0x10
    db.write_bytes(bytes(data))


def _checkpointed(db: Path) -> None:
    """Move what a small command left in the WAL (connection.KEEP_WAL) into the file."""
    con = duckdb.connect(str(db))
    con.execute("CHECKPOINT")
    con.close()
    assert not db.with_name(db.name + ".wal").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["verify"],
        ["log"],
        ["prove", "3"],
        ["sql", "SELECT count(*), max(length(payload::VARCHAR)) FROM events"],
        ["seal"],
    ],
    ids=lambda a: a[0],
)
def test_a_damaged_store_is_named_not_a_traceback(argv: list[str], ledger: Path) -> None:
    _checkpointed(ledger / "events.duckdb")
    _damage(ledger / "events.duckdb")
    res = vledger(*argv, "--ledger", ledger)
    no_traceback(res)
    assert res.returncode == 1, (res.stdout[-500:], res.stderr[-500:])
    assert "events.duckdb" in res.stderr, res.stderr


@pytest.mark.parametrize("argv", [["verify"], ["log"], ["retrace"]], ids=lambda a: a[0])
def test_a_damaged_wal_is_named_not_a_traceback(argv: list[str], ledger: Path) -> None:
    """A small command leaves its WAL for the next open (connection.KEEP_WAL): a WAL that
    does not replay is the same one line naming the store, never a traceback."""
    wal = ledger / "events.duckdb.wal"
    assert vledger("retrace", "--ledger", ledger).returncode == 0
    assert 0 < wal.stat().st_size <= 1 << 20
    _damage(wal, first=100, step=512)
    res = vledger(*argv, "--ledger", ledger)
    no_traceback(res)
    assert res.returncode == 1, (res.stdout[-500:], res.stderr[-500:])
    assert "events.duckdb" in res.stderr, res.stderr


def test_log_prints_one_line_per_event_whatever_the_stream_holds(
    ledger: Path, built: Built, tmp_path: Path
) -> None:
    hostile = "ext/a\nseq 999\tfake\x1b[2J\u202e"
    (tmp_path / "c.jsonl").write_text(
        json.dumps({"stream": hostile, "type": "ext.note", "payload": {"t": "x\u2028y"}}) + "\n"
    )
    assert vledger("append", "--ledger", ledger, tmp_path / "c.jsonl").returncode == 0
    n = event_count(ledger)
    res = vledger("log", "--ledger", ledger, "--from", str(n - 1))
    assert res.returncode == 0, res.stderr
    (line,) = res.stdout.splitlines()
    assert "\x1b" not in line and "\u202e" not in line and "\u2028" not in line
    assert "ext/a\\x0aseq 999\\x09fake\\x1b[2J\\u202e" in line
    exact = json.loads(vledger("log", "--ledger", ledger, "--from", str(n - 1), "--json").stdout)
    assert exact[0]["stream"] == hostile  # --json stays exact
    assert verify_unchanged(ledger, "--pub", built.pub).returncode == 1  # unsigned tail only


DEMO_RUN = ROOT / "corpora" / "verdict-core" / "demo-run"


def test_receipt_verify_says_the_receipt_is_unsigned() -> None:
    text = vledger("receipt", "verify", DEMO_RUN)
    assert text.returncode == 0, text.stderr
    assert "unsigned" in text.stdout and "does not prove" in text.stdout
    assert "who wrote" in text.stdout
    data = json.loads(vledger("receipt", "verify", DEMO_RUN, "--json").stdout)
    assert data["ok"] is True and data["signed"] is False
    assert (
        "recomputes" in data["does_not_prove"] and "vledger verify" in data["detects_later_edits"]
    )
