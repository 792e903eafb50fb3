"""state_checks: canonicalisation, the hash verdict, jsonpaths and the fold
(GRADING.md § Hash-Based Grading, § The jsonpaths assertion vocabulary, § Folding the hash
verdict with jsonpaths)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.grading.components.canonical import (
    NUMERIC_TOKEN,
    canonical_number,
    consistent_hash,
    state_digest,
    to_hashable,
)
from replay.grading.components.state_checks import (
    GOLDEN_NOT_MEASURABLE,
    HASH_MATCH,
    NO_SOURCE_SKIPPED,
    PROBES_NOT_MEASURABLE,
    WEIGHT_NOT_CONSULTED,
    StateEvidence,
    check_assertion,
    evaluate_state_checks,
    fold_state_sources,
)
from replay.grading.rules import GradingConfigError, load_grading_config
from schemas.grading import StateChecksConfig
from tests.data_paths import GRADING_PARITY

PARITY = GRADING_PARITY


def _yaml(path: Path):
    return yaml.safe_load(path.read_text())


# ----------------------------------------------------------------- canonicalisation


def test_digest_reproduces_the_one_a_recorded_pack_carries() -> None:
    """The state_checks_hash_weight pack stored consistent_hash(to_hashable(...)) of its
    hash_matching case's state.db; our algebra must label that state identically."""
    grading = _yaml(PARITY / "state_checks_hash_weight" / "grading.yaml")
    trial = _yaml(PARITY / "state_checks_hash_weight" / "trial.yaml")
    task = _yaml(PARITY / "state_checks_hash_weight" / "task.yaml")
    stored = grading["state_checks"]["hash"]["expected_state_hash"]
    assert consistent_hash(to_hashable(trial["hash_matching"]["state"]["db"])) == stored
    assert state_digest(task["initial_state"]["json_db"]) == stored
    assert state_digest(trial["hash_diverging"]["state"]["db"]) != stored


def test_numeric_types_always_fold() -> None:
    assert (
        to_hashable({"t": 72}) == to_hashable({"t": 72.0}) == to_hashable({"t": Decimal("72.00")})
    )
    assert to_hashable({"t": 72}) != to_hashable({"t": 73})


def test_numeric_strings_fold_only_under_a_listed_field_at_any_depth() -> None:
    a = {"orders": [{"refund": "130.00", "meta": {"refund": "130.00"}}]}
    b = {"orders": [{"refund": "130.0", "meta": {"refund": "130"}}]}
    assert state_digest(a) != state_digest(b)
    assert state_digest(a, ["refund"]) == state_digest(b, ["refund"])
    # the other field of the same record does not open the tier
    assert state_digest(a, ["quantity"]) != state_digest(b, ["quantity"])
    # a genuinely different amount stays different under the field
    c = {"orders": [{"refund": "131.0", "meta": {"refund": "130"}}]}
    assert state_digest(a, ["refund"]) != state_digest(c, ["refund"])


def test_bool_never_folds_and_leading_zero_ids_never_equal() -> None:
    assert to_hashable({"x": True}) != to_hashable({"x": 1})
    assert to_hashable({"x": False}) != to_hashable({"x": 0})
    assert state_digest({"id": "00123"}, ["id"]) != state_digest({"id": "123"}, ["id"])
    assert canonical_number("007", fold_strings=True) == "007"


def test_a_string_shaped_like_a_token_is_escaped() -> None:
    forged = NUMERIC_TOKEN + "5"
    assert to_hashable({"x": forged}) != to_hashable({"x": 5})
    assert to_hashable({"x": forged}, frozenset(["x"])) != to_hashable({"x": "5"}, frozenset(["x"]))


json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.text(max_size=6)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=150)
@given(st.dictionaries(st.text(max_size=5), json_values, max_size=6), st.randoms())
def test_key_order_never_changes_the_digest(state: dict, rnd) -> None:
    items = list(state.items())
    rnd.shuffle(items)
    assert state_digest(dict(items)) == state_digest(state)


