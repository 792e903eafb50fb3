"""A verdict unit's stream in the ledger: record its evidence, admit it, list and verify.

The stream, its order and what each write refuses: docs/readme/verdict.md § Recording and
admitting a unit. A write appends with the stream version it checked, so a concurrent
writer cannot slip an event between the check and the append.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ledger.errors import LedgerError
from ledger.log.protocol import Store
from ledger.sources import strict_json
from ledger.sources.files import InputError
from replay.verdicts.derive import Admission, derive
from replay.verdicts.evidence import (
    UnitEvent,
    UnitEvidenceError,
    check_stream,
    check_unit_events,
    unit_evidence,
)
from schemas.canonical import canonical_json
from schemas.envelope import NewEvent, StoredEvent
from schemas.gvc import Ladder, Party, Registration
from schemas.verdict_events import VerdictAdmitted

UNIT_PREFIX = "unit/"
ADMITTED = "verdict.admitted"
REGISTRATION_FILE = Path(__file__).with_name("verdict-grade-registration.json")


class UnitRejected(LedgerError, ValueError):
    """An event refused before it reached the log; names the unit and every problem."""

    def __init__(self, unit: str, problems: list[str]) -> None:
        self.unit = unit
        self.problems = problems
        super().__init__(f"unit {unit!r}: " + "; ".join(problems))


def load_registration(path: Path | None = None) -> Registration:
    """The grade vocabulary registration (GVC § 2), by default the copy shipped with us,
    which tests assert identical to the canonical one in its identity fields (§ 9.1)."""
    source = REGISTRATION_FILE if path is None else Path(path)
    try:
        return Registration.model_validate_json(source.read_bytes())
    except OSError as exc:
        raise FileNotFoundError(
            f"cannot read the grade registration {str(source)!r}: {exc}"
        ) from None


def load_ladder(path: Path | None = None) -> Ladder:
    return load_registration(path).ladder()


def unit_stream(unit: str) -> str:
    if not unit or "\n" in unit:  # refused as an event would be: `Error:`, never a traceback
        raise UnitRejected(unit, ["a unit id must be a non-empty single line; name the unit"])
    return UNIT_PREFIX + unit


def unit_of(stream: str) -> str:
    return stream[len(UNIT_PREFIX) :]


def as_unit_event(ev: StoredEvent) -> UnitEvent:
    return UnitEvent(ev.type, ev.data(), seq=ev.seq, stream_version=ev.stream_version)


def read_unit(lg: Store, unit: str) -> list[UnitEvent]:
    return [as_unit_event(ev) for ev in lg.read(stream=unit_stream(unit))]


ADMIT = "admit"  # the pseudo-type of an admission request in a batch
WRITE_TYPES = ("oracle.declared", "work.produced", "oracle.ran", ADMIT)


@dataclass(frozen=True, slots=True)
class Written:
    """What one requested write became: its seq (the original one for an idempotent
    repeat of identical content), and the admission when it was an admit."""

    unit: str
    type: str
    seq: int
    duplicate: bool = False
    admission: Admission | None = None


class _Stream:
    """A unit's stream as it will stand once the pending batch is appended: its check
    state, the content already stored or pending (for idempotence) and its versions."""

    def __init__(self, unit: str, events: list[UnitEvent]) -> None:
        self.unit = unit
        self.base = events[-1].stream_version if events else None
        self.pending = 0
        self.seq_of: dict[tuple[str, bytes], int] = {
            _content_key(e.type, e.data): e.seq for e in events if e.seq is not None
        }
        self.pending_at: dict[tuple[str, bytes], int] = {}  # key -> index in the batch
        self.check = check_stream(unit, events)
        self.through = -1  # version of the last evidence event (before any admission)
        for e in events:
            if e.type == ADMITTED:
                break
            self.through = e.stream_version

    def next_version(self) -> int:
        return (-1 if self.base is None else self.base) + self.pending + 1

    def expected(self) -> int | str:
        """The store checks only a stream's first event in a batch against this."""
        if self.pending:
            return "any"
        return "no_stream" if self.base is None else self.base


