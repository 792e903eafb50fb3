"""GVC conformance (spec § 9): registration identity (9.1) and fixture projection (9.2).

Every case of the GVC conformance fixtures (tests/data/gvc/derivation-cases.json) runs
through the real derivation. All nine canonical populations are compared in every
case; a population a case does not name expects zero (absence is an expectation).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from replay.verdicts.cases import case_mismatches, derive_case
from schemas.gvc import COUNTER_MAPPING, COUNTER_NAMES, Registration
from tests.gvc_support import (
    CASES_PATH,
    REGISTRATION_PATH,
    canonical_registration,
    case_file,
    ladder,
)

ROOT = Path(__file__).resolve().parents[1]
CASES = case_file().cases


def test_fixture_file_has_the_28_cases() -> None:
    raw = json.loads(CASES_PATH.read_text())
    assert raw["schema"] == "gvc-derivation-cases/v1"
    assert len(raw["cases"]) == 28 == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case(case) -> None:
    admission = derive_case(case, ladder())
    assert case_mismatches(case, admission) == []


def test_every_fixture_counter_key_is_a_canonical_population() -> None:
    raw = json.loads(CASES_PATH.read_text())
    seen = {k for c in raw["cases"] for k in c["expect"].get("counters", {})}
    assert seen == set(COUNTER_NAMES), "the fixtures name exactly the nine populations"


def test_admission_payload_carries_exactly_the_nine_populations() -> None:
    from schemas.verdict_events import AdmissionCounters

    assert tuple(AdmissionCounters.model_fields) == COUNTER_NAMES


def test_counter_mapping_is_static_total_and_injective() -> None:
    assert set(COUNTER_MAPPING.values()) == set(COUNTER_NAMES)  # total
    assert len(set(COUNTER_MAPPING.values())) == len(COUNTER_MAPPING)  # injective


def test_unnamed_counter_expects_zero() -> None:
    """A case naming only some populations still fails on a nonzero unnamed one."""
    case = next(c for c in CASES if c.name == "same_chain_cap_exempts_kernel_proof")
    assert set(json.loads(CASES_PATH.read_text())["cases"][4]["expect"]["counters"]) == {
        "proof_kernel_exempt"
    }
    admission = derive_case(case, ladder())
    assert case_mismatches(case, admission) == []
    broken = replace(admission, counters={**admission.counters, "tied_uncap": 1})
    assert case_mismatches(case, broken) == ["counters.tied_uncap: got 1, want 0"]


def test_shipped_registration_matches_canonical_identity_fields() -> None:
    """§ 9.1: identical in exactly schema_version and ordered_grades."""
    ours = Registration.model_validate_json(
        (ROOT / "ledger" / "app" / "verdict-grade-registration.json").read_bytes()
    )
    canon = canonical_registration()
    assert (ours.schema_version, ours.ordered_grades) == (
        canon.schema_version,
        canon.ordered_grades,
    )
    assert json.loads(REGISTRATION_PATH.read_text())["ordered_grades"][-1] == ladder().floor


def test_out_of_vocabulary_ranks_below_floor() -> None:
    lad = ladder()
    assert lad.rank("certified") == 0 < lad.rank("unverified") == 1 < lad.rank("proof") == 6
    assert lad.demote("unverified") == "unverified"
    assert lad.demote("interop") == "constructed_check"
