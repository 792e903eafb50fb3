"""Guarantee 7: SIGKILL a writer mid-batch, repeatedly, at random points; reopen and check.

After each kill: seq dense, every batch wholly present or absent, each round's batches a
prefix, every batch the writer saw acknowledged still there (durable on return), and
``verify`` clean — checkpoints written with fsync+rename, interrupted seals finished by
``open_ledger``. The random seed is fixed so a failure reproduces.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.process_harness import crash_rounds
from tests.store_helpers import no_extra_checks  # noqa: F401  (fixture)

pytestmark = pytest.mark.usefixtures("no_extra_checks")


@pytest.mark.slow
def test_sigkill_at_random_points_leaves_whole_batches(tmp_path: Path) -> None:
    acknowledged = crash_rounds(tmp_path / "ledger", tmp_path, rounds=10, seed=20261130)
    # the kills landed while batches were flowing, not before the first one
    assert acknowledged >= 10
