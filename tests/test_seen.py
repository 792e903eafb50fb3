"""The id and stream filters that spare append its lookups (``ledger.log.fast``): never a miss,
never trusted when stale, and what they spare is what the store would have found anyway."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.errors import StreamVersionConflict
from ledger.log import fast as hashing
from ledger.log import fast as seen
from ledger.log import store
from ledger.log.store import init_ledger, open_ledger
from ledger.log.verify import verify_ledger
from schemas.envelope import NewEvent

pytestmark = pytest.mark.skipif(
    not hashing.NATIVE, reason="the filters need ledger.log.native (not built here)"
)

ROOT = Path(__file__).resolve().parents[1]
keys = st.lists(st.text(max_size=20), max_size=60)


@given(keys, keys)
def test_a_bloom_never_misses_a_key_it_holds(held: list[str], others: list[str]) -> None:
    b = seen.Bloom(len(held))
    b.add(held)
    assert b.maybe(held) == held
    assert set(b.maybe(others)) >= set(others) & set(held)


@given(keys)
def test_adding_a_column_sets_the_same_bits_as_adding_its_strs(held: list[str]) -> None:
    a, b = seen.Bloom(8), seen.Bloom(8)
    a.add(held)
    for arr in (pa.array(held, pa.string()), pa.array(held, pa.large_string())):
        b.bits[:] = bytes(len(b.bits))
        b.add_column(hashing.string_column(pa.chunked_array([arr])), len(held))
        assert a.bits == b.bits


def test_absent_keys_rarely_answer_maybe() -> None:
    b = seen.Bloom(10_000)
    b.add([f"held-{i}" for i in range(10_000)])
    false = b.maybe([f"absent-{i}" for i in range(10_000)])
    assert len(false) < 50  # designed for ~0.05 %: 5 expected


def test_filters_are_bounded() -> None:
    assert len(seen.Bloom(0).bits) == seen.MIN_BYTES
    assert len(seen.Bloom(10**12).bits) == seen.MAX_BYTES
    assert not seen.Bloom(10**12).full  # at the cap it stops asking to grow


def ev(i: int, stream: str = "s", **kw) -> NewEvent:
    return NewEvent(stream, "ext.x", {"i": i}, event_id=f"id-{i}", **kw)


def lookups(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    calls: list[list[str]] = []
    real = store.Ledger._stored_by_id

    def spy(self, ids):
        calls.append(list(ids))
        return real(self, ids)

    monkeypatch.setattr(store.Ledger, "_stored_by_id", spy)
    return calls


def test_fresh_ids_are_not_looked_up_and_repeats_are_found(tmp_path: Path, monkeypatch) -> None:
    calls = lookups(monkeypatch)
    with init_ledger(tmp_path / "l") as lg:
        lg.append([ev(i) for i in range(100)])
        assert len(calls) == 1  # a first append looks up directly: no filter is built for it
        lg.append([ev(i) for i in range(100, 200)])
        lg.append([ev(i) for i in range(200, 300)])
        assert len(calls) == 1  # later ones consult the filter: nothing the log holds
        res = lg.append([ev(5), ev(150), ev(300)])
        assert [d.seq for d in res.duplicates] == [5, 150]
        assert res.appended == 1  # id-300 is new
        assert [d.seq for d in res.duplicates] == [5, 150]
        assert {"id-5", "id-150"} <= set(calls[-1])


def test_a_one_off_append_builds_no_filter(tmp_path: Path) -> None:
    """Building the filters scans every id; one append into a big log should not pay it."""
    with init_ledger(tmp_path / "l") as lg:
        lg.append([ev(1)])
        assert lg._db_key not in store._SEEN
        lg.append([ev(2)])
        assert lg._db_key in store._SEEN


def test_two_ledger_objects_of_one_process_share_what_they_know(tmp_path: Path) -> None:
    with init_ledger(tmp_path / "l") as a, open_ledger(tmp_path / "l") as b:
        a.append([ev(1)])
        assert b.append([ev(1)]).duplicates[0].seq == 0
        b.append([ev(2)])
        assert a.append([ev(2)]).appended == 0
        assert a.stream_version("s") == 1


def test_a_stale_filter_is_rebuilt_when_another_process_appended(tmp_path: Path) -> None:
    """A Ledger dropped without close() leaves its filter behind; another process appends;
    a new Ledger here must not trust the old filter."""
    path = tmp_path / "l"
    lg = init_ledger(path)
    lg.append([ev(0)])
    lg.append([ev(1)])  # the second append builds the filter
    assert lg._db_key in store._SEEN
    lg._con.close()  # as garbage collection would: the filter stays in the registry
    script = textwrap.dedent(
        """
        import sys
        from ledger.log.store import open_ledger
        from schemas.envelope import NewEvent
        with open_ledger(sys.argv[1]) as lg:
            lg.append([NewEvent("other", "ext.x", {"i": 2}, event_id="id-2")])
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", script, str(path)], env=env, check=True)
    with open_ledger(path) as lg:  # this process's filter still describes size 2
        lg.append([ev(9)])  # a first append: direct lookups
        res = lg.append([NewEvent("other", "ext.x", {"i": 2}, event_id="id-2")])
        assert res.appended == 0 and res.duplicates[0].seq == 2
        with pytest.raises(StreamVersionConflict):
            lg.append([ev(3, stream="other", expected_version="no_stream")])
        lg.append([ev(3, stream="other", expected_version=0)])


