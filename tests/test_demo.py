"""`vledger demo` (what `make demo` runs) drives every step end to end and says so."""

import os
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from ledger.cli import main
from ledger.log.store import open_ledger


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Result]:
    """One demo for the tests that read it (the demo takes seconds), with $VLEDGER_HOME set
    to show the demo never builds (so never removes) the user's own ledger there."""
    tmp_path = tmp_path_factory.mktemp("demo")
    cwd = Path.cwd()
    os.chdir(tmp_path)
    try:
        env = {"VLEDGER_HOME": str(tmp_path / "home")}
        return tmp_path, CliRunner().invoke(main, ["demo", "--report", "out.html"], env=env)
    finally:
        os.chdir(cwd)


def test_demo_runs_every_step_and_leaves_a_verifiable_ledger(demo_run: tuple[Path, Result]) -> None:
    tmp_path, result = demo_run
    assert result.exit_code == 0, result.output
    for step in (
        "ingest",
        "record units",
        "checkpoint",
        "retrace",
        "reconcile",
        "admissions",
        "verify",
        "receipt",
        "report",
    ):
        assert f"✓ {step}:" in result.output
    assert "17 recorded trials" in result.output
    assert "no_counter_evidence, κ 1.000, 17 observations" in result.output
    assert "always_false" in result.output and "always_true" in result.output
    assert ": clean" in result.output
    assert (tmp_path / "out.html").stat().st_size > 0
    with open_ledger(tmp_path / ".vledger-demo") as lg:
        assert len(list(lg.read(type="grade.replayed"))) == 17
        assert len(list(lg.read(type="verdict.admitted"))) == 5
    assert (tmp_path / ".vledger-demo.key.pub").is_file()
    assert not (tmp_path / "home").exists()


def test_the_ledger_given_before_demo_holds_everything_the_demo_writes(
    tmp_path: Path, monkeypatch
) -> None:
    """``vledger --ledger X demo``: the ledger at X, its key beside it, the report in X's
    folder; nothing in the working directory."""
    cwd, out = tmp_path / "cwd", tmp_path / "out"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    result = CliRunner().invoke(main, ["--ledger", str(out / "x"), "demo"])
    assert result.exit_code == 0, result.output
    assert list(cwd.iterdir()) == []
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "x", "x.key", "x.key.pub"]
    with open_ledger(out / "x") as lg:
        assert len(list(lg.read(type="grade.replayed"))) == 17
    assert result.output.rstrip().endswith((out / "report.html").resolve().as_uri())


def test_two_different_ledgers_for_the_demo_are_refused(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["--ledger", "a", "demo", "--ledger", "b"])
    assert result.exit_code == 2
    assert "--ledger a" in result.output and "--ledger b" in result.output
    assert list(tmp_path.iterdir()) == []


def test_demo_refuses_to_remove_a_directory_that_is_not_a_ledger(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    result = CliRunner().invoke(main, ["demo", "--ledger", "mine"])
    assert result.exit_code != 0
    assert "is not a ledger" in result.output
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def test_demo_output_is_plain_words_and_portable(demo_run: tuple[Path, Result]) -> None:
    """The retrace step reads as words (no Python dict), and the last
    line is a file:// address any browser opens (no macOS-only `open`)."""
    tmp_path, result = demo_run
    assert result.exit_code == 0, result.output
    retrace_line = next(line for line in result.output.splitlines() if "✓ retrace:" in line)
    assert "✓ retrace: 17 agreed trials;" in retrace_line
    assert "{" not in retrace_line and "'" not in retrace_line
    last = result.output.rstrip().splitlines()[-1]
    assert last.endswith((tmp_path / "out.html").resolve().as_uri())
    assert not any(line.strip().startswith("open ") for line in result.output.splitlines())


def test_every_command_it_suggests_runs_where_it_ran(
    demo_run: tuple[Path, Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each "Next, try" line, typed in the directory the demo ran in, exits 0 (the grade
    line named the bundle relative to the checkout, so it failed anywhere else)."""
    import shlex

    tmp_path, result = demo_run
    tried = result.output.split("Next, try:\n", 1)[1].split("\nand open the report", 1)[0]
    commands = [shlex.split(line.split(" | ")[0]) for line in tried.splitlines()]
    assert [c[:2] for c in commands] == [["vledger", v] for v in ("log", "sql", "grade", "prove")]
    monkeypatch.chdir(tmp_path)
    for argv in commands:
        got = CliRunner().invoke(main, argv[1:])
        assert got.exit_code == 0, (argv, got.output)
