"""Retrace's corpus report: ``replay.grading.retrace``'s trial outcomes folded into how each declared
constraint separated the corpus, which paths won, and what it could prove (TRACE_REPLAY.md)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from replay.grading.retrace import ConstraintObservation, TrialRetrace
from schemas.errors import LedgerError
from schemas.retrace_status import RetraceStatus


@dataclass(slots=True)
class ConstraintRow:
    task_id: str
    id: str
    route: str
    evaluated: int = 0
    passed: int = 0
    failed: int = 0
    undecided: int = 0
    labelled: int = 0
    agreed: int = 0
    verdict: str = "not_measured"
    decided_verdict: bool | None = None

    @property
    def decided(self) -> int:
        return self.passed + self.failed

    def as_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "id": self.id,
            "route": self.route,
            "class": self.verdict,
            "decided_verdict": self.decided_verdict,
            "evaluated": self.evaluated,
            "decided": self.decided,
            "passed": self.passed,
            "failed": self.failed,
            "undecided": self.undecided,
            "labelled": self.labelled,
            "agrees_with_recorded": self.agreed if self.labelled else None,
        }


def classify(passed: int, failed: int, undecided: int) -> tuple[str, bool | None]:
    """``(class, decided_verdict)`` of TRACE_REPLAY.md, in its order; decided_verdict is set
    only for ``undecided_in_part`` (the value the decided trials agree on)."""
    evaluated = passed + failed + undecided
    if evaluated == 0:
        return "not_measured", None
    if passed and failed:
        return "discriminating", None
    if passed + failed == 0:
        return "never_decided", None
    if undecided:
        return "undecided_in_part", bool(passed)
    return ("always_true", None) if passed else ("always_false", None)


def discrimination(
    declared: Mapping[str, Sequence[tuple[str, str]]],
    observations: Iterable[ConstraintObservation],
) -> list[ConstraintRow]:
    """One row per declared ``(task_id, constraint_id)`` in declaration order, evaluated or
    not: a row that vanished would read as a constraint never declared."""
    fold = ReportFold(declared=dict(declared))
    for obs in observations:
        fold.observe(obs)
    return fold.rows()


@dataclass(slots=True)
class PathTally:
    """How often each alternative path won, per task."""

    counts: dict[tuple[str, str], int] = field(default_factory=dict)

    def add(self, task_id: str, winning_path: str | None) -> None:
        if winning_path:
            key = (task_id, winning_path)
            self.counts[key] = self.counts.get(key, 0) + 1

    def as_list(self) -> list[dict[str, Any]]:
        return [{"task_id": t, "path": p, "won": n} for (t, p), n in sorted(self.counts.items())]


class RetraceReportError(LedgerError, ValueError):
    """A corpus this report cannot stand behind (e.g. one task, two different blocks)."""


def build_report(
    outcomes: Iterable[TrialRetrace], trials: Sequence[Mapping[str, Any]] | None = None
) -> dict[str, Any]:
    """Trials, per-constraint discrimination, path wins and the evidence block.

    ``outcomes`` is read once, in order, and folded as it goes (:class:`ReportFold`), so a
    caller that streams them holds no per-trial state; ``trials`` is then its own view of
    the per-trial rows (default: each outcome's ``as_dict``, kept in a list)."""
    fold = ReportFold()
    rows: list[dict[str, Any]] = []
    for o in outcomes:
        fold.add(o)
        if trials is None:
            rows.append(o.as_dict())
    return {"trials": rows if trials is None else trials, **fold.summary()}


@dataclass(slots=True)
class ReportFold:
    """The corpus-level half of the report, folded one outcome at a time: per task its
    block, per constraint its counts, per reason its tally — never a per-trial list."""

    declared: dict[str, Sequence[tuple[str, str]]] = field(default_factory=dict)
    block_of: dict[str, tuple[str | None, str]] = field(default_factory=dict)
    tally: PathTally = field(default_factory=PathTally)
    # per (task, constraint) as first observed: counts only (routes come from `declared`)
    observed: dict[tuple[str, str], ConstraintRow] = field(default_factory=dict)
    unmeasured: dict[tuple[str, str], tuple[int, str]] = field(default_factory=dict)
    evidence: Counter[str] = field(default_factory=Counter)
    unknown_keys: set[str] = field(default_factory=set)

    def add(self, o: TrialRetrace) -> None:
        self._block(o)
        for obs in o.observations:
            self.observe(obs)
        for cid, reason in o.unmeasured:  # the count, and the latest trial's reason
            n, _ = self.unmeasured.get((o.task_id, cid), (0, reason))
            self.unmeasured[(o.task_id, cid)] = (n + 1, reason)
        evidence = self.evidence
        for key, n in _evidence_marks(o).items():
            if n:  # most marks are 0: Counter.update would still write each one
                evidence[key] += n
        self.unknown_keys.update(o.unknown_keys)

    def observe(self, obs: ConstraintObservation) -> None:
        """One observation into its (task, constraint)'s counts."""
        key = (obs.task_id, obs.constraint_id)
        row = self.observed.get(key)
        if row is None:
            row = self.observed[key] = ConstraintRow(*key, route="")
        row.evaluated += 1
        if obs.undecided:
            row.undecided += 1
            return
        if obs.passed:
            row.passed += 1
        else:
            row.failed += 1
        if obs.recorded_passed is not None:
            row.labelled += 1
            row.agreed += int(obs.recorded_passed == obs.passed)

    def _block(self, o: TrialRetrace) -> None:
        if o.block_digest is None:
            return  # no trace_checks block: nothing to discriminate (not_applicable)
        seen = self.block_of.get(o.task_id)
        if seen is not None and seen[0] != o.block_digest:
            raise RetraceReportError(
                f"task {o.task_id!r}: trials {seen[1]!r} and {o.trial!r} declare different "
                "trace_checks blocks; point the source at one revision of the pack, or "
                "supply --constraints to measure one block over all of it"
            )
        self.block_of[o.task_id] = (o.block_digest, o.trial)
        self.declared[o.task_id] = o.declared
        self.tally.add(o.task_id, o.winning_path)

    def summary(self) -> dict[str, Any]:
        """``constraints``, ``paths`` and ``evidence``, as :func:`build_report` gives them."""
        return {
            "constraints": _with_unmeasured(
                [r.as_dict() for r in self.rows()], self.unmeasured
            ),
            "paths": self.tally.as_list(),
            "evidence": {
                **{k: self.evidence[k] for k in _EVIDENCE_KEYS},
                "unknown_keys": sorted(self.unknown_keys),
            },
        }

    def rows(self) -> list[ConstraintRow]:
        """:func:`discrimination` of everything added: declared rows, observed counts."""
        rows: dict[tuple[str, str], ConstraintRow] = {}
        for task_id, constraints in self.declared.items():
            for cid, route in constraints:
                rows[(task_id, cid)] = ConstraintRow(task_id, cid, route)
        for key, counts in self.observed.items():  # first observed first
            row = rows.get(key)
            if row is None:
                raise ValueError(
                    f"constraint {key[1]!r} of task {key[0]!r} was evaluated "
                    "but is not declared by the block the trial was replayed with"
                )
            for name in _COUNTS:
                setattr(row, name, getattr(counts, name))
        for row in rows.values():
            row.verdict, row.decided_verdict = classify(row.passed, row.failed, row.undecided)
        return list(rows.values())


_COUNTS = ("evaluated", "passed", "failed", "undecided", "labelled", "agreed")
# evidence's counted keys, in the report's order (unknown_keys, the list, comes last)
_EVIDENCE_KEYS = (
    "bundles_read", "with_tool_call_record", "messages_only", "predating_call_ids", "failed",
    "regex_refused", "with_advisories", "with_unknown_keys",
)  # fmt: skip


def _evidence_marks(o: TrialRetrace) -> dict[str, int]:
    """What one outcome adds to each counted evidence key."""
    return {
        "bundles_read": 1,
        "with_tool_call_record": int(o.readable and o.record_view),
        "messages_only": int(o.readable and not o.record_view),
        "predating_call_ids": int(o.predates_call_ids),
        "failed": int(o.status == RetraceStatus.NOT_RECHECKED),
        "regex_refused": int(o.regex_refused),
        "with_advisories": int(bool(o.advisories)),
        # a newer recorder's keys: the trials carrying any (which keys: the fold's set)
        "with_unknown_keys": int(bool(o.unknown_keys)),
    }


def _with_unmeasured(
    rows: list[dict[str, Any]], seen: Mapping[tuple[str, str], tuple[int, str]]
) -> list[dict[str, Any]]:
    """Each row gains ``not_measured_trials`` (how many trials could not measure it) and
    ``not_measured_reason`` (the field, named; None when every trial measured it)."""
    for row in rows:
        n, reason = seen.get((row["task_id"], row["id"]), (0, None))
        row["not_measured_trials"] = n
        row["not_measured_reason"] = reason
    return rows

