"""A newcomer's first hour works: what the README promises a first-time user, beyond
what tests/test_output_rules.py, tests/test_readme_commands.py and tests/test_export.py
cover."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import ledger.app.ingest as ingest_mod
from ledger.cli import main

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT / "corpora"


# --- an empty path (an unset shell variable) is refused, never the working directory -------


@pytest.mark.parametrize(
    "args",
    [
        ["ingest", ""],
        ["keygen", "--out", ""],
        ["--ledger", "", "log"],
        ["sql", "select 1", "--out", ""],
        ["export", "--parquet", ""],
        ["verdict", "record", ""],
    ],
)
def test_an_empty_path_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    """`Path("")` is `.`: `ingest ""` ingested the working directory under its folder's
    name, and `keygen --out ""` reached the user as a traceback. Exit 2, nothing written."""
    import shutil  # noqa: PLC0415

    shutil.copytree(CORPORA / "notes_duplicate_check" / "met", tmp_path / "met")
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2 and "an empty path" in res.stderr, (res.output, res.exception)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["met"]


@pytest.mark.parametrize("where", ["file", "file/sub"])
def test_a_ledger_path_naming_a_file_is_a_usage_error(tmp_path: Path, where: str) -> None:
    """$VLEDGER_HOME (which click does not check as it checks --ledger) naming a file, or a
    path inside one: exit 2 naming it, for init, ingest and a reader alike (init and
    ingest reached the user as a FileExistsError / NotADirectoryError traceback)."""
    (tmp_path / "file").write_text("not a ledger")
    env = {"VLEDGER_HOME": str(tmp_path / where)}
    for args in (["init"], ["ingest", str(CORPORA / "packs")], ["log"]):
        res = CliRunner().invoke(main, args, env=env)
        assert res.exit_code == 2 and str(tmp_path / "file") in res.stderr, (args, res.output)
        assert "a ledger is a directory" in res.stderr
    assert (tmp_path / "file").read_text() == "not a ledger"


@pytest.mark.parametrize(
    "args",
    [["ingest", "--max-file-bytes", "-5", "x"], ["log", "--busy-timeout", "-1"]],
)
def test_a_negative_bound_is_a_usage_error(args: list[str]) -> None:
    """It was taken as given: `ingest --max-file-bytes -5` refused every file as "over the
    -5-byte limit", and a negative --busy-timeout meant no wait at all."""
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2 and "is not in the range" in res.stderr, res.output


# --- 8: a mistyped path leaves no new ledger behind ------------------------------------


def test_ingest_of_a_mistyped_path_leaves_no_new_ledger(tmp_path: Path) -> None:
    new = tmp_path / "NEW"
    res = CliRunner().invoke(
        main, ["ingest", "--ledger", str(new), str(tmp_path / "corpora" / "typo")]
    )
    assert res.exit_code == 1, res.output
    assert not new.exists()
    assert f"the new ledger {str(new)!r} was removed" in res.stderr


