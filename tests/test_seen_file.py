"""The append filters kept beside the log (``ledger.log.seen_file``): the next writer adds
only the rows appended since instead of scanning every id, never uses filters that do not
describe this log, and appends exactly what a store without them appends."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.log import fast, seen_file, store
from ledger.log import rows as log_rows
from ledger.log.memory_store import MemoryLedger
from ledger.log.store import init_ledger, open_ledger
from schemas.envelope import NewEvent

pytestmark = pytest.mark.skipif(
    not fast.NATIVE, reason="the filters need ledger.log.native (not built here)"
)

BIG = log_rows.ARROW_FROM_ROWS + 100  # a log append_parts keeps filters for


def ev(i: int) -> NewEvent:
    return NewEvent(f"s{i % 3}", "ext.x", {"i": i}, event_id=f"id-{i}")


def builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of the log each time its filters were built from every id."""
    sizes: list[int] = []
    real = store.Ledger._build_seen

    def spy(self, size, frontier):
        sizes.append(size)
        return real(self, size, frontier)

    monkeypatch.setattr(store.Ledger, "_build_seen", spy)
    return sizes


def test_the_next_writer_adds_only_the_rows_appended_since(tmp_path: Path, monkeypatch) -> None:
    built = builds(monkeypatch)
    path = tmp_path / "l"
    with init_ledger(path) as lg:
        lg.append_parts([[ev(i) for i in range(BIG)]])  # too small then to keep filters for
    assert built == [] and not seen_file.path_of(path).exists()
    with open_ledger(path) as lg:
        lg.append_parts([[ev(i) for i in range(BIG, BIG + 10)]])
    assert built == [BIG]  # none kept yet: built from every id, then kept
    assert seen_file.load(path)[0] == BIG + 10
    with open_ledger(path) as lg:  # a one-off append keeps nothing: the file is now behind
        lg.append([ev(BIG + 10)])
    with open_ledger(path) as lg:
        res = lg.append_parts([[ev(5), ev(BIG + 10), ev(BIG + 11)]])
    assert built == [BIG]  # kept filters, brought up to date: no second scan of every id
    assert [d.seq for d in res.duplicates] == [5, BIG + 10] and res.appended == 1
    assert seen_file.load(path)[0] == BIG + 10  # two rows behind: not rewritten (KEEP_LAG)
    with mock.patch.object(seen_file, "KEEP_LAG", 2), open_ledger(path) as lg:
        assert lg.append_parts([[ev(BIG + 11), ev(BIG + 12)]]).appended == 1
    assert seen_file.load(path)[0] == BIG + 13 and built == [BIG]


def test_a_one_off_append_reads_kept_filters_instead_of_looking_up(
    tmp_path: Path, monkeypatch
) -> None:
    """Looking even a few ids up in a large log scans its id column; kept filters answer
    for the ids they never saw, and the ids appended since are added before they answer."""
    path = tmp_path / "l"
    with init_ledger(path) as lg:
        lg.append_parts([[ev(i) for i in range(BIG)]])
        lg.append_parts([[ev(BIG)]])  # keeps the filters at BIG + 1
        lg.append([ev(BIG + 1)])  # after them: in the log, not in the file
    calls: list[list[str]] = []
    real = store.Ledger._stored_by_id
    monkeypatch.setattr(
        store.Ledger, "_stored_by_id", lambda self, ids: calls.append(list(ids)) or real(self, ids)
    )
    with open_ledger(path) as lg:  # a first append: no lookup for an id the filters lack
        assert lg.append([ev(10**6)]).appended == 1 and calls == []
    with open_ledger(path) as lg:
        res = lg.append([ev(BIG + 1), ev(3), ev(10**6 + 1)])
    assert [d.seq for d in res.duplicates] == [BIG + 1, 3] and res.appended == 1
    assert sorted(calls[-1]) == sorted(["id-3", f"id-{BIG + 1}"])