@settings(max_examples=150)
@given(st.integers(-(10**9), 10**9), st.integers(0, 4))
def test_every_representation_of_one_number_folds(n: int, places: int) -> None:
    as_decimal = Decimal(n).scaleb(0).quantize(Decimal(1).scaleb(-places))
    variants = [n, float(n), as_decimal]
    digests = {state_digest({"v": v}) for v in variants}
    assert len(digests) == 1
    strings = [str(n), f"{n}.{'0' * places}" if places else str(n)]
    assert len({state_digest({"v": s}, ["v"]) for s in strings} | digests) == 1


@settings(max_examples=150)
@given(st.integers(-(10**6), 10**6), st.integers(-(10**6), 10**6))
def test_different_numbers_stay_different(a: int, b: int) -> None:
    assert (state_digest({"v": a}) == state_digest({"v": b})) == (a == b)
    assert (state_digest({"v": str(a)}, ["v"]) == state_digest({"v": float(b)})) == (a == b)


# -------------------------------------------------------------------- jsonpaths


STATE = {
    "db": {
        "orders": [
            {"id": "O1", "status": "shipped", "tags": ["Gift", "x"]},
            {"id": "O2", "status": "pending"},
        ]
    },
    "filesystem": {"/env/fs/agent-visible/out/r.md": "Rollback done"},
}


@pytest.mark.parametrize(
    ("assertion", "holds"),
    [
        ({"path": "$.db.orders[0].status", "equals": "shipped"}, True),
        ({"path": "$.db.orders[0].status", "equals": "SHIPPED"}, False),
        ({"path": "$.db.orders[0].status", "equals_ci": "SHIPPED"}, True),
        ({"path": "$.db.orders[0].tags", "contains": "Gift"}, True),
        ({"path": "$.db.orders[0].tags", "contains_ci": "gift"}, True),
        # several values: any one satisfying the comparison suffices
        ({"path": "$.db.orders[*].status", "equals": "pending"}, True),
        # no operator, two operators, a misspelled operator, an unresolved path: failed
        ({"path": "$.db.orders[0].status"}, False),
        ({"path": "$.db.orders[0].status", "equals": "shipped", "contains": "ship"}, False),
        ({"path": "$.db.orders[0].status", "op": "eq", "expected": "shipped"}, False),
        ({"path": "$.db.orders[9].status", "equals": "shipped"}, False),
        ({"path_glob": "/env/fs/agent-visible/out/*", "contains_ci": "rollback"}, True),
        ({"path_glob": "/env/fs/agent-visible/in/*", "contains_ci": "rollback"}, False),
    ],
)
def test_assertion_vocabulary(assertion: dict, holds: bool) -> None:
    assert check_assertion(STATE, assertion)[0] is holds


def test_unrecognised_operator_names_the_supported_set() -> None:
    ok, reason = check_assertion(STATE, {"path": "$.db.orders[0].status", "op": "gte"})
    assert not ok and "equals, equals_ci, contains, contains_ci" in reason and "['op']" in reason


# ------------------------------------------------------------------------- the fold


def _state(block: dict) -> StateChecksConfig:
    return load_grading_config({"state_checks": block}, authored=False).state_checks


HALF = [{"path": "$.db.a", "equals": 1}, {"path": "$.db.b", "equals": 1}]
INITIAL = {"a": 1, "b": 2}
MATCH = StateEvidence({"db": {"a": 1, "b": 2}}, INITIAL)
DIVERGE = StateEvidence({"db": {"a": 1, "b": 3}}, INITIAL)


def test_measured_fold_figures_05_08_02() -> None:
    """§ Folding: at weight 0.6 against assertions scoring 0.5 — core's sourceless block
    gives 0.5 on both hash outcomes; a real binary verdict folds to 0.8 / 0.2."""
    sourceless = _state({"hash": {"enabled": True, "weight": 0.6}, "jsonpaths": HALF})
    for ev in (MATCH, DIVERGE):
        result = evaluate_state_checks(sourceless, ev)
        assert result.score == 0.5
        assert NO_SOURCE_SKIPPED in result.reasons[0]
    sourced = _state(
        {"hash": {"enabled": True, "expect_initial_state": True, "weight": 0.6}, "jsonpaths": HALF}
    )
    assert evaluate_state_checks(sourced, MATCH).score == pytest.approx(0.8)
    assert evaluate_state_checks(sourced, DIVERGE).score == pytest.approx(0.2)


