"""Commands that only read open the ledger read-only: beside another process reading it
(a long `vledger verify`, a notebook), they answer instead of being refused as busy, as a
writer is. Opened to write, they took the writer lock though they append nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner

import ledger
from ledger.cli import main
from ledger.log.store import open_ledger
from tests.store_helpers import another_reader

ROOT = Path(__file__).resolve().parents[1]
NOTES = ROOT / "corpora" / "notes_duplicate_check"


def test_reading_commands_answer_beside_another_reader(tmp_path: Path) -> None:
    where = tmp_path / "lg"
    ledger.ingest(NOTES, ledger=where)
    shutil.copytree(ROOT / "corpora" / "packs", tmp_path / "packs")
    with open_ledger(where, read_only=True) as lg:
        stream = next(e.stream for e in lg.read(type="trial.registered"))
    with another_reader(where):
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
