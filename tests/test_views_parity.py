"""The rules the views restate in SQL, held to their Python definitions.

The outcome classes and the grade ladder are generated from replay.grading.outcomes and the
registration file; constraint_class and pass_at_k_value are SQL of their own, so each is run
against replay's function over the same inputs. The payload paths are held to the models.
"""

from __future__ import annotations

import math

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.analytics import views, views_verdicts
from ledger.analytics.payload_paths import PATHS
from ledger.analytics.views_trials import outcome_case
from ledger.app.units import load_ladder
from replay.grading.outcomes import HARNESS_ERRORS, INFRASTRUCTURE_ABORTS, classify_trial_outcome
from replay.grading.retrace_report import classify
from schemas.events import PAYLOAD_MODELS
from schemas.gvc import Ladder
from tests.pass_at_k_oracle import pass_at_k

_CON = duckdb.connect()
for _macro in views.MACROS:
    _CON.execute(_macro)


def _one(sql: str, *params: object) -> object:
    return _CON.execute(sql, list(params)).fetchone()[0]


# small counts (zeros: the class boundaries) as often as large ones
counts = st.integers(min_value=0, max_value=3) | st.integers(min_value=0, max_value=60)


@settings(max_examples=300, deadline=None)
@given(counts, counts, counts)
def test_constraint_class_is_retrace_classify(p: int, f: int, u: int) -> None:
    assert _one("SELECT constraint_class(?, ?, ?)", p, f, u) == classify(p, f, u)[0]


@st.composite
def n_c_k(draw: st.DrawFn) -> tuple[int, int, int]:
    n = draw(st.integers(min_value=0, max_value=300))
    return n, draw(st.integers(min_value=0, max_value=n)), draw(st.integers(1, n + 3))


@settings(max_examples=300, deadline=None)
@given(n_c_k())
def test_pass_at_k_value_is_the_closed_form(nck: tuple[int, int, int]) -> None:
    n, c, k = nck
    got, want = _one("SELECT pass_at_k_value(?, ?, ?)", n, c, k), pass_at_k(n, c, k)
    assert (got is None) == (want is None)
    if want is not None:
        assert math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12), (n, c, k, got, want)


reasons = st.one_of(
    st.none(),
    st.sampled_from(sorted(INFRASTRUCTURE_ABORTS | HARNESS_ERRORS | {"user_stop", "max_turns"})),
    st.text(max_size=12),
)


@settings(max_examples=300, deadline=None)
@given(reasons, st.one_of(st.none(), st.just(""), st.text(max_size=8)))
def test_outcome_class_is_classify_trial_outcome(reason: str | None, error: str | None) -> None:
    sql = f"SELECT {outcome_case('r', 'g')} FROM (SELECT ?::VARCHAR AS r, ?::VARCHAR AS g)"
    assert _one(sql, reason, error) == str(classify_trial_outcome(reason, error))


def test_grade_rank_orders_as_the_registered_ladder() -> None:
    ladder = load_ladder()
    grades = [*ladder.grades, "made_up", ""]
    sql = f"SELECT {views_verdicts.grade_rank('g', ladder.grades)} FROM (SELECT ?::VARCHAR AS g)"
    ranks = {g: _one(sql, g) for g in grades}
    assert ranks[ladder.grades[0]] == 0 and ranks["made_up"] == len(ladder.grades)
    for a in grades:  # stronger in the ladder <=> a smaller rank in the view
        for b in grades:
            assert (ranks[a] < ranks[b]) == (ladder.rank(a) > ladder.rank(b)), (a, b)


def test_admissions_view_reads_the_ladder_it_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(views_verdicts, "load_ladder", lambda: Ladder(("gold", "tin")))
    view = views_verdicts.admissions()
    assert "WHEN 'gold' THEN 0 WHEN 'tin' THEN 1 ELSE 2 END" in view.sql
    assert (
        dict(view.columns)["grade_rank"] == "0 = gold … 1 = tin; 2 = outside the registered ladder"
    )


# PATHS keys that are not one event type, and the closed models each reads (receipt.issued
# is open: a verdict-core receipt verbatim, read through the same paths)
_TYPES = {
    "grade.head": ("grade.recorded", "grade.replayed"),
    "receipt": ("replay.completed", "reconcile.completed"),
}


@pytest.mark.parametrize("key", sorted(PATHS))
def test_every_path_starts_at_a_field_its_payload_model_has(key: str) -> None:
    """A path no model writes is dead; the top-level field of every candidate exists."""
    models = [PAYLOAD_MODELS[t] for t in _TYPES.get(key, (key.removesuffix("/json"),))]
    assert all(m.model_config.get("extra") == "forbid" for m in models), key
    fields = {f for m in models for f in m.model_fields}
    for name, paths in PATHS[key].items():
        for path in paths:
            assert path.removeprefix("$.").split(".")[0] in fields, (key, name, path)
