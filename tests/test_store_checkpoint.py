"""Signed checkpoints of the DuckDB store (guarantee 6) and the tlog-proof the CLI prints."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger.app.store_ops import prove
from ledger.errors import CheckpointError, LedgerError
from ledger.log import merkle, note
from ledger.log.layout import checkpoint_file
from ledger.log.store import init_ledger
from tests.store_helpers import (
    make_key,
    no_extra_checks,  # noqa: F401  (fixture)
    populated,
    sample_events,
)

pytestmark = pytest.mark.usefixtures("no_extra_checks")


def test_checkpoint_is_a_signed_c2sp_note_of_the_current_tree(tmp_path: Path) -> None:
    signer, verifier, _ = make_key(tmp_path)
    lg = populated(tmp_path / "l", [3, 4])
    signed = lg.checkpoint(signer)
    opened = note.open_note(signed, [verifier])
    cp = note.parse_checkpoint(opened.text)
    assert (cp.origin, cp.size, cp.root) == (lg.origin, 7, lg.root())
    assert checkpoint_file(lg.path, 7).read_text() == signed
    assert lg.latest_checkpoint() == cp
    lg.close()


def test_consistency_proof_joins_every_pair_of_checkpoints(tmp_path: Path) -> None:
    signer, verifier, _ = make_key(tmp_path)
    lg = init_ledger(tmp_path / "l")
    cps = []
    seq = 0
    for k in (1, 1, 2, 3, 5, 8):
        lg.append(sample_events(k, seq))
        seq += k
        cps.append(note.parse_checkpoint(note.open_note(lg.checkpoint(signer), [verifier]).text))
    for a in cps:
        for b in cps:
            if a.size <= b.size:
                proof = lg.prove_consistency(a.size, b.size)
                merkle.check_consistency(a.size, b.size, a.root, b.root, proof)
    lg.close()


def test_same_size_same_key_is_idempotent_and_a_second_key_cosigns(tmp_path: Path) -> None:
    signer, verifier, _ = make_key(tmp_path)
    witness, wverifier, _ = make_key(tmp_path, "witness.example")
    lg = populated(tmp_path / "l", [5])
    first = lg.checkpoint(signer)
    assert lg.checkpoint(signer) == first
    both = lg.checkpoint(witness)
    opened = note.open_note(both, [verifier, wverifier])
    assert [s.name for s in opened.verified] == ["test.example/log", "witness.example"]
    assert len(lg.checkpoints()) == 1
    lg.close()


def test_refuses_to_sign_when_a_stored_checkpoint_is_not_a_prefix(tmp_path: Path) -> None:
    signer, _, _ = make_key(tmp_path)
    lg = populated(tmp_path / "l", [6])
    bogus = note.Checkpoint(lg.origin, 3, b"\x07" * 32)
    checkpoint_file(lg.path, 3).write_text(note.sign_note(note.format_checkpoint(bogus), [signer]))
    lg.append(sample_events(2, 6))
    with pytest.raises(CheckpointError) as info:
        lg.checkpoint(signer)
    assert "00000000000000000003.note" in str(info.value)
    assert "not consistent" in str(info.value)
    assert not checkpoint_file(lg.path, 8).exists()
    lg.close()


def test_refuses_to_sign_when_the_log_shrank(tmp_path: Path) -> None:
    signer, _, _ = make_key(tmp_path)
    lg = populated(tmp_path / "l", [4])
    future = note.Checkpoint(lg.origin, 10, b"\x01" * 32)
    checkpoint_file(lg.path, 10).write_text(
        note.sign_note(note.format_checkpoint(future), [signer])
    )
    with pytest.raises(CheckpointError, match="covers 10 events but the log has 4"):
        lg.checkpoint(signer)
    lg.close()


def test_tlog_proof_round_trips_and_verifies_against_the_checkpoint(tmp_path: Path) -> None:
    signer, verifier, _ = make_key(tmp_path)
    lg = populated(tmp_path / "l", [11])
    lg.checkpoint(signer)
    lg.append(sample_events(3, 11))
    events = list(lg.read())
    for seq in (0, 5, 10):
        text = prove(seq, ledger=lg).tlog_proof
        proof = note.parse_tlog_proof(text)
        assert note.format_tlog_proof(proof) == text
        cp = note.parse_checkpoint(note.open_note(proof.checkpoint_note, [verifier]).text)
        assert (proof.index, cp.size) == (seq, 11)
        merkle.check_inclusion(seq, cp.size, events[seq].leaf_hash, list(proof.path), cp.root)
    with pytest.raises(LedgerError, match="seq 12 is not in the checkpoint of size 11"):
        prove(12, ledger=lg)
    with pytest.raises(LedgerError, match=r"no checkpoint of size 14; stored sizes: \[11\]"):
        prove(1, ledger=lg, size=14)
    lg.close()
