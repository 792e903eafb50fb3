"""``vledger append`` reads a named pipe, a process substitution and ``-`` to their end,
bounded like a file; other special files are still refused by name."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from ledger.app import store_ops
from ledger.cli import main
from ledger.log.store import init_ledger, open_ledger

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")


def _lines(n: int, stream: str = "ext/pipe") -> bytes:
    rows = [{"stream": stream, "type": "ext.note", "payload": {"i": i}} for i in range(n)]
    return b"".join(json.dumps(r).encode() + b"\n" for r in rows)


def _writer(fifo: Path, data: bytes, delay: float = 0.0) -> threading.Thread:
    """Write ``data`` into ``fifo`` from another thread, ``delay`` seconds after opening it
    (the reader must wait for the whole stream, not take the first empty read as its end)."""

    def run() -> None:
        try:
            with open(fifo, "wb") as f:
                time.sleep(delay)
                for i in range(0, len(data), 4096):
                    f.write(data[i : i + 4096])
        except BrokenPipeError:  # the reader stopped at its limit
            pass

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def _payloads(lg_dir: Path) -> list[dict]:
    with open_ledger(lg_dir) as lg:
        return [e.data() for e in lg.read()]


def test_append_reads_a_named_pipe_to_its_end(tmp_path: Path) -> None:
    init_ledger(tmp_path / "lg").close()
    fifo = tmp_path / "events.fifo"
    os.mkfifo(fifo)
    writer = _writer(fifo, _lines(300), delay=0.2)
    out = CliRunner().invoke(main, ["append", str(fifo), "--ledger", str(tmp_path / "lg")])
    writer.join(timeout=10)
    assert out.exit_code == 0, out.output
    assert "appended 300 events: seq 0..299" in out.output
    assert [p["i"] for p in _payloads(tmp_path / "lg")] == list(range(300))


def test_a_pipe_over_the_limit_is_refused_by_name_and_appends_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    init_ledger(tmp_path / "lg").close()
    data = _lines(2000)
    monkeypatch.setattr(store_ops, "MAX_APPEND_BYTES", len(data) // 2)
    fifo = tmp_path / "big.fifo"
    os.mkfifo(fifo)
    writer = _writer(fifo, data)
    out = CliRunner().invoke(main, ["append", str(fifo), "--ledger", str(tmp_path / "lg")])
    writer.join(timeout=10)
    assert out.exit_code != 0
    assert str(fifo) in out.output and f"over the {len(data) // 2}-byte limit" in out.output
    assert _payloads(tmp_path / "lg") == []


def test_append_reads_standard_input_as_dash(tmp_path: Path) -> None:
    init_ledger(tmp_path / "lg").close()
    vledger = Path(sys.executable).parent / "vledger"
    done = subprocess.run([vledger, "append", "-", "--ledger", tmp_path / "lg"],
                          input=_lines(5), capture_output=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert [p["i"] for p in _payloads(tmp_path / "lg")] == [0, 1, 2, 3, 4]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_append_reads_a_process_substitution(tmp_path: Path) -> None:
    init_ledger(tmp_path / "lg").close()
    vledger = Path(sys.executable).parent / "vledger"
    gen = f"{sys.executable} -c 'import sys; sys.stdout.write(sys.argv[1])' {_quoted(_lines(40))}"
    cmd = f"{vledger} append <({gen}) --ledger {tmp_path / 'lg'}"
    done = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "appended 40 events" in done.stdout
    assert [p["i"] for p in _payloads(tmp_path / "lg")] == list(range(40))


def _quoted(data: bytes) -> str:
    return "'" + data.decode().replace("'", "'\\''") + "'"


def test_other_special_files_are_still_refused(tmp_path: Path) -> None:
    init_ledger(tmp_path / "lg").close()
    out = CliRunner().invoke(main, ["append", "/dev/zero", "--ledger", str(tmp_path / "lg")])
    assert out.exit_code != 0
    assert "a character device" in out.output and "nothing appended" in out.output