def test_hash_only_is_the_verdict_at_every_weight() -> None:
    for weight in (None, 0.0, 0.3, 1.0):
        block = {"hash": {"enabled": True, "expect_initial_state": True}}
        if weight is not None:
            block["hash"]["weight"] = weight
        cfg = _state(block)
        assert evaluate_state_checks(cfg, MATCH).score == 1.0
        assert evaluate_state_checks(cfg, DIVERGE).score == 0.0
        if weight is not None:
            assert WEIGHT_NOT_CONSULTED in evaluate_state_checks(cfg, MATCH).reasons[0]


def test_hash_match_reason_string_and_description() -> None:
    cfg = _state(
        {"hash": {"enabled": True, "expect_initial_state": True, "description": "nothing moved"}}
    )
    assert evaluate_state_checks(cfg, MATCH).reasons == (f"State: {HASH_MATCH} (nothing moved)",)
    assert (
        evaluate_state_checks(cfg, DIVERGE)
        .reasons[0]
        .startswith("State: State hash mismatch: expected ")
    )


def test_neither_source_is_unevaluated_not_a_score() -> None:
    result = evaluate_state_checks(_state({"hash": {"enabled": True}, "jsonpaths": []}), MATCH)
    assert result.score is None and result.not_measured is None


def test_jsonpaths_only_is_the_assertion_score() -> None:
    assert evaluate_state_checks(_state({"jsonpaths": HALF}), MATCH).score == 0.5


def test_sources_needing_a_live_world_are_not_measured() -> None:
    golden = _state(
        {
            "hash": {"enabled": True, "golden_actions": [{"name": "x"}], "weight": 0.5},
            "jsonpaths": HALF,
        }
    )
    result = evaluate_state_checks(golden, MATCH)
    assert result.score is None and result.not_measured == GOLDEN_NOT_MEASURABLE
    probes = _state({"db_probes": [{"name": "p", "dsn": "postgresql://x", "query": "SELECT 1"}]})
    result = evaluate_state_checks(probes, MATCH)
    assert result.score is None and result.not_measured == PROBES_NOT_MEASURABLE


def test_missing_recorded_state_is_not_measured() -> None:
    cfg = _state({"hash": {"enabled": True, "expect_initial_state": True}})
    assert evaluate_state_checks(cfg, StateEvidence(None, INITIAL)).not_measured
    assert evaluate_state_checks(cfg, StateEvidence({"db": {}}, None)).not_measured


def test_fold_formula() -> None:
    assert fold_state_sources(1.0, 0.5, 0.25) == pytest.approx(0.625)
    assert fold_state_sources(0.0, 0.5, 0.25) == pytest.approx(0.375)
    assert fold_state_sources(None, None, 0.5) is None
    with pytest.raises(ValueError, match="weight"):
        fold_state_sources(1.0, 0.5, None)


def test_weight_is_required_exactly_when_the_fold_needs_it() -> None:
    unweighted = {"hash": {"enabled": True, "expect_initial_state": True}, "jsonpaths": HALF}
    with pytest.raises(
        GradingConfigError, match="1.0 lets the hash decide, 0.0 lets the jsonpaths decide, 0.5"
    ):
        load_grading_config({"state_checks": unweighted})
    # recorded: an advisory, and the fold with no share is not measured rather than guessed
    recorded = load_grading_config({"state_checks": unweighted}, authored=False)
    assert any("1.0 lets the hash decide" in a for a in recorded.advisories)
    db = {"t": [{"id": 1}]}
    result = evaluate_state_checks(recorded.state_checks, StateEvidence({"db": db}, db))
    assert result.score is None and "no default share" in (result.not_measured or "")
    # hash only, jsonpaths only, and a sourceless hash need none
    _state({"hash": {"enabled": True, "expect_initial_state": True}})
    _state({"jsonpaths": HALF})
    _state({"hash": {"enabled": True}, "jsonpaths": HALF})