def test_ingest_of_a_mistyped_path_into_a_folder_of_other_files_removes_only_its_own(
    tmp_path: Path,
) -> None:
    """--ledger naming an existing folder that is no ledger (a corpus, say): an abort
    removes the store files it created and nothing else. They were left behind, and the
    message said "the ledger is unchanged"."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "keep.txt").write_text("mine")
    real = ingest_mod.run

    def run_writing_beside(lg: Any, *a: Any, **kw: Any) -> Any:  # another writer, meanwhile
        (folder / "theirs.txt").write_text("theirs")
        return real(lg, *a, **kw)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ingest_mod, "run", run_writing_beside)
        res = CliRunner().invoke(main, ["ingest", "--ledger", str(folder), str(tmp_path / "typo")])
    assert res.exit_code == 1, res.output
    assert sorted(p.name for p in folder.iterdir()) == ["keep.txt", "theirs.txt"]
    assert (folder / "keep.txt").read_text() == "mine"
    assert "no ledger at" in res.stderr and "files were removed from" in res.stderr


def test_ctrl_c_is_its_own_exit_code_and_an_interrupted_ingest_leaves_no_new_ledger(
    tmp_path: Path,
) -> None:
    """Click answered Ctrl-C with "Aborted!" and exit 1, a failed check's code, and an
    ingest creating its ledger left it behind, empty. An existing ledger stays as it was."""
    notes = ROOT / "corpora" / "notes_duplicate_check"

    def interrupted(*_a: Any, **_kw: Any) -> Any:
        raise KeyboardInterrupt

    old = tmp_path / "OLD"
    assert CliRunner().invoke(main, ["init", "--ledger", str(old)]).exit_code == 0
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ingest_mod, "run", interrupted)
        for where in (tmp_path / "NEW", old):
            res = CliRunner().invoke(main, ["ingest", "--ledger", str(where), str(notes)])
            assert res.exit_code == 130, res.output
            assert "interrupted (Ctrl-C)" in res.stderr and "Aborted" not in res.output
    assert not (tmp_path / "NEW").exists()
    assert (old / "events.duckdb").exists()


def test_ingest_failing_into_an_existing_ledger_keeps_it(tmp_path: Path) -> None:
    old = tmp_path / "OLD"
    assert CliRunner().invoke(main, ["init", "--ledger", str(old)]).exit_code == 0
    res = CliRunner().invoke(main, ["ingest", "--ledger", str(old), str(tmp_path / "typo")])
    assert res.exit_code == 1
    assert (old / "events.duckdb").exists()
    assert "the ledger is unchanged" in res.stderr


# --- 11: make demo installs only what the demo needs, and nothing deprecated ----------


def _make_dry_run(target: str, tmp_path: Path) -> str:
    """``make -n TARGET`` in a fresh copy of the Makefile and build inputs (no .venv yet):
    the commands a fresh clone would run, run by nothing."""
    import shutil
    import subprocess

    for name in ("Makefile", "pyproject.toml", "setup.py"):
        shutil.copyfile(ROOT / name, tmp_path / name)
    (tmp_path / "ledger" / "log").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ROOT / "ledger" / "log" / "native.c", tmp_path / "ledger" / "log" / "native.c")
    proc = subprocess.run(["make", "-n", target], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _installs(commands: str) -> list[str]:
    return [
        line.split("pip install", 1)[1].split()
        for line in commands.splitlines()
        if "pip install" in line and "--upgrade pip" not in line
    ]


def test_make_demo_installs_the_package_without_extras(tmp_path: Path) -> None:
    installs = _installs(_make_dry_run("demo", tmp_path))
    assert installs == [["-q", "-e", "."]]


def test_make_test_installs_the_dev_and_ray_extras(tmp_path: Path) -> None:
    installs = _installs(_make_dry_run("test", tmp_path))
    assert installs == [["-q", "-e", "'.[dev,ray]'"]]


def test_the_demo_runs_without_dev_tools_or_ray(tmp_path: Path) -> None:
    """What `make demo` leaves out, the demo must not import: run it with those imports
    refused."""
    import os
    import subprocess
    import sys

    blocker = (
        "import sys, importlib.abc\n"
        "class Refuse(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in {'ray', 'pytest', 'hypothesis', 'xdist', 'ruff'}:\n"
        "            raise ImportError(f'{name} is not installed by make demo')\n"
        "sys.meta_path.insert(0, Refuse())\n"
        "from ledger.cli import main\n"
        "sys.exit(main(['demo', '--report', 'r.html']))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", blocker],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "✓ report" in proc.stdout


def test_pyproject_license_is_an_spdx_string() -> None:
    """setuptools ≥ 77 warns (twice per install) on the TOML-table form; the string form
    needs ≥ 77 at build time (PEP 639)."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["license"] == "Apache-2.0"
    assert "setuptools>=77" in project["build-system"]["requires"][0]


# --- 10: --ledger anywhere, log --limit/--nl, a pipe that closes, --json everywhere -----


def _ledger_with_notes(tmp_path: Path) -> Path:
    led = tmp_path / "L"
    res = CliRunner().invoke(
        main,
        [
            "ingest",
            "--ledger",
            str(led),
            "--busy-timeout",
            "2",
            str(CORPORA / "notes_duplicate_check"),
        ],
    )
    assert res.exit_code == 0, res.output
    return led