def _content_key(type: str, data: Any) -> tuple[str, bytes]:
    return type, canonical_json(dict(data))


def write_units(
    lg: Store,
    items: Iterable[tuple[str, str, dict[str, Any]]],
    registration: Registration | None = None,
) -> list[Written]:
    """Check every ``(type, unit, payload)`` in order and append them as ONE atomic batch
    (``admit``: derive ``verdict.admitted`` as the stream stands there); the first refusal
    raises ``ItemRejected`` and nothing is appended."""
    registration = registration or load_registration()
    ladder = registration.ladder()
    items = list(items)
    streams: dict[str, _Stream] = {}
    # One query for which units exist, so a batch of fresh units reads nothing more.
    existing = set(lg.streams(prefix=UNIT_PREFIX)) if len(items) > 1 else None
    batch: list[NewEvent] = []
    plan: list[tuple[int | None, Written]] = []  # (batch index or None, result)
    for index, (type, unit, payload) in enumerate(items):
        st = streams.get(unit)
        if st is None:
            known = existing is None or unit_stream(unit) in existing
            st = streams[unit] = _Stream(unit, read_unit(lg, unit) if known else [])
        try:
            body, admission = _checked(st, type, payload, registration, ladder)
        except UnitRejected as exc:
            raise ItemRejected(index, unit, exc.problems) from None
        event_type = ADMITTED if type == ADMIT else type
        key = _content_key(event_type, body)
        if key in st.seq_of:  # identical content already stored: the store's no-op
            plan.append((None, Written(unit, type, st.seq_of[key], True, admission)))
            continue
        if key in st.pending_at:  # identical content earlier in this batch
            plan.append((st.pending_at[key], Written(unit, type, -1, True, admission)))
            continue
        batch.append(NewEvent(unit_stream(unit), event_type, body, expected_version=st.expected()))
        if event_type == ADMITTED:
            st.check.feed(UnitEvent(ADMITTED, body))
        else:
            st.through = st.next_version()
        st.pending_at[key] = len(batch) - 1
        st.pending += 1
        plan.append((len(batch) - 1, Written(unit, type, -1, False, admission)))
    seqs = lg.append(batch).seqs if batch else ()
    return [w if at is None else replace(w, seq=seqs[at]) for at, w in plan]


def _checked(
    st: _Stream, type: str, payload: dict[str, Any], registration: Registration, ladder: Ladder
) -> tuple[dict[str, Any], Admission | None]:
    if type == ADMIT:
        if st.base is None and not st.pending:  # a misspelt name would be admitted for ever
            raise UnitRejected(st.unit, [
                "no event was recorded for this unit (no judge declared, no run, no work): "
                "nothing to admit; check the name (`vledger admissions` lists pending units)"])  # fmt: skip
        try:
            admission = derive(st.check.evidence(), ladder)
        except UnitEvidenceError as exc:
            raise UnitRejected(st.unit, list(exc.problems)) from None
        body = admission_payload(st.unit, admission, registration.schema_version, st.through)
        key = _content_key(ADMITTED, body)
        if st.check.admitted_where and key not in st.seq_of and key not in st.pending_at:
            # admitted once already, and not to this same record: never re-admit
            raise UnitRejected(st.unit, [f"unit already admitted ({st.check.admitted_where})"])
        return body, admission
    if type not in WRITE_TYPES:
        raise UnitRejected(st.unit, [f"type {type!r} is not one of {', '.join(WRITE_TYPES)}"])
    body = {**payload, "unit": st.unit}
    key = _content_key(type, body)
    if key in st.seq_of or key in st.pending_at:
        return body, None  # an identical repeat: the store treats it as a no-op
    if st.check.problems:  # the stream is already broken: add nothing to it
        raise UnitRejected(st.unit, list(st.check.problems))
    problems = st.check.feed(UnitEvent(type, body))
    if problems:
        raise UnitRejected(st.unit, problems)
    return body, None


