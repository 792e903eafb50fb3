"""Shared fixtures for the GVC tests: the canonical registration and the 28 conformance
cases, as GVC publishes them (never a copy rewritten by us)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from schemas.gvc import CaseFile, Ladder, Registration

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared"
GVC = SHARED / "reference" / "gvc"
REGISTRATION_PATH = GVC / "registration" / "verdict-grade-registration.json"
CASES_PATH = GVC / "conformance" / "fixtures" / "derivation-cases.json"


@cache
def canonical_registration() -> Registration:
    return Registration.model_validate_json(REGISTRATION_PATH.read_bytes())


@cache
def ladder() -> Ladder:
    return canonical_registration().ladder()


@cache
def case_file() -> CaseFile:
    return CaseFile.model_validate(json.loads(CASES_PATH.read_text()))
