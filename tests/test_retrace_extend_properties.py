"""Property: for any interleaving of ingest (new trials, new corpora), re-scored trials,
config changes and retraces, a retrace that extends an earlier replay reports exactly what
a full replay over the same log reports, and its receipt re-checks by recomputation."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ledger.app.ingest import ingest_into
from ledger.app.receipts import verify_ledger_receipt
from ledger.app.retrace import RetraceError
from ledger.log.memory_store import MemoryLedger
from tests.test_retrace_extend import BUNDLES, NARROWED, assert_extends_like_full, rescore

CONFIGS: dict[str, dict[str, Any]] = {
    "recorded": {},
    "narrowed": {"constraints_file": NARROWED},
    "corpus": {"corpus": "notes"},
}

ingest_op = st.tuples(
    st.just("ingest"),
    st.lists(st.integers(0, len(BUNDLES) - 1), min_size=1, max_size=4, unique=True),
    st.sampled_from(["notes", "more"]),  # a second corpus name makes new trial streams
)
rescore_op = st.tuples(st.just("rescore"), st.integers(0, 50))
# mostly one config, so runs extend one another; now and then another, which must not be
# carried across
retrace_op = st.tuples(
    st.just("retrace"), st.sampled_from(["recorded", "recorded", "recorded", "narrowed", "corpus"])
)
OPS = st.lists(st.one_of(ingest_op, rescore_op, retrace_op, retrace_op), min_size=3, max_size=8)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS)
def test_an_extended_retrace_equals_a_full_one(ops: list[tuple[Any, ...]]) -> None:
    lg = MemoryLedger()
    last = None
    for n, op in enumerate([("ingest", [0, 9], "notes"), ("retrace", "recorded"), *ops]):
        if op[0] == "ingest":
            # a re-scored trial's bundle no longer matches its stream: skipped, as recorded
            ingest_into(lg, [str(BUNDLES[i]) for i in op[1]], op[2], skip_bad=True)
        elif op[0] == "rescore":
            streams = lg.streams(prefix="trial/")
            if streams:
                rescore(lg, streams[op[1] % len(streams)], n)
        else:
            try:
                last = assert_extends_like_full(lg, **CONFIGS[op[1]])
                event("extended" if "extends" in last.report["receipt"] else "full")
            except RetraceError:  # no trial (yet) matches: both refuse, nothing appended
                size = lg.size()
                with pytest.raises(RetraceError):
                    assert_extends_like_full(lg, **CONFIGS[op[1]])
                assert lg.size() == size
    if last is not None:
        check = verify_ledger_receipt(lg, f"{last.report['replay_id']}:completed", recompute=True)
        assert check.ok, check.problems
