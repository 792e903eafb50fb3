"""The native hashing accelerator equals its pure-Python definitions, which equal RFC 9162
over ``schemas.envelope.envelope_bytes``; and a ledger written and verified without the
accelerator has the same tree as one written with it."""

from __future__ import annotations

import array
import hashlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.log import fast as hashing
from schemas.envelope import envelope_bytes, leaf_hash

native = pytest.mark.skipif(
    not hashing.NATIVE, reason="ledger.log.native was not built (no C compiler or OpenSSL headers)"
)

ROOT = Path(__file__).resolve().parents[1]

texts = st.text(max_size=12)
plain = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters='"\\'), max_size=12
).filter(lambda s: all(ord(c) >= 0x20 for c in s))
uints = st.integers(0, 2**63)
rows = st.lists(
    st.tuples(texts, st.integers(0, 2**32 - 1), texts, texts, st.integers(0, 65535), st.binary(max_size=40)),
    max_size=8,
)


def definition(first: int, r: list[tuple]) -> bytes:
    return b"".join(
        leaf_hash(envelope_bytes(first + i, s, v, e, t, sv, p)) for i, (s, v, e, t, sv, p) in enumerate(r)
    )


def columns(r: list[tuple]) -> list[list]:
    return [list(c) for c in zip(*r, strict=True)] if r else [[] for _ in range(6)]


@given(uints, rows)
def test_py_envelope_leaf_hashes_is_the_definition(first: int, r: list[tuple]) -> None:
    assert hashing.py_envelope_leaf_hashes(first, *columns(r)) == definition(first, r)


@st.composite
def sliced(draw: st.DrawFn) -> tuple[bytes, list[int]]:
    data = draw(st.binary(max_size=200))
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), min_size=1, max_size=10)))
    return data, cuts


@given(sliced(), st.sampled_from(["i", "q"]))
def test_hash_slices(case: tuple[bytes, list[int]], fmt: str) -> None:
    data, cuts = case
    want = b"".join(hashlib.sha256(data[a:b]).digest() for a, b in zip(cuts, cuts[1:]))  # noqa: B905
    view = memoryview(array.array(fmt, cuts).tobytes()).cast(fmt)
    assert hashing.py_hash_slices(data, cuts) == want
    assert hashing.py_hash_slices(data, view.tolist()) == want


