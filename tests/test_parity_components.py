"""The non-trace grading-parity packs, each through ``grade_trial`` on the component its
key feeds: satisfying strictly above violating, exact where the pack or GRADING.md states
the numbers, and — where the key is the only difference — a build ignoring the key scoring
both cases the same (Tolokaforge's grading_parity README; the packs: tests/data/tolokaforge)."""

from __future__ import annotations

from typing import Any

import pytest

from replay.grading.components.custom_checks import CheckVerdict, RecordedSuite
from replay.grading.grade import Grade, GradeInputs, grade_trial
from replay.grading.rules import load_grading_config
from schemas.grading import GradingConfig
from tests.grading_support import PARITY, pack_case_views, read_yaml


def _grade(pack: str, case: str, config: GradingConfig | None = None, **extra: Any) -> Grade:
    root = PARITY / pack
    cfg = config or load_grading_config(read_yaml(root / "grading.yaml"))
    trial = read_yaml(root / "trial.yaml")[case]
    initial = (read_yaml(root / "task.yaml").get("initial_state") or {}).get("json_db")
    messages, records = pack_case_views(trial)
    inputs = GradeInputs(
        trial=f"{pack}/{case}",
        messages=messages,
        recorded_calls=records,
        termination_reason="agent_done",
        initial_db=initial,
        final_state=trial.get("state"),
        **extra,
    )
    # no timeline handed in: grade_trial builds it with replay.timeline.build.build_trial_timeline
    return grade_trial(inputs, cfg)


PACKS = {
    # pack: (component, {case: exact component score})
    "state_checks_jsonpaths": ("state_checks", {"satisfying": 1.0, "violating": 0.0}),
    "state_checks_hash_expect_initial_state": (
        "state_checks",
        {"satisfying": 1.0, "violating": 0.0},
    ),
    "state_checks_comparison_view": ("state_checks", {"satisfying": 1.0, "violating": 0.0}),
    "transcript_rules_communicate_info": (
        "transcript_rules",
        {"satisfying": 1.0, "violating": 0.0},
    ),
    "transcript_rules_disallow_regex": ("transcript_rules", {"satisfying": 1.0, "violating": 0.0}),
    "transcript_rules_max_turns": ("transcript_rules", {"satisfying": 1.0, "violating": 0.0}),
    "transcript_rules_min_assistant_turns": (
        "transcript_rules",
        {"satisfying": 1.0, "violating": 0.0},
    ),
    "transcript_rules_regex_engine": ("transcript_rules", {"satisfying": 1.0, "violating": 0.0}),
    "transcript_rules_required_actions": (
        "transcript_rules",
        {"satisfying": 1.0, "violating": 0.0},
    ),
    "transcript_rules_tool_expectations": (
        "transcript_rules",
        {"satisfying": 1.0, "violating": 0.0},
    ),
    "user_executed_action": ("transcript_rules", {"satisfying": 1.0, "violating": 0.0}),
}


@pytest.mark.parametrize("pack", sorted(PACKS))
def test_pack_discriminates_on_its_component(pack: str) -> None:
    component, expected = PACKS[pack]
    got = {case: _grade(pack, case).components[component] for case in expected}
    assert got == expected
    assert got["satisfying"] > got["violating"]
    # weight 1.0 on the one component: the trial score is the component
    assert _grade(pack, "satisfying").score == expected["satisfying"]


def test_every_non_trace_pack_with_trials_is_covered() -> None:
    packs = {
        p.name
        for p in PARITY.iterdir()
        if (p / "trial.yaml").exists() and not p.name.startswith("trace_")
    }
    covered = set(PACKS) | {
        "combine_method",
        "custom_checks",
        "state_checks_hash_weight",
        "transcript_rules_must_contain",
    }
    assert packs == covered


@pytest.mark.parametrize(
    ("pack", "key"),
    [
        ("state_checks_comparison_view", "comparison_view"),
        ("transcript_rules_regex_engine", "regex_engine"),
    ],
)
def test_a_build_ignoring_the_key_scores_both_cases_alike(pack: str, key: str) -> None:
    raw = read_yaml(PARITY / pack / "grading.yaml")
    block = "state_checks" if key == "comparison_view" else "transcript_rules"
    raw[block].pop(key)
    cfg = load_grading_config(raw)
    component = PACKS[pack][0]
    assert (
        len({_grade(pack, c, cfg).components[component] for c in ("satisfying", "violating")}) == 1
    )


def test_hash_weight_pack_migrated_to_its_named_state() -> None:
    """JSONPath 0.5 in both cases; only the hash verdict at weight 0.25 moves
    (0.625 vs 0.375). The pack's retired expected_state_hash is rewritten to the state
    its task names (expect_initial_state), as the migration message says."""
    raw = read_yaml(PARITY / "state_checks_hash_weight" / "grading.yaml")
    raw["state_checks"]["hash"].pop("expected_state_hash")
    raw["state_checks"]["hash"]["expect_initial_state"] = True
    cfg = load_grading_config(raw)
    m = _grade("state_checks_hash_weight", "hash_matching", cfg).components["state_checks"]
    d = _grade("state_checks_hash_weight", "hash_diverging", cfg).components["state_checks"]
    assert (m, d) == (pytest.approx(0.625), pytest.approx(0.375))


def test_combine_method_pack_three_methods_three_answers() -> None:
    raw = read_yaml(PARITY / "combine_method" / "grading.yaml")
    got = {}
    for method in ("weighted", "all", "any"):
        raw["combine"]["method"] = method
        g = _grade("combine_method", "split_components", load_grading_config(raw))
        got[method] = (g.score, g.binary_pass)
    assert got == {"weighted": (0.5, False), "all": (0.0, False), "any": (1.0, True)}


def test_must_contain_pack_under_its_key() -> None:
    cfg = load_grading_config(
        {
            "transcript_rules": {"must_contain": ["Refund issued"]},
            "combine": {"weights": {"transcript_rules": 1.0}},
        }
    )
    got = [
        _grade("transcript_rules_must_contain", c, cfg).components["transcript_rules"]
        for c in ("satisfying", "violating")
    ]
    assert got == [1.0, 0.0]


def test_custom_checks_pack_with_and_without_recorded_results() -> None:
    """checks.py is not shipped and never executed: no recorded results → not measured on
    both cases, named; with the per-check results a run records → 1.0 vs 0.0."""
    for case in ("satisfying", "violating"):
        g = _grade("custom_checks", case)
        assert (
            g.components["custom_checks"] is None and "checks.py" in g.not_measured["custom_checks"]
        )
        assert (g.score, g.binary_pass) == (None, None)
    sat = _grade(
        "custom_checks",
        "satisfying",
        custom_suite=RecordedSuite((CheckVerdict("order_is_shipped", "passed"),)),
    )
    vio = _grade(
        "custom_checks",
        "violating",
        custom_suite=RecordedSuite(
            (CheckVerdict("order_is_shipped", "failed", "status is pending"),)
        ),
    )
    assert (sat.components["custom_checks"], vio.components["custom_checks"]) == (1.0, 0.0)
    assert (sat.binary_pass, vio.binary_pass) == (True, False)
