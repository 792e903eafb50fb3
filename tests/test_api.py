"""The Python API (docs/readme/api.md): ``import ledger`` is light, every verb resolves,
the page's notebook example runs, and each verdict / receipt / export verb's ``to_json()`` is what
its command prints with ``--json`` on the same ledger and input."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import ledger
from ledger.app.result import Result
from ledger.cli import main
from ledger.log.store import init_ledger, open_ledger
from schemas.canonical import digest
from schemas.envelope import NewEvent
from tests.data_paths import GVC_CASES
from tests.readme_blocks import blocks

ROOT = Path(__file__).resolve().parents[1]
API_PAGE = ROOT / "docs" / "readme" / "api.md"
UNITS = ROOT / "corpora" / "units" / "demo_units.jsonl"
RUN_DIR = ROOT / "corpora" / "verdict-core" / "demo-run"
CASES_FILE = GVC_CASES


# ------------------------------------------------------------------ the namespace


def test_import_ledger_loads_neither_duckdb_nor_pyarrow() -> None:
    code = (
        "import sys, ledger; ledger.API; ledger.LedgerError; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'duckdb', 'pyarrow', 'click'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]"


def test_dir_lists_every_verb() -> None:
    assert set(ledger.API) <= set(dir(ledger))
    assert ledger.__all__ == sorted(ledger.API)
    with pytest.raises(AttributeError, match="no attribute 'no_such_verb'"):
        ledger.no_such_verb  # noqa: B018


@pytest.mark.parametrize("name", sorted(ledger.API))
def test_every_api_entry_resolves(name: str) -> None:
    module, _, attr = ledger.API[name].partition(":")
    value = getattr(ledger, name)
    assert value is getattr(importlib.import_module(module), attr)
    if name in ledger.VERBS:
        assert callable(value)
    if name in ledger.ERRORS:  # every error a verb raises on purpose: one root, its exit code
        assert issubclass(value, ledger.LedgerError) and isinstance(value.exit_code, int)
    if name in ledger.RESULTS and name.endswith("Result") and name != "Result":
        assert issubclass(value, ledger.Result)


@pytest.mark.parametrize("name", sorted(ledger.VERBS))
def test_every_verb_takes_the_ledger_as_a_keyword(name: str) -> None:
    """One shape: ``ledger=`` keyword-only wherever a verb reads a ledger (open and init
    take the directory they open or create)."""
    params = inspect.signature(getattr(ledger, name)).parameters
    if name in ("open", "init", "validate", "verdict_derive"):
        assert "ledger" not in params
        return
    assert params["ledger"].kind is inspect.Parameter.KEYWORD_ONLY
    assert params["ledger"].default is None


def test_the_api_page_session_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The page's python block, run as a reader would from the repository root (a copy of
    ``corpora/``, as reconcile refuses corpora reached through a symlink)."""
    [code] = [body for _, lang, _, body in blocks(API_PAGE, ROOT) if lang == "python"]
    shutil.copytree(ROOT / "corpora", tmp_path / "corpora")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, str(API_PAGE), "exec"), {"__name__": "api_page"})


# ------------------------------------------------- API result == the command's --json


def _cli_json(*args: Any, code: int = 0) -> Any:
    res = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert res.exit_code == code, res.output
    return json.loads(res.stdout)


def _cli_error(*args: Any) -> str:
    res = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert res.exit_code == 1, res.output
    return res.stderr.strip()


def _is_result(value: object) -> bool:
    params = getattr(type(value), "__dataclass_params__", None)
    return isinstance(value, Result) and dataclasses.is_dataclass(value) and params.frozen


@pytest.fixture
def twins(tmp_path: Path) -> tuple[Path, Path]:
    """Two empty ledgers: one written through the CLI, one through the API."""
    for name in ("cli", "api"):
        init_ledger(tmp_path / name).close()
    return tmp_path / "cli", tmp_path / "api"


def test_verdict_writes_match_the_cli(twins: tuple[Path, Path]) -> None:
    cli, api = twins
    steps = [
        (ledger.verdict_declare, ["verdict", "declare", "u1", "--oracle", "tests",
         "--tier", "constructed_check", "--author", "ci-owner", "--author-kind", "human",
         "--command", "pytest -q"],
         dict(oracle="tests", tier="constructed_check", author="ci-owner",
              author_kind="human", command="pytest -q")),
        (ledger.verdict_produced, ["verdict", "produced", "u1", "--producer", "agent-7",
         "--producer-kind", "agent", "--producer-chain", "chain-1",
         "--content-identity", "sha256:ab12", "--grade", "known_answer"],
         dict(producer="agent-7", producer_kind="agent", producer_chain="chain-1",
              content_identity="sha256:ab12", grade="known_answer")),
        (ledger.verdict_ran, ["verdict", "ran", "u1", "--oracle", "tests", "--passed",
         "--runner", "ci", "--runner-kind", "kernel", "--content-identity", "sha256:ab12",
         "--exit-code", "0", "--evidence", "log://1"],
         dict(oracle="tests", passed=True, runner="ci", runner_kind="kernel",
              content_identity="sha256:ab12", exit_code=0, evidence="log://1")),
        (ledger.verdict_admit, ["verdict", "admit", "u1"], {}),
    ]  # fmt: skip
    for api_fn, args, kw in steps:
        want = _cli_json(*args, "--ledger", cli, "--json")
        got = api_fn("u1", ledger=api, **kw)
        assert _is_result(got) and got.to_json() == want
    assert want["effective_grade"] == "constructed_check"  # the judge's tier, not the claim
    with open_ledger(cli) as a, open_ledger(api) as b:
        assert [e.data() for e in a.read()] == [e.data() for e in b.read()]


