"""verdict-core FORMAT.md § 4 projection rules the demo run does not exercise, on small synthetic logs.

Expected values are read off the rule text quoted in each docstring.
"""

from __future__ import annotations

import json
from typing import Any

from replay.receipts.receipt import rebuild_receipt
from replay.receipts.run import RunFiles, parse_events

NODE = {"node_id": "n", "objective": "o", "owned_files": ["a.py"], "verification_command": ["true"]}


def _log(*events: tuple[str, str, dict[str, Any]]) -> bytes:
    lines = [
        json.dumps(
            {
                "seq": i,
                "at": f"2026-01-01T00:00:{i:02d}Z",
                "type": t,
                "node_id": node,
                "data": data,
            },
            sort_keys=True,
            separators=(",", ":"),
        )
        + "\n"
        for i, (t, node, data) in enumerate(events, 1)
    ]
    return "".join(lines).encode()


def _rebuild(raw: bytes, nodes: list[dict] | None = None, review: Any = None) -> dict[str, Any]:
    graph = {"goal": "g", "nodes": nodes or [NODE], "run_id": "r"}
    return rebuild_receipt(parse_events(raw), raw, graph, review, "dir")


OK_TERMINAL = {"ok": True, "route_id": "p/m", "reported_model": "p/m"}
PASS_REVIEW = ("review", "", {"status": "PASS", "reviewer": "x", "route_id": "q/r", "blocking": 0})
INTEGRATION = ("barrier", "", {"name": "integration", "ok": True})


def test_superseded_running_row_becomes_abandoned() -> None:
    """'any row still running that is not the live last attempt of a RUNNING node
    becomes abandoned'; dispatch without an int attempt takes current + 1."""
    raw = _log(
        ("dispatch", "n", {"route_id": "p/m", "capacity_class": "free"}),
        ("dispatch", "n", {"route_id": "q/m"}),
        ("terminal", "n", OK_TERMINAL | {"route_id": "q/m", "reported_model": "q/m"}),
    )
    node = _rebuild(raw)["nodes"][0]
    assert [(a["attempt"], a["outcome"]) for a in node["attempts"]] == [
        (1, "abandoned"),
        (2, "success"),
    ]
    assert (
        node["attempts"][0]["provider"] == "p" and node["attempts"][0]["capacity_class"] == "free"
    )
    assert node["final_state"] == "TERMINAL_SUCCESS"


def test_live_running_row_stays_running() -> None:
    raw = _log(("dispatch", "n", {"route_id": "p/m", "attempt": 1}))
    node = _rebuild(raw)["nodes"][0]
    assert node["final_state"] == "RUNNING" and node["attempts"][0]["outcome"] == "running"


def test_verify_counts_only_after_the_last_success_and_rejection_revokes() -> None:
    """validated_by keeps ok verifies later than the last success; a later REJECTED
    node_state revokes VALIDATED and the claimed state wins."""
    raw = _log(
        ("verify", "n", {"ok": True, "command": "early", "exit_code": 0}),
        ("terminal", "n", OK_TERMINAL | {"attempt": 1}),
        ("verify", "n", {"ok": True, "command": "late", "exit_code": 0}),
        ("node_state", "n", {"state": "REJECTED"}),
    )
    node = _rebuild(raw)["nodes"][0]
    assert node["validated_by"] == [{"command": "late", "exit_code": 0, "seq": 3}]
    assert node["final_state"] == "REJECTED"


def test_route_identity_mismatch_on_success_sets_the_warning() -> None:
    raw = _log(("terminal", "n", OK_TERMINAL | {"reported_model": "other/model"}))
    receipt = _rebuild(raw)
    assert receipt["nodes"][0]["attempts"][0]["route_identity"] == "mismatch"
    assert receipt["route_identity_summary"] == {
        "attempts": 1, "match": 0, "mismatch": 1, "unattested": 0, "mechanical": 0,
    }  # fmt: skip
    assert "route_identity_warning" in receipt


def test_failure_without_terminal_is_unattested_and_model_mismatch_error_is_mismatch() -> None:
    raw = _log(
        ("failure", "n", {"attempt": 1, "category": "", "route_id": "p/m"}),
        (
            "terminal",
            "n",
            {"attempt": 2, "ok": False, "error": "model_mismatch", "route_id": "p/m"},
        ),
    )
    rows = _rebuild(raw)["nodes"][0]["attempts"]
    assert (rows[0]["route_identity"], rows[0]["failure_category"]) == ("unattested", "unknown")
    assert rows[1]["route_identity"] == "mismatch" and rows[1]["executed_model"] is None


