"""Shared fixtures for the GVC tests: the canonical registration and the 28 cases, read
from the upstream conformance copies in tests/data/gvc (never from the product's own copy
of the registration, which they are checked against)."""

from __future__ import annotations

import json
from functools import cache

from schemas.gvc import CaseFile, Ladder, Registration
from tests.data_paths import GVC_CASES, GVC_REGISTRATION

REGISTRATION_PATH = GVC_REGISTRATION
CASES_PATH = GVC_CASES


@cache
def canonical_registration() -> Registration:
    return Registration.model_validate_json(REGISTRATION_PATH.read_bytes())


@cache
def ladder() -> Ladder:
    return canonical_registration().ladder()


@cache
def case_file() -> CaseFile:
    return CaseFile.model_validate(json.loads(CASES_PATH.read_text()))
