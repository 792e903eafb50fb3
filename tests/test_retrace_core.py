"""The pure half of retrace: classification, discrimination rows, grade comparison."""

from hypothesis import given
from hypothesis import strategies as st

from replay.grading.grade import Difference
from replay.grading.retrace import ConstraintObservation, comparable_differences, replaced_blocks
from replay.grading.retrace_report import classify, discrimination

counts = st.integers(min_value=0, max_value=50)


def test_not_measured_is_decided_before_anything_else() -> None:
    # Over zero evaluated trials "all decided and all passed" is vacuously true; the
    # reference decides not_measured first so such a row is never always_true.
    assert classify(0, 0, 0) == ("not_measured", None)


def test_disagreement_wins_however_many_are_undecided() -> None:
    assert classify(1, 1, 40) == ("discriminating", None)


def test_none_decided_is_never_decided() -> None:
    assert classify(0, 0, 3) == ("never_decided", None)


def test_undecided_in_part_carries_the_decided_verdict() -> None:
    assert classify(0, 1, 2) == ("undecided_in_part", False)
    assert classify(3, 0, 1) == ("undecided_in_part", True)


def test_unanimous_on_complete_evidence() -> None:
    assert classify(12, 0, 0) == ("always_true", None)
    assert classify(0, 5, 0) == ("always_false", None)


@given(counts, counts, counts)
def test_classification_partitions_by_the_stated_conditions(p: int, f: int, u: int) -> None:
    verdict, decided_verdict = classify(p, f, u)
    expected = {
        "not_measured": p + f + u == 0,
        "discriminating": p > 0 and f > 0,
        "never_decided": p + f == 0 and u > 0,
        "undecided_in_part": u > 0 and (p > 0) != (f > 0),
        "always_true": u == 0 and p > 0 and f == 0,
        "always_false": u == 0 and f > 0 and p == 0,
    }
    assert [k for k, v in expected.items() if v] == [verdict]
    assert (decided_verdict is not None) == (verdict == "undecided_in_part")


def test_discrimination_keeps_declared_rows_and_counts_labels() -> None:
    declared = {"t": [("a", ""), ("b", "route_x")]}
    obs = [
        ConstraintObservation("t", "a", passed=True, undecided=False, recorded_passed=True),
        ConstraintObservation("t", "a", passed=False, undecided=False, recorded_passed=True),
        ConstraintObservation("t", "a", passed=False, undecided=True, recorded_passed=False),
    ]
    rows = {r.id: r for r in discrimination(declared, obs)}
    a, b = rows["a"], rows["b"]
    assert (a.evaluated, a.passed, a.failed, a.undecided) == (3, 1, 1, 1)
    assert a.verdict == "discriminating"
    # the undecided re-check is not labelled even though a recorded verdict exists
    assert (a.labelled, a.agreed) == (2, 1)
    assert b.verdict == "not_measured" and b.route == "route_x" and b.evaluated == 0
    assert b.as_dict()["agrees_with_recorded"] is None


def test_discrimination_refuses_an_undeclared_constraint() -> None:
    import pytest

    with pytest.raises(ValueError, match="'zz' of task 't'"):
        discrimination({"t": []}, [ConstraintObservation("t", "zz", True, False)])


def _d(component: str) -> Difference:
    return Difference(component, 1.0, 0.0, "why")


def test_comparable_differences_keep_a_real_disagreement() -> None:
    diffs = [_d("llm_judge"), _d("score"), _d("binary_pass")]
    assert comparable_differences(diffs, frozenset(), {}) == tuple(diffs)


def test_not_measured_components_are_not_differences() -> None:
    diffs = [_d("llm_judge"), _d("score")]
    assert comparable_differences(diffs, frozenset(), {"llm_judge": "needs a live judge"}) == ()


def test_replaced_components_are_not_compared_and_nor_is_the_fold() -> None:
    diffs = [_d("trace_checks"), _d("score"), _d("binary_pass"), _d("llm_judge")]
    kept = comparable_differences(diffs, frozenset({"trace_checks"}), {})
    assert [d.component for d in kept] == ["llm_judge"]


def test_replaced_blocks_names_only_what_changed() -> None:
    from replay.grading.rules import load_grading_config

    rec = load_grading_config({"combine": {"method": "weighted", "weights": {"llm_judge": 1.0}}, "llm_judge": {"rubric": {"criteria": [
        {"id": "c", "description": "d", "kind": "binary", "required": True, "weight": 1.0}]}}})
    assert replaced_blocks(rec, rec) == frozenset()
    other = rec.model_copy(update={"combine": rec.combine.model_copy(update={"pass_threshold": 0.9})})
    assert replaced_blocks(rec, other) == frozenset({"combine"})
    assert "llm_judge" in replaced_blocks(None, rec)
