"""Our own receipts (replay.completed / reconcile.completed): inclusion of the receipt
event, consistency of the checkpoint it read with the current log, and --recompute.
Also the CLI's run-directory verification (``vledger receipt verify DIR --json``)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ledger.app import receipts as rc
from ledger.cli import main
from ledger.log.store import Ledger, init_ledger
from schemas.canonical import digest
from schemas.envelope import NewEvent
from schemas.gvc import Party
from tests.data_paths import VCORE_DEMO_RUN
from tests.store_helpers import another_reader

DEMO = VCORE_DEMO_RUN
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def lg(tmp_path: Path):
    ledger = init_ledger(tmp_path / "lg")
    ledger.append([NewEvent(f"ext/{i}", "ext.note", {"i": i}) for i in range(5)])
    yield ledger
    ledger.close()


def _receipt(
    lg: Ledger, *, size: int | None = None, root: bytes | None = None, nested: bool = False
) -> int:
    size = lg.size() if size is None else size
    body = {
        "checkpoint": {"size": size, "root": (root or lg.root(size)).hex()},
        "config_digest": digest({"cfg": 1}),
        "outputs_digest": digest({"out": size}),
    }
    payload = {"replay_id": f"r{lg.size()}", **({"receipt": body} if nested else body)}
    return lg.append([NewEvent("replay/r", "replay.completed", payload)]).seqs[0]


def test_fresh_receipt_verifies(lg: Ledger) -> None:
    seq = _receipt(lg)
    lg.append([NewEvent("ext/later", "ext.note", {"later": True})])  # the log grows on
    check = rc.verify_ledger_receipt(lg, str(seq))
    assert check.problems == [] and len(check.checked) == 2


def test_receipt_found_by_event_id_and_nested_body(lg: Ledger) -> None:
    seq = _receipt(lg, size=3, nested=True)
    event_id = next(iter(lg.read(from_seq=seq, to_seq=seq))).event_id
    assert rc.verify_ledger_receipt(lg, event_id).ok


def test_empty_checkpoint_needs_the_empty_root(lg: Ledger) -> None:
    from ledger.log import merkle

    assert rc.verify_ledger_receipt(lg, str(_receipt(lg, size=0, root=merkle.EMPTY_ROOT))).ok
    bad = rc.verify_ledger_receipt(lg, str(_receipt(lg, size=0, root=b"\x01" * 32)))
    assert len(bad.problems) == 1 and "size-0 checkpoint" in bad.problems[0]


def test_wrong_root_is_inconsistent(lg: Ledger) -> None:
    seq = _receipt(lg, size=4, root=b"\x07" * 32)
    check = rc.verify_ledger_receipt(lg, str(seq))
    assert len(check.problems) == 1
    assert check.problems[0].startswith(f"checkpoint (size 4, root {'07' * 32}) is not consistent")


def test_checkpoint_cannot_include_its_own_receipt(lg: Ledger) -> None:
    seq = lg.size()
    lg.append(
        [
            NewEvent(
                "replay/r", "replay.completed", {"checkpoint": {"size": seq + 1, "root": "00" * 32}}
            )
        ]
    )
    check = rc.verify_ledger_receipt(lg, str(seq))
    assert check.problems == [
        f"checkpoint size {seq + 1} includes the receipt event itself (seq {seq}); "
        "a receipt binds the log as it stood before it was written"
    ]


def _five(ledger: Any, ev: Any) -> str:
    return digest({"out": 5})


def _six(ledger: Any, ev: Any) -> str:
    return digest({"out": 6})


def test_recompute_needs_a_registered_projection_and_compares(lg: Ledger, monkeypatch) -> None:
    seq = _receipt(lg, size=5)
    monkeypatch.setattr(rc, "RECOMPUTERS", {})
    check = rc.verify_ledger_receipt(lg, str(seq), recompute=True)
    assert check.problems == [
        "cannot recompute: no projection registered for replay.completed (registered: none)"
    ]
    monkeypatch.setattr(rc, "RECOMPUTERS", {"replay.completed": f"{__name__}:_five"})
    assert rc.verify_ledger_receipt(lg, str(seq), recompute=True).ok
    monkeypatch.setattr(rc, "RECOMPUTERS", {"replay.completed": f"{__name__}:_six"})
    problems = rc.verify_ledger_receipt(lg, str(seq), recompute=True).problems
    assert problems == [
        f"outputs_digest mismatch: recorded {digest({'out': 5})}, recomputed {digest({'out': 6})}"
    ]


def test_every_receipt_type_names_a_projection_that_exists() -> None:
    """The table is explicit: a fresh process resolves it without having imported retrace
    or reconcile (were they to register themselves on import, `receipt verify
    --recompute` in a process that had not run them would find none)."""

    code = (
        "import ledger.app.receipts as rc, sys\n"
        "assert 'ledger.app.retrace' not in sys.modules\n"
        "print(sorted(t for t in rc.RECOMPUTERS if callable(rc._recomputer(t))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['reconcile.completed', 'replay.completed']"


def test_not_a_receipt(lg: Ledger) -> None:
    with pytest.raises(rc.ReceiptNotFound, match="'1'"):
        rc.verify_ledger_receipt(lg, "1")
    with pytest.raises(rc.ReceiptNotFound):
        rc.verify_ledger_receipt(lg, "999")


def test_cli_receipt_show_and_verify(lg: Ledger, tmp_path: Path) -> None:
    seq = _receipt(lg, size=2)
    lg.close()
    led = ["--ledger", str(tmp_path / "lg")]
    shown = json.loads(
        CliRunner().invoke(main, ["receipt", "show", str(seq), "--json", *led]).output
    )
    assert shown["checkpoint"]["size"] == 2 and shown["type"] == "replay.completed"
    res = CliRunner().invoke(main, ["receipt", "verify", str(seq), "--json", *led])
    assert res.exit_code == 0 and json.loads(res.output)["ok"] is True


def test_receipt_show_and_verify_only_read_beside_another_reader(
    lg: Ledger, tmp_path: Path
) -> None:
    """Another process reading the ledger (a long `vledger verify`, say) holds DuckDB's
    shared lock: `receipt show` and `receipt verify` open it read-only, as reads, and
    answer; they opened it to write, and were refused as busy."""
    seq = _receipt(lg, size=2)
    lg.close()
    where = tmp_path / "lg"
    with another_reader(where):
        led = ["--ledger", str(where), "--busy-timeout", "0"]
        for args in (["receipt", "show", str(seq)], ["receipt", "verify", str(seq)]):
            res = CliRunner().invoke(main, [*args, "--json", *led[:2]])
            assert res.exit_code == 0, res.output
        busy = CliRunner().invoke(main, ["seal", *led])  # a writer is still refused
        assert busy.exit_code == 3 and "ledger busy" in busy.stderr, busy.output


def test_cli_run_dir_clean_and_tampered(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["receipt", "verify", str(DEMO), "--json"])
    assert res.exit_code == 0
    assert json.loads(res.output) == {
        "ok": True,
        "problems": [],
        "differences": [],
        **rc.RUN_RECEIPT_TRUST,
    }
    human = CliRunner().invoke(main, ["receipt", "verify", str(DEMO)]).output
    assert human.splitlines()[:3] == [
        "COMPLETE: all implement/integrate nodes validated, barrier ok, review PASS",
        "integrity: OK (events digest verified; receipt unsigned)",
        "unsigned: this receipt carries no signature",
    ]
    run = tmp_path / "run"
    shutil.copytree(DEMO, run)
    (run / "receipt.json").chmod(0o644)
    (run / "receipt.json").write_text(
        (DEMO / "receipt.json").read_text().replace('"goal": "Add', '"goal": "Drop')
    )
    res = CliRunner().invoke(main, ["receipt", "verify", str(run), "--json"])
    assert res.exit_code == 1
    goal = "a --json flag to the invoice CLI, with a parser module and tests"
    assert json.loads(res.output) == {
        "ok": False,
        "problems": ["goal mismatch: stored receipt differs from recomputed evidence"],
        "differences": [{"path": "goal", "stored": f"Drop {goal}", "rebuilt": f"Add {goal}"}],
        **rc.RUN_RECEIPT_TRUST,
    }


# ------------------------------------------------------- inside `vledger verify`


def _copy_run(tmp_path: Path) -> Path:
    run = tmp_path / "runs" / "demo-run"
    shutil.copytree(DEMO, run)
    for p in [run, *run.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return run


def test_ingested_demo_run_verifies_inside_verify(lg: Ledger) -> None:
    from ledger.app.ingest import ingest_into as ingest
    from ledger.app.verify import verify as verify_ledger

    ingest(lg, [DEMO])
    files = rc.ingested_run_files(lg, "run/demo-run")
    assert files.events == (DEMO / "events.jsonl").read_bytes()  # reassembled byte-exact
    assert rc.verify_ingested_runs(lg) == []
    assert verify_ledger(ledger=lg).ok


def test_ingested_tampered_run_is_named_by_verify(lg: Ledger, tmp_path: Path) -> None:
    """A run whose receipt was edited before ingest: `vledger verify` names the stream."""
    from ledger.app.ingest import ingest_into as ingest
    from ledger.app.verify import verify as verify_ledger

    run = _copy_run(tmp_path)
    receipt = json.loads((run / "receipt.json").read_text())
    receipt["event_count"] = 82
    (run / "receipt.json").write_text(json.dumps(receipt, indent=2, sort_keys=True) + "\n")
    ingest(lg, [run])
    report = verify_ledger(ledger=lg)
    assert [(p.where, p.what) for p in report.problems] == [
        ("run/demo-run", "event_count mismatch: stored receipt differs from recomputed evidence")
    ]


def test_verify_runs_the_admission_check(lg: Ledger) -> None:
    from ledger.app import units as vd
    from ledger.app.verify import verify as verify_ledger

    author = {"identity": "a", "kind": "agent", "chain_id": "c1"}
    vd.declare(lg, "u", "t", "interop", Party(**author))
    lg.append(
        [
            NewEvent(
                "unit/u",
                "oracle.ran",
                {"unit": "u", "oracle_id": "ghost", "passed": True, "runner": author},
            )
        ]
    )
    report = verify_ledger(ledger=lg)
    assert [p.where for p in report.problems] == ["unit/u"]
    assert "oracle 'ghost' ran but was never declared" in report.problems[0].what


def test_receipt_verify_by_seq_of_an_ingested_run(lg: Ledger, tmp_path: Path) -> None:
    from ledger.app.ingest import ingest_into as ingest

    run = _copy_run(tmp_path)
    graph = json.loads((run / "graph.json").read_text())
    graph["goal"] = "edited after the receipt"
    (run / "graph.json").write_text(json.dumps(graph))
    ingest(lg, [run])
    seq = next(e.seq for e in lg.read(stream="run/demo-run", type="receipt.issued"))
    check = rc.verify_ledger_receipt(lg, str(seq))
    assert check.checked == [
        f"receipt event seq {seq} is included in the log of {lg.size()} events"
    ]
    assert check.problems == [
        "goal mismatch: stored receipt differs from recomputed evidence",
        "graph_digest mismatch: stored receipt differs from recomputed evidence",
    ]


def test_receipt_checked_against_signed_checkpoint_notes(lg: Ledger) -> None:
    from ledger.log.note import generate_signer

    signer = generate_signer("test.example/key")
    lg.checkpoint(signer)  # a signed note at size 5
    good = _receipt(lg, size=5)
    lg.append([NewEvent("ext/x", "ext.note", {"after": 1})])
    lg.checkpoint(signer)  # a later note covering the receipt events
    check = rc.verify_ledger_receipt(lg, str(good), pub=signer.verifier())
    assert check.problems == []
    assert (
        "checkpoint matches the signed note 00000000000000000005.note (signature checked)"
        in check.checked
    )
    assert any("included in the signed note 00000000000000000007.note" in c for c in check.checked)
    other = generate_signer("other.example/key")
    unsigned = rc.verify_ledger_receipt(lg, str(good), pub=other.verifier())
    assert not any(
        "signed note" in c for c in unsigned.checked
    )  # notes not by this key are skipped


def test_receipt_root_differing_from_the_signed_note(lg: Ledger) -> None:
    from ledger.log.note import generate_signer

    lg.checkpoint(generate_signer("test.example/key"))
    bad = _receipt(lg, size=5, root=b"\x01" * 32)
    problems = rc.verify_ledger_receipt(lg, str(bad)).problems
    assert problems[-1] == (
        f"checkpoint size 5: root {'01' * 32} differs from the signed note "
        f"00000000000000000005.note ({lg.root(5).hex()})"
    )