@given(st.lists(st.binary(min_size=32, max_size=32), max_size=16).map(lambda hs: hs[: len(hs) // 2 * 2]))
def test_tree_level(children: list[bytes]) -> None:
    want = b"".join(
        hashlib.sha256(b"\x01" + a + b).digest() for a, b in zip(children[0::2], children[1::2], strict=True)
    )
    assert hashing.py_tree_level(b"".join(children)) == want
    assert hashing.tree_level(b"".join(children)) == want


@pytest.mark.parametrize("fn", [hashing.py_tree_level, hashing.tree_level])
def test_tree_level_refuses_an_odd_half_pair(fn) -> None:
    with pytest.raises(ValueError, match="pairs"):
        fn(b"\x00" * 48)


def stored_table(first: int, r: list[tuple], large: bool) -> pa.Table:
    s, v, e, t, sv, p = columns(r)
    text = pa.large_string() if large else pa.string()
    return pa.table(
        {
            "seq": pa.array(range(first, first + len(r)), pa.uint64()),
            "stream": pa.array(s, text),
            "stream_version": pa.array(v, pa.uint32()),
            "event_id": pa.array(e, text),
            "type": pa.array(t, text),
            "schema_version": pa.array(sv, pa.uint16()),
            "payload": pa.array(p, pa.large_binary() if large else pa.binary()),
        }
    )


@native
@given(st.integers(0, 2**40), rows, st.booleans(), st.integers(0, 3))
def test_stored_leaf_hashes_from_arrow_columns(first: int, r: list[tuple], large: bool, cut: int) -> None:
    """Any layout DuckDB may hand over (32- or 64-bit offsets, several chunks, a slice)."""
    t = stored_table(first, r, large)
    t = pa.concat_tables([t.slice(0, cut), t.slice(cut)])  # two chunks
    out = hashing.stored_leaf_hashes(t, first)
    strings = [x for row in r for x in (row[0], row[2], row[3])]
    if any(c in '"\\' or ord(c) < 0x20 for x in strings for c in x):
        assert out is None
    else:
        assert out is not None
        assert out[0] == definition(first, r)
        assert out[1] == sum(len(envelope_bytes(first + i, *row)) for i, row in enumerate(r))
        if len(r) > 1:
            tail = hashing.stored_leaf_hashes(t.slice(1), first + 1)
            assert tail is not None and tail[0] == definition(first + 1, r[1:])


@native
def test_stored_leaf_hashes_refuses_seqs_out_of_order() -> None:
    t = stored_table(5, [("s", 0, "e", "t", 1, b"{}"), ("s", 1, "f", "t", 1, b"{}")], False)
    assert hashing.stored_leaf_hashes(t, 5) is not None
    assert hashing.stored_leaf_hashes(t, 4) is None
    swapped = t.set_column(0, "seq", pa.array([6, 5], pa.uint64()))
    assert hashing.stored_leaf_hashes(swapped, 5) is None


def test_pure_python_ledger_has_the_same_tree(tmp_path: Path) -> None:
    """VLEDGER_PURE=1 (what a machine without a C compiler runs) writes and verifies the
    same log, leaf for leaf, as this process; each verifies the other's ledger."""
    script = textwrap.dedent(
        """
        import sys
        from ledger.log import fast as hashing
        from ledger.log.store import open_ledger
        from ledger.log.verify import verify_ledger
        from schemas.envelope import NewEvent
        with open_ledger(sys.argv[1], create=True) as lg:
            if lg.size() == 0:
                lg.append([NewEvent("s/" + str(i % 3), "ext.x", {"i": i, "q": 'say "hi"\\n'},
                                    event_id=f"e{i}") for i in range(300)])
                lg.append([NewEvent('odd "stream"', "ext.x", {"i": 1})])
            report = verify_ledger(lg)
            print(hashing.NATIVE, report.ok, lg.root().hex())
        """
    )

    def run(path: Path, pure: bool) -> list[str]:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        env.pop("VLEDGER_PURE", None)
        if pure:
            env["VLEDGER_PURE"] = "1"
        out = subprocess.run(
            [sys.executable, "-c", script, str(path)], env=env, capture_output=True, text=True, check=True
        )
        return out.stdout.split()

    pure_written = run(tmp_path / "pure", pure=True)
    assert pure_written[:2] == ["False", "True"]
    assert run(tmp_path / "pure", pure=False)[1:] == pure_written[1:]
    native_written = run(tmp_path / "native", pure=False)
    assert native_written[1:] == pure_written[1:]
    assert run(tmp_path / "native", pure=True)[1:] == pure_written[1:]


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.sampled_from('a"\\,[]{}n\x00\n\u2028é😀') | st.characters(blacklist_categories=("Cs",)), max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


def holds_null(value) -> bool:
    if value is None:
        return True
    if isinstance(value, dict):
        return any(holds_null(v) for v in value.values())
    if isinstance(value, list):
        return any(holds_null(v) for v in value)
    return False


@native
@given(st.lists(json_values, max_size=8))
def test_split_json_array_gives_each_elements_own_encoding(values: list) -> None:
    from schemas.canonical import canonical_json

    split = hashing._native.split_json_array(canonical_json(values), len(values))
    assert split is not None
    data, offsets, with_null = split
    cuts = array.array("i", offsets).tolist()
    assert [data[a:b] for a, b in zip(cuts, cuts[1:])] == [canonical_json(v) for v in values]  # noqa: B905
    assert with_null == [i for i, v in enumerate(values) if holds_null(v)]


@native
@pytest.mark.parametrize(
    ("buf", "k"),
    [(b"[1,2]", 3), (b"[1,2]", 1), (b"[]", 1), (b"[1]", 0), (b"{}", 0), (b'["a]', 1), (b"[[1]", 1), (b"[1]]", 1)],
)
def test_split_json_array_refuses_what_it_cannot_split(buf: bytes, k: int) -> None:
    assert hashing._native.split_json_array(buf, k) is None


@pytest.mark.parametrize("odd_at", [None, 10, 6000])
def test_column_leaf_hashes_in_halves_equal_the_definition(odd_at: int | None) -> None:
    """Past SPLIT_MIN_ROWS the two halves are hashed on two threads; a string that needs an
    escape in either half sends the whole batch to the Python definition."""
    n = hashing.SPLIT_MIN_ROWS + 3001
    rows = [(f"s{i % 7}", i // 7, f"e{i}", "ext.x", 1, b'{"i":%d}' % i) for i in range(n)]
    if odd_at is not None:
        rows[odd_at] = ('odd "stream"', *rows[odd_at][1:])
    t = stored_table(100, rows, large=False)
    got = hashing.column_leaf_hashes(100, *(t.column(c) for c in hashing.STORED_COLUMNS))
    assert got == definition(100, rows)
