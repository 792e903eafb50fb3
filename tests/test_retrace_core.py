"""The pure half of retrace: classification, discrimination rows, grade comparison."""

from hypothesis import given
from hypothesis import strategies as st

from replay.retrace import (
    ConstraintObservation,
    classify,
    compare_grades,
    discrimination,
)

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


RECORDED = {
    "score": 1.0,
    "binary_pass": True,
    "components": {"llm_judge": 1.0, "trace_checks": None},
    "reasons": "Judge: score=1.00",
}


def test_identical_grades_have_no_difference() -> None:
    replayed = {"score": 1.0, "binary_pass": True, "components": {"llm_judge": 1.0}, "reasons": []}
    assert compare_grades(RECORDED, replayed) == []


def test_a_component_difference_is_named_with_both_values() -> None:
    replayed = {"score": 0.0, "binary_pass": False, "components": {"llm_judge": 0.0}, "reasons": ["x"]}
    diffs = {d.component: d for d in compare_grades(RECORDED, replayed)}
    assert set(diffs) == {"llm_judge", "score", "binary_pass"}
    assert (diffs["llm_judge"].recorded, diffs["llm_judge"].replayed) == (1.0, 0.0)


def test_not_measured_components_are_not_differences() -> None:
    replayed = {
        "score": None,
        "binary_pass": None,
        "components": {"llm_judge": None},
        "not_measured": {"llm_judge": "needs a live judge"},
    }
    assert compare_grades(RECORDED, replayed) == []


def test_replaced_components_are_not_compared_and_nor_is_the_fold() -> None:
    replayed = {"score": 0.3, "binary_pass": False, "components": {"llm_judge": 1.0, "trace_checks": 0.3}}
    assert compare_grades(RECORDED, replayed, replaced=frozenset({"trace_checks"})) == []