@pytest.mark.parametrize("weight", [True, "0.5", 1.5, -0.1])
def test_weight_is_a_real_number_in_the_unit_interval(weight) -> None:
    with pytest.raises(GradingConfigError, match="state_checks.hash.weight"):
        _state({"hash": {"enabled": True, "expect_initial_state": True, "weight": weight}})


def test_parity_pack_state_checks_jsonpaths() -> None:
    pack = PARITY / "state_checks_jsonpaths"
    cfg = load_grading_config(_yaml(pack / "grading.yaml")).state_checks
    trial = _yaml(pack / "trial.yaml")
    initial = _yaml(pack / "task.yaml")["initial_state"]["json_db"]
    sat = evaluate_state_checks(cfg, StateEvidence(trial["satisfying"]["state"], initial)).score
    vio = evaluate_state_checks(cfg, StateEvidence(trial["violating"]["state"], initial)).score
    assert (sat, vio) == (1.0, 0.0)


def test_parity_pack_hash_expect_initial_state() -> None:
    pack = PARITY / "state_checks_hash_expect_initial_state"
    cfg = load_grading_config(_yaml(pack / "grading.yaml")).state_checks
    trial = _yaml(pack / "trial.yaml")
    initial = _yaml(pack / "task.yaml")["initial_state"]["json_db"]
    sat = evaluate_state_checks(cfg, StateEvidence(trial["satisfying"]["state"], initial)).score
    vio = evaluate_state_checks(cfg, StateEvidence(trial["violating"]["state"], initial)).score
    assert (sat, vio) == (1.0, 0.0)


def test_parity_pack_hash_weight_after_its_migration() -> None:
    """The pack predates the retirement of expected_state_hash: the authored read refuses it
    naming the replacement; its task says the initial state is the expected one, so the
    migrated block is expect_initial_state: true. JSONPath 0.5 in both cases; only the hash
    verdict at weight 0.25 moves: 0.5·0.75 + 1·0.25 = 0.625 vs 0.375."""
    pack = PARITY / "state_checks_hash_weight"
    raw = _yaml(pack / "grading.yaml")
    with pytest.raises(GradingConfigError, match="expect_initial_state: true for a refusal task"):
        load_grading_config(raw)
    recorded = load_grading_config(raw, authored=False).state_checks
    assert recorded.hash is not None and recorded.hash.source is None  # digest dropped
    raw["state_checks"]["hash"].pop("expected_state_hash")
    raw["state_checks"]["hash"]["expect_initial_state"] = True
    cfg = load_grading_config(raw).state_checks
    trial = _yaml(pack / "trial.yaml")
    initial = _yaml(pack / "task.yaml")["initial_state"]["json_db"]
    scores = {
        case: evaluate_state_checks(cfg, StateEvidence(trial[case]["state"], initial)).score
        for case in ("hash_matching", "hash_diverging")
    }
    assert scores["hash_matching"] == pytest.approx(0.625)
    assert scores["hash_diverging"] == pytest.approx(0.375)
    # the recorded (pre-rule) reading has no hash source: core's answer is the 0.5 alone
    for case in scores:
        assert (
            evaluate_state_checks(recorded, StateEvidence(trial[case]["state"], initial)).score
            == 0.5
        )


def test_jsonpaths_equals_never_equates_a_boolean_with_a_number() -> None:
    """GRADING.md: "bool never folds to int". Python's ``True == 1`` held a jsonpaths
    equals in Tolokaforge 0.33.1 (compat flag jsonpath_equals_bool_vs_number); the spec
    wins: a boolean equals only a boolean, numbers still compare by value."""
    from replay.grading.components.state_checks import check_assertion

    state = {"db": {"r": [{"urgent": True, "qty": 72, "flags": [1, 0]}]}}
    assert not check_assertion(state, {"path": "$.db.r[0].urgent", "equals": 1})[0]
    assert check_assertion(state, {"path": "$.db.r[0].urgent", "equals": True})[0]
    assert check_assertion(state, {"path": "$.db.r[0].qty", "equals": 72.0})[0]
    assert not check_assertion(state, {"path": "$.db.r[0].flags", "equals": [True, False]})[0]
    assert not check_assertion(state, {"path": "$.db.r[0].flags", "contains": True})[0]
