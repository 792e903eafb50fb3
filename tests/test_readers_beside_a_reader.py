"""Commands that only read open the ledger read-only: beside another process reading it
(a long `vledger verify`, a notebook), they answer instead of being refused as busy, as a
writer is. Opened to write, they took the writer lock though they append nothing."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

import ledger
from ledger.cli import main
from ledger.log.store import open_ledger

ROOT = Path(__file__).resolve().parents[1]
NOTES = ROOT / "corpora" / "notes_duplicate_check"


def test_reading_commands_answer_beside_another_reader(tmp_path: Path) -> None:
    where = tmp_path / "lg"
    ledger.ingest(NOTES, ledger=where)
    shutil.copytree(ROOT / "corpora" / "packs", tmp_path / "packs")
    with open_ledger(where, read_only=True) as lg:
        stream = next(e.stream for e in lg.read(type="trial.registered"))
    code = ("import sys; from ledger.log.store import open_ledger; "
            "lg = open_ledger(sys.argv[1], read_only=True); print('open', flush=True); "
            "sys.stdin.read(); lg.close()")  # fmt: skip
    reader = subprocess.Popen([sys.executable, "-c", code, str(where)], cwd=ROOT,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert reader.stdout is not None and reader.stdout.readline().strip() == "open"
        led = ["--ledger", str(where)]
        for args in (
            ["admissions"],
            ["grade", stream],
            ["export", "--parquet", str(tmp_path / "pq"), "--otel", str(tmp_path / "t.json")],
            ["retrace", "--dry-run"],
        ):
            res = CliRunner().invoke(main, [*args, *led])
            assert res.exit_code == 0, (args, res.output)
        busy = CliRunner().invoke(main, ["seal", *led, "--busy-timeout", "0"])
        assert busy.exit_code == 3 and "ledger busy" in busy.stderr, busy.output
        sealing = CliRunner().invoke(main, ["export", "--parquet", str(tmp_path / "p2"), "--seal",
                                            *led])  # fmt: skip
        assert sealing.exit_code == 3, sealing.output  # sealing writes: a writer still waits
    finally:
        reader.communicate("")
