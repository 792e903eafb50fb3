"""Which recorded grade of a trial counts is declared once in SQL: ``view_kit.recorded_grade_of``.

A grep over the analytics modules: none but the view kit pairs a recorded-grade filter
(``source = 'recorded'``, ``'grade.recorded'``) with a latest-by-seq pick. The detector is
held to the spellings the views used before the rule had one declaration, so it can fail.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import ledger.analytics
from ledger.analytics.view_kit import recorded_grade_of

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
