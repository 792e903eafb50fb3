"""The fast paths of ``verify`` give the same answers as the plain Python definitions.

``ledger.log.store.ENTRY_SQL`` assembles ``0x00 || envelope_bytes`` inside DuckDB for rows whose
strings need no JSON escaping and yields NULL for the others, which verify then encodes in
Python. A wrong SQL entry could only ever make a clean log look tampered *or*, worse, let a
leaf hash computed over the wrong bytes pass, so the equality is pinned here for arbitrary
strings (quotes, backslashes, control characters, non-ASCII) and the extreme integers.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import orjson
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.log import verify_scan as verify_mod
from ledger.log.store import _DDL, ENTRY_SQL, JSON_ESCAPED_RE, init_ledger
from schemas.envelope import ARROW_SCHEMA, NewEvent, envelope_bytes, leaf_hash

# Characters that matter for JSON string escaping, mixed into arbitrary text.
TRICKY = st.sampled_from(['"', "\\", "\n", "\t", "\x00", "\x1f", "\x7f", "é", "\u2028", "😀", "/"])
TEXT = st.lists(st.one_of(st.text(max_size=4), TRICKY), max_size=6).map("".join)


def _needs_escaping(s: str) -> bool:
    """orjson writes ``s`` as something other than its UTF-8 bytes in plain quotes."""
    return orjson.dumps(s) != b'"' + s.encode() + b'"'


def _sql_entry(
    seq: int, stream: str, version: int, event_id: str, type_: str, sv: int, payload: bytes
) -> bytes | None:
    con = duckdb.connect()
    con.execute(_DDL)
    row = pa.table(
        [
            pa.array([seq], pa.uint64()),
            pa.array([stream]),
            pa.array([version], pa.uint32()),
            pa.array([event_id]),
            pa.array([type_]),
            pa.array([sv], pa.uint16()),
            pa.array([datetime.now(UTC)], pa.timestamp("us", tz="UTC")),
            pa.array([payload], pa.binary()),
            pa.array([b"\x00" * 32], pa.binary(32)),
        ],
        schema=ARROW_SCHEMA,
    )
    con.register("_row", row)
    con.execute("INSERT INTO events SELECT * FROM _row")
    got = con.sql(ENTRY_SQL, params=[JSON_ESCAPED_RE, 0, 2**64 - 1]).fetchall()
    con.close()
    assert len(got) == 1
    entry = got[0][1]
    return None if entry is None else bytes(entry)


@settings(max_examples=150, deadline=None)
@given(
    seq=st.one_of(st.integers(0, 10**6), st.just(2**64 - 1)),
    stream=TEXT,
    version=st.one_of(st.integers(0, 1000), st.just(2**32 - 1)),
    event_id=TEXT,
    type_=TEXT,
    sv=st.one_of(st.integers(0, 3), st.just(2**16 - 1)),
    payload=st.binary(max_size=40),
)
def test_sql_entry_is_envelope_bytes_or_null_exactly_when_escaping_is_needed(
    seq: int, stream: str, version: int, event_id: str, type_: str, sv: int, payload: bytes
) -> None:
    entry = _sql_entry(seq, stream, version, event_id, type_, sv, payload)
    escaped = any(_needs_escaping(s) for s in (stream, event_id, type_))
    if escaped:
        assert entry is None
    else:
        want = envelope_bytes(seq, stream, version, event_id, type_, sv, payload)
        assert entry == b"\x00" + want
        assert leaf_hash(want) == hashlib.sha256(entry).digest()


@pytest.mark.parametrize("s", ['a"b', "a\\b", "a\nb", "a\x00b", "a\x1fb"])
def test_each_escaped_character_class_takes_the_python_path(s: str) -> None:
    assert _needs_escaping(s)
    assert _sql_entry(0, s, 0, "e", "ext.t", 1, b"{}") is None
    assert _sql_entry(0, "s", 0, s, "ext.t", 1, b"{}") is None
    assert _sql_entry(0, "s", 0, "e", s, 1, b"{}") is None


@pytest.mark.parametrize("s", ["plain", "é/😀\u2028\x7f", "\\x41 no"])
def test_strings_orjson_leaves_alone_take_the_sql_path_unless_backslashed(s: str) -> None:
    entry = _sql_entry(3, s, 1, "e", "ext.t", 1, b'{"a":1}')
    if "\\" in s:
        assert entry is None
    else:
        assert entry == b"\x00" + envelope_bytes(3, s, 1, "e", "ext.t", 1, b'{"a":1}')


def _events(n: int, tricky_every: int) -> list[NewEvent]:
    out = []
    for i in range(n):
        stream = f'run/"q{i % 3}"\\' if tricky_every and i % tricky_every == 0 else f"run/r{i % 3}"
        out.append(
            NewEvent(stream, "ext.note", {"i": i, "text": "é" * (i % 5)}, event_id=f"id-{i}")
        )
    return out


def test_verify_takes_the_sql_path_on_a_clean_plain_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the Python window paths disabled, a clean plain-string log still verifies: the
    SQL path accepted every window; its byte count equals the Python definition's."""
    events = _events(300, 0)
    with init_ledger(tmp_path / "lg") as lg:
        lg.append(events)
        want_bytes = sum(len(e.entry()) for e in lg.read())

        def boom(*_: object) -> bool:
            raise AssertionError("the Python window path ran on a clean plain-string log")

        monkeypatch.setattr(verify_mod._Scan, "window_fast", boom)
        monkeypatch.setattr(verify_mod, "WINDOW", 64)  # several windows, growing sizes
        report = lg.verify()
    assert report.ok, report.problems
    assert report.events == 300 and report.bytes_hashed == want_bytes


def test_verify_mixes_paths_and_still_names_the_first_bad_seq(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Windows with escaped strings fall back to Python; both kinds agree on a clean log,
    and an altered payload is still named by its seq whichever path the window took."""
    monkeypatch.setattr(verify_mod, "WINDOW", 50)
    with init_ledger(tmp_path / "lg") as lg:
        lg.append(_events(400, 97))
        want_bytes = sum(len(e.entry()) for e in lg.read())
        report = lg.verify()
        assert report.ok, report.problems
        assert report.bytes_hashed == want_bytes
        root = report.root
        assert root == lg.root()
        con = lg._con
        for seq in (5, 194, 250):  # a plain window, an escaped row's window, a plain one
            con.execute("UPDATE events SET payload = ? WHERE seq = ?", [b'{"i":-1}', seq])
        report = lg.verify()
    assert not report.ok
    assert report.problems[0].where == "seq 5"
    assert {"seq 5", "seq 194", "seq 250"} <= {p.where for p in report.problems}
