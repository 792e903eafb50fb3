"""The `usage` and `spend` views: tokens and cost wherever the evidence carries them.

Oracles: the shipped bundles' metrics.yaml / grade.yaml read with PyYAML here, and the
mock model's per-call usage of tests/inspect_support.py.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
import yaml

from ledger.analytics.sql import query
from ledger.app.ingest import ingest_into as ingest
from ledger.log.store import open_ledger
from tests.inspect_support import CALL_COST, CALL_INPUT, EPOCHS, SAMPLES, TASK, InspectLogs
from tests.inspect_support import inspect_logs as _session_logs

# one xdist worker builds this module's shared fixture once (make test: --dist loadgroup)
pytestmark = pytest.mark.xdist_group("inspect")


inspect_logs = _session_logs  # the session-scoped fixture, under the name the tests ask for

NOTES = Path(__file__).resolve().parents[1] / "corpora" / "notes_duplicate_check"


@pytest.fixture(scope="module")
def ledger_dir(tmp_path_factory: pytest.TempPathFactory, inspect_logs: InspectLogs) -> Path:
    path = tmp_path_factory.mktemp("spend") / "L"
    with open_ledger(path, create=True) as lg:
        ingest(lg, [NOTES, inspect_logs.logs])
    return path


def _bundle_totals() -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for traj in NOTES.glob("*/*/trajectory.yaml"):
        task = yaml.safe_load(traj.read_text())["task_id"]
        metrics = yaml.safe_load((traj.parent / "metrics.yaml").read_text())
        grade = yaml.safe_load((traj.parent / "grade.yaml").read_text())
        out[task]["trials"] += 1
        out[task]["cost"] += metrics["cost_usd"]
        out[task]["prompt"] += metrics["usage"]["prompt_tokens"]
        out[task]["judge"] += grade["judge_usage"]["cost_usd"]
    return out


def test_spend_per_task_matches_the_bundles_files(ledger_dir: Path) -> None:
    rows = query(
        ledger_dir,
        "SELECT task_id, sum(trials) AS trials, sum(prompt_tokens) AS prompt, "
        "sum(agent_cost_usd) AS cost, sum(judge_cost_usd) AS judge FROM spend "
        f"WHERE task_id <> '{TASK}' GROUP BY task_id",
    ).to_pylist()
    want = _bundle_totals()
    assert {r["task_id"] for r in rows} == set(want)
    for r in rows:
        w = want[r["task_id"]]
        assert r["trials"] == w["trials"] and r["prompt"] == w["prompt"]
        assert r["cost"] == pytest.approx(w["cost"]) and r["judge"] == pytest.approx(w["judge"])


def test_inspect_usage_reaches_the_views(ledger_dir: Path) -> None:
    (row,) = query(ledger_dir, f"SELECT * FROM spend WHERE task_id = '{TASK}'").to_pylist()
    trials = len(SAMPLES) * EPOCHS
    assert (row["agent_model"], row["trials"], row["trials_with_cost"]) == (
        "mockllm/model",
        trials,
        trials,
    )
    assert row["prompt_tokens"] == trials * 2 * CALL_INPUT
    assert row["agent_cost_usd"] == pytest.approx(trials * 2 * CALL_COST)
    assert row["judge_cost_usd"] is None  # includes() calls no model
    assert row["total_cost_usd"] == pytest.approx(trials * 2 * CALL_COST)
    sources = query(ledger_dir, "SELECT DISTINCT usage_source FROM usage ORDER BY 1").column(
        "usage_source"
    )
    assert sources.to_pylist() == ["inspect_ai", "metrics.yaml"]
