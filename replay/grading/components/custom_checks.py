"""The custom_checks component from recorded per-check results (GRADING.md § Custom Checks;
checks.py is never executed, docs/readme/grading.md § What is measurable offline).

The ``Custom checks:`` sentence is load-bearing: failure attribution keeps every reason
segment matching FAIL case-insensitively, so only the two shapes the fold reads as a
failed component (a losing check; a suite that failed to run) carry the substring, and it
comes from words written here, never from a quoted error text or a check's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from replay.grading.accounting import KeyRecord, evaluated
from replay.grading.accounting import skipped as skipped_keys
from replay.grading.components.result import ComponentResult
from schemas.grading import CustomChecksConfig

CheckStatus = Literal["passed", "failed", "skipped"]
SUITE_KEY = "custom_checks.enabled"  # the scored key of the suite (schemas/key_manifest.py)
NOT_EXECUTED = (
    "custom_checks runs the pack's checks.py, which an offline replay does not execute; "
    "the bundle recorded no per-check results"
)


@dataclass(frozen=True, slots=True)
class CheckVerdict:
    """One check's recorded verdict. ``score`` is what the check returned; a result may
    carry a partial one (a failed check scoring 0.5). ``None``: the record holds none, and
    the verdict scores as its status reads (passed 1.0, failed 0.0)."""

    name: str
    status: CheckStatus
    message: str = ""
    score: float | None = None

    @property
    def value(self) -> float:
        if self.score is not None:
            return self.score
        return 1.0 if self.status == "passed" else 0.0


@dataclass(frozen=True, slots=True)
class RecordedSuite:
    """Per-check results as recorded, or the error the suite could not run with."""

    results: tuple[CheckVerdict, ...] = ()
    error: str | None = None


def evaluate_custom_checks(
    config: CustomChecksConfig, suite: RecordedSuite | None
) -> ComponentResult:
    if suite is None:
        return ComponentResult.unmeasurable(NOT_EXECUTED)
    if suite.error is not None:
        if config.fail_on_error:
            return ComponentResult(
                score=0.0,
                reasons=(f"Custom checks: the suite failed to run: {suite.error}",),
                accounted=evaluated((SUITE_KEY,)),  # could not run: a failure, scored 0.0
            )
        return ComponentResult(
            score=None,
            reasons=(
                "Custom checks: the suite did not run, and this pack leaves such a suite unscored",
            ),
            accounted=skipped_keys(
                "the suite failed to run and fail_on_error is false", (SUITE_KEY,)
            ),
        )
    decided = [r for r in suite.results if r.status != "skipped"]
    skipped = len(suite.results) - len(decided)
    if not decided:
        return ComponentResult(
            score=None,
            reasons=(f"Custom checks: no check reached a verdict ({skipped} skipped); unscored",),
            accounted=(KeyRecord(SUITE_KEY, "skipped", "no check reached a verdict"),),
        )
    lost = [r for r in decided if r.status == "failed"]
    bad = [r for r in decided if r.score is not None and not 0.0 <= r.score <= 1.0]
    if bad:
        return ComponentResult.unmeasurable(
            f"custom_checks_details: check {bad[0].name!r} records score {bad[0].score!r}, "
            "outside [0, 1]"
        )
    # the mean of the decided checks' own scores, as the reference's suite aggregates
    score = sum(r.value for r in decided) / len(decided)
    tail = f" ({skipped} skipped)" if skipped else ""
    if lost:
        named = "; ".join(f"{r.name}: {r.message}" if r.message else r.name for r in lost)
        sentence = (
            f"Custom checks: score={score:.2f}, {len(lost)} of {len(decided)} checks "
            f"failed{tail}: {named}"
        )
    else:
        sentence = f"Custom checks: score={score:.2f}, all {len(decided)} checks that reached a verdict passed{tail}"
    return ComponentResult(score=score, reasons=(sentence,), accounted=evaluated((SUITE_KEY,)))
