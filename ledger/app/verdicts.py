"""The verdict verbs of the API: ``vledger verdict …`` and ``vledger admissions``.

Each takes the command's arguments as keywords and returns a Result whose ``to_json()`` is
the command's ``--json``; the unit streams they check and write are ``ledger.app.units``.
Grades state evidence strength, never correctness (GVC § 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ledger.app import units
from ledger.app.context import LedgerArg, opened
from ledger.app.result import Result
from ledger.app.units import (
    AdmissionRow,
    Written,
    admit,
    declare,
    load_ladder,
    pending_units,
    produced,
    ran,
    record_jsonl,
    unit_problems,
    unit_stream,
)
from ledger.errors import LedgerError
from ledger.log.verify_report import Problem
from ledger.sources import strict_json
from ledger.sources.files import InputError, read_input
from replay.verdicts.cases import case_mismatches, derive_case, derived_view
from replay.verdicts.derive import Admission
from schemas.errors import FAILED, OK
from schemas.gvc import CaseFile, Party

MAX_RECORD_BYTES = 256 << 20  # verdict JSONL and case files: far above any real one


class VerdictInputError(LedgerError):
    """A JSONL or cases file that cannot be read; names the file and why."""


@dataclass(frozen=True)
class Recorded(Result):
    """One evidence event written (``verdict declare|ran|produced --json``)."""

    type: str
    unit: str
    seq: int


def _party(identity: str, kind: str, chain: str) -> Party:
    return Party(identity=identity, kind=kind, chain_id=chain)


def verdict_declare(
    unit: str, *, oracle: str, tier: str, author: str, author_kind: str, author_chain: str = "",
    command: str | None = None, ledger: LedgerArg = None,
) -> Recorded:  # fmt: skip
    """Declare a judge for ``unit`` (before the work is produced, GVC § 4)."""
    with opened(ledger) as lg:
        seq = declare(lg, unit, oracle, tier, _party(author, author_kind, author_chain), command)
    return Recorded("oracle.declared", unit, seq)


def verdict_ran(
    unit: str, *, oracle: str, passed: bool, runner: str, runner_kind: str,
    runner_chain: str = "", content_identity: str = "", exit_code: int | None = None,
    evidence: str | None = None, ledger: LedgerArg = None,
) -> Recorded:  # fmt: skip
    """Record an observed run of a declared judge of ``unit``."""
    runner_party = _party(runner, runner_kind, runner_chain)
    with opened(ledger) as lg:
        seq = ran(lg, unit, oracle, passed, runner_party, content_identity, exit_code, evidence)
    return Recorded("oracle.ran", unit, seq)


def verdict_produced(
    unit: str, *, producer: str, producer_kind: str, producer_chain: str = "",
    content_identity: str = "", grade: str | None = None, ledger: LedgerArg = None,
) -> Recorded:  # fmt: skip
    """Record the work delivered for ``unit`` (``grade``: producer-supplied, never admitted)."""
    party = _party(producer, producer_kind, producer_chain)
    with opened(ledger) as lg:
        seq = produced(lg, unit, party, content_identity, grade)
    return Recorded("work.produced", unit, seq)


@dataclass(frozen=True)
class Admitted(Result):
    """A unit's admission (``verdict admit --json``: the unit, then its record)."""

    unit: str
    admission: Admission

    def to_json(self) -> dict[str, Any]:
        return {"unit": self.unit, **self.admission.record()}


def verdict_admit(unit: str, *, ledger: LedgerArg = None) -> Admitted:
    """Derive ``unit``'s grade from its evidence and record it, once (``units.admit``)."""
    with opened(ledger) as lg:
        return Admitted(unit, admit(lg, unit))


