"""Optional checks against the reference material a workspace keeps beside the checkout.

Collected only under ``make crosscheck``, which sets ``VLEDGER_CROSSCHECK`` to that folder
(tests/conftest.py ignores this directory otherwise): ``make test`` and CI never need it.
Specification prose stays there; these tests read it in place and copy nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def reference() -> Path:
    root = Path(os.environ.get("VLEDGER_CROSSCHECK", ""))
    if not os.environ.get("VLEDGER_CROSSCHECK") or not root.is_dir():
        pytest.skip("no reference folder: run `make crosscheck REFERENCE=DIR`")
    return root
