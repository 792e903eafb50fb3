"""Each store verb's API function returns what its command's ``--json`` prints.

A verb that writes runs on two byte-identical copies of one ledger (same origin, so the
same checkpoint note and segments): the CLI on one, the API on the other.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import ledger
from ledger.cli import main
from ledger.errors import LedgerError
from ledger.log.keys import keygen
from ledger.log.segments import MANIFEST, SEGMENT_DIR
from ledger.log.store import init_ledger

LINES = [
    '{"stream": "ext/a", "type": "ext.note", "payload": {"i": 0}, "event_id": "e0"}',
    '{"stream": "ext/a", "type": "ext.note", "payload": {"i": 1}}',
    '{"stream": "ext/b", "type": "ext.note", "payload": {"i": 2}}',
]


def cli_json(*args: Any) -> Any:
    res = CliRunner().invoke(main, [str(a) for a in args] + ["--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


@pytest.fixture
def built(tmp_path: Path) -> tuple[Path, Path]:
    """A ledger with three events (one given an event_id) and a key outside it."""
    path = tmp_path / "lg"
    init_ledger(path).close()
    (tmp_path / "e.jsonl").write_text("\n".join(LINES) + "\n")
    cli_json("append", tmp_path / "e.jsonl", "--ledger", path)
    key = tmp_path / "key"
    keygen(key)
    return path, key


def twin(path: Path) -> Path:
    copy = path.with_name(path.name + "-twin")
    shutil.copytree(path, copy)
    return copy


def test_append_with_a_duplicate(built: tuple[Path, Path], tmp_path: Path) -> None:
    path, _ = built
    again = tmp_path / "again.jsonl"
    again.write_text(LINES[0] + "\n\n" + '{"stream":"ext/c","type":"ext.note","payload":{}}\n')
    copy = twin(path)
    printed = cli_json("append", again, "--ledger", path)
    assert printed["duplicates"] == [{"line": 1, "event_id": "e0", "seq": 0}]
    assert ledger.append(again, ledger=copy).to_json() == printed


def test_append_names_the_bad_line(built: tuple[Path, Path], tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        LINES[1] + "\n" + '{"stream": "ext/a", "type": "grade.replayed", "payload": {}}\n'
    )
    with pytest.raises(LedgerError, match="line 2: event type 'grade.replayed'"):
        ledger.append(bad, ledger=built[0])


def test_events_filters_as_log(built: tuple[Path, Path]) -> None:
    path, _ = built
    printed = cli_json("log", "--ledger", path, "--stream", "ext/a", "--from", 1, "--limit", 5)
    assert [e["seq"] for e in printed] == [1]
    got = ledger.events(ledger=path, stream="ext/a", from_seq=1, limit=5)
    assert got.to_json() == printed
    assert ledger.events(ledger=path, limit=2).to_json() == cli_json("log", "--ledger", path)[:2]
    with ledger.open(path, read_only=True) as lg:  # an open store: read as iterated
        rows = ledger.events(ledger=lg, type="ext.note").events
        assert not isinstance(rows, tuple) and [e.seq for e in rows] == [0, 1, 2]


def test_keygen(tmp_path: Path) -> None:
    printed = cli_json(
        "keygen", "--out", tmp_path / "k1", "--name", "me", "--ledger", tmp_path / "l"
    )
    got = ledger.keygen(tmp_path / "k2", name="me", ledger=tmp_path / "l").to_json()
    assert printed["private_key"] == str(tmp_path / "k1")
    assert got == {  # fresh keys: the same shape, another key
        "private_key": str(tmp_path / "k2"),
        "public_key": str(tmp_path / "k2.pub"),
        "verifier": (tmp_path / "k2.pub").read_text().strip(),
    }
    assert got["verifier"].startswith("me+") and printed["verifier"].startswith("me+")


def test_checkpoint_prove_and_verify(built: tuple[Path, Path], tmp_path: Path) -> None:
    path, key = built
    copy = twin(path)
    printed = cli_json("checkpoint", "--key", key, "--out", tmp_path / "a.note", "--ledger", path)
    got = ledger.checkpoint(ledger=copy, key=key, out=tmp_path / "b.note").to_json()
    assert got == {**printed, "out": str(tmp_path / "b.note")}
    assert (tmp_path / "a.note").read_text() == (tmp_path / "b.note").read_text()
    assert ledger.prove(1, ledger=path).to_json() == cli_json("prove", 1, "--ledger", path)
    assert ledger.prove(1, ledger=path, size=3).to_json() == cli_json(
        "prove", 1, "--size", 3, "--ledger", path
    )
    args = ("--pub", f"{key}.pub", "--checkpoint", tmp_path / "a.note")
    printed = cli_json("verify", "--ledger", path, *args)
    got = ledger.verify(ledger=path, pub=f"{key}.pub", checkpoint=tmp_path / "a.note")
    assert printed["ok"] and got.to_json() == printed


def test_seal_and_repair(built: tuple[Path, Path]) -> None:
    path, _ = built
    copy = twin(path)
    printed = cli_json("seal", "--max-rows", 2, "--ledger", path)
    assert [m["rows"] for m in printed] == [2, 1]
    assert ledger.seal(ledger=copy, max_rows=2).to_json() == printed
    assert ledger.seal(ledger=copy).to_json() == cli_json("seal", "--ledger", path) == []
    for lg in (path, copy):  # a lost manifest: repair has something to do
        (lg / SEGMENT_DIR / MANIFEST).unlink()
    printed = cli_json("repair", "--ledger", path)
    assert printed["needed"] and not printed["applied"] and len(printed["steps"]) == 2
    assert ledger.repair(ledger=path).to_json() == printed
    printed = cli_json("repair", "--apply", "--ledger", path)
    assert printed["applied"]
    assert ledger.repair(ledger=copy, apply=True).to_json() == printed
