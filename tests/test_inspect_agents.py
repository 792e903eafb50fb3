"""inspect_ai agent logs: react(), handoff(), as_tool(), nested agents (tests/inspect_agents_support.py).

Every expectation comes either from the spec of the task the mock model was told to run
(``CALLS``) or from inspect's own record of the log (its ToolEvents, read back through
inspect_ai), never from the importer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from ledger.analytics.sql import query
from ledger.app.ingest import IngestError, IngestResult
from ledger.app.ingest import ingest_into as ingest
from ledger.cli import main
from ledger.log.store import open_ledger
from tests.inspect_agents_support import ANSWER, CALLS, FETCH_ERROR, AgentLogs, write_agent_logs
from tests.inspect_support import require_inspect, score_to_new_file

pytestmark = pytest.mark.xdist_group("inspect")


@pytest.fixture(scope="module")
def agent_logs(tmp_path_factory: pytest.TempPathFactory) -> AgentLogs:
    require_inspect()
    return write_agent_logs(tmp_path_factory.mktemp("agents"))


@pytest.fixture
def led(tmp_path: Path) -> Path:
    return tmp_path / "ledger"


def _ingest(led: Path, paths: list[Path], **kw: Any) -> IngestResult:
    """Ingest into ``led`` and close it, so the views can read it."""
    with open_ledger(led, create=True) as lg:
        return ingest(lg, paths, **kw)


def _sample(log: Path):  # noqa: ANN202
    from inspect_ai.log import read_eval_log

    (sample,) = read_eval_log(str(log)).samples
    return sample


def _tool_events(log: Path) -> list:
    return [e for e in _sample(log).events if e.event == "tool"]


def test_a_react_log_with_handoff_and_sub_agents_ingests_every_tool_event_with_its_agent(
    led: Path, agent_logs: AgentLogs
) -> None:
    report = _ingest(led, [agent_logs.team])  # no --keep-inconsistent
    assert (report.trials_new, report.inconsistent) == (1, [])
    rows = query(
        led, "SELECT call_id, tool_name, agent, status, output FROM tool_calls ORDER BY sequence"
    ).to_pylist()
    # every ToolEvent inspect recorded is a tool call of the trial, in execution order
    assert [r["call_id"] for r in rows] == [e.id for e in _tool_events(agent_logs.team)]
    assert [(r["tool_name"], r["agent"]) for r in rows] == list(CALLS)
    (fetch,) = [r for r in rows if r["tool_name"] == "fetch"]
    assert (fetch["status"], fetch["output"]) == ("error", FETCH_ERROR)  # ToolError, sub-agent


def test_the_timeline_joins_every_call_to_the_model_output_that_declared_it(
    led: Path, agent_logs: AgentLogs
) -> None:
    _ingest(led, [agent_logs.team])
    calls = query(
        led,
        "SELECT c.call_id, c.tool_name, c.agent, r.status, a.turn_index, a.agent AS writer "
        "FROM timeline c JOIN timeline r ON r.call_id = c.call_id AND r.kind = 'tool_result' "
        "JOIN timeline a ON a.kind = 'assistant_message' AND a.turn_index = c.turn_index "
        "WHERE c.kind = 'tool_call' ORDER BY c.position",
    ).to_pylist()
    assert [(c["tool_name"], c["agent"]) for c in calls] == list(CALLS)
    # each call sits in the turn of a generation by the same agent: the model call that made it
    assert all(c["agent"] == c["writer"] for c in calls)
    assert {c["status"] for c in calls if c["tool_name"] != "fetch"} == {"success"}
    # react() removed its final submit from the top-level messages; the executed view has it
    sample = _sample(agent_logs.team)
    declared = [c.function for m in sample.messages for c in (getattr(m, "tool_calls", None) or [])]
    assert "submit" not in declared
    assert calls[-1]["tool_name"] == "submit" and calls[-1]["agent"] == "boss"
    # trial.message stays the top-level conversation, as inspect wrote it
    roles = query(led, "SELECT role FROM messages ORDER BY position").to_pylist()
    assert [r["role"] for r in roles] == [m.role for m in sample.messages]


def test_a_copy_rescored_by_inspect_adds_scores_to_the_same_sub_agent_trial(
    led: Path, agent_logs: AgentLogs, tmp_path: Path
) -> None:
    # inspect rewrites a re-scored sample's events through its event tree, which moves
    # the ToolEvent of a handoff or as_tool() call after the sub-agent's own calls
    scored = tmp_path / agent_logs.team.name.replace(".eval", "-scored.eval")
    score_to_new_file(agent_logs.team, scored)
    moved = [e.id for e in _tool_events(scored)]
    assert moved != [e.id for e in _tool_events(agent_logs.team)]  # the shape under test
    first = _ingest(led, [agent_logs.team])
    copy = _ingest(led, [scored])
    assert (copy.trials_new, copy.trials_present, copy.events_new) == (0, 1, 1)  # its scores
    assert copy.trial_streams == first.trial_streams
    rows = query(led, "SELECT tool_name, agent FROM tool_calls ORDER BY sequence").to_pylist()
    assert [(r["tool_name"], r["agent"]) for r in rows] == list(CALLS)  # in the order started
    assert _ingest(led, [agent_logs.team, scored]).events_new == 0


def test_react_with_the_submit_kept_in_messages_ingests_the_same_way(
    led: Path, agent_logs: AgentLogs
) -> None:
    sample = _sample(agent_logs.kept)
    declared = [c.function for m in sample.messages for c in (getattr(m, "tool_calls", None) or [])]
    assert declared == ["lookup", "submit"]  # kept, unlike the default
    assert _ingest(led, [agent_logs.kept]).trials_new == 1
    rows = query(led, "SELECT tool_name, agent FROM tool_calls ORDER BY sequence").to_pylist()
    assert [(r["tool_name"], r["agent"]) for r in rows] == [("lookup", "solo"), ("submit", "solo")]


def test_a_tool_call_no_model_declared_is_still_a_named_inconsistency(
    led: Path, agent_logs: AgentLogs
) -> None:
    with pytest.raises(IngestError) as exc:
        _ingest(led, [agent_logs.manual])
    assert exc.value.kind == "inconsistent"
    assert "unasked-1" in str(exc.value) and "G7" in str(exc.value)
    kept = _ingest(led, [agent_logs.manual], keep_inconsistent=True)
    (recorded,) = kept.inconsistent
    assert "unasked-1" in recorded["reason"] and kept.trials_new == 1


def test_verify_deep_recomputes_the_executed_timeline(led: Path, agent_logs: AgentLogs) -> None:
    _ingest(led, [agent_logs.team, agent_logs.kept])
    from ledger.app.verify import verify

    with open_ledger(led) as lg:
        assert verify(ledger=lg, deep=True).ok


def _constraints(tmp_path: Path) -> Path:
    doc = {"constraints": [
        {"id": "checker_verified",  # a call made only inside a nested sub-agent
         "require": {"present": {"match": {"kind": "tool_call", "tool": {"equals": "verify"}}}}},
        {"id": "no_failed_call",
         "require": {"negate": {"present": {"match": {"kind": "tool_result",
                                                      "status": {"equals": "error"}}}}}},
    ]}  # fmt: skip
    path = tmp_path / "constraints.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_trace_checks_see_sub_agent_calls_and_retrace_names_each_agent(
    tmp_path: Path, agent_logs: AgentLogs
) -> None:
    args = ["retrace", "--source", str(agent_logs.team.parent), "--constraints",
            str(_constraints(tmp_path)), "--ledger", str(tmp_path / "L"), "--json"]  # fmt: skip
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    (trial,) = report["trials"]
    verdicts = {c["id"]: c["passed"] for c in trial["constraints"]}
    assert verdicts == {"checker_verified": True, "no_failed_call": False}  # fetch failed
    counts: dict[str, int] = {}
    for _, agent in CALLS:
        counts[agent] = counts.get(agent, 0) + 1
    assert {a["agent"]: a["tool_calls"] for a in trial["agents"]} == counts


def test_the_report_trial_page_names_the_agent_of_each_call(
    tmp_path: Path, agent_logs: AgentLogs
) -> None:
    from ledger.analytics import report

    led = tmp_path / "L"
    _ingest(led, [agent_logs.team])
    page = tmp_path / "report.html"
    report.report(ledger=led, out=page)
    html = page.read_text()
    assert "tool_call · boss/researcher/checker" in html
    assert ANSWER in html
