"""grade_trial end to end: the 17 recorded notes trials, the authored refusal bundle, the
not-measured rule, the gates, aborts, and ``vledger grade``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from ledger.app.grade import grade, load_bundle
from ledger.cli import main
from replay.grading.accounting import evaluated
from replay.grading.components.judge import CriterionVerdict, RecordedJudge
from replay.grading.components.result import ComponentResult
from replay.grading.grade import (
    Grade,
    GradeInputs,
    compare_grades,
    fold_grade,
    grade_events,
    grade_trial,
    recorded_grade,
)
from replay.grading.recorded_grade import read_recorded_grade
from replay.grading.rules import load_grading_config
from tests.data_paths import GRADING_BUNDLES, NOTES
from tests.grading_support import PARITY, pack_case_timeline, pack_case_views, read_yaml

BUNDLES = sorted(p for p in NOTES.glob("*/*") if (p / "trajectory.yaml").exists())
REFUSAL = GRADING_BUNDLES / "expect_initial_state_refusal"


def test_the_corpus_holds_17_bundles() -> None:
    assert len(BUNDLES) == 17
    assert sum(p.parent.name == "met" for p in BUNDLES) == 12


def _judge_markers(segments: list[str]) -> tuple[str | None, tuple[str, ...]]:
    """(the judge score as grade.yaml prints it, the failed required criteria ids)."""
    score = next(
        (m.group(1) for s in segments if (m := re.match(r"Judge: score=(\d\.\d\d)", s))), None
    )
    failed: tuple[str, ...] = ()
    for s in segments:
        if s.startswith("FAILED required criteria: "):
            failed = tuple(
                x.strip()
                for x in s.removeprefix("FAILED required criteria: ").rstrip(")").split(",")
            )
    return score, failed


@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda p: f"{p.parent.name}/{p.name[-28:]}")
def test_notes_trials_rederive_their_recorded_grade(bundle: Path) -> None:
    """The judge component with its gate, the fold and binary_pass, from the recorded
    criterion verdicts alone: no difference on any of the 17 trials. The reason text
    differs only where the judge's own prose summary sits (recorded, not derivable);
    the derivable markers — judge score and failed required criteria — agree."""
    result = grade(bundle).to_json()
    assert result["differences"] == []
    rec, rep = result["recorded"], result["replayed"]
    assert rep["not_measured"] == {}
    assert (rep["score"], rep["binary_pass"], rep["components"]["llm_judge"]) == (
        rec["score"],
        rec["binary_pass"],
        rec["components"]["llm_judge"],
    )
    assert _judge_markers(rep["reasons"]) == _judge_markers(rec["reasons"])
    if bundle.parent.name == "not_met":
        # the aggregate alone reads 1.0 on these; the gate is what zeroes the component
        assert rep["components"]["llm_judge"] == 0.0 and rep["binary_pass"] is False


def test_refusal_bundle_rederives_its_hash_verdict_from_the_bundle_alone() -> None:
    result = grade(REFUSAL).to_json()
    assert result["differences"] == []
    assert result["replayed"] == {
        "score": 1.0,
        "binary_pass": True,
        "components": {
            "state_checks": 1.0,
            "transcript_rules": None,
            "trace_checks": None,
            "llm_judge": None,
            "custom_checks": None,
        },
        "not_measured": {},
        "reasons": ["State: State hash matches (tau-bench algorithm)"],
        # the one populated scored key, accounted by the hash (GRADING.md § The runtime ledger)
        "accounting": [
            {"key": "state_checks.hash.expect_initial_state", "outcome": "evaluated", "reason": ""}
        ],
    }
    assert result["recorded"]["reasons"] == result["replayed"]["reasons"]


def test_refusal_bundle_with_a_changed_final_state_fails(tmp_path: Path) -> None:
    for f in REFUSAL.iterdir():
        (tmp_path / f.name).write_text(f.read_text())
    (tmp_path / "env.yaml").write_text(
        (REFUSAL / "env.yaml").read_text().replace("delivered", "cancelled")
    )
    result = grade(tmp_path).to_json()
    assert result["replayed"]["components"]["state_checks"] == 0.0
    assert {d["component"] for d in result["differences"]} == {
        "state_checks",
        "score",
        "binary_pass",
    }


def _cfg(data: dict):
    return load_grading_config(data, authored=False)


def _inputs(**kw) -> GradeInputs:
    return GradeInputs(
        trial="t", messages=(), recorded_calls=(), termination_reason="user_stop", **kw
    )


def test_combine_method_pack_through_grade_trial() -> None:
    """The combine_method pack's one trial splits into 0.0 (jsonpath) and 1.0 (transcript);
    re-authoring the method gives three different answers: (0.5, False), (0.0, False), (1.0, True)."""
    raw = read_yaml(PARITY / "combine_method" / "grading.yaml")
    case = read_yaml(PARITY / "combine_method" / "trial.yaml")["split_components"]
    tl = pack_case_timeline(case)
    got = {}
    for method in ("weighted", "all", "any"):
        raw["combine"]["method"] = method
        g = grade_trial(_inputs(final_state=case["state"]), load_grading_config(raw), timeline=tl)
        assert (g.components["state_checks"], g.components["transcript_rules"]) == (0.0, 1.0)
        got[method] = (g.score, g.binary_pass)
    assert got == {"weighted": (0.5, False), "all": (0.0, False), "any": (1.0, True)}


def test_a_component_needing_a_live_world_is_named_and_left_out() -> None:
    cfg = _cfg(
        {
            "state_checks": {"hash": {"enabled": True, "golden_actions": [{"name": "x"}]}},
            "llm_judge": {"rubric": {"criteria": [{"id": "a"}]}},
            "combine": {"weights": {"state_checks": 1.0, "llm_judge": 1.0}},
        }
    )
    judge = RecordedJudge("completed", (CriterionVerdict("a", True, 1.0),))
    g = grade_trial(_inputs(judge=judge), cfg)
    assert (
        g.components["state_checks"] is None and "golden_actions" in g.not_measured["state_checks"]
    )
    assert g.components["llm_judge"] == 1.0
    assert (g.score, g.binary_pass) == (None, None)


def test_a_failed_gate_still_decides_the_pass_flag_beside_an_unmeasured_component() -> None:
    cfg = _cfg(
        {
            "custom_checks": {"enabled": True},
            "llm_judge": {"rubric": {"criteria": [{"id": "a", "required": True}]}},
            "combine": {"weights": {"custom_checks": 1.0, "llm_judge": 1.0}},
        }
    )
    judge = RecordedJudge("completed", (CriterionVerdict("a", False, 0.0),))
    g = grade_trial(_inputs(judge=judge), cfg)
    assert g.not_measured.keys() == {"custom_checks"}
    assert (g.score, g.binary_pass) == (None, False)


def test_errored_judge_is_unscored_and_configured_but_unevaluated_fails() -> None:
    cfg = _cfg(
        {
            "llm_judge": {"rubric": {"criteria": [{"id": "a"}]}},
            "combine": {"weights": {"llm_judge": 1.0}},
        }
    )
    g = grade_trial(_inputs(judge=RecordedJudge("errored", None)), cfg)
    assert g.components["llm_judge"] is None and g.not_measured == {}
    assert (g.score, g.binary_pass) == (0.0, False)


@pytest.mark.parametrize("reason", ["rate_limit", "api_timeout", "provision_error", "trial_lost"])
def test_aborts_and_lost_trials_produce_no_grade(reason: str) -> None:
    cfg = _cfg(
        {
            "llm_judge": {"rubric": {"criteria": [{"id": "a"}]}},
            "combine": {"weights": {"llm_judge": 1.0}},
        }
    )
    g = grade_trial(GradeInputs("t", (), None, reason), cfg)
    assert (g.score, g.binary_pass) == (None, None) and set(g.components.values()) == {None}


def test_transcript_floor_on_an_events_less_timeline_enters_the_fold() -> None:
    cfg = _cfg(
        {
            "transcript_rules": {"min_assistant_turns": 1, "must_contain": ["x"]},
            "combine": {"weights": {"transcript_rules": 1.0}},
        }
    )
    g = grade_trial(_inputs(), cfg, timeline=pack_case_timeline({"messages": []}))
    assert (g.components["transcript_rules"], g.score, g.binary_pass) == (0.0, 0.0, False)


def _trace_pack(case: str) -> Grade:
    root = PARITY / "trace_checks_gate"
    messages, records = pack_case_views(read_yaml(root / "trial.yaml")[case])
    inputs = GradeInputs("gate", messages, records, "agent_done")
    return grade_trial(inputs, load_grading_config(read_yaml(root / "grading.yaml")))


def test_trace_gate_fails_the_trial_through_grade_trial() -> None:
    """trace_checks_gate at pass_threshold 0.0: the tripped gate alone zeroes the component
    and forces binary_pass false; the reasons carry the FAILED trace gates sentence."""
    sat, vio = _trace_pack("satisfying"), _trace_pack("violating")
    assert (sat.components["trace_checks"], sat.binary_pass) == (1.0, True)
    assert (vio.components["trace_checks"], vio.score, vio.binary_pass) == (0.0, 0.0, False)
    assert "FAILED trace gates: the_meter_was_not_reset" in vio.reasons


def test_a_trace_gate_forces_binary_pass_false_above_the_threshold() -> None:
    cfg = _cfg(
        {
            "trace_checks": {
                "constraints": [
                    {"id": "x", "require": {"absent": {"match": {"kind": "tool_call"}}}}
                ]
            },
            "combine": {"weights": {"trace_checks": 1.0}, "pass_threshold": 0.0},
        }
    )
    g = grade_trial(
        _inputs(),
        cfg,
        timeline=pack_case_timeline({"messages": [{"role": "assistant", "content": "x"}]}),
        # a stand-in evaluator accounts for the key it scores, as every evaluator must
        trace_evaluator=lambda tl, block: ComponentResult(
            score=1.0, gate_failed=True, accounted=evaluated(["trace_checks.constraints.absent"])
        ),
    )
    assert (g.score, g.binary_pass) == (1.0, False)


def test_trace_checks_on_an_events_less_timeline_leave_the_fold() -> None:
    cfg = _cfg(
        {
            "trace_checks": {
                "constraints": [
                    {"id": "x", "require": {"absent": {"match": {"kind": "tool_call"}}}}
                ]
            },
            "combine": {"weights": {"trace_checks": 1.0}},
        }
    )
    g = grade_trial(_inputs(), cfg)
    assert g.components["trace_checks"] is None and g.not_measured == {}
    assert (g.score, g.binary_pass) == (0.0, False)  # configured but unevaluated


def test_compare_names_each_difference() -> None:
    rec = recorded_grade(
        read_recorded_grade(
            {
                "score": 1.0,
                "binary_pass": True,
                "components": {"llm_judge": 1.0},
                "reasons": "Judge: score=1.00 | Judge KB: none offered",
            }
        )
    )
    assert rec.reasons == ["Judge: score=1.00", "Judge KB: none offered"]
    rep = fold_grade(
        {"llm_judge": ComponentResult.unmeasurable("no verdicts")},
        _cfg({"llm_judge": {}, "combine": {"weights": {"llm_judge": 1.0}}}),
    )
    diffs = {d.component: d for d in compare_grades(rec, rep)}
    assert set(diffs) == {"llm_judge", "score", "binary_pass"}
    assert diffs["llm_judge"].reason == "not measurable from the recorded evidence: no verdicts"
    assert "llm_judge not measured" in diffs["score"].reason
    assert compare_grades(rec, rec) == []
    assert " | ".join(rec.reasons) == "Judge: score=1.00 | Judge KB: none offered"


def test_grading_is_deterministic() -> None:
    for bundle in (BUNDLES[0], BUNDLES[-1], REFUSAL):
        assert grade(bundle).to_json() == grade(bundle).to_json()


def test_bundle_reader_keeps_no_record_apart_from_an_empty_record() -> None:
    assert load_bundle(BUNDLES[-1]).inputs.recorded_calls is None  # not_met: generation 1
    assert load_bundle(REFUSAL).inputs.recorded_calls == ()
    assert len(load_bundle(BUNDLES[0]).inputs.recorded_calls) >= 1


def test_cli_json_contract() -> None:
    result = CliRunner().invoke(main, ["grade", str(BUNDLES[-1]), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert set(out) == {"trial", "recorded", "replayed", "differences"}
    assert (
        set(out["replayed"])
        == set(Grade.model_fields)
        == {"score", "binary_pass", "components", "not_measured", "reasons", "accounting"}
    )
    assert out["replayed"]["components"]["llm_judge"] == 0.0 and out["differences"] == []


def test_cli_human_output_and_errors(tmp_path: Path) -> None:
    ok = CliRunner().invoke(main, ["grade", str(REFUSAL)])
    assert ok.exit_code == 0 and "replayed grade equals the recorded one" in ok.output
    bad = tmp_path / "grading.yaml"
    bad.write_text("state_checks: []\n")
    err = CliRunner().invoke(main, ["grade", str(REFUSAL), "--grading", str(bad)])
    assert err.exit_code == 1 and "state_checks must be a mapping or absent" in err.output
    nob = CliRunner().invoke(main, ["grade", str(tmp_path)])
    assert nob.exit_code == 1 and "no trajectory.yaml" in nob.output


def test_cli_grades_a_trial_read_from_the_ledger(tmp_path: Path) -> None:
    """The same trials ingested into a ledger grade exactly as their bundles do."""
    from ledger.app.ingest import ingest_into as ingest
    from ledger.log.store import open_ledger

    ledger = tmp_path / "ledger"
    with open_ledger(ledger, create=True) as lg:
        ingest(lg, [NOTES, REFUSAL])
        streams = lg.streams(prefix="trial/")
    assert len(streams) == 18
    by_trial = {s.rsplit("/", 1)[-1]: s for s in streams}
    for bundle in (BUNDLES[0], BUNDLES[-1], REFUSAL):
        stream = next(s for t, s in by_trial.items() if bundle.name in t or t in bundle.name)
        result = CliRunner().invoke(main, ["grade", stream, "--ledger", str(ledger), "--json"])
        assert result.exit_code == 0, result.output
        out = json.loads(result.output)
        from_bundle = grade(bundle).to_json()
        assert out["trial"] == stream and out["differences"] == []
        assert out["replayed"] == from_bundle["replayed"]
        assert out["recorded"] == from_bundle["recorded"]
        with open_ledger(ledger) as lg:
            events = list(lg.read(stream=stream))
        assert grade_events(events).model_dump() == from_bundle["replayed"]
    missing = CliRunner().invoke(main, ["grade", "trial/nope/x/y", "--ledger", str(ledger)])
    assert missing.exit_code == 1 and "no such trial stream" in missing.output


def test_disagreeing_views_get_no_grade_even_on_a_judge_only_pack() -> None:
    """GRADING.md § Both substrates consume it: a reconciliation failure is never folded
    into a score — the timeline is built before any component, whatever the config reads."""
    from schemas.timeline import (
        Message,
        RecordedToolCall,
        Role,
        TimelineInconsistencyError,
        ToolExecutionStatus,
        ToolExecutorIdentity,
    )

    cfg = _cfg(
        {
            "llm_judge": {"rubric": {"criteria": [{"id": "a"}]}},
            "combine": {"weights": {"llm_judge": 1.0}},
        }
    )
    stray = RecordedToolCall(
        "x", 0, "rm", {}, ToolExecutorIdentity.AGENT, ToolExecutionStatus.SUCCESS
    )
    inputs = GradeInputs(
        "t",
        (Message(Role.USER, "hi"), Message(Role.ASSISTANT, "done")),
        (stray,),
        "user_stop",
        judge=RecordedJudge("completed", (CriterionVerdict("a", True, 1.0),)),
    )
    with pytest.raises(TimelineInconsistencyError):
        grade_trial(inputs, cfg)


def test_a_bundle_directory_it_cannot_look_into_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`vledger grade BUNDLE` on a directory without search permission: `Error:` naming it,
    exit 1 (pathlib's PermissionError reached the user as a traceback). EACCES is
    simulated, so the test means the same under root, whom chmod does not stop."""
    import errno
    import os

    locked = tmp_path / "bundle"
    locked.mkdir()
    stat = os.stat

    def fake_stat(path, *a, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
        if not isinstance(path, int) and Path(os.fsdecode(path)).parent == locked:
            raise PermissionError(errno.EACCES, "Permission denied", os.fsdecode(path))
        return stat(path, *a, **kw)

    monkeypatch.setattr(os, "stat", fake_stat)
    res = CliRunner().invoke(main, ["grade", str(locked)])
    assert isinstance(res.exception, SystemExit) and res.exit_code == 1, res.exception
    assert f"{locked}: permission denied" in res.stderr
