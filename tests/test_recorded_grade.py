"""One rule for which recorded grade of a trial counts (the latest grade.recorded on its
stream) and one parser of it: retrace, grade, curate, the OTel export, reconcile and the
bundle export all read ``replay.grading.recorded_grade``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.sources.export_bundle import bundle_documents
from reconcile.trials import UnreadableBundle, recorded_grade
from replay.grading.recorded_grade import read_recorded_grade
from replay.timeline.trial_inputs import trial_inputs
from schemas.canonical import canonical_json
from schemas.envelope import StoredEvent


def _event(version: int, type_: str, payload: dict[str, Any]) -> StoredEvent:
    return StoredEvent(
        seq=version, stream="trial/x", stream_version=version, event_id=f"e{version}",
        type=type_, schema_version=1, payload=canonical_json(payload),
        recorded_at=datetime(2026, 1, 1, tzinfo=UTC), leaf_hash=b"\0" * 32,
    )  # fmt: skip


def test_the_latest_recorded_grade_counts_for_every_reader() -> None:
    first, regraded = {"score": 0.0, "binary_pass": False}, {"score": 1.0, "binary_pass": True}
    events = [
        _event(0, "trial.registered",
               {"task_id": "t", "trial": "x", "corpus": "c", "record_view": False}),
        _event(1, "grade.recorded", {"grade": first}),
        _event(2, "grade.recorded", {"grade": regraded}),
    ]
    assert trial_inputs(list(reversed(events))).recorded_grade == regraded
    assert bundle_documents(events)["grade.yaml"] == regraded


VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False), st.text(max_size=3)
)
ROWS = st.lists(
    st.one_of(
        st.fixed_dictionaries({"id": st.one_of(st.text(max_size=3), st.none()),
                               "met": VALUES, "score": VALUES}),  # fmt: skip
        st.integers(),
    ),
    max_size=3,
)


@settings(max_examples=200, deadline=None)
@given(
    score=VALUES,
    components=st.dictionaries(st.sampled_from(["llm_judge", "state_checks"]), VALUES),
    rows=st.one_of(st.none(), ROWS),
)
def test_reconcile_refuses_exactly_what_the_reading_names(
    score: Any, components: dict[str, Any], rows: list[Any] | None
) -> None:
    """The one parser reads every grade (never raises); reconcile, which needs numbers,
    refuses a grade iff the reading names a problem, and names the first one."""
    raw = {"score": score, "components": components, "criterion_results": rows}
    read = read_recorded_grade(raw)
    if read.problems:
        with pytest.raises(UnreadableBundle) as info:
            recorded_grade(read)
        assert str(info.value) == read.problems[0]
        return
    got = recorded_grade(read)
    assert got.score == float(score)
    assert got.components == {k: None if v is None else float(v) for k, v in components.items()}
    assert [r.id for r in got.criterion_results or ()] == [r["id"] for r in rows or ()]
