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


def test_small_batches_append_the_same_events_in_the_same_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger.ingest(NOTES, DEMO_RUN, ledger=tmp_path / "one")
    appends: list[int] = []
    real = ingest_spool.append_in_batches

    def counting(lg, groups):
        append = lg.append
        lg.append = lambda batch: appends.append(len(batch)) or append(batch)
        return real(lg, groups)

    monkeypatch.setattr(ingest_spool, "BATCH_BYTES", 1)  # a batch per stream
    monkeypatch.setattr("ledger.app.ingest.append_in_batches", counting)
    result = ledger.ingest(NOTES, DEMO_RUN, ledger=tmp_path / "many")
    assert len(appends) == 18  # 17 trials and a run, each whole in its own batch
    assert (result.first_seq, result.last_seq) == (0, sum(appends) - 1)
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


def test_a_store_refusal_after_committed_batches_does_not_claim_the_ledger_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batches commit one by one (flat memory): when the store refuses a later
    batch, the error names what was appended and says to re-run, never 'unchanged'."""
    from ledger.errors import LedgerBusy
    from ledger.log.store import Ledger

    monkeypatch.setattr(ingest_spool, "BATCH_BYTES", 1)  # one stream per batch
    real = Ledger.append
    calls = {"n": 0}

    def flaky(self: Ledger, events: Any, *a: Any, **kw: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 3:
            raise LedgerBusy(self.path, 0.0)
        return real(self, events, *a, **kw)

    monkeypatch.setattr(Ledger, "append", flaky)
    fresh = tmp_path / "fresh"
    with pytest.raises(LedgerBusy):  # a ledger this call created goes, batches and all
        ledger.ingest(str(NOTES), ledger=fresh)
    assert not fresh.exists()
    calls["n"] = 0
    lg_dir = tmp_path / "lg"
    ledger.init(lg_dir).close()
    with pytest.raises(ingest_spool.IngestInterrupted) as info:
        ledger.ingest(str(NOTES), ledger=lg_dir)
    assert info.value.exit_code == LedgerBusy.exit_code
    assert "were appended before it" in str(info.value) and "run the same ingest again" in str(
        info.value
    )
    monkeypatch.setattr(Ledger, "append", real)
    again = ledger.ingest(str(NOTES), ledger=lg_dir).to_json()  # the rest goes in, once
    assert again["trials"]["new"] > 0 and again["trials"]["already_present"] == 2
    assert again["trials"]["new"] + 2 == 17
