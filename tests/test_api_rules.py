"""Every rule a command applies is the API's: ``ledger.X(...)`` refuses what ``vledger X``
refuses, with the same message and exit code, and a result carries its own exit code."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

import ledger
from ledger.cli import main

ROOT = Path(__file__).resolve().parents[1]
NOTES = ROOT / "corpora" / "notes_duplicate_check"
PACKS = ROOT / "corpora" / "packs"


def _cli(*args: object) -> tuple[int, str]:
    done = CliRunner().invoke(main, [str(a) for a in args])
    return done.exit_code, done.output


def _refused(call: object, *cli_args: object) -> ledger.UsageError:
    """The API's refusal and the command's: the same message, usage's exit code (2)."""
    with pytest.raises(ledger.UsageError) as info:
        call()  # type: ignore[operator]
    code, output = _cli(*cli_args)
    assert (info.value.exit_code, code) == (2, 2)
    assert f"Error: {info.value}" in output
    return info.value


def test_an_address_needs_the_ray_engine(tmp_path: Path) -> None:
    exc = _refused(lambda: ledger.retrace(ledger=tmp_path, address="auto"),
                   "retrace", "--ledger", tmp_path, "--address", "auto")  # fmt: skip
    assert "--engine ray" in str(exc)
    _refused(lambda: ledger.reconcile(packs=[PACKS], address="auto", ledger=tmp_path),
             "reconcile", "--packs", PACKS, "--address", "auto", "--ledger", tmp_path)  # fmt: skip
    _refused(lambda: ledger.ingest(NOTES, ledger=tmp_path / "new", address="auto"),
             "ingest", NOTES, "--ledger", tmp_path / "new", "--address", "auto")  # fmt: skip
    assert not (tmp_path / "new").exists()  # refused before anything is read or created


def test_reconcile_refuses_the_ray_engine_on_a_dry_run(tmp_path: Path) -> None:
    _refused(lambda: ledger.reconcile(packs=[PACKS], engine="ray", dry_run=True),
             "reconcile", "--packs", PACKS, "--engine", "ray", "--dry-run")  # fmt: skip


def test_reconcile_without_packs_reads_the_default_or_refuses_as_usage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _refused(lambda: ledger.reconcile(dry_run=True), "reconcile", "--dry-run")
    shutil.copytree(ROOT / "corpora", tmp_path / "corpora")
    result = ledger.reconcile(dry_run=True, ledger=tmp_path / "never-opened")
    assert result.default_packs and result.packs == (Path("corpora/packs"),)
    assert result.exit_code == 0 and not (tmp_path / "never-opened").exists()  # a dry run: no ledger


def test_export_needs_a_target(tmp_path: Path) -> None:
    _refused(lambda: ledger.export(ledger=tmp_path), "export", "--ledger", tmp_path)


def test_curate_that_admits_nothing_carries_exit_code_1(tmp_path: Path) -> None:
    kw = {"criterion": "no_such_criterion", "into": tmp_path / "c", "dry_run": True}
    result = ledger.curate(sources=[NOTES], ledger=tmp_path / "lg", **kw)
    assert result.admitted_nothing and result.exit_code == 1
    assert result.to_json()["exit_code"] == 1
    code, output = _cli("curate", "--criterion", "no_such_criterion", "--source", NOTES,
                        "--into", tmp_path / "c", "--dry-run", "--ledger", tmp_path / "lg")  # fmt: skip
    assert code == result.exit_code and f"Error: {result.refusal}" in output


def test_validate_names_a_migration_that_does_not_load_as_a_finding(tmp_path: Path) -> None:
    pack = tmp_path / "pack"
    shutil.copytree(PACKS / "notes_duplicate_check_narrowed", pack)
    (pack / "migration.yaml").write_text("migrations: [not-a-mapping]\n")
    with pytest.raises(ledger.MigrationLoadError) as info:
        ledger.validate(pack)
    code, output = _cli("validate", pack)
    assert info.value.exit_code == code == 1  # reconcile, which cannot run on it, exits 5
    assert f"Error: {info.value}" in output


def test_events_read_lazily_close_the_store(tmp_path: Path) -> None:
    ledger.init(tmp_path / "lg").close()
    events = tmp_path / "e.jsonl"
    events.write_text("".join(
        f'{{"stream": "ext/a", "type": "ext.note", "payload": {{"i": {i}}}}}\n' for i in range(3)
    ))
    ledger.append(events, ledger=tmp_path / "lg")
    with ledger.events(ledger=tmp_path / "lg", lazy=True) as read:
        rows = list(read.json_rows())
    assert [r["seq"] for r in rows] == [0, 1, 2]
    assert rows == ledger.events(ledger=tmp_path / "lg").to_json()
    with ledger.open(tmp_path / "lg") as lg:  # closed: a writer can open it again
        assert lg.size() == 3


def test_retrace_options_are_declared_once_on_the_request() -> None:
    """The command's flags, the verb's keywords and the request's fields are one list; the
    request takes keywords only, and a keyword it does not know is refused."""
    import dataclasses
    import inspect

    from ledger.app.retrace import RetraceRequest
    from ledger.cli.retrace import retrace_command

    fields = [f.name for f in dataclasses.fields(RetraceRequest)]
    flags = [p.name for p in retrace_command.params if p.name not in ("ledger_dir", "as_json")]
    api_only = {"read_workers"}  # how the source is read, never what is computed
    assert sorted(flags) == sorted(set(fields) - api_only)
    keywords = inspect.signature(ledger.retrace).parameters
    assert [k for k in keywords if k in fields] == fields
    with pytest.raises(TypeError):
        RetraceRequest("corpus")  # type: ignore[misc]
    with pytest.raises(TypeError, match="no_such_option"):
        ledger.retrace(no_such_option=1)


def test_checkpoint_needs_a_key_and_sql_a_query(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VLEDGER_KEY", raising=False)
    ledger.init(tmp_path / "lg").close()
    _refused(lambda: ledger.checkpoint(key=None, ledger=tmp_path / "lg"),
             "checkpoint", "--ledger", tmp_path / "lg")  # fmt: skip
    _refused(lambda: ledger.sql(ledger=tmp_path / "lg"), "sql", "--ledger", tmp_path / "lg")
