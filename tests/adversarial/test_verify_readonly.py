"""``vledger verify`` only reads, and repair is explicit (README § Security).

Every tamper case runs ``verify`` with every file of the ledger hashed before and after: it
must report the tampering (exit 1, naming the file) and leave every byte as it found it —
in particular it must never re-seal, which would let a deleted manifest erase the
evidence of a rewritten segment.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.adversarial.conftest import Built
from tests.adversarial.harness import (
    event_count,
    file_hashes,
    refused,
    verify_unchanged,
    vledger,
)
from tests.store_helpers import raw

# one xdist worker builds this module's shared fixture once (make test: --dist loadgroup)
pytestmark = pytest.mark.xdist_group("adversarial")


def _flip_grade_in_segment(path: Path) -> int:
    """Rewrite one ``"binary_pass": false`` to true in a sealed segment; return its seq."""
    table = pq.read_table(path)
    payloads = table.column("payload").to_pylist()
    for i, p in enumerate(payloads):
        if b'"binary_pass":false' in p:
            payloads[i] = p.replace(b'"binary_pass":false', b'"binary_pass":true', 1)
            break
    else:
        pytest.skip("no failing grade in this segment")
    col = table.schema.get_field_index("payload")
    table = table.set_column(col, table.schema.field("payload"), pa.array(payloads, pa.binary()))
    pq.write_table(table, path)
    return int(table.column("seq")[i].as_py())


def _segment_with_a_failing_grade(ledger: Path, built: Built) -> str:
    for name in built.segments:
        if b'"binary_pass":false' in b"".join(
            pq.read_table(ledger / "segments" / name).column("payload").to_pylist()
        ):
            return name
    pytest.skip("no failing grade sealed")


def _change_store_payload(ledger: Path) -> None:
    with raw(ledger) as con:
        (payload,) = con.execute("SELECT payload FROM events WHERE seq = 3").fetchone()
        con.execute("UPDATE events SET payload = ? WHERE seq = 3", [bytes(payload) + b" "])


def _drop_manifest(ledger: Path, built: Built) -> str:
    (ledger / "segments" / "manifest.json").unlink()
    return "segments/manifest.json"


def _drop_manifest_and_rewrite_segment(ledger: Path, built: Built) -> str:
    name = _segment_with_a_failing_grade(ledger, built)
    _drop_manifest(ledger, built)
    _flip_grade_in_segment(ledger / "segments" / name)
    return name


def _forged_store_beside_genuine_segments(ledger: Path, built: Built) -> str:
    _drop_manifest(ledger, built)
    _change_store_payload(ledger)
    return "seq 3"


def _interrupted_seal(ledger: Path, built: Built) -> str:
    with raw(ledger) as con:
        con.execute(
            "UPDATE meta SET value = (SELECT size FROM tree_state)::VARCHAR WHERE key = 'sealed_upto'"
        )
    return "segments/manifest.json"


def _rewritten_segment(ledger: Path, built: Built) -> str:
    name = _segment_with_a_failing_grade(ledger, built)
    _flip_grade_in_segment(ledger / "segments" / name)
    return name


def _deleted_checkpoints(ledger: Path, built: Built) -> str:
    for note in (ledger / "checkpoints").iterdir():
        note.unlink()
    return "checkpoints"


def _store_payload_changed(ledger: Path, built: Built) -> str:
    _change_store_payload(ledger)
    return "seq 3"


def _unlisted_segment(ledger: Path, built: Built) -> str:
    src = ledger / "segments" / built.segments[0]
    (ledger / "segments" / "seg-9000-9001.parquet").write_bytes(src.read_bytes())
    return "seg-9000-9001.parquet"


TAMPERS: dict[str, Callable[[Path, Built], str]] = {
    "manifest deleted": _drop_manifest,
    "manifest deleted, segment rewritten": _drop_manifest_and_rewrite_segment,
    "manifest deleted, store forged": _forged_store_beside_genuine_segments,
    "seal recorded, manifest behind": _interrupted_seal,
    "segment rewritten": _rewritten_segment,
    "checkpoints deleted": _deleted_checkpoints,
    "store payload changed": _store_payload_changed,
    "unlisted segment planted": _unlisted_segment,
}


@pytest.mark.parametrize("case", list(TAMPERS))
def test_verify_reports_each_tampering_and_changes_nothing(
    case: str, ledger: Path, built: Built
) -> None:
    named = TAMPERS[case](ledger, built)
    res = verify_unchanged(ledger, "--pub", built.pub)
    assert res.returncode == 1 and res.stderr.startswith("Error: "), res.stdout + res.stderr
    assert named in res.stdout, res.stdout  # every problem is listed; the first on stderr
    assert "OK:" not in res.stdout


def test_clean_ledger_verifies_without_a_write(ledger: Path, built: Built) -> None:
    res = verify_unchanged(ledger, "--pub", built.pub, "--checkpoint", built.outside, "--deep")
    assert res.returncode == 0, res.stdout + res.stderr


def test_repair_is_a_dry_run_by_default_and_restores_a_lost_manifest(
    ledger: Path, built: Built
) -> None:
    _drop_manifest(ledger, built)
    before = file_hashes(ledger)
    dry = vledger("repair", "--ledger", ledger)
    assert dry.returncode == 0, dry.stderr
    assert file_hashes(ledger) == before
    assert "dry run: nothing changed" in dry.stdout
    assert all(f"would keep {name}" in dry.stdout for name in built.segments)
    done = vledger("repair", "--ledger", ledger, "--apply")
    assert done.returncode == 0, done.stderr
    assert all((ledger / "segments" / n).read_bytes() for n in built.segments)
    after = file_hashes(ledger)
    for name in built.segments:  # kept, not rewritten
        assert after[f"segments/{name}"] == before[f"segments/{name}"]
    assert verify_unchanged(ledger, "--pub", built.pub).returncode == 0


@pytest.mark.parametrize(
    "case", ["manifest deleted, segment rewritten", "manifest deleted, store forged"]
)
def test_nothing_overwrites_a_sealed_segment_that_disagrees_with_the_store(
    case: str, ledger: Path, built: Built
) -> None:
    TAMPERS[case](ledger, built)
    before = file_hashes(ledger)
    for args in (["repair", "--apply"], ["append", ledger.parent / "x.jsonl"], ["seal"]):
        (ledger.parent / "x.jsonl").write_text(
            '{"stream":"ext/x","type":"ext.note","payload":{}}\n'
        )
        res = vledger(*args, "--ledger", ledger)
        refused(res, 1, "seg-", "refusing to overwrite")
        assert file_hashes(ledger) == before, args
    assert event_count(ledger) == event_count(built.ledger)
