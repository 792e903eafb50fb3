"""``ledger.verify`` and ``vledger verify`` run ONE explicit list of checks (ledger/app/verify.py):
the same checks and the same problems, whether or not anything imported the application."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

import ledger
from ledger.app import units as vd
from ledger.app.ingest import ingest_into as ingest
from ledger.app.verify import CHECKS, Check
from ledger.cli import main
from ledger.log import verify as log_verify
from ledger.log.store import init_ledger
from ledger.sources.tolokaforge import BundleContext, bundle_events, read_bundle
from schemas.canonical import digest
from schemas.envelope import NewEvent
from schemas.gvc import Party
from tests.data_paths import NOTES, VCORE_DEMO_RUN

ROOT = Path(__file__).resolve().parents[1]
DEMO_RUN = VCORE_DEMO_RUN
M0 = NOTES / "met" / "native_shared_domain_policy_demo_20260803_063010_trial0"
HUMAN = Party(identity="operator-1", kind="human", chain_id="")
CI = Party(identity="ci", kind="kernel", chain_id="ci-chain")
SHALLOW = ["events", "tree", "checkpoints", "segments", "runs", "receipts", "admissions"]


def _forged_trial() -> tuple[list[NewEvent], int]:
    """A trial whose stored timeline names another tool than its raw events (only --deep
    recomputes it); returns the events and the index of the forged one."""
    plan = bundle_events(
        read_bundle(M0, "M0"), BundleContext(corpus="f", trial="t0", bundle_path="t0")
    )
    events = plan.new_events()
    i = next(
        k
        for k, e in enumerate(events)
        if e.type == "timeline.event" and e.payload["kind"] == "tool_call"
    )
    events[i] = replace(events[i], payload=dict(events[i].payload, tool_name="x"), event_id=None)
    return events, i


@pytest.fixture(scope="module")
def tampered(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """Admissions, an ingested verdict-core run, stored timelines and a replay receipt, plus
    one finding for each application check; returns the ledger and where verify --deep
    must name the problems: the receipt, the undeclared oracle, the forged timeline."""
    path = tmp_path_factory.mktemp("verify") / "lg"
    with init_ledger(path) as lg:
        ingest(lg, [DEMO_RUN, NOTES])
        vd.declare(lg, "u1", "judge", "interop", HUMAN, command="pytest -q")
        vd.produced(lg, "u1", HUMAN, "sha:a")
        vd.ran(lg, "u1", "judge", True, CI, "sha:a", exit_code=0)
        vd.admit(lg, "u1")
        vd.declare(lg, "u2", "judge", "interop", HUMAN)
        ran = {"unit": "u2", "oracle_id": "ghost", "passed": True, "runner": HUMAN.model_dump()}
        lg.append([NewEvent("unit/u2", "oracle.ran", ran)])  # admissions: undeclared oracle
        size = lg.size()
        receipt = {
            "replay_id": "r1",
            "checkpoint": {"size": size, "root": "01" * 32},  # receipts: not the log's root
            "config_digest": digest({"cfg": 1}),
            "outputs_digest": digest({"out": 1}),
        }
        receipt_seq = lg.append([NewEvent("replay/r1", "replay.completed", receipt)]).first_seq
        events, i = _forged_trial()
        first = lg.append(events).first_seq
    return path, [f"replay.completed at seq {receipt_seq}", "unit/u2", f"seq {first + i}"]


def _cli(path: Path, *args: str) -> tuple[int, dict]:
    res = CliRunner().invoke(main, ["verify", "--ledger", str(path), "--json", *args])
    return res.exit_code, json.loads(res.stdout)


def test_the_api_and_the_cli_run_the_same_checks_and_report_the_same_problems(
    tampered: tuple[Path, list[str]],
) -> None:
    path, found = tampered
    for deep in (False, True):
        code, printed = _cli(path, *(["--deep"] if deep else []))
        result = ledger.verify(ledger=path, deep=deep)
        assert code == 1 and not result.ok
        assert printed == result.to_json()
        assert printed["checks"] == SHALLOW + (["timelines"] if deep else [])
    # each application check found its own (the ingested run and admission u1 verify)
    assert [p["where"] for p in printed["problems"]] == found


SUBPROCESS = """
import json, sys
import ledger
shallow, deep = ledger.verify(ledger=sys.argv[1]), ledger.verify(ledger=sys.argv[1], deep=True)
print(json.dumps({
    "cli": sorted(m for m in sys.modules if m.startswith("ledger.cli")),
    "shallow": [p.where for p in shallow.problems], "deep": [p.where for p in deep.problems],
    "checks": deep.to_json()["checks"],
}))
"""


def test_a_fresh_python_finds_the_same_without_the_cli(tampered: tuple[Path, list[str]]) -> None:
    path, found = tampered
    out = subprocess.run(
        [sys.executable, "-c", SUBPROCESS, str(path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    got = json.loads(out.stdout)
    assert got["cli"] == []  # nothing but `import ledger`
    assert got["shallow"] == found[:-1]  # the timeline is recomputed only with deep
    assert got["deep"] == found and got["checks"][-1] == "timelines"


def test_the_check_list_is_explicit_and_pinned() -> None:
    assert log_verify.LOG_CHECKS == ("events", "tree", "checkpoints", "segments")
    assert [(c.name, c.target, c.deep) for c in CHECKS] == [
        ("runs", "ledger.app.receipts:verify_ingested_runs", False),
        ("receipts", "ledger.app.receipts:verify_projection_receipts", False),
        ("admissions", "ledger.app.verdicts:verify_hook", False),
        ("timelines", "ledger.app.timeline_check:check_timelines", True),
    ]
    # no registry left to fill at import time
    assert not hasattr(log_verify, "EXTRA_CHECKS") and not hasattr(log_verify, "DEEP_CHECKS")


def test_every_check_resolves_and_runs_on_an_empty_ledger(tmp_path: Path) -> None:
    with init_ledger(tmp_path / "lg") as lg:
        for check in CHECKS:
            assert check.run(lg) == [], check.name
    with pytest.raises(ModuleNotFoundError):
        Check("x", "ledger.no_such_module:f").run(None)


def test_the_log_level_verify_refuses_deep_rather_than_skipping_it(tmp_path: Path) -> None:
    with init_ledger(tmp_path / "lg") as lg:
        assert log_verify.verify_ledger(lg, None, anchor=None).ok
        with pytest.raises(ledger.LedgerError, match="ledger.verify"):
            log_verify.verify_ledger(lg, None, anchor=None, deep=True)