def record(lg: Store, unit: str, type: str, payload: dict[str, Any]) -> int:
    """Check and append one evidence event to ``unit/<unit>``; return its seq (the original
    one for identical content). ``UnitRejected`` names what would make the stream unsound."""
    return write_units(lg, [(type, unit, payload)])[0].seq


def _given(**optional: Any) -> dict[str, Any]:
    """The optional payload fields that were given (an absent one is not written as null)."""
    return {k: v for k, v in optional.items() if v is not None}


def declare(
    lg: Store, unit: str, oracle_id: str, tier: str, author: Party, command: str | None = None
) -> int:
    payload = {"oracle_id": oracle_id, "tier": tier, "author": author.model_dump()}
    return record(lg, unit, "oracle.declared", {**payload, **_given(command=command)})


def ran(
    lg: Store, unit: str, oracle_id: str, passed: bool, runner: Party,
    content_identity: str = "", exit_code: int | None = None, evidence: str | None = None,
) -> int:  # fmt: skip
    payload = {"oracle_id": oracle_id, "passed": passed, "runner": runner.model_dump(),
               "content_identity": content_identity}  # fmt: skip
    optional = _given(exit_code=exit_code, evidence=evidence)
    return record(lg, unit, "oracle.ran", {**payload, **optional})


def produced(
    lg: Store, unit: str, producer: Party, content_identity: str = "",
    producer_supplied_grade: str | None = None,
) -> int:  # fmt: skip
    payload = {"producer": producer.model_dump(), "content_identity": content_identity}
    optional = _given(producer_supplied_grade=producer_supplied_grade)
    return record(lg, unit, "work.produced", {**payload, **optional})


def admission_payload(
    unit: str, admission: Admission, registration: str, through_version: int
) -> dict[str, Any]:
    payload = {"unit": unit, **admission.record(), "registration": registration,
               "through_version": through_version}  # fmt: skip
    VerdictAdmitted.model_validate(payload)  # our own record must fit the closed schema
    return payload


def derive_unit(events: list[UnitEvent], unit: str, ladder: Ladder) -> Admission:
    """The admission of a unit from its evidence events (refuses a broken stream)."""
    return derive(unit_evidence(unit, events), ladder)


def admit(lg: Store, unit: str, registration: Registration | None = None) -> Admission:
    """Derive the unit's record and append it as ``verdict.admitted`` — exactly once (a
    broken or already admitted stream: ``UnitRejected``; no work: fail-closed, GVC § 8)."""
    written = write_units(lg, [(ADMIT, unit, {})], registration)[0]
    assert written.admission is not None
    return written.admission


class ItemRejected(UnitRejected):
    """A refused item of a ``write_units`` batch; ``index`` is its position."""

    def __init__(self, index: int, unit: str, problems: list[str]) -> None:
        self.index = index
        super().__init__(unit, problems)


class LineRejected(LedgerError, ValueError):
    """A JSONL line that could not be recorded; names the source, the line and why."""

    def __init__(self, source: str, lineno: int, detail: str) -> None:
        self.source, self.lineno, self.detail = source, lineno, detail
        super().__init__(f"{source}:{lineno}: {detail}")


def parse_jsonl(text: str, source: str = "<stdin>") -> list[tuple[int, tuple[str, str, dict]]]:
    """``(line number, (type, unit, payload))`` per non-blank line, or ``LineRejected``."""
    items = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:  # faithful or refused: duplicate keys, NaN, 65-bit integers, deep nesting
            obj = strict_json.loads(line, source, line=lineno)
        except InputError as exc:
            raise LineRejected(source, lineno, exc.problem) from None
        if not isinstance(obj, dict) or obj.get("type") not in WRITE_TYPES:
            raise LineRejected(
                source, lineno, f"want an object whose type is one of {', '.join(WRITE_TYPES)}"
            )
        unit = obj.get("unit")
        if not isinstance(unit, str) or not unit:
            raise LineRejected(source, lineno, "missing 'unit' (a non-empty string)")
        body = {k: v for k, v in obj.items() if k not in ("type", "unit")}
        if obj["type"] == ADMIT and body:
            raise LineRejected(source, lineno, "an admit line carries only 'type' and 'unit'")
        items.append((lineno, (obj["type"], unit, body)))
    return items