def test_ledger_before_the_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    led = _ledger_with_notes(tmp_path)
    before = CliRunner().invoke(main, ["--ledger", str(led), "log", "--limit", "3"])
    after = CliRunner().invoke(main, ["log", "--ledger", str(led), "--limit", "3"])
    assert before.exit_code == 0, before.output
    assert before.stdout == after.stdout and len(before.stdout.splitlines()) == 3
    clash = CliRunner().invoke(main, ["--ledger", str(led), "log", "--ledger", str(tmp_path / "x")])
    assert clash.exit_code == 2 and "clash" in clash.stderr
    # one directory, spelled relatively and absolutely (or through a link), is no clash
    (tmp_path / "link").symlink_to(led, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    for other in (str(led.relative_to(tmp_path)), "link/", f"./{led.name}/."):
        same = CliRunner().invoke(
            main, ["--ledger", str(led), "log", "--ledger", other, "--limit", "3"]
        )
        assert same.exit_code == 0 and same.stdout == before.stdout, (other, same.output)


def test_log_limit_and_json_lines(tmp_path: Path) -> None:
    import json

    led = _ledger_with_notes(tmp_path)
    nl = CliRunner().invoke(main, ["log", "--ledger", str(led), "--limit", "4", "--nl"])
    lines = nl.stdout.splitlines()
    assert [json.loads(line)["seq"] for line in lines] == [0, 1, 2, 3]
    arr = CliRunner().invoke(main, ["log", "--ledger", str(led), "--limit", "4", "--json"])
    assert [e["seq"] for e in json.loads(arr.stdout)] == [0, 1, 2, 3]


def test_log_json_into_head_exits_0(tmp_path: Path) -> None:
    """The reader closing the pipe early is not an error (it was exit 1, with a traceback)."""
    import os
    import subprocess
    import sys

    led = _ledger_with_notes(tmp_path)  # ~400 events: far more than one pipe buffer
    vledger = Path(sys.executable).parent / "vledger"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        ["bash", "-c", f"set -o pipefail; '{vledger}' log --ledger '{led}' --json | head -c 200"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("[") and proc.stderr == ""


def test_json_on_every_recording_verb(tmp_path: Path) -> None:
    import json

    def run(*args: str) -> dict:
        res = CliRunner().invoke(main, [*args, "--json"])
        assert res.exit_code == 0, (args, res.output)
        return json.loads(res.stdout)

    led, key = str(tmp_path / "L"), str(tmp_path / "k")
    assert run("init", "--ledger", led)["ledger"] == led
    made = run("keygen", "--out", key, "--ledger", led)
    assert made["public_key"] == key + ".pub" and made["verifier"].startswith("vledger")
    unit = ["--ledger", led]
    declared = run(
        "verdict",
        "declare",
        "u1",
        "--oracle",
        "t",
        "--tier",
        "constructed_check",
        "--author",
        "a",
        "--author-kind",
        "human",
        *unit,
    )
    assert declared == {"type": "oracle.declared", "unit": "u1", "seq": 0}
    assert (
        run(
            "verdict",
            "produced",
            "u1",
            "--producer",
            "p",
            "--producer-kind",
            "agent",
            "--content-identity",
            "sha:a",
            *unit,
        )["seq"]
        == 1
    )
    assert (
        run(
            "verdict",
            "ran",
            "u1",
            "--oracle",
            "t",
            "--passed",
            "--runner",
            "r",
            "--runner-kind",
            "kernel",
            "--content-identity",
            "sha:a",
            *unit,
        )["seq"]
        == 2
    )
    cp = run("checkpoint", "--key", key, *unit)
    assert cp["size"] == 3 and cp["note"].splitlines()[1] == "3"
    proof = run("prove", "1", *unit)
    text = CliRunner().invoke(main, ["prove", "1", *unit]).stdout
    assert proof["tlog_proof"] == text and proof["size"] == 3 and proof["root"] == cp["root"]
    (units_file := tmp_path / "u.jsonl").write_text('{"type": "admit", "unit": "u1"}\n')
    recorded = run("verdict", "record", str(units_file), *unit)["recorded"]
    assert [(r["type"], r["unit"]) for r in recorded] == [("admit", "u1")]
    rep = run("report", "--out", str(tmp_path / "r.html"), *unit)
    assert rep["events"] == 4 and rep["units"] == 1 and (tmp_path / "r.html").exists()


def test_parquet_is_never_written_to_a_terminal(tmp_path: Path, monkeypatch) -> None:
    import ledger.cli.analytics as sql_cli

    monkeypatch.setattr(sql_cli, "is_terminal", lambda: True)
    assert CliRunner().invoke(main, ["init", "--ledger", str(tmp_path / "L")]).exit_code == 0
    res = CliRunner().invoke(
        main, ["sql", "--ledger", str(tmp_path / "L"), "SELECT 1 AS one", "--format", "parquet"]
    )
    assert res.exit_code == 2 and res.stdout_bytes == b""
    assert "--out FILE" in res.stderr
