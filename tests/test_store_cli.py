"""The store's CLI: set up through the API, run the command, compare whole outputs."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from ledger.cli import main
from ledger.log.store import init_ledger, open_ledger
from schemas.envelope import NewEvent, envelope_bytes
from tests.store_helpers import no_extra_checks  # noqa: F401  (fixture)

pytestmark = pytest.mark.usefixtures("no_extra_checks")


def run(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(main, list(args), env=env)


def test_init_refuses_existing_and_open_refuses_missing(tmp_path: Path) -> None:
    path = tmp_path / "l"
    assert run("init", "--ledger", str(path)).exit_code == 0
    again = run("init", "--ledger", str(path))
    assert again.exit_code == 1 and "already exists" in again.output
    missing = run("log", "--ledger", str(tmp_path / "typo"))
    assert missing.exit_code == 1
    assert (
        f"Error: no ledger at '{tmp_path / 'typo'}'; create one with `vledger init"
        in missing.output
    )
    assert not (tmp_path / "typo").exists()


def test_init_uses_vledger_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert run("init", env={"VLEDGER_HOME": str(home)}).exit_code == 0
    assert (home / "events.duckdb").exists()


def test_log_json_is_the_whole_envelope(tmp_path: Path) -> None:
    before = datetime.now(UTC)
    with init_ledger(tmp_path / "l") as lg:
        lg.append(
            [
                NewEvent("run/r1", "ext.a", {"k": 1}, event_id="e0"),
                NewEvent("run/r2", "ext.b", {"k": [1, 2.5]}, event_id="e1"),
            ]
        )
        lg.append([NewEvent("run/r1", "ext.a", {"k": 3}, event_id="e2")])
    res = run("log", "--ledger", str(tmp_path / "l"), "--json")
    assert res.exit_code == 0, res.output
    got = orjson.loads(res.output)
    want = []
    for seq, stream, version, eid, type_, payload in [
        (0, "run/r1", 0, "e0", "ext.a", {"k": 1}),
        (1, "run/r2", 0, "e1", "ext.b", {"k": [1, 2.5]}),
        (2, "run/r1", 1, "e2", "ext.a", {"k": 3}),
    ]:
        raw = orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)
        leaf = hashlib.sha256(
            b"\x00" + envelope_bytes(seq, stream, version, eid, type_, 1, raw)
        ).hexdigest()
        want.append(
            {
                "seq": seq,
                "stream": stream,
                "stream_version": version,
                "event_id": eid,
                "type": type_,
                "schema_version": 1,
                "payload": payload,
                "leaf_hash": leaf,
            }
        )
    stamps = [datetime.fromisoformat(g.pop("recorded_at")) for g in got]
    assert got == want
    assert all(before <= t <= datetime.now(UTC) for t in stamps)
    filtered = orjson.loads(
        run(
            "log", "--ledger", str(tmp_path / "l"), "--json", "--stream", "run/r1", "--from", "1"
        ).output
    )
    assert [e["seq"] for e in filtered] == [2]
    by_type = orjson.loads(
        run("log", "--ledger", str(tmp_path / "l"), "--json", "--type", "ext.a", "--to", "0").output
    )
    assert [e["seq"] for e in by_type] == [0]


def test_append_file_prints_range_and_is_all_or_nothing(tmp_path: Path) -> None:
    path = tmp_path / "l"
    init_ledger(path).close()
    good = tmp_path / "good.jsonl"
    good.write_text(
        '{"stream": "s", "type": "ext.a", "payload": {"n": 1}}\n\n'
        '{"stream": "s", "type": "ext.a", "payload": {"n": 2}, "event_id": "x", "expected_version": "no_stream"}\n'
    )
    res = run("append", str(good), "--ledger", str(path))
    assert (res.exit_code, res.output) == (0, "appended 2 events: seq 0..1\n")
    again = run("append", str(good), "--ledger", str(path))
    assert (
        again.output
        == "appended 0 events\n2 already present (same event_id and content), skipped\n"
    )
    cases = {
        "not json": (
            '{"stream": "s", "type": "ext.a", "payload": {}}\n{oops\n',
            "line 2: not JSON",
        ),
        "missing payload": (
            '{"stream": "s", "type": "ext.a"}\n',
            "line 1: field 'payload': Field required",
        ),
        "unknown key": (
            '{"stream": "s", "type": "ext.a", "payload": {}, "when": 1}\n',
            "line 1: field 'when': Extra inputs are not permitted",
        ),
        "bad type": (
            '{"stream": "s", "type": "ext.a", "payload": {}}\n{"stream": "s", "type": "trial.nope", "payload": {}}\n',
            "line 2: event type 'trial.nope': unknown event type",
        ),
        "bad ext": (
            '{"stream": "s", "type": "ext.", "payload": {}}\n',
            "line 1: event type 'ext.': an extension type needs a name",
        ),
    }
    for name, (text, message) in cases.items():
        f = tmp_path / f"{name}.jsonl"
        f.write_text(text)
        res = run("append", str(f), "--ledger", str(path))
        assert res.exit_code == 1, name
        assert message in res.output, (name, res.output)
        assert "nothing appended" in res.output, name
    with open_ledger(path) as lg:
        assert lg.size() == 2


def test_append_conflicts_exit_4_naming_both_sides(tmp_path: Path) -> None:
    path = tmp_path / "l"
    init_ledger(path).close()
    f = tmp_path / "a.jsonl"
    f.write_text(
        '{"stream": "s", "type": "ext.a", "payload": {}, "expected_version": "no_stream"}\n'
    )
    assert run("append", str(f), "--ledger", str(path)).exit_code == 0
    f.write_text(
        '{"stream": "s", "type": "ext.a", "payload": {"v": 2}, "expected_version": "no_stream"}\n'
    )
    res = run("append", str(f), "--ledger", str(path))
    assert res.exit_code == 4
    assert (
        "Error: stream 's': expected version 'no_stream', but the stream is at version 0"
        in res.output
    )


def test_keygen_checkpoint_prove_verify_round(tmp_path: Path) -> None:
    path = tmp_path / "l"
    key = tmp_path / "keys" / "k"
    inside = run("keygen", "--out", str(path / "k"), "--ledger", str(path))
    assert inside.exit_code == 1 and "inside the ledger directory" in inside.output
    assert run("init", "--ledger", str(path)).exit_code == 0
    made = run("keygen", "--out", str(key), "--ledger", str(path))
    assert made.exit_code == 0 and (key.stat().st_mode & 0o777) == 0o600
    assert run("keygen", "--out", str(key)).exit_code == 1  # never overwrite a key
    with open_ledger(path) as lg:
        lg.append([NewEvent("s", "ext.a", {"n": n}) for n in range(5)])
    nokey = run("checkpoint", "--ledger", str(path))
    assert nokey.exit_code == 2 and "pass --key FILE" in nokey.output
    cp = run("checkpoint", "--ledger", str(path), env={"VLEDGER_KEY": str(key)})
    assert cp.exit_code == 0 and cp.output.split("\n")[1] == "5"
    proof = run("prove", "2", "--ledger", str(path))
    assert proof.exit_code == 0 and proof.output.startswith("c2sp.org/tlog-proof@v1\nindex 2\n")
    assert proof.output.endswith(cp.output)
    ok = run("verify", "--ledger", str(path), "--pub", str(key) + ".pub", "--json")
    assert ok.exit_code == 0 and orjson.loads(ok.output)["ok"] is True


def test_a_key_file_that_is_not_a_key_is_refused_naming_it(tmp_path: Path) -> None:
    """Binary bytes, a stray text file, a huge file or a device given as --key / --pub:
    `Error:` naming the file (a binary one reached the user as a UnicodeDecodeError
    traceback, and /dev/zero was read until memory ran out)."""
    path = tmp_path / "l"
    init_ledger(path).close()
    binary, text = tmp_path / "bin.key", tmp_path / "notes.txt"
    binary.write_bytes(b"\xff\xfe\x00\x81 not a key")
    text.write_text("garbage\n")
    big = tmp_path / "big.key"  # read whole, as /dev/zero was read for ever
    big.write_text("PRIVATE+KEY+" + "a" * 100_000)
    for f in (binary, text, big, Path("/dev/zero")):
        for flag, cmd in (("--key", "checkpoint"), ("--pub", "verify")):
            got = run(cmd, flag, str(f), "--ledger", str(path))
            assert isinstance(got.exception, SystemExit), got.exception
            assert got.exit_code == 1 and "Error: " in got.output and str(f) in got.output


def test_seal_cli_cuts_segments_without_splitting_trials(tmp_path: Path) -> None:
    path = tmp_path / "l"
    with init_ledger(path) as lg:
        for t in range(3):
            lg.append([NewEvent(f"trial/c/t{t}/0", "ext.step", {"k": k}) for k in range(4)])
    res = run("seal", "--ledger", str(path), "--max-rows", "6", "--json")
    assert res.exit_code == 0, res.output
    made = orjson.loads(res.output)
    assert [(m["first_seq"], m["last_seq"], m["rows"]) for m in made] == [
        (0, 3, 4),
        (4, 7, 4),
        (8, 11, 4),
    ]
    assert run("seal", "--ledger", str(path)).output == "nothing to seal\n"


def test_seal_cli_max_bytes_bounds_segments_by_size(tmp_path: Path) -> None:
    path = tmp_path / "l"
    with init_ledger(path) as lg:
        for t in range(3):
            lg.append([NewEvent(f"trial/c/t{t}/0", "ext.step", {"k": k, "pad": "x" * 200}) for k in range(4)])
    # about 4 rows' worth of bytes per segment: each trial becomes its own segment
    res = run("seal", "--ledger", str(path), "--max-bytes", "1200", "--json")
    assert res.exit_code == 0, res.output
    made = orjson.loads(res.output)
    assert [m["rows"] for m in made] == [4, 4, 4]