def test_a_batch_that_did_not_commit_never_enters_the_filter(tmp_path: Path, monkeypatch) -> None:
    with init_ledger(tmp_path / "l") as lg:
        lg.append([ev(1)])
        with pytest.raises(StreamVersionConflict):
            lg.append([ev(2), ev(3, stream="t", expected_version=4)])
        calls = lookups(monkeypatch)
        assert lg.append([ev(2)]).appended == 1
        assert calls == []


def test_a_commit_the_filter_missed_forces_a_rebuild(tmp_path: Path, monkeypatch) -> None:
    """If recording a committed batch fails, the filter's state no longer matches the log:
    the next append rebuilds it instead of trusting it, so the batch's ids are found."""
    with init_ledger(tmp_path / "l") as lg:
        lg.append([ev(1)])

        def boom(*_a, **_k):
            raise KeyboardInterrupt

        monkeypatch.setattr(seen.Seen, "record", boom)
        with pytest.raises(KeyboardInterrupt):
            lg.append([ev(2)])
        monkeypatch.undo()
        assert lg.size() == 2  # it did commit
        res = lg.append([ev(2)])
        assert res.appended == 0 and res.duplicates[0].seq == 1


def test_filters_grow_and_keep_every_id(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(seen, "MIN_BYTES", 64)  # one block: a few keys fill it, appends rebuild
    with init_ledger(tmp_path / "l") as lg:
        for k in range(6):
            lg.append([ev(10 * k + i, stream=f"s{k}") for i in range(10)])
            again = lg.append([ev(10 * j, stream=f"s{j}") for j in range(k + 1)])
            assert again.appended == 0, k
        assert lg.size() == 60
        assert verify_ledger(lg).ok


def test_a_filter_that_fails_to_record_is_dropped_not_the_append(tmp_path: Path, monkeypatch) -> None:
    """The batch is committed by then: append returns its result and the next append
    rebuilds the filter from the table."""
    with init_ledger(tmp_path / "l") as lg:
        lg.append([ev(1)])

        def fail(*_a, **_k):
            raise MemoryError

        monkeypatch.setattr(seen.Seen, "record", fail)
        assert lg.append([ev(2)]).appended == 1
        monkeypatch.undo()
        assert lg.append([ev(2)]).duplicates[0].seq == 1
