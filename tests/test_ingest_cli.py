"""`vledger ingest`: JSON output, summary line, exit codes, ledger unchanged on abort."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from ledger.cli import main
from ledger.log.store import open_ledger
from tests.data_paths import NOTES, VCORE_DEMO_RUN

ROOT = Path(__file__).resolve().parents[1]
DEMO_RUN = VCORE_DEMO_RUN


def _run(*args: str):
    return CliRunner().invoke(main, ["ingest", *args], catch_exceptions=False)


def test_json_report_then_nothing_new(tmp_path: Path) -> None:
    lg = tmp_path / "lg"
    first = _run("--ledger", str(lg), "--json", str(NOTES), str(DEMO_RUN))
    assert first.exit_code == 0, first.output
    body = json.loads(first.stdout)
    body["trial_streams"] = sorted(body["trial_streams"])
    with open_ledger(lg) as ledger:
        size = ledger.size()
    assert body == {
        "paths": [
            {"path": str(NOTES), "kind": "multi_corpus"},
            {"path": str(DEMO_RUN), "kind": "verdict_run"},
        ],
        "trials": {"new": 17, "already_present": 0},
        "packs": {"new": 0, "already_present": 0},
        "runs": {"new": 1, "already_present": 0},
        "events": {"new": size, "already_present": 0},
        "inconsistent": [],
        "skipped": [],
        "trial_streams": sorted(
            f"trial/notes_duplicate_check/{yaml.safe_load((b / 'trajectory.yaml').read_text())['task_id']}/{b.name}"
            for b in (p.parent for p in NOTES.glob("*/*/trajectory.yaml"))
        ),
        "first_seq": 0,
        "last_seq": size - 1,
    }
    again = _run("--ledger", str(lg), str(NOTES), str(DEMO_RUN))
    assert again.exit_code == 0
    assert f"Ingested: 0 new, {size} already present" in again.stdout


def test_bad_input_exits_1_and_changes_nothing(tmp_path: Path) -> None:
    lg = tmp_path / "lg"
    assert _run("--ledger", str(lg), str(DEMO_RUN)).exit_code == 0
    with open_ledger(lg) as ledger:
        size = ledger.size()
    bad = tmp_path / "bad"
    shutil.copytree(NOTES / "met", bad)
    bundle = sorted(p for p in bad.iterdir() if p.is_dir())[0]
    (bundle / "grade.yaml").write_text("binary_pass: [unclosed\n")
    result = _run("--ledger", str(lg), str(bad))
    assert result.exit_code == 1
    assert f"Error: {bundle}/grade.yaml:" in result.stderr
    assert "the ledger is unchanged" in result.stderr
    with open_ledger(lg) as ledger:
        assert ledger.size() == size
    skipped = _run("--ledger", str(lg), "--skip-bad", "--json", str(bad))
    assert skipped.exit_code == 0
    body = json.loads(skipped.stdout)
    assert body["trials"]["new"] == 11
    assert [s["source"] for s in body["skipped"]] == [str(bundle)]


def test_progress_bar_reports_every_input(tmp_path: Path) -> None:
    """The progress path (taken on a terminal) ingests the same and shows the bar."""
    import io

    from rich.console import Console

    from ledger.cli.ingest import _with_progress
    from ledger.defaults import DEFAULT_MAX_BYTES

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=120)
    with open_ledger(tmp_path / "lg", create=True) as ledger:
        paths = [str(NOTES)]
        report = _with_progress(console, ledger, paths, None, False, False, DEFAULT_MAX_BYTES)
        assert report.trials_new == 17
    assert "ingest" in buf.getvalue() and "17/17" in buf.getvalue()


def test_progress_callback_counts_up_to_the_total(tmp_path: Path) -> None:
    from ledger.app.ingest import ingest_into as ingest

    seen: list[tuple[int, int]] = []
    with open_ledger(tmp_path / "lg", create=True) as ledger:
        ingest(ledger, [NOTES], progress=lambda done, total, _src: seen.append((done, total)))
    assert seen[0] == (0, 17) and seen[-1] == (17, 17)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_creating_a_ledger_suggests_choosing_one_only_when_none_was_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = next(p.parent for p in sorted(Path(NOTES).rglob("trajectory.yaml")))
    monkeypatch.delenv("VLEDGER_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    named = " ".join(_run("--ledger", str(tmp_path / "lg"), str(bundle)).stderr.split())
    assert "creating one" in named and "pass --ledger" not in named
    default = " ".join(_run(str(bundle)).stderr.split())  # (the console wraps long lines)
    assert "creating one (pass --ledger DIR to choose)" in default
    assert (tmp_path / ".vledger").is_dir()
