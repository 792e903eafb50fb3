"""Conformance-case projection (GVC spec § 9.2): run a case through the real derivation
and compare it with its expectation the way the spec prescribes.

Every canonical population is compared in every case — a population the expectation
does not name expects zero — and the other fields are compared when the case names
them. Comparison is per field, never whole-structure equality.
"""

from __future__ import annotations

from typing import Any

from replay.verdicts.derive import Admission, derive
from replay.verdicts.evidence import evidence_from_case
from schemas.gvc import COUNTER_MAPPING, COUNTER_NAMES, Case, Ladder


def derive_case(case: Case, ladder: Ladder) -> Admission:
    return derive(evidence_from_case(case.input), ladder)


# The custody record fields a conformance case can expect (spec § 9.2, CaseExpect): the
# custody triples are there so a consumer of the JSON can ask *whose tests* (§ 3).
DERIVED_FIELDS = (
    "effective_grade",
    "evidence_kind",
    "applied_rank_ops",
    "conflicting_evidence",
    "failed_declared_evidence",
    "provenance",
    "oracle_author",
    "oracle_runner",
    "work_producer",
)


def derived_view(admission: Admission) -> dict[str, Any]:
    """The ``derived`` object of ``vledger verdict derive --json``: the record's fields a
    case can expect, then the counters under the canonical population names."""
    record = admission.record()
    return {
        **{name: record[name] for name in DERIVED_FIELDS},
        "counters": canonical_counters(admission),
    }


def canonical_counters(admission: Admission) -> dict[str, int]:
    """Local counters under the declared static mapping onto canonical populations;
    fail-closed (§ 9.2): an uncovered canonical population raises."""
    image = {canonical: local for local, canonical in COUNTER_MAPPING.items()}
    missing = [name for name in COUNTER_NAMES if name not in image]
    if missing:
        raise LookupError(f"counter mapping does not cover canonical populations {missing}")
    return {name: int(admission.counters[image[name]]) for name in COUNTER_NAMES}


def case_mismatches(case: Case, admission: Admission) -> list[str]:
    """``field: got X, want Y`` for every expectation the derivation misses."""
    expect = case.expect
    if expect is None:
        return []
    got = admission
    out: list[str] = []

    def check(name: str, have: Any, want: Any) -> None:
        if have != want:
            out.append(f"{name}: got {have!r}, want {want!r}")

    for name in DERIVED_FIELDS:  # a field the case leaves out (None) is not compared
        want = getattr(expect, name)
        if want is not None:
            have = getattr(got, name)
            if name == "applied_rank_ops":
                have, want = list(have), list(want)
            check(name, have, want)
    counters = canonical_counters(got)
    wanted = expect.counters.model_dump()
    for name in COUNTER_NAMES:
        check(f"counters.{name}", counters[name], wanted[name])
    return out
