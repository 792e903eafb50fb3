"""The counterfactual recomposes each combination of a trial's parts once: trials carried
forward share equal parts as one object (``ledger.app.reconcile_kept``), and
a row is a function of the grade, grading and candidate. Sharing must never change a row:
the same trials with every part shared, or none, give the same counterfactual."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from reconcile.inputs import TrialObservation
from reconcile.reconcile import reconcile_entry
from tests.test_reconcile_helpers import claim, entry, notes_obs

specs = st.lists(
    st.tuples(
        st.sampled_from(["completed", "completed", "errored"]),
        st.booleans(),  # judge met
        st.sampled_from([True, False, None]),  # constraint passed / undecided
        st.sampled_from([0.0, 0.25]),  # added to the recorded score: 0.25 does not recompose
        st.booleans(),  # the judge's binary_pass recorded the other way round
    ),
    min_size=1,
    max_size=30,
)


def shared(observations: list[TrialObservation]) -> list[TrialObservation]:
    """Each distinct part (by value: its repr) as one object, the grade too, as trials read
    back from a kept file share them (``ledger.app.reconcile_kept.KeptReader``)."""
    seen: dict[str, Any] = {}

    def once(value: Any) -> Any:
        return seen.setdefault(repr(value), value)

    out = []
    for obs in observations:
        g = obs.grade
        grade = once(replace(g, criterion_results=once(g.criterion_results),
                             components=once(g.components)))  # fmt: skip
        out.append(replace(obs, grade=grade, grading=once(obs.grading),
                           candidate=once(obs.candidate)))  # fmt: skip
    return out


def alone(observations: list[TrialObservation]) -> list[TrialObservation]:
    """Every part of every trial its own object."""
    return [copy.deepcopy(obs) for obs in observations]


@settings(max_examples=120)
@given(specs, st.sampled_from(["candidate", "narrowed", "retired"]))
@example([("completed", True, True, 0.0, False)] * 2 + [("completed", True, True, 0.25, False),
          ("completed", True, True, 0.0, True)], "narrowed")  # one part, three scores  # fmt: skip
def test_sharing_parts_never_changes_a_row(rows: list, mode: str) -> None:
    observations = []
    for i, (status, met, passed, shift, flipped) in enumerate(rows):
        obs = notes_obs(f"t{i}", met=met, passed=passed, judge_status=status)
        g = obs.grade
        grade = replace(g, score=g.score + shift, binary_pass=g.binary_pass != flipped)
        observations.append(replace(obs, grade=grade))
    overrides: dict = {"mode": mode, "evidence": {"observations": 10_000, "kappa": None}}
    if mode == "candidate":
        overrides.update(residual=None, evidence=None)
    if mode == "retired":
        overrides["residual"] = {"kind": "none", "reason": "nothing remains"}
    c = claim(entry(**overrides))
    one = reconcile_entry(c, alone(observations), sweep=False).counterfactual
    assert reconcile_entry(c, shared(observations), sweep=False).counterfactual == one
