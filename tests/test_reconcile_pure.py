"""The pure reconciliation over hand-made observations (RUBRIC_MIGRATION.md § The bar,
§ Which trials contribute an observation, § The counterfactual; FORMATS.md § 8).

Expected numbers come from the spec's own worked example (the notes corpus) and from
the rules' closed forms, never from a previous run.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconcile.inputs import CandidateEvaluation, CriterionShape, RecordedGrading, Unavailable
from reconcile.kappa import cohen_kappa
from reconcile.reconcile import reconcile_entry
from reconcile.report import CorpusReport, exit_code, render_text, run_json
from tests.test_reconcile_helpers import (
    CRIT,
    GATE,
    NARROWED_TEXT,
    NOTES_RUBRIC,
    claim,
    entry,
    notes_obs,
)


def union() -> list:
    met = [notes_obs(f"met/t{i}", met=True, passed=True) for i in range(12)]
    not_met = [notes_obs(f"not_met/t{i}", met=False, passed=False) for i in range(5)]
    return met + not_met


def kinds(result) -> list[str]:
    return [r.kind for r in result.refusals]


def test_union_reproduces_the_published_result() -> None:
    r = reconcile_entry(claim(entry()), union(), sweep=True)
    assert (r.observations, r.table.as_dict()) == (
        17,
        {"met_passed": 12, "met_failed": 0, "not_met_passed": 0, "not_met_failed": 5},
    )
    assert (r.accuracy, r.kappa, r.verdict, r.refusals) == (1.0, 1.0, "no_counter_evidence", ())
    cf = r.counterfactual
    assert cf.pass_rate_before == (12, 17) and cf.pass_rate_after == (12, 17)
    met_row = next(x for x in cf.rows if x.trial == "met/t0")
    not_met_row = next(x for x in cf.rows if x.trial == "not_met/t0")
    # FORMATS.md § 8: met rows judge 1.000 → 1.000 · trial 1.000/True → 1.000/True
    assert (met_row.judge_component_before, met_row.judge_component_after) == (1.0, 1.0)
    assert (met_row.score_after, met_row.binary_pass_after) == (1.0, True)
    # not_met rows judge 0.000 → 1.000 · trial 0.000/False → 0.500/False (the gate fails it)
    assert (not_met_row.judge_component_before, not_met_row.judge_component_after) == (0.0, 1.0)
    assert (not_met_row.score_before, not_met_row.binary_pass_before) == (0.0, False)
    assert (not_met_row.score_after, not_met_row.binary_pass_after) == (0.5, False)
    assert dict(met_row.weights_before) == {"llm_judge": 1.0}
    assert dict(met_row.weights_after) == {"llm_judge": 0.5, "trace_checks": 0.5}
    assert met_row.vetoes_before == (CRIT,)
    assert met_row.vetoes_after == (CRIT, GATE)
    report = CorpusReport("corpora/notes", ("packs",), 17, (r,))
    assert exit_code([report]) == 0


def test_one_half_alone_is_insufficient_evidence_and_blocks() -> None:
    """5 < 17 declared is allowed under --source: the verdict is insufficient, not refused."""
    half = [o for o in union() if o.trial.startswith("not_met/")]
    r = reconcile_entry(claim(entry()), half, sweep=False)
    assert (r.observations, r.kappa, r.accuracy, r.verdict) == (
        5,
        None,
        1.0,
        "insufficient_evidence",
    )
    assert r.table.as_dict()["not_met_failed"] == 5
    assert r.counterfactual.pass_rate_before == (0, 5) == r.counterfactual.pass_rate_after
    assert exit_code([CorpusReport("x", (), 5, (r,))]) == 1


def test_fewer_observations_than_declared_refuse_in_the_sweep() -> None:
    half = [o for o in union() if o.trial.startswith("met/")]
    r = reconcile_entry(claim(entry()), half, sweep=True)
    assert kinds(r) == ["declared_evidence_contradicts_measurement"]
    assert "bundles went missing" in r.refusals[0].detail
    assert r.verdict == "refused"  # refusal outranks κ undefined


def test_more_observations_than_declared_refuse() -> None:
    r = reconcile_entry(
        claim(entry(evidence={"observations": 16, "kappa": 1.0})), union(), sweep=False
    )
    assert kinds(r) == ["declared_evidence_contradicts_measurement"]
    assert "under-counts" in r.refusals[0].detail


@pytest.mark.parametrize(
    ("declared", "refused"),
    [(1.0, False), (0.9996, False), (0.9994, True), (None, True), (0.5, True)],
)
def test_declared_kappa_is_compared_at_three_decimals(declared, refused) -> None:
    r = reconcile_entry(
        claim(entry(evidence={"observations": 17, "kappa": declared})), union(), sweep=True
    )
    assert (r.verdict == "refused") is refused
    if refused:
        assert kinds(r) == ["declared_evidence_contradicts_measurement"]
        assert "measured kappa 1.000" in r.refusals[0].detail


def test_declared_null_kappa_matches_an_undefined_measurement() -> None:
    half = [o for o in union() if o.trial.startswith("met/")]
    e = entry(evidence={"observations": 12, "kappa": None})
    r = reconcile_entry(claim(e), half, sweep=True)
    assert (r.refusals, r.verdict) == ((), "insufficient_evidence")


def lot_ops() -> list:
    return [notes_obs(f"lot/t{i}", met=True, passed=False) for i in range(10)]


def test_a_strict_disagreement_refuses_a_candidate_and_still_exits_zero() -> None:
    """RUBRIC_MIGRATION.md § lot_ops_names_lot: 10 strict, κ 0.000, refused, exit 0."""
    e = entry(mode="candidate", residual=None, evidence=None, combine_weights=None)
    r = reconcile_entry(claim(e), lot_ops(), sweep=True)
    assert r.table.as_dict() == {
        "met_passed": 0,
        "met_failed": 10,
        "not_met_passed": 0,
        "not_met_failed": 0,
    }
    assert (r.accuracy, r.kappa) == (0.0, 0.0)
    assert r.verdict == "refused" and kinds(r) == ["unacknowledged_disagreement"]
    assert {d.direction for d in r.disagreements} == {"strict"}
    assert all(d.justification == "judge says met=True" for d in r.disagreements)
    assert not r.gates
    report = CorpusReport("lot", ("packs",), 10, (r,))
    assert report.blocking() == [] and exit_code([report]) == 0
    assert run_json([report])["exit_code"] == 0
    assert "a candidate converts nothing, so its verdict gates nothing" in render_text(report)


def mixed(direction: str) -> list:
    """The union with one disagreement of the given direction added."""
    odd = (
        notes_obs("odd/t0", met=True, passed=False)
        if direction == "strict"
        else notes_obs("odd/t0", met=False, passed=True)
    )
    return [*union(), odd]


@pytest.mark.parametrize(
    ("mode", "direction", "refused"),
    [
        ("candidate", "strict", True),
        ("narrowed", "strict", True),
        ("retired", "strict", True),
        ("candidate", "permissive", False),
        ("narrowed", "permissive", False),
        ("retired", "permissive", True),
    ],
)
def test_mode_tolerance(mode: str, direction: str, refused: bool) -> None:
    overrides: dict = {"mode": mode, "evidence": {"observations": 18, "kappa": None}}
    if mode == "candidate":
        overrides.update(residual=None, evidence=None)
    if mode == "retired":
        overrides.update(residual={"kind": "none", "reason": "nothing remains"})
    e = entry(**overrides)
    r = reconcile_entry(claim(e), mixed(direction), sweep=False)
    # the κ a strict/permissive single disagreement of the same count gives is the same
    assert r.kappa == pytest.approx((18 * 17 - (13 * 12 + 5 * 6)) / (18 * 18 - (13 * 12 + 5 * 6)))
    d = next(x for x in r.disagreements if x.trial == "odd/t0")
    assert d.direction == direction
    assert [k for k in kinds(r) if k == "unacknowledged_disagreement"] == (
        ["unacknowledged_disagreement"] if refused else []
    )


def test_an_acknowledged_disagreement_is_waived_by_any_spelling_of_its_trial() -> None:
    e = entry(
        evidence={"observations": 18, "kappa": 0.870},
        acknowledged=[{"trial": "corpora/notes/odd/t0", "reason": "the judge misread the log"}],
    )
    obs = mixed("strict")
    odd = obs[-1]
    obs[-1] = type(odd)(
        odd.trial,
        odd.task_id,
        odd.grade,
        odd.grading,
        odd.candidate,
        frozenset({"corpora/notes/odd/t0"}),
    )
    r = reconcile_entry(claim(e), obs, sweep=False)
    d = next(x for x in r.disagreements if x.trial == "odd/t0")
    assert d.acknowledged_reason == "the judge misread the log"
    assert "unacknowledged_disagreement" not in kinds(r)
    assert r.refusals == () and r.verdict == "no_counter_evidence"


def test_a_stale_acknowledgement_refuses() -> None:
    e = entry(acknowledged=[{"trial": "met/t3", "reason": "the judge was wrong once"}])
    r = reconcile_entry(claim(e), union(), sweep=True)
    assert kinds(r) == ["stale_acknowledgement"]
    assert "'met/t3'" in r.refusals[0].detail


def test_recorded_rubric_contradicting_was_names_bundle_and_field() -> None:
    e = entry(
        was={
            "kind": "binary",
            "required": False,
            "weight": 1.0,
            "description": NOTES_RUBRIC[0].description,
        }
    )
    r = reconcile_entry(claim(e), union(), sweep=True)
    assert kinds(r) == ["recorded_rubric_contradicts_was"]
    assert "met/t0: required (recorded True, was declares False)" in r.refusals[0].detail


def test_a_corpus_regenerated_after_the_migration_says_so() -> None:
    post = RecordedGrading(
        (CriterionShape(CRIT, "binary", True, 1.0, NARROWED_TEXT),) + NOTES_RUBRIC[1:],
        {"llm_judge": 1.0},
        "weighted",
        0.8,
    )
    current = CriterionShape(CRIT, "binary", True, 1.0, NARROWED_TEXT)
    obs = [notes_obs(f"t{i}", met=i % 2 == 0, passed=i % 2 == 0, grading=post) for i in range(4)]
    r = reconcile_entry(
        claim(entry(evidence={"observations": 4, "kappa": 1.0}), current=current), obs, sweep=True
    )
    assert kinds(r) == ["recorded_rubric_contradicts_was"]
    assert "the corpus records the post-migration rubric" in r.refusals[0].detail


def test_a_corpus_straddling_a_pack_revision_names_both_bundles() -> None:
    other = RecordedGrading(
        (CriterionShape(CRIT, "binary", True, 2.0, NOTES_RUBRIC[0].description),)
        + NOTES_RUBRIC[1:],
        {"llm_judge": 1.0},
        "weighted",
        0.8,
    )
    obs = union()
    obs[0] = notes_obs("met/t0", met=True, passed=True, grading=other)
    r = reconcile_entry(claim(entry()), obs, sweep=True)
    assert set(kinds(r)) == {"recorded_rubric_contradicts_was", "corpus_straddles_a_pack_revision"}
    straddle = next(x for x in r.refusals if x.kind == "corpus_straddles_a_pack_revision")
    assert "met/t0 and met/t1" in straddle.detail


def test_a_candidate_is_not_charged_the_recorded_rubric_rules() -> None:
    e = entry(
        mode="candidate",
        residual=None,
        evidence=None,
        was={"kind": "binary", "required": False, "weight": 3.0, "description": "other"},
    )
    r = reconcile_entry(claim(e), union(), sweep=True)
    assert (r.verdict, r.refusals) == ("no_counter_evidence", ())


def test_each_exclusion_is_counted_and_named() -> None:
    no_crit = RecordedGrading(NOTES_RUBRIC[1:], {"llm_judge": 1.0}, "weighted", 0.8)
    obs = [
        *union(),
        notes_obs("x/absent", met=True, passed=True, grading=no_crit),
        notes_obs("x/errored", met=True, passed=True, judge_status="errored"),
        notes_obs("x/no_results", met=True, passed=True, criterion_results=None),
        notes_obs("x/no_row", met=True, passed=True, criterion_results=()),
        notes_obs("x/undecided", met=True, passed=None),
        notes_obs(
            "x/route_lost",
            met=True,
            passed=True,
            candidate=CandidateEvaluation({}, 1.0, False, "b"),
        ),
        notes_obs(
            "x/unavailable",
            met=True,
            passed=True,
            candidate=Unavailable("timeline inconsistent: call c1"),
        ),
        notes_obs("x/other_task", met=True, passed=False, task_id="elsewhere"),
    ]
    r = reconcile_entry(claim(entry()), obs, sweep=True)
    assert r.observations == 17 and r.verdict == "no_counter_evidence"
    assert [(x.trial, x.exclusion) for x in r.exclusions] == [
        ("x/absent", "criterion_absent_from_recorded_rubric"),
        ("x/errored", "judge_did_not_complete"),
        ("x/no_results", "no_criterion_results"),
        ("x/no_row", "no_verdict_for_criterion"),
        ("x/undecided", "constraint_verdict_unavailable"),
        ("x/route_lost", "constraint_verdict_unavailable"),
        ("x/unavailable", "constraint_verdict_unavailable"),
    ]
    assert "undecided" in r.exclusions[4].reason
    assert "did not win" in r.exclusions[5].reason
    assert r.exclusions[6].reason == "timeline inconsistent: call c1"


def test_without_evidence_an_absent_criterion_is_asked_as_a_missing_verdict() -> None:
    no_crit = RecordedGrading(NOTES_RUBRIC[1:], {"llm_judge": 1.0}, "weighted", 0.8)
    e = entry(mode="candidate", residual=None, evidence=None)
    obs = [notes_obs("x", met=True, passed=True, grading=no_crit, criterion_results=())]
    r = reconcile_entry(claim(e), obs, sweep=True)
    assert [x.exclusion for x in r.exclusions] == ["no_verdict_for_criterion"]


def test_a_lazy_candidate_is_computed_only_for_trials_that_reach_it() -> None:
    calls: list[str] = []

    def lazy(name: str, passed: bool):
        def compute():
            calls.append(name)
            return CandidateEvaluation({GATE: passed}, 1.0 if passed else 0.0, not passed)

        return compute

    obs = [
        notes_obs("a", met=True, passed=True, candidate=lazy("a", True)),
        notes_obs("b", met=True, passed=True, judge_status="errored", candidate=lazy("b", True)),
    ]
    r = reconcile_entry(claim(entry()), obs, sweep=False)
    assert calls == ["a"] and r.observations == 1


def test_counterfactual_names_the_trials_it_cannot_recompute() -> None:
    obs = union()
    obs[0] = notes_obs(
        "met/t0", met=True, passed=True, components={"llm_judge": 1.0, "state_checks": 1.0}
    )
    obs[1] = notes_obs("met/t1", met=True, passed=True, components={"llm_judge": 0.25})
    r = reconcile_entry(claim(entry()), obs, sweep=True)
    gaps = {u.trial: u.gap for u in r.counterfactual.unrecomputed}
    assert gaps == {
        "met/t0": "composed_component_has_no_runner_field",
        "met/t1": "recomputed_verdict_diverges",
    }
    assert r.counterfactual.pass_rate_before == (10, 15)
    assert r.verdict == "no_counter_evidence"  # nothing reads the counterfactual


def test_no_declared_map_cannot_weight_the_installed_trace_component() -> None:
    e = entry(combine_weights=None)
    r = reconcile_entry(claim(e), union(), sweep=True)
    assert r.counterfactual.rows == ()
    assert {u.gap for u in r.counterfactual.unrecomputed} == {
        "folded_component_has_no_declared_weight"
    }
    assert "trace_checks" in r.counterfactual.unrecomputed[0].reason


def test_retired_counterfactual_drops_the_veto_and_keeps_the_gate() -> None:
    e = entry(mode="retired", residual={"kind": "none", "reason": "nothing remains"})
    r = reconcile_entry(claim(e), union(), sweep=True)
    row = r.counterfactual.rows[0]
    assert row.vetoes_before == (CRIT,) and row.vetoes_after == (GATE,)


def test_json_contract_carries_the_issue_keys() -> None:
    r = reconcile_entry(claim(entry()), union(), sweep=True)
    doc = run_json([CorpusReport("corpora/notes", ("packs",), 17, (r,))])
    assert doc["exit_code"] == 0
    (e,) = doc["entries"]
    for key in (
        "criterion",
        "task_ids",
        "mode",
        "verdict",
        "observations",
        "table",
        "accuracy",
        "kappa",
        "disagreements",
        "refusals",
        "counterfactual",
    ):
        assert key in e
    assert e["table"] == {
        "met_passed": 12,
        "met_failed": 0,
        "not_met_passed": 0,
        "not_met_failed": 5,
    }
    assert e["counterfactual"]["pass_rate_before"] == {"passed": 12, "of": 17}


def test_human_report_has_the_reference_shape() -> None:
    r = reconcile_entry(claim(entry()), union(), sweep=True)
    text = render_text(CorpusReport("corpora/notes", ("packs",), 17, (r,)))
    assert (
        "checked_duplicates_first (task_a) — declared narrowed, no_counter_evidence over 17 observations"
        in text
    )
    assert (
        "  met                        12       0\n  not met                     0       5\n" in text
    )
    assert "  accuracy 1.000, kappa 1.000\n" in text
    assert "judge 0.000 → 1.000 · trial 0.000/False → 0.500/False" in text
    assert (
        "weights {llm_judge: 1} → {llm_judge: 0.5, trace_checks: 0.5} · vetoes "
        "['checked_duplicates_first'] → ['checked_duplicates_first', "
        "'the_notes_were_listed_before_the_note_was_added']"
    ) in text
    assert "pass rate 12/17 → 12/17 (evidence, not a gate" in text


trial_specs = st.lists(
    st.tuples(
        st.sampled_from(["completed", "completed", "completed", "errored"]),
        st.booleans(),  # judge met
        st.sampled_from([True, False, None]),  # constraint passed / undecided
        st.booleans(),  # the grade holds a row for the criterion
    ),
    max_size=40,
)


@settings(max_examples=150)
@given(trial_specs, st.sampled_from(["candidate", "narrowed", "retired"]))
def test_reconciliation_invariants(specs, mode: str) -> None:
    obs = [
        notes_obs(
            f"t{i}",
            met=met,
            passed=passed,
            judge_status=status,
            criterion_results="default" if has_row else (),
        )
        for i, (status, met, passed, has_row) in enumerate(specs)
    ]
    overrides: dict = {"mode": mode, "evidence": {"observations": 10_000, "kappa": None}}
    if mode == "candidate":
        overrides.update(residual=None, evidence=None)
    if mode == "retired":
        overrides["residual"] = {"kind": "none", "reason": "nothing remains"}
    r = reconcile_entry(claim(entry(**overrides)), obs, sweep=False)
    t = r.table
    assert t.n == r.observations == len(r.contributing)
    assert r.observations + len(r.exclusions) == len(obs)
    assert sum(d.direction == "strict" for d in r.disagreements) == t.met_failed
    assert sum(d.direction == "permissive" for d in r.disagreements) == t.not_met_passed
    assert r.kappa == cohen_kappa(t)
    forbidden = t.met_failed + (t.not_met_passed if mode == "retired" else 0)
    assert kinds(r) == (["unacknowledged_disagreement"] * bool(t.met_failed)) + (
        ["unacknowledged_disagreement"] * bool(mode == "retired" and t.not_met_passed)
    )
    assert (r.verdict == "refused") == bool(forbidden)
    if not forbidden:
        want = "insufficient_evidence" if r.kappa is None else "no_counter_evidence"
        assert r.verdict == want
    assert r == reconcile_entry(claim(entry(**overrides)), obs, sweep=False)


def test_the_report_carries_no_field_that_ranks_modes() -> None:
    """RUBRIC_MIGRATION.md § Reading the evidence: locked by set-equality over field names,
    so a field comparing or recommending modes cannot be added unnoticed."""
    from dataclasses import fields

    from reconcile.reconcile import EntryResult
    from reconcile.report import entry_json

    assert {f.name for f in fields(EntryResult)} == {
        "criterion", "task_ids", "mode", "by", "residual", "observations", "table",
        "accuracy", "kappa", "disagreements", "exclusions", "refusals", "verdict",
        "tolerated_directions", "counterfactual", "declared_evidence", "contributing",
    }  # fmt: skip
    r = reconcile_entry(claim(entry()), union(), sweep=True)
    assert set(entry_json(r)) == {
        "criterion", "task_ids", "mode", "verdict", "observations", "table", "accuracy",
        "kappa", "disagreements", "refusals", "counterfactual", "by", "residual",
        "excluded_trials", "tolerated_directions", "gates_exit_code", "declared_evidence",
    }  # fmt: skip


def test_reconciliation_reaches_no_llm_client() -> None:
    """The bar spends nothing: importing the whole reconcile path loads no LLM/HTTP client."""
    import subprocess
    import sys

    probe = (
        "import sys, ledger.app.reconcile, ledger.cli.reconcile\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'openai', 'anthropic', 'httpx', 'requests', 'litellm', 'aiohttp'})\n"
        "print(','.join(bad))\n"
    )
    root = __import__("pathlib").Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=root, capture_output=True, text=True,
        env={"PYTHONPATH": str(root)}, check=True,
    )  # fmt: skip
    assert out.stdout.strip() == ""


def test_strict_disagreements_are_listed_before_permissive_ones() -> None:
    obs = [
        notes_obs("p1", met=False, passed=True),
        notes_obs("s1", met=True, passed=False),
        notes_obs("p2", met=False, passed=True),
        notes_obs("s2", met=True, passed=False),
    ]
    e = entry(mode="candidate", residual=None, evidence=None)
    r = reconcile_entry(claim(e), obs, sweep=False)
    assert [(d.trial, d.direction) for d in r.disagreements] == [
        ("s1", "strict"), ("s2", "strict"), ("p1", "permissive"), ("p2", "permissive"),
    ]  # fmt: skip


def test_a_recorded_combine_the_fold_refuses_is_named_not_guessed() -> None:
    odd = RecordedGrading(NOTES_RUBRIC, {"llm_judge": 1.0}, "median", 0.75)
    obs = [notes_obs("t0", met=True, passed=True, grading=odd)]
    r = reconcile_entry(claim(entry()), obs, sweep=False)
    (gap,) = r.counterfactual.unrecomputed
    assert (gap.trial, gap.gap) == ("t0", "recorded_combine_does_not_load")
    assert "median" in gap.reason


def test_all_and_any_fold_the_component_map_unweighted() -> None:
    """GRADING.md § Score Combination: all = weakest, any = strongest; gates still force."""
    for method, after in (("all", (0.0, False)), ("any", (1.0, False))):
        g = RecordedGrading(NOTES_RUBRIC, {"llm_judge": 1.0}, method, 0.75)
        obs = [notes_obs("t0", met=False, passed=False, grading=g)]
        r = reconcile_entry(claim(entry()), obs, sweep=False)
        (row,) = r.counterfactual.rows
        # after: judge 1.0 (criterion dropped), trace 0.0 with its gate failed
        assert (row.score_after, row.binary_pass_after) == after
