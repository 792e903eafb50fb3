"""The pooled leaf hashing of ``verify`` (ledger/verify_pool.py) changes where leaf hashes
are computed, never what verify reports: a forced-parallel run and a serial run of the same
log give identical VerifyReports, clean and tampered."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger import verify as verify_mod
from ledger import verify_pool
from ledger.errors import LedgerError
from ledger.store import init_ledger
from ledger.verify import VerifyReport
from schemas.envelope import NewEvent


def _events(n: int) -> list[NewEvent]:
    # every 331st stream needs JSON escaping: those windows come back with NULL entries
    return [
        NewEvent(
            f'run/"q{i % 3}"' if i % 331 == 0 else f"run/r{i % 3}",
            "ext.note",
            {"i": i, "text": "é" * (i % 5) + "x" * (i % 300)},
            event_id=f"id-{i}",
        )
        for i in range(n)
    ]


def _both(lg, monkeypatch: pytest.MonkeyPatch) -> tuple[VerifyReport, VerifyReport, int]:
    collected = []
    real = verify_pool.LeafPool._collect_oldest

    def counted(self: verify_pool.LeafPool) -> None:
        collected.append(1)
        real(self)

    monkeypatch.setattr(verify_pool.LeafPool, "_collect_oldest", counted)
    monkeypatch.setenv(verify_pool.WORKERS_ENV, "0")
    serial = lg.verify()
    monkeypatch.setenv(verify_pool.WORKERS_ENV, "2")
    monkeypatch.setattr(verify_pool, "PARALLEL_MIN_EVENTS", 1)
    # small chunks so a window spans several jobs and slots are reused
    monkeypatch.setattr(verify_pool, "CHUNK_ROWS", 16)
    pooled = lg.verify()
    return serial, pooled, len(collected)


def test_parallel_and_serial_reports_are_identical(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(verify_mod, "WINDOW", 100)
    with init_ledger(tmp_path / "lg") as lg:
        lg.append(_events(700))
        serial, pooled, jobs = _both(lg, monkeypatch)
        assert jobs >= 4 * 100 // 16  # workers hashed the plain windows, several chunks each
        assert serial.ok and serial.events == 700
        assert pooled == serial
        for seq, payload in ((5, b'{"i":-1}'), (194, b'{"i":-2}'), (650, b'{"i":-3}')):
            lg._con.execute("UPDATE events SET payload = ? WHERE seq = ?", [payload, seq])
        lg._con.execute("UPDATE nodes SET hash = ? WHERE level = 3 AND idx = 40", [b"\x07" * 32])
        serial, pooled, jobs = _both(lg, monkeypatch)
    assert jobs
    assert not serial.ok and serial.problems[0].where == "seq 5"
    assert {"seq 194", "seq 650"} <= {p.where for p in serial.problems}
    assert pooled == serial


def test_workers_env_is_validated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(verify_pool.WORKERS_ENV, "two")
    with pytest.raises(LedgerError, match="VLEDGER_VERIFY_WORKERS='two'"):
        verify_pool.verify_workers()
    monkeypatch.setenv(verify_pool.WORKERS_ENV, "3")
    assert verify_pool.verify_workers() == 3
    monkeypatch.setenv(verify_pool.WORKERS_ENV, "1")
    assert verify_pool.leaf_pool(10**9) is None  # one worker: hash in-process
