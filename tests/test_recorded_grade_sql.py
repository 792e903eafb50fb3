"""Which recorded grade of a trial counts is declared once in SQL: ``view_kit.recorded_grade_of``.

A grep over the analytics modules: none but the view kit pairs a recorded-grade filter
(``source = 'recorded'``, ``'grade.recorded'``) with a latest-by-seq pick. The detector is
held to the spellings the views used before the rule had one declaration, so it can fail.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import ledger.analytics
from ledger.analytics import sql as analytics
from ledger.analytics.report_panels import DISAGREEMENT_SQL
from ledger.analytics.report_trials import TRIALS_SQL
from ledger.analytics.view_kit import recorded_grade_of
from tests.analytics_fixtures import (
    check,
    recorded_grade,
    replay_events,
    replayed_grade,
    trial_events,
    trial_stream,
    write_ledger,
)

ANALYTICS = Path(ledger.analytics.__file__).parent
DECLARED_IN = "view_kit.py"

RECORDED = re.compile(r"source\s*=\s*'recorded'|'grade\.recorded'")
LATEST_BY_SEQ = re.compile(
    r"ORDER\s+BY\s+\w*seq\s+DESC|\bmax\(\s*\w*seq\s*\)|arg_max\(.{0,120}?,\s*\w*seq\s*\)",
    re.IGNORECASE | re.DOTALL,
)
NEAR = 120  # characters: one SQL clause, not the next statement in the module


def picks_latest_recorded(text: str) -> bool:
    """A recorded-grade filter within ``NEAR`` characters of a latest-by-seq pick."""
    for m in RECORDED.finditer(text):
        near = text[max(0, m.start() - NEAR) : m.end() + NEAR]
        if LATEST_BY_SEQ.search(near):
            return True
    return False


# How the views spelled the rule while it was written per view (planted copies).
PLANTED = {
    "agreement": "\"max(seq) FILTER (WHERE source = 'recorded') AS rec_seq, \"",
    "_current": "\"arg_max({'score': score, 'binary_pass': binary_pass}, seq) \"\n"
    "        \"FILTER (WHERE source = 'recorded') AS rec, \"",
    "report": "\"rg AS (SELECT trial, score, binary_pass FROM grades WHERE source = 'recorded' \"\n"
    '    "QUALIFY row_number() OVER (PARTITION BY trial ORDER BY seq DESC) = 1), "',
    "report components": '"WITH rec AS (SELECT trial, component, score FROM components '
    "WHERE source = 'recorded' \"\n    \"AND score IS NOT NULL QUALIFY row_number() OVER "
    '(PARTITION BY trial, component "\n    "ORDER BY grade_seq DESC) = 1), "',
    "usage": "\"SELECT stream, body FROM _ev WHERE type = 'grade.recorded' \"\n"
    '        "QUALIFY row_number() OVER (PARTITION BY stream ORDER BY seq DESC) = 1"',
}


def _modules() -> list[Path]:
    return sorted(ANALYTICS.glob("*.py"))


def test_the_declaration_is_found_where_it_lives() -> None:
    assert picks_latest_recorded((ANALYTICS / DECLARED_IN).read_text(encoding="utf-8"))
    assert picks_latest_recorded(recorded_grade_of("seq").replace("type =", "source ="))


@pytest.mark.parametrize("path", _modules(), ids=lambda p: p.name)
def test_no_other_analytics_module_picks_the_recorded_grade_itself(path: Path) -> None:
    if path.name == DECLARED_IN:
        return
    text = path.read_text(encoding="utf-8")
    assert not picks_latest_recorded(text), (
        f"{path.name} picks a trial's latest recorded grade itself; read "
        "view_kit.recorded_grade_of or the _recorded_grade view instead"
    )


@pytest.mark.parametrize("where", sorted(PLANTED))
def test_a_planted_copy_in_any_module_is_caught(where: str) -> None:
    for path in _modules():
        if path.name == DECLARED_IN:
            continue
        text = path.read_text(encoding="utf-8")
        middle = len(text) // 2
        planted = text[:middle] + "\n" + PLANTED[where] + "\n" + text[middle:]
        assert picks_latest_recorded(planted), f"{where} copy planted in {path.name} not caught"


def test_every_view_reads_the_latest_recorded_grade(tmp_path: Path) -> None:
    """A trial re-graded after a replay: each view and report query comparing with the
    recorded grade reads the re-grade, never the first grade."""
    s = trial_stream("c", "t", 0)
    first = recorded_grade(0.2, False, criteria=[("c1", False, 0.0)], judge=0.5)
    first["judge_usage"] = {"cost_usd": 0.1}
    regrade = recorded_grade(0.9, True, criteria=[("c1", True, 1.0)])
    regrade["components"]["llm_judge"] = None  # the re-grade leaves the judge unscored
    regrade["judge_usage"] = {"cost_usd": 0.4}
    ev = trial_events("c", "t", 0, grade=first)
    ev += replay_events("r1", {s: replayed_grade(0.2, False, checks=[check("k", "pass")])},
                        task_of={s: "t"})  # fmt: skip
    ev.append((s, "grade.recorded", {"source": "grade.yaml", "grade": regrade}))
    lg = write_ledger(tmp_path / "lg", ev)

    def rows(sql: str) -> list[dict[str, Any]]:
        return analytics.query(lg, sql).to_pylist()

    (cur,) = rows("SELECT recorded_score, recorded_binary_pass FROM current_grades")
    assert cur == {"recorded_score": 0.9, "recorded_binary_pass": True}
    (agree,) = rows("SELECT met_passed, not_met_passed FROM agreement WHERE task_id = '*'")
    assert agree == {"met_passed": 1, "not_met_passed": 0}
    assert rows("SELECT judge_cost_usd FROM usage") == [{"judge_cost_usd": 0.4}]
    (trial,) = rows(TRIALS_SQL)
    assert (trial["rec_score"], trial["rec_pass"]) == (0.9, True)
    # the replay's judge score (0.2) differs from the first grade's (0.5), but the grade
    # that counts leaves the judge unscored: no component disagreement
    (panel,) = rows(DISAGREEMENT_SQL)
    assert dict(panel["by_component"]).get("llm_judge", 0) == 0
    assert panel["disagreed"] == 1  # 0.2 / fail against the re-grade's 0.9 / pass