def test_no_change_nodes_and_optional_fields_absent_when_not_applicable() -> None:
    raw = _log(
        ("terminal", "n", OK_TERMINAL),
        ("barrier", "n", {"name": "ownership", "ok": True}),
        ("barrier", "n", {"name": "no_change", "ok": True}),
        ("verify", "n", {"ok": True, "command": "c", "exit_code": 0}),
    )
    receipt = _rebuild(raw)
    assert receipt["no_change_nodes"] == ["n"]
    for absent in ("retry_budget", "producer", "repo_gates", "openspec", "route_identity_warning"):
        assert absent not in receipt


def test_declared_barrier_missing_blocks() -> None:
    """§ 4.2 + § 6 rule 6: a declared barrier with no event is missing."""
    raw = _log(
        ("terminal", "n", OK_TERMINAL),
        ("verify", "n", {"ok": True, "command": "c", "exit_code": 0}),
        ("barrier", "", {"name": "ownership", "ok": True}),
        PASS_REVIEW,
    )
    receipt = _rebuild(raw, nodes=[NODE | {"barrier": True}])
    assert receipt["integration"]["missing"] == ["integration"]
    assert (receipt["outcome"], receipt["reason"]) == (
        "BLOCKED",
        "integration barrier missing: integration",
    )


def test_complete_then_blocking_findings_then_cancelled() -> None:
    base = [
        ("terminal", "n", OK_TERMINAL),
        ("verify", "n", {"ok": True, "command": "c", "exit_code": 0}),
        INTEGRATION,
    ]
    assert _rebuild(_log(*base, PASS_REVIEW))["outcome"] == "COMPLETE"
    findings = {
        "status": "pass",
        "findings": [{"severity": "HIGH"}, {"severity": "low"}, {"severity": "critical"}],
    }
    receipt = _rebuild(_log(*base), review=findings)
    assert receipt["review"]["blocking"] == 2
    assert receipt["reason"] == "review has 2 blocking finding(s)"
    cancelled = _rebuild(_log(*base, ("run_finished", "", {"outcome": "CANCELLED"})))
    assert (cancelled["outcome"], cancelled["reason"]) == ("CANCELLED", "run cancelled by operator")
    assert cancelled["claimed_outcome"] == "CANCELLED"


def test_first_unvalidated_node_is_named() -> None:
    raw = _log(("terminal", "n", {"ok": False, "route_id": "p/m"}))
    assert _rebuild(raw)["reason"] == "node n not VALIDATED (final_state=TERMINAL_FAILURE)"


def test_graph_node_defaults_and_coercions() -> None:
    """§ 3: defaults filled, barrier true → integration, odd risk → medium, paths normalised."""
    from replay.receipts.receipt import normalise_node

    node = normalise_node(
        {
            "node_id": "x",
            "objective": "o",
            "barrier": True,
            "risk": "EXTREME",
            "owned_files": [" a\\\\b.py "],
        }
    )
    assert node["barrier"] == "integration" and node["risk"] == "medium"
    assert node["owned_files"] == ["a/b.py"] and node["required_capabilities"] == ["tools"]
    assert list(node)[:2] == ["node_id", "objective"] and node["min_context_tokens"] == 32000


def test_run_files_with_review_json_error_cannot_rebuild() -> None:
    from replay.receipts.verify import verify_run_files

    raw = _log(("terminal", "n", OK_TERMINAL))
    graph = json.dumps({"goal": "g", "nodes": [NODE]}).encode()
    receipt = json.dumps(_rebuild(raw)).encode()
    files = RunFiles(
        "dir", receipt, raw, graph, review_error="cannot read review.json: [Errno 13] denied"
    )
    assert verify_run_files(files) == [
        "cannot rebuild receipt: cannot read review.json: [Errno 13] denied"
    ]


def test_verify_without_command_and_selection_without_route() -> None:
    """§ 4.1 ``validated_by`` is ``{command, exit_code, seq}``: a verify that carries no
    command reads as "" (as verdict-core writes it), not null. A ``selection`` with no
    route chose no route, so its fields reach no row — not even one whose route is ""
    (a mechanical merge)."""
    raw = _log(
        ("selection", "n", {"probe_class": "live"}),
        ("terminal", "n", {"ok": True, "route_id": "", "reported_model": "(mechanical merge)"}),
        ("verify", "n", {"ok": True, "exit_code": 0}),
    )
    node = _rebuild(raw)["nodes"][0]
    assert node["validated_by"] == [{"command": "", "exit_code": 0, "seq": 3}]
    assert "probe_class" not in node["attempts"][0]
    assert node["attempts"][0]["route_identity"] == "mechanical"
