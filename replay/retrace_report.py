"""Retrace's corpus report: ``replay.retrace``'s trial outcomes folded into how each declared
constraint separated the corpus, which paths won, and what it could prove (TRACE_REPLAY.md)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from replay.retrace import ConstraintObservation, TrialRetrace
from schemas.errors import LedgerError


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
    rows: dict[tuple[str, str], ConstraintRow] = {}
    for task_id, constraints in declared.items():
        for cid, route in constraints:
            rows[(task_id, cid)] = ConstraintRow(task_id, cid, route)
    for obs in observations:
        row = rows.get((obs.task_id, obs.constraint_id))
        if row is None:
            raise ValueError(
                f"constraint {obs.constraint_id!r} of task {obs.task_id!r} was evaluated "
                "but is not declared by the block the trial was replayed with"
            )
        row.evaluated += 1
        if obs.undecided:
            row.undecided += 1
            continue
        if obs.passed:
            row.passed += 1
        else:
            row.failed += 1
        if obs.recorded_passed is not None:
            row.labelled += 1
            row.agreed += int(obs.recorded_passed == obs.passed)
    for row in rows.values():
        row.verdict, row.decided_verdict = classify(row.passed, row.failed, row.undecided)
    return list(rows.values())


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


def build_report(outcomes: Sequence[TrialRetrace]) -> dict[str, Any]:
    """Trials, per-constraint discrimination, path wins and the evidence block."""
    declared: dict[str, tuple[tuple[str, str], ...]] = {}
    block_of: dict[str, tuple[str | None, str]] = {}
    tally = PathTally()
    for o in outcomes:
        if o.block_digest is None:
            continue  # no trace_checks block: nothing to discriminate (not_applicable)
        seen = block_of.get(o.task_id)
        if seen is not None and seen[0] != o.block_digest:
            raise RetraceReportError(
                f"task {o.task_id!r}: trials {seen[1]!r} and {o.trial!r} declare different "
                "trace_checks blocks; point the source at one revision of the pack, or "
                "supply --constraints to measure one block over all of it"
            )
        block_of[o.task_id] = (o.block_digest, o.trial)
        declared[o.task_id] = o.declared
        tally.add(o.task_id, o.winning_path)
    rows = discrimination(declared, (obs for o in outcomes for obs in o.observations))
    return {
        "trials": [o.as_dict() for o in outcomes],
        "constraints": _with_unmeasured([r.as_dict() for r in rows], outcomes),
        "paths": tally.as_list(),
        "evidence": evidence(outcomes),
    }


def _with_unmeasured(
    rows: list[dict[str, Any]], outcomes: Sequence[TrialRetrace]
) -> list[dict[str, Any]]:
    """Each row gains ``not_measured_trials`` (how many trials could not measure it) and
    ``not_measured_reason`` (the field, named; None when every trial measured it)."""
    seen: dict[tuple[str, str], tuple[int, str]] = {}
    for o in outcomes:
        for cid, reason in o.unmeasured:
            n, _ = seen.get((o.task_id, cid), (0, reason))
            seen[(o.task_id, cid)] = (n + 1, reason)
    for row in rows:
        n, reason = seen.get((row["task_id"], row["id"]), (0, None))
        row["not_measured_trials"] = n
        row["not_measured_reason"] = reason
    return rows


def evidence(outcomes: Sequence[TrialRetrace]) -> dict[str, Any]:
    """What the corpus could prove: a never_decided row means little on an old corpus."""
    readable = [o for o in outcomes if o.readable]
    return {
        "bundles_read": len(outcomes),
        "with_tool_call_record": sum(o.record_view for o in readable),
        "messages_only": sum(not o.record_view for o in readable),
        "predating_call_ids": sum(o.predates_call_ids for o in outcomes),
        "failed": sum(o.status == "not_rechecked" for o in outcomes),
        "regex_refused": sum(o.regex_refused for o in outcomes),
        "with_advisories": sum(bool(o.advisories) for o in outcomes),
        # a newer recorder's keys: the trials carrying any, and which keys they were
        "with_unknown_keys": sum(bool(o.unknown_keys) for o in outcomes),
        "unknown_keys": sorted({k for o in outcomes for k in o.unknown_keys}),
    }
