"""benchmarks.generate_corpus: deterministic, ingestible, and its grades re-derive.

The oracle for the recorded grades is independent of the generator: the timeline is
built by replay.timeline.build from the ingested events, and the fold rules are restated
here from FORMATS.md § 4 (judge: required gate, weighted mean of the non-required;
trace: a failed gate → 0.0, else the weighted fraction of the scored; weighted combine).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from benchmarks.generate_corpus import generate, main
from ledger.app.ingest import ingest_into as ingest
from ledger.log.store import open_ledger
from replay.timeline.build import build_trial_timeline
from replay.timeline.trial_inputs import trial_inputs


def _tree_digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def test_same_seed_same_bytes(tmp_path: Path) -> None:
    generate(tmp_path / "a", 40, seed=7, alter=3)
    generate(tmp_path / "b", 40, seed=7, alter=3)
    generate(tmp_path / "c", 40, seed=8, alter=3)
    assert _tree_digest(tmp_path / "a") == _tree_digest(tmp_path / "b")
    assert _tree_digest(tmp_path / "a") != _tree_digest(tmp_path / "c")


def test_cli_lists_altered_trials(tmp_path: Path, capsys) -> None:
    assert main([str(tmp_path / "out"), "--trials", "30", "--seed", "1", "--alter", "4"]) == 0
    altered = json.loads((tmp_path / "out" / "altered.json").read_text())
    assert len(altered) == 4 == len(set(altered))
    out = capsys.readouterr().out
    assert all(f"altered: {d}" in out for d in altered)


def _trace_oracle(timeline, block):
    """Evaluate the generator's three constraint shapes over a timeline (tool names only)."""
    calls: dict[str, list[int]] = {}
    for e in timeline.events:
        if e.kind.value == "tool_call":
            calls.setdefault(e.tool_name, []).append(e.position)
    out = {}
    for c in block["constraints"]:
        req = c["require"]
        if "before" in req:
            left = calls.get(req["before"]["left"]["match"]["tool"]["equals"], [])
            right = calls.get(req["before"]["right"]["match"]["tool"]["equals"], [])
            out[c["id"]] = bool(left and right) and min(left) < min(right)  # any / first
        elif "present" in req:
            out[c["id"]] = bool(calls.get(req["present"]["match"]["tool"]["equals"]))
        else:
            out[c["id"]] = not calls.get(req["absent"]["match"]["tool"]["equals"])
    return out


def _fold(ti) -> dict[str, float | None]:
    grading = ti.registered.grading
    grade = ti.recorded_grade
    comps: dict[str, float | None] = {}
    rubric = {c["id"]: c for c in grading["llm_judge"]["rubric"]["criteria"]}
    rows = grade["criterion_results"]
    if rows is None:
        comps["llm_judge"] = None
    else:
        req_failed = any(rubric[r["id"]]["required"] and not r["met"] for r in rows)
        scored = [
            (rubric[r["id"]]["weight"], r["score"]) for r in rows if not rubric[r["id"]]["required"]
        ]
        comps["llm_judge"] = (
            0.0 if req_failed else sum(w * s for w, s in scored) / sum(w for w, _ in scored)
        )
    if grading.get("trace_checks"):
        timeline = build_trial_timeline(ti.messages, ti.recorded_calls, ti.termination_reason)
        verdicts = _trace_oracle(timeline, grading["trace_checks"])
        cons = grading["trace_checks"]["constraints"]
        gate_failed = any(c.get("severity") == "gate" and not verdicts[c["id"]] for c in cons)
        scored = [c for c in cons if c.get("severity", "scored") == "scored"]
        comps["trace_checks"] = (
            0.0
            if gate_failed
            else sum(c.get("weight", 1.0) for c in scored if verdicts[c["id"]])
            / sum(c.get("weight", 1.0) for c in scored)
        )
        assert {r["id"]: r["passed"] for r in grade["trace_check_results"]} == verdicts
    return comps


@pytest.mark.parametrize("seed", [11, 12])
def test_recorded_grades_rederive_except_the_altered(tmp_path: Path, seed: int) -> None:
    altered = set(generate(tmp_path / "corpus", 120, seed=seed, alter=5))
    with open_ledger(tmp_path / "lg", create=True) as lg:
        report = ingest(lg, [tmp_path / "corpus"])
        assert report.trials_new == 120 and not report.inconsistent
        streams: dict[str, list] = {}
        for ev in lg.read():
            streams.setdefault(ev.stream, []).append(ev)
    mismatched, kinds = set(), set()
    for evs in streams.values():
        ti = trial_inputs(evs)
        kinds.add((ti.recorded_calls is not None, ti.termination_reason))
        if ti.recorded_grade is None:
            continue
        comps = _fold(ti)
        recorded = ti.recorded_grade["components"]
        for name, value in comps.items():
            same = value == recorded.get(name) or (
                value is not None
                and recorded.get(name) is not None
                and abs(value - recorded[name]) < 1e-9
            )
            if not same:
                mismatched.add(ti.registered.trial)
    assert mismatched == altered
    # the corpus exercises both generations and every termination the generator writes
    assert {k[0] for k in kinds} == {True, False}
    assert {k[1] for k in kinds} >= {"user_stop", "max_turns"}


def test_corpus_covers_the_advertised_variety(tmp_path: Path) -> None:
    generate(tmp_path / "c", 150, seed=5)
    text = "\n".join(p.read_text() for p in (tmp_path / "c").glob("*/tool_log.yaml"))
    trajectories = "\n".join(p.read_text() for p in (tmp_path / "c").glob("*/trajectory.yaml"))
    assert "executor: user" in text  # user-executed calls
    assert "status: error" in text and "status: tool_not_found" in text  # failed calls
    assert "#2" in trajectories  # disambiguated reused ids
    assert "content: 'Error: " in trajectories or 'content: "Error: ' in trajectories
    no_log = [
        p for p in (tmp_path / "c").iterdir() if p.is_dir() and not (p / "tool_log.yaml").exists()
    ]
    assert no_log  # generation-1 bundles
    grades = "\n".join(p.read_text() for p in (tmp_path / "c").glob("*/grade.yaml"))
    assert "judge_status: errored" in grades and "criterion_results:" in grades
