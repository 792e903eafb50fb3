"""Issue 20 ("a newcomer's first hour works"): one test per numbered point not covered by
tests/test_output_rules.py (5, 6), tests/test_readme_commands.py (1, 7) or
tests/test_export.py (9)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from ledger.cli import main

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT / "corpora"


# --- 8: a mistyped path leaves no new ledger behind ------------------------------------


def test_ingest_of_a_mistyped_path_leaves_no_new_ledger(tmp_path: Path) -> None:
    new = tmp_path / "NEW"
    res = CliRunner().invoke(
        main, ["ingest", "--ledger", str(new), str(tmp_path / "corpora" / "typo")]
    )
    assert res.exit_code == 1, res.output
    assert not new.exists()
    assert f"the new ledger {str(new)!r} was removed" in res.stderr


def test_ingest_failing_into_an_existing_ledger_keeps_it(tmp_path: Path) -> None:
    old = tmp_path / "OLD"
    assert CliRunner().invoke(main, ["init", "--ledger", str(old)]).exit_code == 0
    res = CliRunner().invoke(main, ["ingest", "--ledger", str(old), str(tmp_path / "typo")])
    assert res.exit_code == 1
    assert (old / "events.duckdb").exists()
    assert "the ledger is unchanged" in res.stderr
