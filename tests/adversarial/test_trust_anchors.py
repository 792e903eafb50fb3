"""Trust anchors: a key or an outside checkpoint is a trust anchor only if verify uses it.

``--pub KEY`` must fail when no checkpoint signed by KEY covers the log (so deleting the
checkpoints does not pass), and ``--checkpoint FILE`` — a checkpoint kept outside the
ledger — catches what nothing inside the ledger can: a rollback to an older genuine copy,
or a truncation that took its checkpoints with it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.adversarial.conftest import Built
from tests.adversarial.harness import copy_ledger, refused, verify_unchanged, vledger
from tests.store_helpers import raw

# one xdist worker builds this module's shared fixture once (make test: --dist loadgroup)
pytestmark = pytest.mark.xdist_group("adversarial")


def test_pub_fails_when_the_checkpoints_are_gone(ledger: Path, built: Built) -> None:
    for note in (ledger / "checkpoints").iterdir():
        note.unlink()
    res = verify_unchanged(ledger, "--pub", built.pub)
    refused(res, 1, "checkpoints", "no checkpoint signed by")


def test_pub_fails_while_the_log_runs_past_the_last_signature(ledger: Path, built: Built) -> None:
    (ledger.parent / "more.jsonl").write_text('{"stream":"ext/x","type":"ext.note","payload":{}}\n')
    assert vledger("append", "--ledger", ledger, ledger.parent / "more.jsonl").returncode == 0
    res = verify_unchanged(ledger, "--pub", built.pub)
    refused(res, 1, "signed by no one")
    resigned = vledger("checkpoint", "--ledger", ledger, "--key", built.key)
    assert resigned.returncode == 0
    assert verify_unchanged(ledger, "--pub", built.pub).returncode == 0


def test_outside_checkpoint_catches_a_rollback_to_an_older_genuine_copy(
    built: Built, tmp_path: Path
) -> None:
    older = copy_ledger(built.older, tmp_path / "older")
    assert verify_unchanged(older, "--pub", built.pub).returncode == 0  # genuine on its own
    res = verify_unchanged(older, "--pub", built.pub, "--checkpoint", built.outside)
    refused(res, 1, str(built.outside), "rolled back")


def test_outside_checkpoint_catches_a_truncation_with_its_checkpoints(
    ledger: Path, built: Built
) -> None:
    """Drop the last event, rebuild tree_state to match, delete the checkpoints past it."""
    with raw(ledger) as con:
        (size,) = con.execute("SELECT size FROM tree_state").fetchone()
    older_frontier = _frontier(built.older)
    with raw(ledger) as con:
        con.execute("DELETE FROM events WHERE seq = ?", [size - 1])
        con.execute("DELETE FROM nodes WHERE last_leaf >= ?", [size - 1])
        con.execute("UPDATE tree_state SET size = ?, frontier = ?", [size - 1, older_frontier])
    for note in (ledger / "checkpoints").iterdir():
        if int(note.stem) >= size:
            note.unlink()
    assert verify_unchanged(ledger).returncode == 0  # consistent on its own
    res = verify_unchanged(ledger, "--checkpoint", built.outside, "--json")
    assert res.returncode == 1
    report = json.loads(res.stdout)
    assert report["outside_checkpoint"] == {"size": None, "holds": False}
    assert any(str(built.outside) in p["where"] for p in report["problems"])


def _frontier(ledger: Path) -> bytes:
    with raw(ledger) as con:
        return bytes(con.execute("SELECT frontier FROM tree_state").fetchone()[0])


def test_outside_checkpoint_of_the_same_log_holds(ledger: Path, built: Built) -> None:
    res = verify_unchanged(ledger, "--pub", built.pub, "--checkpoint", built.outside)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "the log extends it" in res.stdout


def test_outside_checkpoint_of_a_rewritten_log_fails(ledger: Path, built: Built) -> None:
    """A log rewritten under a re-signed key still fails against the kept checkpoint."""
    with raw(ledger) as con:
        (payload,) = con.execute("SELECT payload FROM events WHERE seq = 5").fetchone()
        con.execute("UPDATE events SET payload = ? WHERE seq = 5", [bytes(payload) + b" "])
    res = verify_unchanged(ledger, "--checkpoint", built.outside)
    assert res.returncode == 1
    assert "seq 5" in res.stdout
