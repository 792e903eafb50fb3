"""Grading patterns under their declared engine; a backtracking one may be slow, never endless.

``linear`` (RE2, the default) cannot hang; ``backtracking`` exists for patterns RE2 refuses,
and such a pattern (``(a+)+$``) can sit in a recorded snapshot nobody here wrote. So every
match runs with a budget (the ``regex`` package's ``timeout=``); past it,
:class:`RegexBudgetExceeded` makes the asking check ``not_measured``. Which patterns compile
is still Python's ``re``'s decision (the authoring rule the reference applies).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from schemas.errors import LedgerError

# Seconds one search may take. A real pattern over a real message is microseconds; a
# catastrophic one is hopeless at any budget, so the budget only bounds what it costs.
MATCH_BUDGET_SECONDS = 0.5


class RegexBudgetExceeded(LedgerError):
    """A backtracking pattern ran past its time budget on one text."""

    def __init__(self, pattern: str, budget: float) -> None:
        self.pattern = pattern
        self.budget = budget
        shown = repr(pattern if len(pattern) <= 60 else pattern[:57] + "...")
        super().__init__(
            f"the backtracking pattern {shown} ran past its {budget:g} s budget on one text "
            "(catastrophic backtracking), so it is not measured; rewrite it without nested "
            "quantifiers, or for regex_engine: linear"
        )


class BoundedPattern:
    """A compiled backtracking pattern whose every match is time-bounded (``finditer`` is
    materialised, so the budget covers the whole scan)."""

    __slots__ = ("_compiled", "budget", "pattern")

    def __init__(self, compiled: Any, pattern: str, budget: float) -> None:
        self._compiled = compiled
        self.pattern = pattern
        self.budget = budget

    @property
    def groups(self) -> int:
        return int(self._compiled.groups)

    def search(self, text: str) -> Any:
        try:
            return self._compiled.search(text, timeout=self.budget)
        except TimeoutError:
            raise RegexBudgetExceeded(self.pattern, self.budget) from None

    def finditer(self, text: str) -> Iterator[Any]:
        try:
            return iter(list(self._compiled.finditer(text, timeout=self.budget)))
        except TimeoutError:
            raise RegexBudgetExceeded(self.pattern, self.budget) from None

    def __repr__(self) -> str:
        return f"BoundedPattern({self.pattern!r}, budget={self.budget:g})"


def compile_backtracking(
    pattern: str, flags: int = 0, budget: float = MATCH_BUDGET_SECONDS
) -> BoundedPattern:
    """Compile ``pattern`` for the backtracking engine. Raises ``re.error`` for a pattern
    Python's ``re`` refuses (as before), and for the rare one only ``regex`` refuses."""
    import regex  # noqa: PLC0415 - loaded for a backtracking pattern only (start-up)

    re.compile(pattern, flags)
    try:
        compiled = regex.compile(pattern, _regex_flags(flags))
    except regex.error as exc:
        raise re.error(f"{exc} (the time-bounded backtracking matcher)") from None
    return BoundedPattern(compiled, pattern, budget)


def _regex_flags(flags: int) -> int:
    import regex  # noqa: PLC0415

    out = regex.VERSION0  # re's semantics, not regex's VERSION1 extensions
    for ours, theirs in (
        (re.IGNORECASE, regex.IGNORECASE),
        (re.MULTILINE, regex.MULTILINE),
        (re.DOTALL, regex.DOTALL),
        (re.VERBOSE, regex.VERBOSE),
        (re.ASCII, regex.ASCII),
    ):
        if flags & ours:
            out |= theirs
    return out


# Distinct (pattern, engine, case) compiled at once: a corpus declares a few dozen; the bound
# keeps a stream of recorded snapshots, each with its own patterns, from growing it forever.
COMPILED_CACHE = 4096


@lru_cache(maxsize=COMPILED_CACHE)
def compile_regex(pattern: str, engine: str, ignore_case: bool = False) -> Any:
    """The one compiler of a grading pattern under its declared engine (trace checks, and
    transcript rules case-insensitively), cached: ``linear`` is RE2 (linear time, cannot
    hang), ``backtracking`` a :class:`BoundedPattern` (every match time-bounded). Raises
    ValueError naming the engine's complaint."""
    if engine == "backtracking":
        try:  # a recorded snapshot's pattern must not hang retrace
            return compile_backtracking(pattern, re.IGNORECASE if ignore_case else 0)
        except re.error as exc:
            raise ValueError(str(exc)) from exc
    import re2  # noqa: PLC0415 - google-re2 loads with the first linear pattern

    options = re2.Options()
    options.log_errors = False  # the complaint is raised, not also printed by RE2
    options.case_sensitive = not ignore_case
    try:
        return re2.compile(pattern, options=options)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise ValueError(str(detail)) from exc
