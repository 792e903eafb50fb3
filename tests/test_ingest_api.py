"""``ledger.ingest``: the API the CLI renders, and the bounded batches it appends in."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import ledger
from ledger.app import ingest_spool
from ledger.app.ingest import IngestError, IngestResult
from ledger.cli import main
from ledger.log.store import open_ledger
from tests.data_paths import NOTES, VCORE_DEMO_RUN

DEMO_RUN = VCORE_DEMO_RUN


def _cli_json(*args: str) -> dict:
    result = CliRunner().invoke(main, ["ingest", "--json", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _rows(path: Path) -> list[tuple]:
    with open_ledger(path) as lg:
        return [(e.seq, e.stream, e.event_id, e.type, e.payload) for e in lg.read()]


def test_api_result_is_what_the_cli_prints(tmp_path: Path) -> None:
    api, cli = tmp_path / "api", tmp_path / "cli"
    for _ in range(2):  # new, then already present
        result = ledger.ingest(str(NOTES), DEMO_RUN, ledger=api)
        assert isinstance(result, IngestResult)
        assert result.to_json() == _cli_json("--ledger", str(cli), str(NOTES), str(DEMO_RUN))
    assert result.trials_present == 17 and result.events_new == 0
    assert _rows(api) == _rows(cli)


def test_an_open_store_is_used_and_left_open(tmp_path: Path) -> None:
    with open_ledger(tmp_path / "lg", create=True) as lg:
        first = ledger.ingest(DEMO_RUN, ledger=lg)
        assert first.runs_new == 1 and lg.size() == first.last_seq + 1


def test_small_parts_append_the_same_events_in_the_same_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ledger.log.store import Ledger

    ledger.ingest(NOTES, DEMO_RUN, ledger=tmp_path / "one")
    parts: list[int] = []
    real = Ledger._append_in_tx

    def counting(self: Ledger, batch: Any, *a: Any, **kw: Any) -> Any:
        parts.append(len(batch))
        return real(self, batch, *a, **kw)

    monkeypatch.setattr(ingest_spool, "BATCH_BYTES", 1)  # a part per stream
    monkeypatch.setattr(Ledger, "_append_in_tx", counting)
    result = ledger.ingest(NOTES, DEMO_RUN, ledger=tmp_path / "many")
    assert len(parts) == 18  # 17 trials and a run, each inserted as its own part
    assert (result.first_seq, result.last_seq) == (0, sum(parts) - 1)
    assert _rows(tmp_path / "many") == _rows(tmp_path / "one")


def test_a_bad_input_after_many_batches_worth_appends_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ingest_spool, "BATCH_BYTES", 1)
    bad = tmp_path / "bad"
    shutil.copytree(NOTES / "met", bad)
    last = sorted(p for p in bad.iterdir() if p.is_dir())[-1]
    (last / "grade.yaml").write_text("binary_pass: [unclosed\n")
    ledger.ingest(DEMO_RUN, ledger=tmp_path / "lg")
    size = len(_rows(tmp_path / "lg"))
    with pytest.raises(IngestError, match="grade.yaml"):
        ledger.ingest(bad, ledger=tmp_path / "lg")
    assert len(_rows(tmp_path / "lg")) == size
    with pytest.raises(IngestError, match="no such file"):
        ledger.ingest(tmp_path / "typo", ledger=tmp_path / "new")
    assert not (tmp_path / "new").exists()  # a ledger the call created is removed again


def test_a_store_refusal_after_inserted_parts_leaves_the_ledger_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parts are inserted as the inputs are read, all in one transaction: when the store
    refuses a later part, the earlier ones roll back with it, and a re-run appends all."""
    from ledger.errors import LedgerBusy
    from ledger.log.store import Ledger

    monkeypatch.setattr(ingest_spool, "BATCH_BYTES", 1)  # one stream per part
    real = Ledger._append_in_tx
    calls = {"n": 0}

    def flaky(self: Ledger, batch: Any, *a: Any, **kw: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 3:
            raise LedgerBusy(self.path, 0.0)
        return real(self, batch, *a, **kw)

    monkeypatch.setattr(Ledger, "_append_in_tx", flaky)
    fresh = tmp_path / "fresh"
    with pytest.raises(LedgerBusy):  # a ledger this call created goes
        ledger.ingest(str(NOTES), ledger=fresh)
    assert not fresh.exists()
    calls["n"] = 0
    lg_dir = tmp_path / "lg"
    ledger.ingest(DEMO_RUN, ledger=lg_dir)
    before = _rows(lg_dir)
    calls["n"] = 0
    with pytest.raises(LedgerBusy):
        ledger.ingest(str(NOTES), ledger=lg_dir)
    assert calls["n"] == 3 and _rows(lg_dir) == before  # two parts went in, and back out
    monkeypatch.setattr(Ledger, "_append_in_tx", real)
    again = ledger.ingest(str(NOTES), ledger=lg_dir).to_json()
    assert again["trials"] == {"new": 17, "already_present": 0}
