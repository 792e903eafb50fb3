"""Hostile inputs, outputs and append: nothing a command writes lands in a ledger, and `append` takes
recorded facts only — a projection's outputs come from its command.

After every refusal: the exit code, the path / type named, no traceback, the event count
unchanged, every ledger file byte-identical and ``verify`` clean.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ledger.analytics import sql as analytics
from ledger.log.store import open_ledger
from schemas.envelope import NewEvent
from schemas.events import PROJECTION_WRITERS
from tests.adversarial.conftest import Built
from tests.adversarial.harness import (
    event_count,
    file_hashes,
    refused,
    verify_unchanged,
    vledger,
)

# one xdist worker builds this module's shared fixture once (make test: --dist loadgroup)
pytestmark = pytest.mark.xdist_group("adversarial")


def _after_refusal(ledger: Path, built: Built, before: dict[str, str]) -> None:
    assert file_hashes(ledger) == before
    assert event_count(ledger) == event_count(built.ledger)
    assert verify_unchanged(ledger, "--pub", built.pub).returncode == 0


def _outputs(ledger: Path, built: Built, tmp: Path) -> dict[str, tuple[list[str | Path], str]]:
    """command -> (argv, the path its message must name)."""
    seg = ledger / "segments" / built.segments[0]
    other = tmp / "elsewhere"
    return {
        "sql --out store": (
            ["sql", "SELECT 1", "--out", ledger / "events.duckdb"],
            "events.duckdb",
        ),
        "sql --schema --out manifest": (
            ["sql", "--schema", "--out", ledger / "segments" / "manifest.json"],
            "manifest.json",
        ),
        "report --out segment": (["report", "--out", seg], seg.name),
        "export --parquet inside": (
            ["export", "--parquet", ledger / "segments" / "exported"],
            "exported",
        ),
        "keygen --out inside": (["keygen", "--out", ledger / "checkpoints" / "k"], "k"),
        "checkpoint --out inside": (
            ["checkpoint", "--key", built.key, "--out", ledger / "checkpoints" / "x.note"],
            "x.note",
        ),
        "report through a symlink": (["report", "--out", other / "link.html"], "link.html"),
    }


def test_outputs_inside_a_ledger_are_refused(ledger: Path, built: Built, tmp_path: Path) -> None:
    """Each command in turn; byte-identical files after each refusal mean ``verify`` (run
    once at the end) would say the same after every one of them."""
    (tmp_path / "elsewhere").mkdir()
    os.symlink(ledger / "segments" / built.segments[0], tmp_path / "elsewhere" / "link.html")
    before = file_hashes(ledger)
    for case, (argv, named) in _outputs(ledger, built, tmp_path).items():
        res = vledger(*argv, "--ledger", ledger)
        refused(res, 1, named, "inside the ledger directory")
        assert file_hashes(ledger) == before, case
    _after_refusal(ledger, built, before)


def test_an_output_inside_another_ledger_is_refused(
    ledger: Path, built: Built, tmp_path: Path
) -> None:
    before = file_hashes(built.older)
    res = vledger("sql", "SELECT 1", "--ledger", ledger, "--out", built.older / "events.duckdb")
    refused(res, 1, "events.duckdb", "inside the ledger directory")
    assert file_hashes(built.older) == before


def test_outputs_outside_still_work(ledger: Path, built: Built, tmp_path: Path) -> None:
    out = tmp_path / "n.csv"
    res = vledger(
        "sql",
        "SELECT count(*) AS n FROM events",
        "--format",
        "csv",
        "--out",
        out,
        "--ledger",
        ledger,
    )
    assert res.returncode == 0, res.stderr
    assert out.read_text().splitlines()[1] == str(event_count(ledger))


def test_append_refuses_projection_outputs_naming_their_command(
    ledger: Path, built: Built, tmp_path: Path
) -> None:
    before = file_hashes(ledger)
    for type_, (command, prefix) in PROJECTION_WRITERS.items():
        line = {"stream": f"{prefix}forged", "type": type_, "payload": {"trial": "x"}}
        ok = {"stream": "ext/fine", "type": "ext.note", "payload": {}}  # refused with it
        (tmp_path / "forged.jsonl").write_text(json.dumps(ok) + "\n" + json.dumps(line) + "\n")
        res = vledger("append", "--ledger", ledger, tmp_path / "forged.jsonl")
        refused(res, 1, "line 2", repr(type_), command, "nothing appended")
        assert file_hashes(ledger) == before, type_
    _after_refusal(ledger, built, before)


def test_views_count_only_grades_their_projection_wrote(ledger: Path) -> None:
    """A grade.replayed appended outside a retrace (through the API, which projections
    use) moves neither the trial's current grade nor pass@k."""
    query = "SELECT trial, binary_pass, source FROM current_grades ORDER BY trial"
    before = analytics.query(ledger, query).to_pylist()
    pass_k = "SELECT * FROM pass_at_k ORDER BY ALL"
    before_k = analytics.query(ledger, pass_k).to_pylist()
    failing = next(r for r in before if r["binary_pass"] is False)
    with open_ledger(ledger) as lg:
        genuine = next(
            e.data()
            for e in lg.read(type="grade.replayed")
            if e.data()["trial"] == failing["trial"]
        )
    forged = {**genuine, "replay_id": "replay-forged"}
    forged["grade"] = {**genuine["grade"], "binary_pass": True, "score": 1.0}
    with open_ledger(ledger) as lg:
        lg.append(
            [
                NewEvent("replay/replay-forged", "grade.replayed", forged),  # no receipt
                NewEvent(failing["trial"].replace("trial/", "ext/"), "grade.replayed", forged),
            ]
        )
    assert analytics.query(ledger, query).to_pylist() == before
    assert analytics.query(ledger, pass_k).to_pylist() == before_k
