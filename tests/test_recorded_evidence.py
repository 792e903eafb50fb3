"""A recorded snapshot is evidence, not authorship (README § Compatibility), through the CLI.

Each test writes one small bundle whose task.yaml ``grading_config`` breaks an authoring
rule, carries a key this version does not know, lacks a grade.yaml, or is re-graded under
a replacement that cannot fold — and checks the trial is still read and re-derived, with
the finding named in the result rather than a refusal or a traceback.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from ledger.cli import main
from tests.grading_support import write_bundle, write_yaml

COMPONENTS = ("state_checks", "transcript_rules", "trace_checks", "llm_judge", "custom_checks")


def _bundle(root: Path, grading: dict[str, Any] | None, grade: dict[str, Any] | None) -> Path:
    messages = [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "Your refund is approved."},
    ]
    return write_bundle(root / "src" / "t_ev_trial0", "t_ev", grading, grade, messages)


def _grade_yaml(transcript: float | None, score: float, passed: bool) -> dict[str, Any]:
    comps = dict.fromkeys(COMPONENTS)
    comps["transcript_rules"] = transcript
    return {"score": score, "binary_pass": passed, "components": comps, "reasons": ""}


def _retrace(tmp: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    ledger = str(tmp / "l")
    CliRunner().invoke(main, ["init", "--ledger", ledger])
    res = CliRunner().invoke(
        main, ["retrace", "--source", str(tmp / "src"), "--json", "--ledger", ledger, *extra]
    )
    assert "Traceback" not in res.output
    return res.exit_code, json.loads(res.output), res.output


RULES = {"must_contain": ["refund"], "min_assistant_turns": 3, "max_turns": 2}


def test_a_broken_authoring_rule_is_an_advisory_not_a_refusal(tmp_path: Path) -> None:
    grading = {"combine": {"weights": {"transcript_rules": 1.0}}, "transcript_rules": RULES}
    # authored, the same block is refused (§ Turn bounds)
    write_yaml(tmp_path / "authored.yaml", grading)
    bundle = _bundle(tmp_path, grading, _grade_yaml(0.5, 0.5, False))
    res = CliRunner().invoke(
        main, ["grade", str(bundle), "--grading", str(tmp_path / "authored.yaml"), "--json"]
    )
    assert res.exit_code == 1 and "unsatisfiable turn window" in res.output
    # recorded, it is read and evaluated: one assistant turn is below min_assistant_turns 3,
    # a gate on the whole component (GRADING.md § Transcript Rules), so 0.0
    code, doc, _ = _retrace(tmp_path)
    (trial,) = doc["trials"]
    assert trial["replayed"]["components"]["transcript_rules"] == 0.0
    assert any("unsatisfiable turn window" in a for a in trial["advisories"])
    assert trial["status"] == "disagreed"  # the hand-written grade said 0.5: a real finding


def test_an_unknown_recorded_key_degrades_its_component_only(tmp_path: Path) -> None:
    grading = {
        "combine": {"weights": {"transcript_rules": 0.5, "llm_judge": 0.5}},
        "transcript_rules": {"must_contain": ["refund"], "newer_recorder_key": True},
        "llm_judge": {"rubric": {"criteria": [{"id": "a", "description": "a"}]}},
    }
    grade = _grade_yaml(1.0, 1.0, True)
    grade["components"]["llm_judge"] = 1.0
    grade.update(
        judge_status="completed",
        criterion_results=[{"id": "a", "met": True, "score": 1.0, "justification": ""}],
    )
    _bundle(tmp_path, grading, grade)
    code, doc, _ = _retrace(tmp_path)
    (trial,) = doc["trials"]
    replayed = trial["replayed"]
    assert "transcript_rules.newer_recorder_key" in replayed["not_measured"]["transcript_rules"]
    assert replayed["components"]["llm_judge"] == 1.0  # the other component still compared
    assert trial["status"] == "agreed" and code == 0


def test_a_trial_with_no_recorded_grade_is_still_rechecked(tmp_path: Path) -> None:
    grading = {"combine": {"weights": {"transcript_rules": 1.0}}, "transcript_rules": RULES}
    _bundle(tmp_path, grading, None)
    code, doc, _ = _retrace(tmp_path)
    (trial,) = doc["trials"]
    assert trial["status"] == "ungraded"
    assert trial["replayed"]["components"]["transcript_rules"] == 0.0
    assert code == 0  # nothing failed: there was simply nothing recorded to compare


def test_a_replacement_that_cannot_fold_reports_why(tmp_path: Path) -> None:
    """No recorded snapshot, and --constraints supplies a trace block no combine weights:
    the trace component is scored, the fold says it cannot run (no traceback)."""
    _bundle(tmp_path, None, _grade_yaml(None, 1.0, True))
    constraints = {
        "constraints": [
            {"id": "said_refund", "require": {"present": {"match": {
                "kind": "assistant_message", "text": {"contains": "refund"}}}}}
        ]
    }  # fmt: skip
    write_yaml(tmp_path / "c.yaml", constraints)
    code, doc, out = _retrace(tmp_path, "--constraints", str(tmp_path / "c.yaml"))
    (trial,) = doc["trials"]
    replayed = trial["replayed"]
    assert replayed["components"]["trace_checks"] == 1.0
    assert replayed["score"] is None
    assert "trace_checks" in replayed["not_measured"]["combine"]
    assert [c["id"] for c in trial["constraints"]] == ["said_refund"]


def test_the_evidence_block_counts_trials_with_unknown_keys_and_lists_them(
    tmp_path: Path,
) -> None:
    grading = {
        "combine": {"weights": {"transcript_rules": 1.0}},
        "transcript_rules": {"must_contain": ["refund"], "newer_recorder_key": True},
    }
    _bundle(tmp_path, grading, _grade_yaml(1.0, 1.0, True))
    _, doc, _ = _retrace(tmp_path)
    assert doc["evidence"]["with_unknown_keys"] == 1
    assert doc["evidence"]["unknown_keys"] == ["transcript_rules.newer_recorder_key"]


def test_an_unknown_trajectory_key_is_listed_in_the_evidence_block(tmp_path: Path) -> None:
    grading = {"combine": {"weights": {"transcript_rules": 1.0}}, "transcript_rules": RULES}
    bundle = _bundle(tmp_path, grading, None)
    traj = yaml.safe_load((bundle / "trajectory.yaml").read_text())
    traj["messages"][1]["sentiment"] = "upbeat"  # a key no recorder we know writes
    write_yaml(bundle / "trajectory.yaml", traj)
    code, doc, _ = _retrace(tmp_path)
    (trial,) = doc["trials"]
    assert trial["status"] == "ungraded" and code == 0  # read, not refused
    assert doc["evidence"]["with_unknown_keys"] == 1
    assert any("sentiment" in k for k in doc["evidence"]["unknown_keys"])
