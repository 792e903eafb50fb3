"""Guarantee 8: two writer processes, and the bounded "ledger busy" retry."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ledger.errors import LedgerBusy
from ledger.log.store import init_ledger, open_ledger
from ledger.log.verify import verify_ledger
from tests.process_harness import ROOT, release, two_writers, worker
from tests.store_helpers import no_extra_checks  # noqa: F401  (fixture)

pytestmark = pytest.mark.usefixtures("no_extra_checks")


@pytest.mark.slow
def test_two_writer_processes_each_batch_exactly_once(tmp_path: Path) -> None:
    outputs = two_writers(tmp_path / "ledger", batches=12, size=100, timeout=20.0)
    # with a 20 s bound neither writer should have given up
    assert all("busy" not in words for words in outputs.values()), outputs


@pytest.mark.slow
def test_second_writer_gets_ledger_busy_after_bounded_retry(tmp_path: Path) -> None:
    path = tmp_path / "ledger"
    init_ledger(path).close()
    holder = worker("hold", path, 120.0)
    assert holder.stdout is not None and holder.stdout.readline().strip() == b"ready"
    try:
        start = time.monotonic()
        with pytest.raises(LedgerBusy) as info:
            open_ledger(path, busy_timeout=0.5)
        waited = time.monotonic() - start
        assert info.value.waited >= 0.5 and waited < 3.0
        assert str(info.value).startswith(f"ledger busy: {str(path)!r} is held by another process")
        events = tmp_path / "e.jsonl"
        events.write_text('{"stream": "s", "type": "ext.x", "payload": {}}\n')
        cli = subprocess.run(
            [
                sys.executable,
                "-c",
                "from ledger.cli import main; main()",
                "append",
                str(events),
                "--ledger",
                str(path),
                "--busy-timeout",
                "0.3",
            ],
            cwd=ROOT,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
            capture_output=True,
            timeout=60,
        )
        assert cli.returncode == 3, cli.stderr
        assert b"Error: ledger busy" in cli.stderr
    finally:
        release(holder)
    with open_ledger(path) as lg:
        assert lg.size() == 0  # the refused append left nothing behind


def test_readers_in_other_threads_never_see_a_half_written_batch(tmp_path: Path) -> None:
    """Batches of 2000 events appended by one thread; others read size/read() meanwhile."""
    import threading

    from schemas.envelope import NewEvent

    lg = init_ledger(tmp_path / "l")
    batch, rounds = 2000, 8
    done = threading.Event()
    seen_sizes: list[int] = []
    bad: list[str] = []

    def writer() -> None:
        for r in range(rounds):
            lg.append([NewEvent(f"run/{r}", "ext.x", {"r": r, "i": i}) for i in range(batch)])
        done.set()

    def reader() -> None:
        while not done.is_set():
            n = lg.size()
            seen_sizes.append(n)
            if n % batch:
                bad.append(f"size {n}")
            rows = sum(1 for _ in lg.read(type="ext.x"))
            if rows % batch:
                bad.append(f"read() saw {rows} rows")

    threads = [
        threading.Thread(target=writer),
        threading.Thread(target=reader),
        threading.Thread(target=reader),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert bad == []
    assert len(seen_sizes) > 2 and lg.size() == batch * rounds
    assert verify_ledger(lg).ok
    lg.close()
