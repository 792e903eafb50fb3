"""A trial's recorded grade: which one counts, and the one reading of it.

``grade.recorded`` carries grade.yaml as written (GRADING.md § The grade file). Which of a
trial's grade events counts is :func:`recorded_grade_of` (the latest on its stream: a later
one is a re-grade that supersedes, never a second verdict); :func:`read_recorded_grade` is
the one parser of its fields, read as written — a field of an unexpected shape is kept
and named in ``problems``, never a reason to drop the trial. Retrace, grade, curate, the
OTel export and reconcile read the same :class:`RecordedGradeRead`; reconcile, whose kappa
needs numbers, refuses a trial whose read names a problem (``problems``), the others do not.
The SQL views pick the same grade through ``ledger.analytics.view_kit.recorded_grade_of``
(this package cannot import the ledger; ``tests/test_recorded_grade_sql.py`` checks every view
reads the latest).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

REASON_SEPARATOR = " | "  # grade.yaml joins its reason segments with this


def recorded_grade_of(grade_payloads: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The recorded grade that counts, of a trial's ``grade.recorded`` payloads in stream
    order: the latest (None: the trial records none)."""
    return grade_payloads[-1]["grade"] if grade_payloads else None


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@dataclass(frozen=True, slots=True)
class RecordedGradeRead:
    """grade.yaml's fields as written (``raw`` is the document itself)."""

    raw: Mapping[str, Any]
    score: Any
    binary_pass: Any
    components: Mapping[str, Any]
    reasons: Any  # the reasons string as written (segments: :attr:`reason_segments`)
    judge_status: Any  # None when the grade records none
    criterion_results: tuple[Any, ...] | None  # the rows as written; None: no key
    trace_check_results: Mapping[str, bool | None]  # constraint id -> verdict (None: undecided)
    trace_gate_failed: bool
    custom_checks_details: tuple[Any, ...] | None

    @property
    def reason_segments(self) -> list[str]:
        """The reasons split into their ``" | "`` segments (a non-string: one segment)."""
        text = self.reasons or ""
        if not isinstance(text, str):
            return [str(text)]
        return [s for s in text.split(REASON_SEPARATOR) if s]

    @property
    def status(self) -> str:
        """The judge's status, ``unspecified`` where none is recorded."""
        return str(self.judge_status or "unspecified")

    def criterion_row(self, criterion: str) -> Mapping[str, Any] | None:
        """The recorded row of ``criterion`` (the first, as the judge wrote them)."""
        for row in self.criterion_results or ():
            if isinstance(row, Mapping) and row.get("id") == criterion:
                return row
        return None

    @property
    def problems(self) -> list[str]:
        """Each field a number-reading projection cannot use, named as grade.yaml spells it,
        in document order: a criterion row that is not a judge verdict or whose score is no
        number, a component or the score that is no number."""
        out = []
        for i, row in enumerate(self.criterion_results or ()):
            if not (isinstance(row, Mapping) and isinstance(row.get("id"), str)
                    and isinstance(row.get("met"), bool)):  # fmt: skip
                out.append(f"grade.yaml criterion_results[{i}] is not a judge verdict")
                continue
            score = row.get("score")
            if score is not None and not is_number(score):
                out.append(_not_a_number(f"criterion_results[{i}].score", score))
        for name, value in self.components.items():
            if value is not None and not is_number(value):
                out.append(_not_a_number(f"components.{name}", value))
        if not is_number(self.score):
            out.append(_not_a_number("score", self.score))
        return out


def _not_a_number(where: str, value: Any) -> str:
    return f"grade.yaml {where} is {value!r}, not a number"


def read_recorded_grade(raw: Mapping[str, Any]) -> RecordedGradeRead:
    """The one reading of a recorded grade.yaml (see the module docstring)."""
    rows = raw.get("criterion_results")
    checks = raw.get("custom_checks_details")
    summary = raw.get("trace_checks_summary") or {}
    return RecordedGradeRead(
        raw=raw,
        score=raw.get("score"),
        binary_pass=raw.get("binary_pass"),
        components=raw.get("components") or {},
        reasons=raw.get("reasons"),
        judge_status=raw.get("judge_status"),
        criterion_results=None if rows is None else tuple(rows),
        trace_check_results=_trace_verdicts(raw.get("trace_check_results")),
        trace_gate_failed=bool(summary.get("gate_failed", False)),
        custom_checks_details=None if checks is None else tuple(checks),
    )


def _trace_verdicts(rows: Any) -> dict[str, bool | None]:
    """Recorded constraint verdicts by id; None where the live run itself was undecided."""
    out: dict[str, bool | None] = {}
    for row in rows or ():
        if isinstance(row, Mapping) and isinstance(row.get("id"), str):
            out[row["id"]] = None if row.get("undecided") else bool(row.get("passed"))
    return out
