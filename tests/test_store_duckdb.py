"""The DuckDB backend held to the store contract."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.errors import InvalidEvent
from ledger.log.store import Ledger, init_ledger, open_ledger
from ledger.log.verify import verify_ledger
from schemas.canonical import canonical_json
from schemas.envelope import NewEvent
from tests.store_contract import StoreContract
from tests.store_helpers import no_extra_checks  # noqa: F401  (fixture)

pytestmark = pytest.mark.usefixtures("no_extra_checks")


class TestDuckDBStore(StoreContract):
    def open_store(self, path: Path) -> Ledger:
        return init_ledger(path)

    def reopen_store(self, path: Path) -> Ledger:
        return open_ledger(path)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    payloads=st.lists(
        st.dictionaries(st.text(max_size=8), json_values, max_size=5), min_size=1, max_size=5
    )
)
def test_payload_bytes_are_canonical_and_round_trip(
    tmp_path_factory: pytest.TempPathFactory, payloads: list[dict[str, Any]]
) -> None:
    """Stored payload bytes are canonical JSON of the value, decode back to it, and re-encode
    to the same bytes (the canonical law leaf hashes depend on)."""
    with init_ledger(tmp_path_factory.mktemp("l") / "l") as lg:
        lg.append([NewEvent("run/p", "ext.p", p, event_id=f"e{i}") for i, p in enumerate(payloads)])
        for e, p in zip(lg.read(), payloads, strict=True):
            assert e.payload == canonical_json(p)
            assert e.data() == p
            assert canonical_json(e.data()) == e.payload


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_floats_are_refused_not_rewritten(tmp_path: Path, bad: float) -> None:
    with init_ledger(tmp_path / "l") as lg:
        with pytest.raises(InvalidEvent) as info:
            lg.append(
                [
                    NewEvent("run/p", "ext.p", {"ok": 1}),
                    NewEvent("run/p", "ext.p", {"x": [1, {"y": bad}]}),
                ]
            )
        assert info.value.index == 1
        assert "payload.x[1].y is NaN or Infinity" in str(info.value)
        assert lg.size() == 0


def test_open_refuses_an_unknown_format_version(tmp_path: Path) -> None:
    from ledger.errors import LedgerError
    from ledger.log.store import open_ledger
    from tests.store_helpers import raw

    init_ledger(tmp_path / "l").close()
    with raw(tmp_path / "l") as con:
        con.execute("UPDATE meta SET value = '99' WHERE key = 'format_version'")
    with pytest.raises(LedgerError, match="has format version '99'; this vledger reads '2'"):
        open_ledger(tmp_path / "l")


def test_a_format_1_ledger_is_upgraded_on_open_and_keeps_its_tree(tmp_path: Path) -> None:
    """Format 1 stored every interior node; opening drops those below NODE_MIN_LEVEL (they
    are recomputed from leaves) and the roots, proofs and verify are unchanged."""
    from ledger.log import merkle
    from ledger.log.layout import NODE_MIN_LEVEL
    from ledger.log.store import open_ledger
    from tests.store_helpers import raw

    with init_ledger(tmp_path / "l") as lg:
        lg.append([NewEvent("s", "ext.x", {"i": i}) for i in range(300)])
        root, proof = lg.root(), lg.prove_inclusion(17, 200)
        runs = merkle.push_run([], 0, b"".join(e.leaf_hash for e in lg.read()))
    low = [(lv, f + j, hs[32 * j : 32 * j + 32]) for lv, f, hs in runs if lv < NODE_MIN_LEVEL for j in range(len(hs) // 32)]
    with raw(tmp_path / "l") as con:  # make it the format-1 shape: every node stored
        con.executemany(
            "INSERT INTO nodes VALUES (?, ?, ?, ?)", [[lv, i, ((i + 1) << lv) - 1, h] for lv, i, h in low]
        )
        con.execute("UPDATE meta SET value = '1' WHERE key = 'format_version'")
    with open_ledger(tmp_path / "l") as lg:
        assert lg.meta("format_version") == "2"
        assert lg.root() == root and lg.prove_inclusion(17, 200) == proof
        assert verify_ledger(lg).ok
    with raw(tmp_path / "l") as con:
        assert con.execute("SELECT count(*) FROM nodes WHERE level < ?", [NODE_MIN_LEVEL]).fetchone() == (0,)


def test_a_buffer_pool_too_small_is_named_not_called_damage(tmp_path: Path) -> None:
    """DuckDB's out-of-memory under ``$VLEDGER_DUCKDB_MEMORY`` names the cap and how to raise
    it, on append and on read; it is not reported as a damaged store file (``cannot be
    read (Out of Memory …); the file is damaged``) and the append changes nothing."""
    from click.testing import CliRunner

    from ledger.cli import main

    big = tmp_path / "big.jsonl"
    big.write_bytes(canonical_json({"stream": "s", "type": "ext.x", "payload": {"b": "x" * (6 << 20)}}) + b"\n")
    home = str(tmp_path / "L")
    assert CliRunner().invoke(main, ["init", "--ledger", home]).exit_code == 0

    refused = CliRunner().invoke(main, ["append", str(big), "--ledger", home], env={"VLEDGER_DUCKDB_MEMORY": "4MB"})
    assert refused.exit_code == 1
    assert "DuckDB ran out of memory under its cap of 4MB while appending" in refused.output
    assert "VLEDGER_DUCKDB_MEMORY=1GB" in refused.output and "damaged" not in refused.output
    with open_ledger(Path(home)) as lg:
        assert lg.size() == 0

    assert CliRunner().invoke(main, ["append", str(big), "--ledger", home]).exit_code == 0
    read = CliRunner().invoke(main, ["log", "--json", "--ledger", home], env={"VLEDGER_DUCKDB_MEMORY": "2MB"})
    assert read.exit_code == 1
    assert "DuckDB ran out of memory under its cap of 2MB while reading" in read.output
    assert "damaged" not in read.output


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-62_135_596_800_000_000, 253_402_300_799_999_999), min_size=1, max_size=20))
def test_stored_events_decode_rows_as_pyarrow_does(micros: list[int]) -> None:
    """stored_events (column-wise, one datetime per distinct recorded_at) gives the events a
    row-by-row to_pylist gives: equal values, the same tzinfo object, the same isoformat."""
    import pyarrow as pa

    from schemas.envelope import ARROW_SCHEMA, StoredEvent, stored_events

    n = len(micros)
    table = pa.table(
        {
            "seq": pa.array(range(n), pa.uint64()),
            "stream": [f"s{i % 3}" for i in range(n)],
            "stream_version": pa.array([i // 3 for i in range(n)], pa.uint32()),
            "event_id": [f"e{i}" for i in range(n)],
            "type": ["ext.x"] * n,
            "schema_version": pa.array([1] * n, pa.uint16()),
            "recorded_at": pa.array(micros, pa.int64()).cast(ARROW_SCHEMA.field("recorded_at").type),
            "payload": [b"{}"] * n,
            "leaf_hash": pa.array([bytes(32)] * n, pa.binary(32)),
        },
        schema=ARROW_SCHEMA,
    )
    want = [StoredEvent(**row) for row in table.to_pylist()]
    got = list(stored_events(table))
    assert got == want
    for a, b in zip(got, want, strict=True):
        assert a.recorded_at.tzinfo is b.recorded_at.tzinfo
        assert a.recorded_at.isoformat() == b.recorded_at.isoformat()


def test_closing_after_a_big_append_checkpoints_it_whole(tmp_path: Path) -> None:
    """A store that appended a large row (30 MiB) closes at the whole cap, not the steady
    pool: DuckDB cannot checkpoint a row bigger than its pool, and the WAL would be left to
    replay at every open. Small rows close within the steady pool (benchmarks/memory_flat)."""
    big = "x" * (30 << 20)
    with init_ledger(tmp_path / "L") as lg:
        lg.append([NewEvent(stream="s", type="ext.x", payload={"b": big})])
    assert not (tmp_path / "L" / "events.duckdb.wal").exists()  # checkpointed, not left to replay
    with open_ledger(tmp_path / "L") as lg:
        (ev,) = lg.read()
        assert ev.data() == {"b": big}


def test_a_small_wal_is_left_for_the_next_open_and_a_larger_one_checkpointed(
    tmp_path: Path,
) -> None:
    """Closing leaves a WAL of at most connection.KEEP_WAL bytes (its checkpoint was a fifth
    of a small retrace's work) and checkpoints a larger one, so an open replays a bounded
    WAL; what the WAL holds is read back by the next open, read-write or read-only."""
    from ledger.log import connection

    wal = tmp_path / "L" / "events.duckdb.wal"
    with init_ledger(tmp_path / "L") as lg:
        lg.append([NewEvent(stream="s", type="ext.x", payload={"n": 0})])
    assert 0 < wal.stat().st_size <= connection.KEEP_WAL  # left as it was
    with open_ledger(tmp_path / "L", read_only=True) as lg:
        assert [e.data() for e in lg.read()] == [{"n": 0}]
    payload = "x" * 300
    with open_ledger(tmp_path / "L") as lg:
        lg.append([NewEvent("s", "ext.x", {"i": i, "p": payload}) for i in range(4_000)])
        assert wal.stat().st_size > connection.KEEP_WAL  # under CHECKPOINT_ROWS: it waits
    assert not wal.exists()  # checkpointed at close
    with open_ledger(tmp_path / "L") as lg:
        assert lg.size() == 4_001 and verify_ledger(lg).ok


def test_appends_of_small_events_write_row_groups_no_later_checkpoint_rewrites(tmp_path: Path) -> None:
    """Small events are checkpointed once connection.CHECKPOINT_ROWS of them wait, so each
    checkpoint writes row groups DuckDB never reads back to merge with the next ones. At
    DuckDB's own trigger (16 MiB of WAL) these were ~50k rows each, and every other
    checkpoint rewrote the one before to merge the two (benchmarks/store)."""
    from ledger.log import connection

    def first_row_group(lg: Ledger) -> tuple[int, int] | None:
        row = lg._con.execute(
            "SELECT count, block_id FROM pragma_storage_info('events') "
            "WHERE row_group_id = 0 AND column_name = 'seq' AND persistent"
        ).fetchall()
        return row[0] if row else None

    payload = "x" * 300  # ~400 bytes a row in the WAL, as benchmarks/store appends
    seen = set()
    with init_ledger(tmp_path / "L") as lg:
        for b in range(20):
            lg.append([NewEvent(f"s/{b}", "ext.x", {"i": i, "p": payload}) for i in range(10_000)])
            seen.add(first_row_group(lg))
        seen.discard(None)
        assert len(seen) == 1, seen  # written once, never rewritten
        assert seen.pop()[0] >= connection.CHECKPOINT_ROWS
        assert lg.size() == 200_000 and verify_ledger(lg).ok


def test_a_large_append_is_checkpointed_at_once(tmp_path: Path) -> None:
    """A large row (over LARGE_APPEND_BYTES) is checkpointed right after its commit, within
    the cap its append had: left in the WAL, a later checkpoint within the steady pool
    could not write it (DuckDB's own trigger waits for CHECKPOINT_WAL of WAL)."""
    from ledger.log import connection

    big = "x" * (connection.LARGE_APPEND_BYTES + 1)
    with init_ledger(tmp_path / "L") as lg:
        lg.append([NewEvent(stream="s", type="ext.x", payload={"b": big})])
        assert not (tmp_path / "L" / "events.duckdb.wal").exists()
        lg.append([NewEvent(stream="s", type="ext.x", payload={"n": 1})])
        assert (tmp_path / "L" / "events.duckdb.wal").exists()  # a small one waits
        lg.append_parts([[NewEvent(stream="s", type="ext.x", payload={"b": big, "n": 2})], []])
        assert not (tmp_path / "L" / "events.duckdb.wal").exists()
        assert [e.data().get("n") for e in lg.read()] == [None, 1, 2]


def test_the_steady_pool_draws_on_duckdbs_block_allocator(tmp_path: Path, monkeypatch: Any) -> None:
    """Blocks within the steady pool come from DuckDB's own block allocator (sized to the
    pool), not freed to the process allocator and faulted in afresh at every eviction. A
    second connection in the process under a smaller cap, which DuckDB refuses to shrink
    it for, still opens."""
    import duckdb

    from ledger.log import connection

    with duckdb.connect() as scratch:
        scratch.execute(f"SET block_allocator_memory = '{connection.TRIM_TO}'")
        want = scratch.execute("SELECT current_setting('block_allocator_memory')").fetchone()
    with init_ledger(tmp_path / "L") as lg:
        got = lg._con.execute("SELECT current_setting('block_allocator_memory')").fetchone()
        assert got == want
        monkeypatch.setenv("VLEDGER_DUCKDB_MEMORY", "16MB")
        with open_ledger(tmp_path / "L", read_only=True) as again:
            assert again.size() == 0


def test_each_part_of_an_append_is_produced_under_the_whole_cap(tmp_path: Path) -> None:
    """Producing a part may read the log (ingest compares the streams it holds after the
    last input): the pool is at the whole cap then, not the steady one an insert of small
    rows leaves, which could not hold a read beside a large uncommitted batch."""
    lg = init_ledger(tmp_path / "l")
    limits: list[str] = []

    def parts() -> Any:
        for k in range(3):
            limits.append(lg._con.execute("SELECT current_setting('memory_limit')").fetchone()[0])
            yield [NewEvent(f"s/{k}", "ext.t", {"k": k})]

    lg.append_parts(parts())
    cap = lg._con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    assert len(limits) == 3 and set(limits) == {cap}, (limits, cap)
    lg.close()


def test_append_parts_inserts_on_one_duckdb_thread_and_restores_the_count(tmp_path: Path) -> None:
    """The parts are made while they are inserted, by work that keeps the cores busy:
    DuckDB works on the appending thread alone meanwhile, and its thread count is as it
    was afterwards — also after a refused part rolled the batch back."""
    lg = init_ledger(tmp_path / "l")
    lg._con.execute("SET threads = 3")
    during: list[int] = []

    def threads() -> int:
        return int(lg._con.execute("SELECT current_setting('threads')").fetchone()[0])

    def parts(bad: bool) -> Any:
        for k in range(2):
            during.append(threads())
            yield [NewEvent(f"s/{k}", "ext.t", {"k": k})]
        if bad:
            yield [NewEvent("s/2", "ext.t", {"x": float("nan")})]

    lg.append_parts(parts(bad=False))
    assert during == [1, 1] and threads() == 3
    with pytest.raises(InvalidEvent):
        lg.append_parts(parts(bad=True))
    assert threads() == 3 and lg.size() == 2
    lg.close()


def test_payloads_are_zstd_compressed_and_leaf_hashes_stored_plain(tmp_path: Path) -> None:
    """A new ledger's checkpointed payload segments are ZSTD and its leaf hashes
    uncompressed (ledger.log.layout: DuckDB's own per-segment choice cost most of an
    insert); the filtered columns keep DuckDB's choice. The events read back unchanged."""
    payloads = [{"i": i, "text": f"tool output {i % 7} " * 20} for i in range(3_000)]
    with init_ledger(tmp_path / "L") as lg:
        lg.append([NewEvent(f"s/{i % 50}", "ext.x", p) for i, p in enumerate(payloads)])
        lg._con.execute("CHECKPOINT")
        used = dict(
            lg._con.execute(
                "SELECT column_name, list(DISTINCT compression) FROM pragma_storage_info('events')"
                " WHERE segment_type <> 'VALIDITY' AND compression <> 'Constant' GROUP BY ALL"
            ).fetchall()
        )
        assert used["payload"] == ["ZSTD"], used
        assert used["leaf_hash"] == ["Uncompressed"], used
        assert "ZSTD" not in used["stream"], used
        assert [e.data() for e in lg.read()] == payloads
        assert verify_ledger(lg).ok


def test_a_ledger_made_with_default_encodings_is_read_and_appended(tmp_path: Path) -> None:
    """A ledger whose table was created without the column encodings (an earlier layout)
    opens, appends and verifies: the encodings are physical, not part of the format."""
    import duckdb

    from ledger.log import layout

    plain = layout.DDL.replace(" USING COMPRESSION zstd", "").replace(
        " USING COMPRESSION uncompressed", ""
    )
    assert plain != layout.DDL
    with init_ledger(tmp_path / "L") as lg:
        lg.append([NewEvent("s/a", "ext.x", {"n": 0})])
    # the same rows in a table with DuckDB's default encodings
    con = duckdb.connect(str(tmp_path / "L" / layout.DB_FILE))
    con.execute("ALTER TABLE events RENAME TO old")
    con.execute(plain.split(";")[0])
    con.execute("INSERT INTO events SELECT * FROM old")
    con.execute("DROP TABLE old")
    assert "COMPRESSION" not in con.execute(
        "SELECT sql FROM duckdb_tables() WHERE table_name = 'events'"
    ).fetchone()[0]
    con.close()
    with open_ledger(tmp_path / "L") as lg:
        lg.append([NewEvent("s/a", "ext.x", {"n": 1})])
        assert [e.data() for e in lg.read()] == [{"n": 0}, {"n": 1}]
        assert verify_ledger(lg).ok
