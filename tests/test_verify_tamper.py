"""``verify`` detects and names each tampering (docs/readme/store.md § Guarantees 5 and 6).

Each test builds a clean ledger (with a signed checkpoint), checks it verifies, tampers with
the files the way an attacker with disk access would, and asserts the first problem names
the seq / segment / checkpoint and says what is wrong.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from ledger.cli import main
from ledger.log import verify as verify_mod
from ledger.log.layout import DB_FILE
from ledger.log.note import sign_note
from ledger.log.store import init_ledger, open_ledger
from ledger.log.verify import verify_ledger
from ledger.log.verify_report import Problem
from schemas.envelope import NewEvent
from tests.store_helpers import (
    make_key,
    no_extra_checks,  # noqa: F401  (fixture)
    populated,
    raw,
    sample_events,
    swap_store,
)

pytestmark = pytest.mark.usefixtures("no_extra_checks")


def clean_ledger(tmp_path: Path, n: int = 12):
    signer, verifier, key_file = make_key(tmp_path)
    path = tmp_path / "ledger"
    lg = populated(path, [5, n - 5])
    lg.checkpoint(signer)
    report = verify_ledger(lg, verifier)
    assert report.ok, report.problems
    assert report.events == n and report.checkpoints == 1
    lg.close()
    return path, signer, verifier


def first_problem(path: Path, verifier=None) -> Problem:
    with open_ledger(path) as lg:
        report = verify_ledger(lg, verifier)
    assert not report.ok
    return report.problems[0]


def test_changed_payload_byte_in_store_names_its_seq(tmp_path: Path) -> None:
    path, _, verifier = clean_ledger(tmp_path)
    with raw(path) as con:
        payload = bytes(con.execute("SELECT payload FROM events WHERE seq = 7").fetchall()[0][0])
        changed = payload.replace(b"event 7", b"event 8")
        assert changed != payload and len(changed) == len(payload)
        con.execute("UPDATE events SET payload = ? WHERE seq = 7", [changed])
    p = first_problem(path, verifier)
    assert p.where == "seq 7"
    assert "altered" in p.what


def test_deleted_event_names_the_missing_seq(tmp_path: Path) -> None:
    path, _, verifier = clean_ledger(tmp_path)
    with raw(path) as con:
        con.execute("DELETE FROM events WHERE seq = 4")
    p = first_problem(path, verifier)
    assert p.where == "seq 4"
    assert p.what.startswith("missing")


def test_swapped_events_name_the_first_swapped_seq(tmp_path: Path) -> None:
    path, _, verifier = clean_ledger(tmp_path)
    with raw(path) as con:
        con.execute(
            "UPDATE events SET seq = CASE seq WHEN 2 THEN 9 WHEN 9 THEN 2 END WHERE seq IN (2, 9)"
        )
    with open_ledger(path) as lg:
        problems = verify_ledger(lg, verifier).problems
    assert problems[0].where == "seq 2"
    assert any(p.where == "seq 2" and "altered" in p.what for p in problems)
    assert any(p.where == "seq 2" and "reordered" in p.what for p in problems)


def test_truncated_tail_names_the_first_missing_seq(tmp_path: Path) -> None:
    path, _, verifier = clean_ledger(tmp_path)
    with raw(path) as con:
        con.execute("DELETE FROM events WHERE seq >= 9")
    p = first_problem(path, verifier)
    assert p.where == "seq 9"
    assert "truncated" in p.what


def test_truncation_with_tree_state_fixed_up_is_caught_by_the_checkpoint(tmp_path: Path) -> None:
    """The attacker also rewrites tree_state and nodes; the signed checkpoint still says 12."""
    path, _, verifier = clean_ledger(tmp_path)
    small = tmp_path / "small"
    with open_ledger(path) as lg:
        rows = list(lg.read(to_seq=8))
        origin = lg.origin
    forged = init_ledger(small)
    forged.append([NewEvent(e.stream, e.type, e.data(), event_id=e.event_id) for e in rows])
    forged.close()
    swap_store(small, path)
    with raw(path) as con:
        con.execute("UPDATE meta SET value = ? WHERE key = 'origin'", [origin])
    p = first_problem(path, verifier)
    assert p.where.startswith("checkpoint 00000000000000000012.note")
    assert "covers 12 events but only 9 are stored" in p.what


def test_rehashed_forgery_under_kept_checkpoint_is_named(tmp_path: Path) -> None:
    """Whole log replaced by one with a changed payload and every hash recomputed."""
    path, _, verifier = clean_ledger(tmp_path)
    other = tmp_path / "forged"
    with open_ledger(path) as lg:
        rows = list(lg.read())
        origin = lg.origin
    forged = init_ledger(other)
    events = []
    for e in rows:
        data = e.data()
        if e.seq == 3:
            data["text"] = "rewritten history"
        events.append(NewEvent(e.stream, e.type, data, event_id=e.event_id))
    forged.append(events)
    forged.close()
    swap_store(other, path)
    with raw(path) as con:
        con.execute("UPDATE meta SET value = ? WHERE key = 'origin'", [origin])
    with open_ledger(path) as lg:
        report = verify_ledger(lg, verifier)
    # the forgery is internally consistent: only the signed checkpoint exposes it
    assert [p.where for p in report.problems] == ["checkpoint 00000000000000000012.note"]
    assert "the log was rewritten" in report.problems[0].what
    # and without --pub the root comparison still catches it
    assert first_problem(path).where == "checkpoint 00000000000000000012.note"


def test_checkpoint_resigned_by_another_key_is_refused_with_pub(tmp_path: Path) -> None:
    path, _, verifier = clean_ledger(tmp_path)
    mallory, _, _ = make_key(tmp_path, "mallory")
    cp_file = path / "checkpoints" / "00000000000000000012.note"
    text = cp_file.read_text().split("\n\n")[0] + "\n"
    cp_file.write_text(sign_note(text, [mallory]))
    p = first_problem(path, verifier)
    assert p.where == "checkpoint 00000000000000000012.note"
    assert "not signed by the given key" in p.what


def test_edited_checkpoint_signature_fails(tmp_path: Path) -> None:
    path, _, verifier = clean_ledger(tmp_path)
    cp_file = path / "checkpoints" / "00000000000000000012.note"
    cp_file.write_text(cp_file.read_text().replace("\n12\n", "\n11\n"))
    p = first_problem(path, verifier)
    assert p.where == "checkpoint 00000000000000000012.note"
    assert "does not verify" in p.what


def test_changed_payload_in_sealed_segment_names_segment_and_seq(tmp_path: Path) -> None:
    path, _, verifier = clean_ledger(tmp_path)
    with open_ledger(path) as lg:
        (seg,) = lg.seal()
        assert verify_ledger(lg, verifier).ok
    seg_path = path / "segments" / seg.file
    table = pq.read_table(seg_path)
    payloads = table.column("payload").to_pylist()
    payloads[3] = payloads[3].replace(b"event 3", b"event 4")
    table = table.set_column(
        table.schema.get_field_index("payload"),
        table.schema.field("payload"),
        pa.array(payloads, pa.binary()),
    )
    pq.write_table(table, seg_path)
    p = first_problem(path, verifier)
    assert p.where == f"segment {seg.file}"
    assert p.what.startswith("seq 3:")


def test_segment_rewritten_with_rehashed_leaf_is_caught_against_store(tmp_path: Path) -> None:
    """Changing the payload *and* its leaf hash in the segment still differs from the store."""
    from ledger.log.segments import recomputed_leaves

    path, _, verifier = clean_ledger(tmp_path)
    with open_ledger(path) as lg:
        (seg,) = lg.seal()
    seg_path = path / "segments" / seg.file
    table = pq.read_table(seg_path)
    payloads = table.column("payload").to_pylist()
    payloads[5] = payloads[5].replace(b"event 5", b"event 6")
    table = table.set_column(7, table.schema.field("payload"), pa.array(payloads, pa.binary()))
    leaves = list(recomputed_leaves(table))
    table = table.set_column(8, table.schema.field("leaf_hash"), pa.array(leaves, pa.binary(32)))
    pq.write_table(table, seg_path)
    p = first_problem(path, verifier)
    assert p.where == f"segment {seg.file}"
    assert "seq" in p.what or "root" in p.what


def test_verify_cli_exit_codes_and_first_problem(tmp_path: Path) -> None:
    path, _, _ = clean_ledger(tmp_path)
    runner = CliRunner()
    pub = tmp_path / "key-test.example_log.pub"
    ok = runner.invoke(main, ["verify", "--ledger", str(path), "--pub", str(pub)])
    assert ok.exit_code == 0, ok.output
    assert "OK:" in ok.output
    with raw(path) as con:
        con.execute("DELETE FROM events WHERE seq = 6")
    bad = runner.invoke(main, ["verify", "--ledger", str(path), "--pub", str(pub)])
    assert bad.exit_code == 1
    assert "Error: seq 6: missing: the next stored event is seq 7 (deleted?)" in bad.output


def test_extra_checks_run_after_core_checks(tmp_path: Path) -> None:
    path, _, verifier = clean_ledger(tmp_path)
    seen = []

    def check(lg) -> list[Problem]:
        seen.append(lg.size())
        return [Problem("receipt r1", "does not match")]

    with open_ledger(path) as lg:
        report = verify_mod.verify_ledger(lg, verifier, extra=[check])
    assert seen == [12]
    assert report.problems == [Problem("receipt r1", "does not match")]


def test_clean_ledger_with_segments_and_many_checkpoints_verifies(tmp_path: Path) -> None:
    signer, verifier, _ = make_key(tmp_path)
    lg = init_ledger(tmp_path / "l")
    seq = 0
    for k in (1, 2, 5, 8, 13):
        lg.append(sample_events(k, seq, corpus=f"c{k}"))
        seq += k
        lg.checkpoint(signer)
        if k == 5:
            lg.seal()
    report = verify_ledger(lg, verifier)
    assert report.ok, report.problems
    assert (report.events, report.checkpoints, report.segments) == (29, 5, 1)
    lg.close()


def test_flipped_bytes_in_the_database_file_are_reported_not_raised(tmp_path: Path) -> None:
    """A byte-level edit of events.duckdb: DuckDB's block checksums fail; verify or open
    reports it by file name (no driver exception escapes)."""
    from ledger.errors import TamperDetected

    path, _, verifier = clean_ledger(tmp_path, n=3000)
    db = path / DB_FILE
    data = bytearray(db.read_bytes())
    # a byte in every 4 KiB of the middle half: some of those blocks hold data whatever the
    # file's layout (a single spot can fall in a free block, which nothing reads)
    for off in range(len(data) // 4, 3 * len(data) // 4, 4096):
        data[off] ^= 0xFF
    db.write_bytes(bytes(data))
    try:
        with open_ledger(path) as lg:
            report = verify_ledger(lg, verifier)
    except TamperDetected as exc:
        assert str(exc).startswith(str(db))
        return
    assert not report.ok


def test_unreadable_segment_file_is_named(tmp_path: Path) -> None:
    path, _, verifier = clean_ledger(tmp_path)
    with open_ledger(path) as lg:
        (seg,) = lg.seal()
    seg_path = path / "segments" / seg.file
    data = bytearray(seg_path.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 64] = b"\0" * 64
    seg_path.write_bytes(bytes(data))
    p = first_problem(path, verifier)
    assert p.where == f"segment {seg.file}"


def test_altered_stored_node_is_named(tmp_path: Path) -> None:
    """A stored interior node (level >= NODE_MIN_LEVEL) changed on disk: verify rebuilds
    the tree from the events and names the node by the last leaf it covers."""
    from ledger.log.layout import NODE_MIN_LEVEL

    path, _, verifier = clean_ledger(tmp_path, n=200)
    with raw(path) as con:
        level, idx = con.execute("SELECT level, idx FROM nodes ORDER BY last_leaf LIMIT 1").fetchone()
        assert level == NODE_MIN_LEVEL
        con.execute("UPDATE nodes SET hash = ? WHERE level = ? AND idx = ?", [b"\x07" * 32, level, idx])
    p = first_problem(path, verifier)
    assert p.where == f"seq {((idx + 1) << level) - 1}"
    assert f"(level {level}, index {idx}) does not match" in p.what


def test_an_unexpected_low_level_node_is_named(tmp_path: Path) -> None:
    """Nodes below NODE_MIN_LEVEL are never stored; one planted in the nodes table is named."""
    path, _, verifier = clean_ledger(tmp_path, n=200)
    with raw(path) as con:
        con.execute("INSERT INTO nodes VALUES (1, 3, 7, ?)", [b"\x07" * 32])
    p = first_problem(path, verifier)
    assert p.where == "seq 7"
    assert "stored Merkle node (level 1, index 3)" in p.what


def test_a_duplicated_stored_node_is_named(tmp_path: Path) -> None:
    path, _, verifier = clean_ledger(tmp_path, n=200)
    with raw(path) as con:
        con.execute("INSERT INTO nodes SELECT * FROM nodes WHERE level = 7")
    p = first_problem(path, verifier)
    assert p.where == "seq 127"
    assert "(level 7, index 0) is stored more than once" in p.what
