"""The GVC derivation's input (``replay.verdicts.derive``): a conformance case, or a ``unit/<id>``
stream's evidence events checked and assembled into ``UnitEvidence`` (spec § 4, § 8)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from replay.verdicts.derive import Admission, Oracle, UnitEvidence, derive
from schemas.errors import LedgerError
from schemas.gvc import CaseInput, Ladder
from schemas.verdict_events import OracleDeclared, OracleRan, WorkProduced


def evidence_from_case(case_input: CaseInput) -> UnitEvidence:
    """A ``gvc-derivation-cases/v1`` input as derivation evidence (oracle ids by position)."""
    return UnitEvidence(
        declared=tuple(
            Oracle(
                oracle_id=f"oracle-{i}",
                tier=o.tier,
                ran=o.ran,
                passed=o.passed,
                author=o.author,
                runner=o.runner,
                content_identity=o.content_identity,
            )
            for i, o in enumerate(case_input.declared)
        ),
        work_producer=case_input.work_producer,
        current_content_identity=case_input.current_content_identity,
        producer_supplied_grade=case_input.producer_supplied_grade,
        admission_evidence=case_input.admission_evidence,
    )


@dataclass(frozen=True, slots=True)
class UnitEvent:
    """One event of a ``unit/<id>`` stream, as the derivation reads it."""

    type: str
    data: Mapping[str, Any]
    seq: int | None = None
    stream_version: int | None = None

    def where(self) -> str:
        return f"{self.type} at seq {self.seq}" if self.seq is not None else self.type


class UnitEvidenceError(LedgerError, ValueError):
    """A unit whose events cannot be admitted; names the unit and every problem."""

    def __init__(self, unit: str, problems: Sequence[str]) -> None:
        self.unit = unit
        self.problems = tuple(problems)
        super().__init__(f"unit {unit!r}: " + "; ".join(self.problems))


EVIDENCE_TYPES = {
    "oracle.declared": OracleDeclared,
    "oracle.ran": OracleRan,
    "work.produced": WorkProduced,
}
ADMITTED = "verdict.admitted"


@dataclass
class UnitStreamCheck:
    """An incremental check of one unit's stream, fed in stream order: ``problems`` by
    name, and ``evidence()`` from what came before the admission (if any)."""

    unit: str | None
    declared: dict[str, OracleDeclared] = field(default_factory=dict)
    runs: dict[str, OracleRan] = field(default_factory=dict)
    work: WorkProduced | None = None
    work_where: str | None = None
    admitted_where: str | None = None
    problems: list[str] = field(default_factory=list)

    def feed(self, ev: UnitEvent) -> list[str]:
        """Take one more event; return the problems it adds (``[]`` when sound)."""
        before = len(self.problems)
        self._feed(ev)
        return self.problems[before:]

    def _feed(self, ev: UnitEvent) -> None:
        if self.admitted_where is not None:
            self.problems.append(
                f"{ev.where()} arrives after the unit's admission ({self.admitted_where})"
            )
            return
        if ev.type == ADMITTED:
            self.admitted_where = ev.where()
            return
        model = EVIDENCE_TYPES.get(ev.type)
        if model is None:
            self.problems.append(
                f"{ev.where()}: type {ev.type!r} does not belong in a unit stream "
                f"(use {', '.join(EVIDENCE_TYPES)} or {ADMITTED})"
            )
            return
        try:
            payload = model.model_validate(dict(ev.data))
        except ValidationError as exc:
            first = exc.errors()[0]
            key = ".".join(str(p) for p in first["loc"]) or "<payload>"
            self.problems.append(f"{ev.where()}: malformed payload, field {key!r}: {first['msg']}")
            return
        if self.unit is None:
            self.unit = payload.unit
        if payload.unit != self.unit:
            self.problems.append(f"{ev.where()}: names unit {payload.unit!r}, not {self.unit!r}")
            return
        self._take(ev, payload)

    def _take(self, ev: UnitEvent, payload: Any) -> None:
        if isinstance(payload, OracleDeclared):
            if payload.oracle_id in self.declared:
                self.problems.append(f"{ev.where()}: oracle {payload.oracle_id!r} declared twice")
            elif self.work_where is not None:
                self.problems.append(
                    f"{ev.where()}: oracle {payload.oracle_id!r} declared after the work was "
                    f"produced ({self.work_where}); declare judges before delegation"
                )
            else:
                self.declared[payload.oracle_id] = payload
        elif isinstance(payload, OracleRan):
            if payload.oracle_id not in self.declared:
                self.problems.append(
                    f"{ev.where()}: oracle {payload.oracle_id!r} ran but was never declared "
                    f"(declared: {sorted(self.declared) or 'none'})"
                )
            else:
                # The latest observation wins: a judge re-run after new work re-binds it.
                self.runs[payload.oracle_id] = payload
        else:
            self.work = payload
            self.work_where = self.work_where or ev.where()

    def evidence(self) -> UnitEvidence:
        """The evidence collected before the admission; refuses a broken stream."""
        if self.problems:
            raise UnitEvidenceError(self.unit or "<unknown>", self.problems)
        declared = []
        for oracle_id, d in self.declared.items():
            run = self.runs.get(oracle_id)
            declared.append(
                Oracle(
                    oracle_id=oracle_id,
                    tier=d.tier,
                    ran=run is not None,
                    passed=run is not None and run.passed,
                    author=d.author,
                    runner=run.runner if run else None,
                    content_identity=run.content_identity if run else "",
                    command=d.command,
                )
            )
        work = self.work
        return UnitEvidence(
            declared=tuple(declared),
            work_producer=work.producer if work else None,
            current_content_identity=work.content_identity if work else "",
            producer_supplied_grade=work.producer_supplied_grade if work else None,
            # § 8: a unit with no work.produced has no admission fact to grade.
            admission_evidence=work is not None,
        )


def check_stream(unit: str | None, events: Iterable[UnitEvent]) -> UnitStreamCheck:
    check = UnitStreamCheck(unit)
    for ev in events:
        check.feed(ev)
    return check


def check_unit_events(unit: str | None, events: Iterable[UnitEvent]) -> list[str]:
    """Every problem with a unit's stream by name, in stream order; ``[]`` when sound
    (judges are declared before delegation, § 4; nothing follows the admission)."""
    return check_stream(unit, events).problems


def unit_evidence(unit: str | None, events: Iterable[UnitEvent]) -> UnitEvidence:
    """The derivation's input from a unit's evidence events; refuses a broken stream
    or one already admitted (nothing is admitted on partial evidence silently)."""
    check = check_stream(unit, events)
    if check.admitted_where is not None:
        check.problems.append(f"unit already admitted ({check.admitted_where})")
    return check.evidence()


def derive_verdict(unit_events: Iterable[UnitEvent], ladder: Ladder) -> Admission:
    """Derive the admission of one unit from its stream's evidence events."""
    events = list(unit_events)
    unit = next((str(e.data.get("unit")) for e in events if e.data.get("unit")), None)
    return derive(unit_evidence(unit, events), ladder)
