"""The views over the 17 real recorded trials of ../shared/corpora/notes_duplicate_check,
ingested with the project's own importer (no hand-built payloads)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger import analytics
from ledger.ingest import ingest
from ledger.store import open_ledger

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared"
NOTES = SHARED / "corpora" / "notes_duplicate_check"
GATED = "notes_add_note_duplicate_check_gated"
POLICY = "notes_add_note_duplicate_check_policy"


@pytest.fixture(scope="module")
def notes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not NOTES.is_dir():
        pytest.skip(f"shared corpus not found at {NOTES}")
    lg_dir = tmp_path_factory.mktemp("notes") / "lg"
    with open_ledger(lg_dir, create=True) as lg:
        ingest(lg, [NOTES])
    return lg_dir


def _rows(lg: Path, sql: str) -> list[dict]:
    return analytics.query(lg, sql).to_pylist()


def test_trials_match_the_corpus_manifests(notes: Path) -> None:
    """FORMATS.md § 1 / § 6: met/ holds 12 bundles (all carrying tool_log.yaml, met: true),
    not_met/ holds 5 (no tool_log.yaml, met: false); nothing is an abort."""
    rows = _rows(notes, "SELECT task_id, met, records_present, outcome_class, count(*) AS n "
                        "FROM trials GROUP BY ALL ORDER BY task_id")
    assert rows == [
        {"task_id": GATED, "met": False, "records_present": False, "outcome_class": "measured", "n": 5},
        {"task_id": POLICY, "met": True, "records_present": True, "outcome_class": "measured", "n": 12},
    ]
    (calls,) = _rows(notes, "SELECT count(*) AS n FROM tool_calls WHERE trial IN "
                            "(SELECT trial FROM trials WHERE task_id = 'notes_add_note_duplicate_check_gated')")
    assert calls == {"n": 0}


def test_recorded_pass_rate_is_twelve_of_seventeen(notes: Path) -> None:
    """DESIGN.md § 2: the published pass rate 12/17 (judge-only grades; policy passes, gated fails)."""
    rows = _rows(notes, "SELECT level, task_id, n, c, pass_at_k FROM pass_at_k WHERE basis = 'recorded' "
                        "AND model = '*' AND k = 1 ORDER BY level, task_id")
    assert rows == [
        {"level": "macro", "task_id": None, "n": 17, "c": 12, "pass_at_k": pytest.approx(0.5)},
        {"level": "micro", "task_id": None, "n": 17, "c": 12, "pass_at_k": pytest.approx(12 / 17)},
        {"level": "task", "task_id": GATED, "n": 5, "c": 0, "pass_at_k": 0.0},
        {"level": "task", "task_id": POLICY, "n": 12, "c": 12, "pass_at_k": 1.0},
    ]


def test_judge_criteria_and_components_of_the_recorded_grades(notes: Path) -> None:
    """FORMATS.md § 4: checked_duplicates_first is met exactly in the 12 met/ trials; the
    grades are judge-only (llm_judge scored, every other component null)."""
    crit = _rows(notes, "SELECT criterion, met, count(*) AS n FROM criteria WHERE criterion = "
                        "'checked_duplicates_first' GROUP BY ALL ORDER BY met")
    assert crit == [{"criterion": "checked_duplicates_first", "met": False, "n": 5},
                    {"criterion": "checked_duplicates_first", "met": True, "n": 12}]
    comps = _rows(notes, "SELECT component, status, count(*) AS n FROM components GROUP BY ALL "
                         "ORDER BY component, status")
    assert {(r["component"], r["status"]) for r in comps if r["status"] == "scored"} == {
        ("llm_judge", "scored")}
    (judge,) = [r for r in comps if r["component"] == "llm_judge"]
    assert judge["n"] == 17
    # no replay yet: current grades are the recorded ones, and nothing to agree over
    assert _rows(notes, "SELECT DISTINCT source FROM current_grades") == [{"source": "recorded"}]
    assert _rows(notes, "SELECT * FROM agreement") == []