def test_a_receipt_after_a_large_append_reads_the_kept_filters(tmp_path: Path, monkeypatch) -> None:
    """reconcile's shape: an ingest (append_parts) then one receipt on the same object."""
    built = builds(monkeypatch)
    path = tmp_path / "l"
    with init_ledger(path) as lg:
        lg.append_parts([[ev(i) for i in range(BIG)]])
        lg.append_parts([[ev(i) for i in range(BIG, 2 * BIG)]])
        assert built == [BIG]
        lg.append([ev(2 * BIG)])  # its second append: the filters, not a scan of every id
        assert lg.append([ev(7)]).duplicates[0].seq == 7
    assert built == [BIG]


def test_filters_of_another_log_or_damaged_ones_are_not_used(tmp_path: Path, monkeypatch) -> None:
    built = builds(monkeypatch)
    a, b = tmp_path / "a", tmp_path / "b"
    for path, first in ((a, 0), (b, 10**6)):
        with init_ledger(path) as lg:
            lg.append_parts([[ev(i) for i in range(first, first + BIG)]])
            lg.append_parts([[ev(first + BIG)]])
    assert built == [BIG + 0, BIG]  # each built once, then kept
    shutil.copy(seen_file.path_of(a), seen_file.path_of(b))  # same size, another root
    with open_ledger(b) as lg:
        assert lg.append_parts([[ev(10**6 + 3), ev(3)]]).appended == 1
    assert built[-1] == BIG + 1  # not used: built again
    kept = seen_file.path_of(a)
    data = bytearray(kept.read_bytes())
    data[-1] ^= 0xFF
    kept.write_bytes(bytes(data))
    assert seen_file.load(a) is None
    with open_ledger(a) as lg:
        assert lg.append_parts([[ev(3), ev(10**7)]]).duplicates[0].seq == 3
    assert built[-1] == BIG + 1 and len(built) == 4


def test_a_read_only_open_keeps_nothing(tmp_path: Path) -> None:
    """A reader closing while a writer of the same process holds filters writes no file
    into the ledger (verify only reads); the writer keeps them when it closes."""
    path = tmp_path / "l"
    writer = init_ledger(path)
    writer.append([ev(0)])
    writer.append([ev(1)])  # its second append: filters held for the process
    assert writer._db_key in store._SEEN
    open_ledger(path, read_only=True).close()
    assert not seen_file.path_of(path).exists()
    writer.append([ev(2)])
    writer.close()
    assert seen_file.load(path)[0] == 3


steps = st.lists(
    st.tuples(
        st.sampled_from(["parts", "one", "reopen", "drop", "damage"]),
        st.lists(st.integers(0, 60), min_size=1, max_size=12),
    ),
    min_size=1,
    max_size=14,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps, st.sampled_from([1, 4, seen_file.KEEP_LAG]))
def test_appends_are_what_a_store_without_kept_filters_appends(ops, lag) -> None:
    """Appends, re-opens and lost or damaged filter files in any order, the file rewritten
    often or seldom: every append reports the same new events and duplicates as the
    in-memory store, and the logs are equal."""
    reference = MemoryLedger()
    with (
        tempfile.TemporaryDirectory() as d,
        mock.patch.object(log_rows, "ARROW_FROM_ROWS", 8),  # filters from 8 events on
        mock.patch.object(seen_file, "KEEP_LAG", lag),
    ):
        path = Path(d) / "l"
        lg = init_ledger(path)
        try:
            for op, ids in ops:
                batch = [ev(i) for i in ids]
                halves = [batch[: len(batch) // 2], batch[len(batch) // 2 :]]
                if op == "parts":
                    got, want = lg.append_parts(halves), reference.append_parts(halves)
                elif op == "one":
                    got, want = lg.append(batch), reference.append(batch)
                else:
                    lg.close()
                    kept = seen_file.path_of(path)
                    if op == "drop":
                        kept.unlink(missing_ok=True)
                    elif op == "damage" and kept.exists():
                        kept.write_bytes(kept.read_bytes()[:-1] + b"\0")
                    lg = open_ledger(path)
                    continue
                assert (got.appended, got.duplicates) == (want.appended, want.duplicates)
            assert [(e.seq, e.stream, e.event_id, e.payload) for e in lg.read()] == [
                (e.seq, e.stream, e.event_id, e.payload) for e in reference.read()
            ]
        finally:
            lg.close()