def test_verdict_record_and_admissions_match_the_cli(twins: tuple[Path, Path]) -> None:
    cli, api = twins
    want = _cli_json("verdict", "record", UNITS, "--ledger", cli, "--json")
    with open_ledger(api) as lg:  # ledger= also takes an open store, left open
        got = ledger.verdict_record(UNITS, ledger=lg)
        assert lg.size() == len(want["recorded"])
    assert _is_result(got) and got.to_json() == want
    again = ledger.verdict_record(str(UNITS), ledger=api)  # a repeat is a no-op
    assert all(w.duplicate for w in again.recorded)
    listed = ledger.admissions(ledger=api)
    assert _is_result(listed)
    assert listed.to_json() == _cli_json("admissions", "--ledger", cli, "--json")
    assert [r.unit for r in listed.admissions][:2] == ["never-checked", "stale-evidence"]


def test_verdict_derive_matches_the_cli() -> None:
    want = _cli_json("verdict", "derive", CASES_FILE, "--json", "--check")
    got = ledger.verdict_derive(CASES_FILE, check=True)
    assert _is_result(got) and got.to_json() == want and got.ok and got.failing == []
    assert len(got.cases) == len(want["cases"]) > 0


def test_verdict_errors_are_the_cli_error_lines(twins: tuple[Path, Path], tmp_path: Path) -> None:
    cli, api = twins
    args = ["--oracle", "nope", "--failed", "--runner", "ci", "--runner-kind", "kernel"]
    line = _cli_error("verdict", "ran", "u1", *args, "--ledger", cli)
    with pytest.raises(ledger.LedgerError) as info:
        ledger.verdict_ran("u1", oracle="nope", passed=False, runner="ci",
                           runner_kind="kernel", ledger=api)  # fmt: skip
    assert line == f"Error: {info.value}" and "nope" in line
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "admit", "unit": "u1", "extra": 1}\n')
    line = _cli_error("verdict", "record", bad, "--ledger", cli)
    with pytest.raises(ledger.LedgerError) as info:
        ledger.verdict_record(bad, ledger=api)
    assert line == f"Error: {info.value}" and f"{bad}:1:" in line
    with pytest.raises(ledger.LedgerError, match="no ledger at"):
        ledger.admissions(ledger=tmp_path / "absent")


def test_receipt_verify_and_show_match_the_cli(tmp_path: Path) -> None:
    home = tmp_path / "lg"
    with init_ledger(home) as lg:
        lg.append([NewEvent(f"ext/{i}", "ext.note", {"i": i}) for i in range(3)])
        body = {"checkpoint": {"size": 3, "root": lg.root(3).hex()},
                "config_digest": digest({"cfg": 1}), "outputs_digest": digest({"out": 3})}  # fmt: skip
        seq = lg.append([NewEvent("replay/r", "replay.completed", {"replay_id": "r", **body})])
    ident = str(seq.seqs[0])
    for target, kw in ((ident, {}), (str(RUN_DIR), {}), (str(RUN_DIR), {"strict": True})):
        flags = ["--strict"] if kw else []
        want = _cli_json("receipt", "verify", target, *flags, "--ledger", home, "--json")
        got = ledger.receipt_verify(target, ledger=home, **kw)
        assert _is_result(got) and got.to_json() == want and got.ok
    shown = ledger.receipt_show(ident, ledger=home)
    assert _is_result(shown)
    assert shown.to_json() == _cli_json("receipt", "show", ident, "--ledger", home, "--json")
    assert shown.to_json()["checkpoint"] == body["checkpoint"]
    line = _cli_error("receipt", "show", "0", "--ledger", home)
    with pytest.raises(ledger.LedgerError) as info:
        ledger.receipt_show("0", ledger=home)
    assert line == f"Error: {info.value}"


def test_export_matches_the_cli(tmp_path: Path) -> None:
    home = tmp_path / "lg"
    with init_ledger(home) as lg:
        lg.append([NewEvent(f"ext/{i}", "ext.note", {"i": i}) for i in range(4)])
    want = _cli_json("export", "--ledger", home, "--parquet", tmp_path / "a", "--otel",
                     tmp_path / "a.json", "--json")  # fmt: skip
    got = ledger.export(ledger=home, parquet=tmp_path / "b", otel=tmp_path / "b.json")
    assert _is_result(got)
    renamed = {**want, "directory": str(tmp_path / "b"), "otel": str(tmp_path / "b.json")}
    assert got.to_json() == renamed and got.to_json()["rows"] == 4
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    line = _cli_error("export", "--ledger", home, "--parquet", tmp_path / "a")
    with pytest.raises(ledger.LedgerError) as info:
        ledger.export(ledger=home, parquet=tmp_path / "a")
    assert line == f"Error: {info.value}" and "not an empty directory" in line
    with pytest.raises(ledger.LedgerError, match="--parquet DIR, --otel FILE or both"):
        ledger.export(ledger=home)


def test_the_api_page_shows_each_verb_once() -> None:
    """docs/readme/api.md's verbs table: one row per verb of ``ledger.VERBS``, no other."""
    import re

    text = API_PAGE.read_text()
    table = text[text.index("## The verbs") : text.index("## Which ledger")]
    rows = re.findall(r"^\| `(\w+)\(", table, flags=re.MULTILINE)
    assert sorted(rows) == sorted(ledger.VERBS)
    assert len(rows) == len(set(rows))
