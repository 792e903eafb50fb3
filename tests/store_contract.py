"""The store contract: docs/readme/store.md § Guarantees 1–8 as one abstract suite.

``StoreContract`` has no ``Test`` prefix, so pytest collects only its subclasses; each
backend supplies ``open_store(path)`` (and ``reopen_store(path)`` when it persists).
Expected values come from the guarantees and from an independent recursive RFC 9162
definition kept here, never from a previous run.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from ledger.errors import EventIdConflict, InvalidEvent, StreamVersionConflict
from ledger.log import merkle
from schemas.envelope import NewEvent, envelope_bytes
from tests import merkle_oracle


def ev(stream: str, n: int, **kw: Any) -> NewEvent:
    return NewEvent(stream=stream, type="ext.test", payload={"n": n}, **kw)


READ_APPEND_PROVE = {
    "append", "append_parts", "read", "read_arrow", "size", "stream_version", "streams", "root",
    "prove_inclusion", "prove_consistency", "read_hashes", "checkpoint", "checkpoints",
    "latest_checkpoint", "seal", "verify", "close", "path", "origin", "meta", "tree_state",
    "max_stored_seq", "raw_rows", "stored_nodes", "stored_node_table", "count_nodes_from",
    "first_version_break", "sealed_upto", "read_window",
    "trial_spans",
    "finish_seal",  # finishes a seal the store recorded; no event is updated or deleted
}  # fmt: skip


class StoreContract:
    """Subclass and implement ``open_store``; every backend must pass all of these."""

    persistent = True  # False for the in-memory reference store
    multi_process = True  # the store can be opened by tests/store_worker.py processes

    def open_store(self, path: Path) -> Any:
        raise NotImplementedError

    def reopen_store(self, path: Path) -> Any:
        """Open an existing store again (a new process would do this after a crash)."""
        raise NotImplementedError

    @pytest.fixture(autouse=True)
    def _core_checks_only(self) -> Any:
        from tests.store_helpers import core_checks_only

        with core_checks_only():
            yield

    @pytest.fixture
    def store(self, tmp_path: Path) -> Any:
        s = self.open_store(tmp_path / "ledger")
        yield s
        s.close()

    # 1. atomic, durable batches

    def test_append_is_atomic(self, store: Any) -> None:
        store.append([ev("a", 0)])
        bad = [ev("a", 1), ev("b", 2), NewEvent("c", "trial.no_such_type", {})]
        with pytest.raises(InvalidEvent) as info:
            store.append(bad)
        assert info.value.index == 2
        conflicting = [ev("b", 3), ev("a", 4, expected_version="no_stream")]
        with pytest.raises(StreamVersionConflict):
            store.append(conflicting)
        assert store.size() == 1
        assert [e.stream for e in store.read()] == ["a"]
        assert store.stream_version("b") is None

    def test_append_parts_is_one_append(self, tmp_path: Path) -> None:
        """The same rows, seqs, duplicates and root as one append of every part's events;
        expected_version is checked against the stream before the batch, not the part."""
        batch = [ev("a", 0, expected_version="no_stream"), ev("b", 1), ev("a", 0)]
        more = [ev("a", 2, expected_version="no_stream"), ev("b", 1), ev("c", 3)]
        one, parts = self.open_store(tmp_path / "one"), self.open_store(tmp_path / "parts")
        try:
            for s in (one, parts):
                s.append([ev("z", 9)])
            whole = one.append(batch + more)
            split = parts.append_parts(iter([batch[:1], batch[1:], [], more]))
            assert split == whole
            rows = [[(e.seq, e.stream, e.event_id, e.leaf_hash) for e in s.read()] for s in (one, parts)]
            assert rows[0] == rows[1] and one.root() == parts.root()
            assert len({e.recorded_at for e in parts.read(from_seq=1)}) == 1
            with pytest.raises(StreamVersionConflict):
                parts.append_parts([[ev("d", 4)], [ev("a", 5, expected_version="no_stream")]])
            with pytest.raises(InvalidEvent) as info:
                parts.append_parts([[ev("d", 4)], [ev("d", 5), NewEvent("d", "trial.nope", {})]])
            assert info.value.index == 2 and parts.size() == one.size()
        finally:
            one.close()
            parts.close()

    def test_append_is_durable(self, tmp_path: Path) -> None:
        if not self.persistent:
            pytest.skip("the in-memory reference store keeps nothing across opens")
        path = tmp_path / "ledger"
        s = self.open_store(path)
        s.append([ev("a", i) for i in range(3)])
        root = s.root()
        s.close()
        s2 = self.reopen_store(path)
        try:
            assert s2.size() == 3
            assert [e.data()["n"] for e in s2.read()] == [0, 1, 2]
            assert s2.root() == root
        finally:
            s2.close()

    # 2. dense, gap-free seq; commit order = seq order

    def test_seq_is_dense_and_in_commit_order(self, store: Any) -> None:
        r1 = store.append([ev("a", 0), ev("b", 1)])
        r2 = store.append([ev("a", 2)])
        r3 = store.append([ev("c", 3), ev("a", 4), ev("c", 5)])
        assert (r1.first_seq, r1.last_seq) == (0, 1)
        assert (r2.first_seq, r2.last_seq) == (2, 2)
        assert (r3.first_seq, r3.last_seq) == (3, 5)
        events = list(store.read())
        assert [e.seq for e in events] == list(range(6))
        assert [e.data()["n"] for e in events] == list(range(6))
        assert [(e.stream, e.stream_version) for e in events] == [
            ("a", 0),
            ("b", 0),
            ("a", 1),
            ("c", 0),
            ("a", 2),
            ("c", 1),
        ]

    def test_streams_by_name_by_first_event_and_up_to_a_seq(self, store: Any) -> None:
        store.append([ev("t/b", 0), ev("t/a", 1), ev("x", 2), ev("t/b", 3), ev("t/c", 4)])
        assert store.streams() == ["t/a", "t/b", "t/c", "x"]
        assert store.streams("t/", by_first_seq=True) == ["t/b", "t/a", "t/c"]
        assert store.streams("t/", by_first_seq=True, to_seq=3) == ["t/b", "t/a"]
        assert store.streams(to_seq=0) == ["t/b"] and store.streams(to_seq=-1) == []
        assert store.streams("t/", from_seq=3) == ["t/b", "t/c"]
        assert store.streams(from_seq=1, to_seq=2) == ["t/a", "x"]
        assert store.streams(from_seq=5) == []

    # 3. expected stream version

    def test_expected_version_any_no_stream_exists_exact(self, store: Any) -> None:
        store.append([ev("s", 0, expected_version="no_stream")])
        store.append([ev("s", 1, expected_version="exists")])
        store.append([ev("s", 2, expected_version=1)])
        store.append([ev("s", 3, expected_version="any")])
        assert store.stream_version("s") == 3
        with pytest.raises(StreamVersionConflict):
            store.append([ev("t", 0, expected_version="exists")])
        with pytest.raises(StreamVersionConflict):
            store.append([ev("s", 9, expected_version="no_stream")])
        assert store.size() == 4

    def test_conflict_names_both_versions(self, store: Any) -> None:
        store.append([ev("s", 0), ev("s", 1)])
        with pytest.raises(StreamVersionConflict) as info:
            store.append([ev("s", 2, expected_version=0)])
        err = info.value
        assert (err.stream, err.expected, err.actual) == ("s", 0, 1)
        assert str(err) == "stream 's': expected version 0, but the stream is at version 1"
        with pytest.raises(StreamVersionConflict) as info:
            store.append([ev("new", 0, expected_version=3)])
        assert str(info.value) == (
            "stream 'new': expected version 3, but the stream is at no stream (no events yet)"
        )

    # 4. idempotence on event_id

    def test_reappend_same_event_id_is_noop_returning_original(self, store: Any) -> None:
        store.append([ev("x", 0)])
        first = store.append([ev("s", 1, event_id="e1"), ev("s", 2, event_id="e2")])
        again = store.append([ev("s", 1, event_id="e1", expected_version="no_stream")])
        assert again.appended == 0 and again.first_seq is None
        assert [(d.event_id, d.seq) for d in again.duplicates] == [("e1", first.first_seq)]
        assert store.size() == 3
        mixed = store.append([ev("s", 2, event_id="e2"), ev("s", 3, event_id="e3")])
        assert mixed.seqs == (2, 3) and mixed.appended == 1

    def test_same_event_id_different_content_conflicts(self, store: Any) -> None:
        store.append([ev("s", 1, event_id="e1")])
        with pytest.raises(EventIdConflict) as info:
            store.append([ev("s", 2, event_id="e1")])
        assert info.value.event_id == "e1" and info.value.seq == 0
        assert info.value.differs == ["payload"]
        assert "e1" in str(info.value) and "seq 0" in str(info.value)
        assert store.size() == 1

    def test_empty_append_changes_nothing(self, store: Any) -> None:
        store.append([ev("s", 0)])
        root = store.root()
        r = store.append([])
        assert (r.first_seq, r.last_seq, r.appended, r.duplicates) == (None, None, 0, ())
        assert store.size() == 1 and store.root() == root

    # 5. immutability: no API updates or deletes

    def test_no_update_or_delete_api(self, store: Any) -> None:
        """Every public attribute is on a reviewed list of reads, appends and proofs.

        A new public method fails this test until someone adds it here, which is the
        moment to check that it cannot update or delete an event.
        """
        public = {n for n in dir(store) if not n.startswith("_")}
        assert public - READ_APPEND_PROVE == set()
        assert {"append", "read", "size", "stream_version", "root"} <= public

    # 6. Merkle tree over leaf hashes

    def test_leaf_hashes_and_root_follow_rfc9162(self, store: Any) -> None:
        for k in range(1, 8):
            store.append([ev(f"s{k % 3}", i) for i in range(k)])
        events = list(store.read())
        for e in events:
            entry = envelope_bytes(
                e.seq, e.stream, e.stream_version, e.event_id, e.type, e.schema_version, e.payload
            )
            assert e.leaf_hash == hashlib.sha256(b"\x00" + entry).digest()
        leaves = [e.leaf_hash for e in events]
        assert store.root() == merkle_oracle.mth(leaves)
        for size in range(len(leaves) + 1):
            assert store.root(size) == merkle_oracle.mth(leaves[:size]), f"root({size})"

    def test_inclusion_and_consistency_proofs_verify(self, store: Any) -> None:
        for k in range(1, 7):
            store.append([ev("s", 100 * k + i) for i in range(k)])
        leaves = [e.leaf_hash for e in store.read()]
        n = len(leaves)
        for size in range(1, n + 1):
            root = merkle_oracle.mth(leaves[:size])
            for seq in range(size):
                proof = store.prove_inclusion(seq, size)
                assert proof == merkle_oracle.path(seq, leaves[:size]), (seq, size)
                merkle.check_inclusion(seq, size, leaves[seq], proof, root)
            for old in range(1, size + 1):
                proof = store.prove_consistency(old, size)
                merkle.check_consistency(old, size, merkle_oracle.mth(leaves[:old]), root, proof)

    def test_proofs_across_stored_node_levels(self, store: Any) -> None:
        """Batches of uneven sizes around 64 (the store keeps nodes from level 6 up and
        hashes lower ones from leaves): roots, inclusion and consistency proofs at sizes and
        positions on both sides of those boundaries equal the oracle's."""
        seqno = 0
        for k in (1, 62, 64, 65, 3, 127, 1):
            store.append([ev("s", 10_000 + seqno + i) for i in range(k)])
            seqno += k
        leaves = [e.leaf_hash for e in store.read()]
        n = len(leaves)
        sizes = sorted({1, 2, 63, 64, 65, 127, 128, 129, 200, 255, 256, n - 1, n})
        for size in sizes:
            root = merkle_oracle.mth(leaves[:size])
            assert store.root(size) == root, f"root({size})"
            for seq in sorted({0, 1, 63, 64, size // 2, size - 2, size - 1} & set(range(size))):
                proof = store.prove_inclusion(seq, size)
                assert proof == merkle_oracle.path(seq, leaves[:size]), (seq, size)
                merkle.check_inclusion(seq, size, leaves[seq], proof, root)
            for old in sorted({1, 63, 64, 65, 128, size // 3, size} & set(range(1, size + 1))):
                proof = store.prove_consistency(old, size)
                merkle.check_consistency(old, size, merkle_oracle.mth(leaves[:old]), root, proof)

    # 7. crash safety (the full version: tests/test_crash.py)

    def test_killed_writer_leaves_whole_batches(self, tmp_path: Path) -> None:
        if not self.multi_process:
            pytest.skip("this store lives inside one process; nothing survives a kill")
        from tests.process_harness import crash_rounds

        crash_rounds(tmp_path / "ledger", tmp_path, rounds=2, seed=7)

    # 8. two writer processes (the full version: tests/test_concurrency.py)

    def test_two_writers_serialise_or_get_busy(self, tmp_path: Path) -> None:
        if not self.multi_process:
            pytest.skip("this store lives inside one process; there is no second writer")
        from tests.process_harness import two_writers

        two_writers(tmp_path / "ledger", batches=4, size=50)