def record_jsonl(lg: Store, text: str, source: str = "<stdin>") -> list[Written]:
    """One append path for harnesses: each line is ``{"type": …, "unit": …, …payload}``,
    all or nothing as :func:`write_units`; the first refused line raises ``LineRejected``."""
    parsed = parse_jsonl(text, source)
    try:
        return write_units(lg, [item for _, item in parsed])
    except ItemRejected as exc:
        raise LineRejected(source, parsed[exc.index][0], str(exc)) from None


@dataclass(frozen=True, slots=True)
class AdmissionRow:
    unit: str
    seq: int
    record: dict[str, Any]


def admissions(lg: Store, ladder: Ladder | None = None) -> list[AdmissionRow]:
    """Every recorded admission, weakest evidence first (then flagged failures first,
    then unit id), so the least-evidenced work surfaces before confident summaries."""
    ladder = ladder or load_ladder()
    rows = [
        AdmissionRow(unit_of(ev.stream), ev.seq, ev.data())
        for ev in lg.read(type=ADMITTED)
        if ev.stream.startswith(UNIT_PREFIX)
    ]
    def weakest_first(r: AdmissionRow) -> tuple[int, bool, str]:
        rec = r.record
        return (ladder.rank(rec.get("effective_grade", "")),
                not rec.get("failed_declared_evidence", False), r.unit)  # fmt: skip

    return sorted(rows, key=weakest_first)


def pending_units(lg: Store) -> list[str]:
    """Units with evidence but no admission yet (surfaced, never silently dropped)."""
    admitted = {ev.stream for ev in lg.read(type=ADMITTED)}
    return [unit_of(s) for s in lg.streams(prefix=UNIT_PREFIX) if s not in admitted]


def verify_admissions(lg: Store, registration: Registration | None = None) -> list[str]:
    """Check every ``unit/`` stream and re-derive every recorded admission; one problem
    string per thing that is off."""
    return [f"unit {unit!r}: {what}" for unit, what in unit_problems(lg, registration)]


def unit_problems(lg: Store, registration: Registration | None) -> list[tuple[str, str]]:
    registration = registration or load_registration()
    ladder = registration.ladder()
    problems: list[tuple[str, str]] = []
    by_stream: dict[str, list[UnitEvent]] = {}
    for ev in lg.read(stream_prefix=UNIT_PREFIX):  # one scan, grouped in seq order
        by_stream.setdefault(ev.stream, []).append(as_unit_event(ev))
    for stream in sorted(by_stream):
        unit, events = unit_of(stream), by_stream[stream]
        problems.extend((unit, p) for p in check_unit_events(unit, events))
        for i, ev in enumerate(events):
            if ev.type == ADMITTED:
                problems.extend(
                    (unit, p) for p in _check_admission(unit, events[:i], ev, registration, ladder)
                )
    return problems


def _check_admission(
    unit: str, before: list[UnitEvent], admitted: UnitEvent, registration: Registration,
    ladder: Ladder,
) -> list[str]:  # fmt: skip
    where = f"verdict.admitted at seq {admitted.seq}"
    evidence = [e for e in before if e.type != ADMITTED]
    try:
        admission = derive_unit(evidence, unit, ladder)
    except UnitEvidenceError as exc:
        return [
            f"{where} was derived from evidence that cannot be admitted: {'; '.join(exc.problems)}"
        ]
    through = evidence[-1].stream_version if evidence else -1
    expected = admission_payload(unit, admission, registration.schema_version, through)
    recorded = dict(admitted.data)
    diffs = [
        f"{k} recorded {recorded.get(k)!r}, re-derived {expected.get(k)!r}"
        for k in sorted(set(expected) | set(recorded))
        if recorded.get(k) != expected.get(k)
    ]
    return [f"{where} differs from its re-derivation: " + "; ".join(diffs)] if diffs else []
