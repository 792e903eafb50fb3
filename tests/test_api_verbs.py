"""The Python API under the CLI: for grade, retrace, reconcile, validate and curate, the API
result's ``to_json()`` is exactly what ``vledger VERB --json`` prints on the same inputs
(the 17 shipped trials in corpora/ and the packs in corpora/packs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import ledger
from ledger.app import curate as curate_module
from ledger.app.ingest import ingest_into as ingest
from ledger.cli import main
from ledger.log.store import open_ledger

ROOT = Path(__file__).resolve().parents[1]
NOTES = ROOT / "corpora" / "notes_duplicate_check"
PACKS = ROOT / "corpora" / "packs"
PACK = PACKS / "notes_duplicate_check_narrowed"
CRITERION = "checked_duplicates_first"


def cli_json(*args: str) -> tuple[Any, int]:
    done = CliRunner().invoke(main, [*args, "--json"])
    return json.loads(done.stdout), done.exit_code


@pytest.fixture(scope="module")
def notes_ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("api") / "lg"
    with open_ledger(path, create=True) as lg:
        ingest(lg, [str(NOTES)])
    return path


def test_grade_of_a_bundle_is_the_cli_json() -> None:
    bundle = sorted(p for p in (NOTES / "met").iterdir() if p.is_dir())[0]
    result = ledger.grade(bundle)
    assert result.to_json() == cli_json("grade", str(bundle))[0]
    assert result.to_json()["trial"] == str(bundle) and result.differences == []


def test_grade_of_a_ledger_trial_is_the_cli_json(notes_ledger: Path) -> None:
    with open_ledger(notes_ledger) as lg:
        stream = lg.streams(prefix="trial/")[0]
    result = ledger.grade(stream, ledger=notes_ledger)
    assert result.to_json() == cli_json("grade", stream, "--ledger", str(notes_ledger))[0]


def test_retrace_from_the_log_is_the_cli_json(notes_ledger: Path) -> None:
    result = ledger.retrace(ledger=notes_ledger, dry_run=True)
    doc, code = cli_json("retrace", "--ledger", str(notes_ledger), "--dry-run")
    assert result.to_json() == doc and result.exit_code == code == 0
    assert len(doc["trials"]) == 17


def test_retrace_of_a_source_is_the_cli_json(tmp_path: Path) -> None:
    """--source ingests first: two fresh ledgers, one per door, end in the same replay."""
    result = ledger.retrace(ledger=tmp_path / "a", source=NOTES)
    doc, code = cli_json("retrace", "--source", str(NOTES), "--ledger", str(tmp_path / "b"))
    assert result.appended == 18 and result.exit_code == code
    assert result.to_json()["trials"] == doc["trials"]
    assert result.to_json()["receipt"]["outputs_digest"] == doc["receipt"]["outputs_digest"]


def test_reconcile_dry_run_is_the_cli_json() -> None:
    result = ledger.reconcile(packs=[PACKS], base=ROOT, dry_run=True)
    doc, code = cli_json("reconcile", "--packs", str(PACKS), "--base", str(ROOT), "--dry-run")
    assert result.to_json() == doc and result.exit_code == code
    assert doc["entries"], "the shipped packs declare migrations"


def test_validate_is_the_cli_json() -> None:
    result = ledger.validate(PACK, base=ROOT)
    doc, code = cli_json("validate", str(PACK), "--base", str(ROOT))
    assert result.to_json() == doc and result.exit_code == code
    assert doc["migration"] is True


def test_curate_dry_run_is_the_cli_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(curate_module, "now_utc", lambda: "2026-12-01T00:00:00Z")
    kw = {"criterion": CRITERION, "into": tmp_path / "c", "dry_run": True}
    result = ledger.curate(sources=[NOTES], ledger=tmp_path / "lg", **kw)
    doc, code = cli_json(
        "curate", "--criterion", CRITERION, "--source", str(NOTES), "--into",
        str(tmp_path / "c"), "--dry-run", "--ledger", str(tmp_path / "lg"),
    )  # fmt: skip
    assert result.to_json() == doc and code == 0
    assert len(doc["admitted"]) == 17


def test_curate_mixing_the_two_doors_is_refused_as_usage(tmp_path: Path) -> None:
    with pytest.raises(curate_module.CurateUsage, match="one of the two"):
        ledger.curate(criterion=CRITERION, into=tmp_path / "c", sources=[NOTES], from_ledger=True)
    done = CliRunner().invoke(
        main, ["curate", "--criterion", CRITERION, "--into", str(tmp_path / "c"), "--from-ledger",
               "--source", str(NOTES)],
    )  # fmt: skip
    assert done.exit_code == 2 and "one of the two" in done.output
