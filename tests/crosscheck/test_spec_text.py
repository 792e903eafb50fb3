"""Messages the code quotes from a specification, against that specification's own text."""

from __future__ import annotations

import re
from pathlib import Path

from schemas.grading import unsatisfiable_window_message


def _grading_md(reference: Path) -> str:
    (spec,) = sorted((reference / "seeds").glob("002_*.txt"))  # GRADING.md
    return spec.read_text()


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_unsatisfiable_turn_window_message_is_the_specs(reference: Path) -> None:
    """GRADING.md § Turn bounds prints the refusal for min_assistant_turns 5, max_turns 3."""
    block = re.search(
        r"grading\.yaml transcript_rules declares an unsatisfiable turn window:.*?at least 5\.",
        _grading_md(reference),
        re.S,
    )
    assert block, "GRADING.md § Turn bounds no longer carries the refusal text"
    assert unsatisfiable_window_message(5, 3) == _flat(block.group(0))