@dataclass(frozen=True)
class RecordedBatch(Result):
    """What ``verdict record`` wrote, one entry per line of the file."""

    recorded: tuple[Written, ...]

    def to_json(self) -> dict[str, Any]:
        return {"recorded": [
            {"type": w.type, "unit": w.unit, "seq": w.seq, "duplicate": w.duplicate,
             "effective_grade": w.admission.effective_grade if w.admission else None}
            for w in self.recorded
        ]}  # fmt: skip


def verdict_record(jsonl: str | Path, *, ledger: LedgerArg = None) -> RecordedBatch:
    """Record units from a JSONL file (``"-"``: stdin) as one atomic batch (``record_jsonl``)."""
    source = "<stdin>" if str(jsonl) == "-" else str(jsonl)
    try:  # the one bounded reader: a regular file, or a pipe only when named as -
        data = read_input(Path(jsonl), max_bytes=MAX_RECORD_BYTES, name=source, allow_stdin=True)
        text = data.decode("utf-8")
    except InputError as exc:
        raise VerdictInputError(str(exc)) from None
    except UnicodeDecodeError as exc:
        raise VerdictInputError(f"{source}: not UTF-8 text ({exc.reason})") from None
    with opened(ledger) as lg:
        return RecordedBatch(tuple(record_jsonl(lg, text, source)))


@dataclass(frozen=True)
class DerivedCase:
    name: str
    derived: dict[str, Any]  # replay.verdicts.cases.derived_view
    mismatches: list[str] | None  # each expectation missed; None: the case states none


@dataclass(frozen=True)
class Derivations(Result):
    """Every case of a gvc-derivation-cases/v1 file through the derivation."""

    cases: tuple[DerivedCase, ...]
    check: bool = False

    @property
    def failing(self) -> list[str]:
        return [c.name for c in self.cases if c.mismatches]

    @property
    def ok(self) -> bool:
        """False when ``check`` was asked and a case misses its expectation (exit 1)."""
        return not (self.check and self.failing)

    @property
    def exit_code(self) -> int:
        return OK if self.ok else FAILED

    def to_json(self) -> dict[str, Any]:
        return {"cases": [{"name": c.name, "derived": c.derived} for c in self.cases]}


def verdict_derive(
    cases_file: str | Path, *, registration: str | Path | None = None, check: bool = False
) -> Derivations:
    """Run every case of ``cases_file`` through the derivation (no ledger involved)."""
    try:
        raw = read_input(Path(cases_file), max_bytes=MAX_RECORD_BYTES)
        cases = CaseFile.model_validate(strict_json.loads(raw, str(cases_file)))
    except (ValueError, ValidationError) as exc:
        raise VerdictInputError(
            f"{cases_file}: not a gvc-derivation-cases/v1 file: {exc}"
        ) from None
    ladder = load_ladder(None if registration is None else Path(registration))
    derived = []
    for case in cases.cases:
        adm = derive_case(case, ladder)
        view, misses = derived_view(adm), case_mismatches(case, adm)
        derived.append(DerivedCase(case.name, view, None if case.expect is None else misses))
    return Derivations(tuple(derived), check)


@dataclass(frozen=True)
class Admissions(Result):
    """Admitted units, weakest evidence first, and the units still pending admission."""

    admissions: tuple[AdmissionRow, ...]
    pending: list[str]

    def to_json(self) -> dict[str, Any]:
        rows = [{"unit": r.unit, "seq": r.seq, **r.record} for r in self.admissions]
        return {"admissions": rows, "pending": self.pending}


def admissions(*, ledger: LedgerArg = None) -> Admissions:
    """``vledger admissions``: what ``units.admissions`` and ``units.pending_units`` list."""
    with opened(ledger, read_only=True) as lg:  # listing only reads
        return Admissions(tuple(units.admissions(lg)), pending_units(lg))


def verify_hook(lg: Any) -> list[Problem]:
    """``vledger verify`` hook: the admission checks, one Problem per finding."""
    return [Problem(unit_stream(unit), what) for unit, what in unit_problems(lg, None)]
