"""`vledger demo` (what `make demo` runs) drives every step end to end and says so."""

from pathlib import Path

from click.testing import CliRunner

from ledger.cli import main
from ledger.store import open_ledger


def test_demo_runs_every_step_and_leaves_a_verifiable_ledger(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["demo", "--report", "out.html"])
    assert result.exit_code == 0, result.output
    for step in ("ingest", "record units", "checkpoint", "retrace", "reconcile", "admissions",
                 "verify", "receipt", "report"):
        assert f"✓ {step}:" in result.output
    assert "17 recorded trials" in result.output
    assert "no_counter_evidence, κ 1.0, 17 observations" in result.output
    assert "always_false" in result.output and "always_true" in result.output
    assert ": clean" in result.output
    assert (tmp_path / "out.html").stat().st_size > 0
    with open_ledger(tmp_path / ".vledger-demo") as lg:
        assert len(list(lg.read(type="grade.replayed"))) == 17
        assert len(list(lg.read(type="verdict.admitted"))) == 5


def test_demo_refuses_to_remove_a_directory_that_is_not_a_ledger(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    result = CliRunner().invoke(main, ["demo", "--ledger", "mine"])
    assert result.exit_code != 0
    assert "is not a ledger" in result.output
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"
