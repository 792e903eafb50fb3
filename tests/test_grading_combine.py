"""combine: the method table, the zero-share table, missing weights, the empty fold and the
gates (GRADING.md § Score Combination)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.grading.components.combine import MissingWeightError, combine_components
from schemas.grading import CombineConfig

SPLIT = {"state_checks": 0.0, "transcript_rules": 1.0}
BOTH = ("state_checks", "transcript_rules")


@pytest.mark.parametrize(
    ("method", "expected"),
    [("weighted", (0.5, False)), ("all", (0.0, False)), ("any", (1.0, True))],
)
def test_method_table_on_components_scoring_0_and_1(method: str, expected: tuple) -> None:
    """On components scoring 0.0 and 1.0 at pass_threshold 0.8: weighted (0.5, False),
    all (0.0, False), any (1.0, True)."""
    cfg = CombineConfig(method=method, weights={"state_checks": 1.0, "transcript_rules": 1.0})
    fold = combine_components(SPLIT, configured=BOTH, combine=cfg)
    assert (fold.score, fold.binary_pass) == expected


@pytest.mark.parametrize(
    "weights",
    [
        {"state_checks": 0.9, "transcript_rules": 0.1},
        {"state_checks": 1.0, "transcript_rules": 1.0},
    ],
)
@pytest.mark.parametrize("method", ["all", "any"])
def test_all_and_any_never_read_the_shares(method: str, weights: dict) -> None:
    fold = combine_components(
        SPLIT, configured=BOTH, combine=CombineConfig(method=method, weights=weights)
    )
    assert fold.score == (0.0 if method == "all" else 1.0)


def test_weighted_mean_reads_the_shares() -> None:
    cfg = CombineConfig(weights={"state_checks": 0.9, "transcript_rules": 0.1})
    assert combine_components(SPLIT, configured=BOTH, combine=cfg).score == pytest.approx(0.1)


@pytest.mark.parametrize(
    ("method", "satisfying", "violating"),
    [
        ("weighted", (0.0, False), (0.0, False)),
        ("all", (1.0, True), (0.0, False)),
        ("any", (1.0, True), (0.0, False)),
    ],
)
def test_zero_share_table(method: str, satisfying: tuple, violating: tuple) -> None:
    """At weights {state_checks: 0.0}: weighted (0.0, False) on both trials; all and any
    give the component's own verdict — the zero-total rule is weighted-only."""
    cfg = CombineConfig(method=method, weights={"state_checks": 0.0})
    for score, expected in ((1.0, satisfying), (0.0, violating)):
        fold = combine_components(
            {"state_checks": score}, configured=("state_checks",), combine=cfg
        )
        assert (fold.score, fold.binary_pass) == expected
        if method == "weighted":
            assert any("sum to zero" in r for r in fold.reasons)


def test_a_scored_component_without_a_share_raises_naming_both_fixes() -> None:
    cfg = CombineConfig(weights={"state_checks": 1.0})
    with pytest.raises(MissingWeightError) as err:
        combine_components(SPLIT, configured=BOTH, combine=cfg)
    assert err.value.components == ["transcript_rules"]
    assert "declare combine.weights.transcript_rules, or drop the transcript_rules section" in str(
        err.value
    )


def test_nothing_asked_is_a_pass() -> None:
    fold = combine_components({}, configured=(), combine=CombineConfig())
    assert (fold.score, fold.binary_pass) == (1.0, True)


def test_configured_but_unevaluated_fails_loud_naming_it() -> None:
    cfg = CombineConfig(weights={"custom_checks": 1.0})
    fold = combine_components({"custom_checks": None}, configured=("custom_checks",), combine=cfg)
    assert (fold.score, fold.binary_pass) == (0.0, False)
    assert any("custom_checks" in r for r in fold.reasons)


def test_weights_naming_nothing_configured_fail_naming_the_keys() -> None:
    fold = combine_components({}, configured=(), combine=CombineConfig(weights={"llm_judge": 1.0}))
    assert (fold.score, fold.binary_pass) == (0.0, False)
    assert any("llm_judge" in r for r in fold.reasons)


def test_an_unevaluated_component_leaves_the_fold_and_is_named() -> None:
    """An errored judge is excluded from numerator and denominator, never read as 0.0."""
    cfg = CombineConfig(weights={"state_checks": 1.0, "llm_judge": 3.0})
    fold = combine_components(
        {"state_checks": 1.0, "llm_judge": None},
        configured=("state_checks", "llm_judge"),
        combine=cfg,
    )
    assert (fold.score, fold.binary_pass) == (1.0, True)
    assert fold.reasons == ("Not evaluated, left out of the fold: llm_judge",)


@pytest.mark.parametrize("gate", ["judge_gate_failed", "trace_gate_failed"])
def test_a_failed_gate_forces_binary_pass_false(gate: str) -> None:
    cfg = CombineConfig(weights={"state_checks": 1.0}, pass_threshold=0.0)
    fold = combine_components(
        {"state_checks": 1.0}, configured=("state_checks",), combine=cfg, **{gate: True}
    )
    assert (fold.score, fold.binary_pass) == (1.0, False)


def test_threshold_is_inclusive() -> None:
    cfg = CombineConfig(weights={"state_checks": 1.0}, pass_threshold=0.75)
    assert combine_components(
        {"state_checks": 0.75}, configured=("state_checks",), combine=cfg
    ).binary_pass


component_maps = st.dictionaries(
    st.sampled_from(
        ["state_checks", "transcript_rules", "trace_checks", "llm_judge", "custom_checks"]
    ),
    st.tuples(st.floats(0, 1), st.floats(0.01, 5)),
    min_size=1,
)


@settings(max_examples=150)
@given(component_maps, st.floats(0, 1))
def test_weighted_lies_between_all_and_any(components: dict, threshold: float) -> None:
    scores = {n: s for n, (s, _) in components.items()}
    weights = {n: w for n, (_, w) in components.items()}
    folds = {
        m: combine_components(
            scores,
            configured=tuple(scores),
            combine=CombineConfig(method=m, weights=weights, pass_threshold=threshold),
        )
        for m in ("weighted", "all", "any")
    }
    assert folds["all"].score - 1e-12 <= folds["weighted"].score <= folds["any"].score + 1e-12
    # every component clearing the threshold puts their mean above it (up to rounding)
    if folds["all"].binary_pass:
        assert folds["weighted"].score >= threshold - 1e-9
    assert folds["all"].binary_pass <= folds["any"].binary_pass
    assert folds["weighted"].binary_pass == (folds["weighted"].score >= threshold)
