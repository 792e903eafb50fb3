"""Every log inspect_ai's own repository ships as text test data (tests/data/inspect_ai_logs,
provenance in its README) reads with the sample count inspect_ai itself reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger.app.ingest import ingest_into as ingest
from ledger.log.store import open_ledger
from ledger.sources.inspect_log import log_samples
from ledger.sources.yaml_safe import DEFAULT_LIMITS
from tests.inspect_support import require_inspect

LOGS = sorted((Path(__file__).parent / "data" / "inspect_ai_logs").glob("*.json"))


@pytest.mark.parametrize("log", LOGS, ids=[p.name for p in LOGS])
def test_a_shipped_log_reads_every_sample_inspect_reads(log: Path, tmp_path: Path) -> None:
    require_inspect()
    from inspect_ai.log import read_eval_log

    expected = [(s.id, s.epoch) for s in read_eval_log(str(log)).samples or ()]
    assert expected  # each shipped log holds samples
    limits = DEFAULT_LIMITS
    read = [(s.id, s.epoch) for _, s in log_samples(log, log.name, limits.max_bytes,
                                                     limits.max_nodes, log)]  # fmt: skip
    assert read == expected
    with open_ledger(tmp_path / "L", create=True) as lg:
        # a log whose views disagree is kept with the disagreement recorded, not dropped
        report = ingest(lg, [log], keep_inconsistent=True)
    assert report.trials_new == len(expected) and report.skipped == []


def test_the_oldest_shipped_log_needs_no_flag(tmp_path: Path) -> None:
    require_inspect()
    (old,) = [p for p in LOGS if p.name == "log_formats.json"]  # inspect_ai 0.3.41
    with open_ledger(tmp_path / "L", create=True) as lg:
        report = ingest(lg, [old])
    assert (report.trials_new, report.inconsistent) == (1, [])
