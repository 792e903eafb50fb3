"""Properties of recording units through the API, over the in-memory reference store.

Whatever sequence of writes a harness attempts, (1) the API never lets an unsound
stream into the log — ``verify_admissions`` stays clean; (2) checking and appending
event by event gives the same log as one ``write_units`` batch of the accepted writes;
(3) every recorded admission equals the derivation over its unit's evidence.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.app import units as vd
from ledger.log.memory_store import MemoryLedger
from replay.verdicts.derive import derive
from replay.verdicts.evidence import unit_evidence
from tests.gvc_support import ladder

UNITS = ["u1", "u2"]
ORACLES = ["o1", "o2", "o3"]
PARTY = st.fixed_dictionaries(
    {
        "identity": st.sampled_from(["a", "b"]),
        "kind": st.sampled_from(["human", "agent", "kernel"]),
        "chain_id": st.sampled_from(["", "c1", "c2"]),
    }
)
CONTENT = st.sampled_from(["", "sha:a", "sha:b"])

declare = st.tuples(
    st.just("oracle.declared"),
    st.sampled_from(UNITS),
    st.fixed_dictionaries(
        {
            "oracle_id": st.sampled_from(ORACLES),
            "tier": st.sampled_from([*ladder().grades, "x"]),
            "author": PARTY,
        }
    ),
)
produced = st.tuples(
    st.just("work.produced"),
    st.sampled_from(UNITS),
    st.fixed_dictionaries({"producer": PARTY, "content_identity": CONTENT}),
)
ran = st.tuples(
    st.just("oracle.ran"),
    st.sampled_from(UNITS),
    st.fixed_dictionaries(
        {
            "oracle_id": st.sampled_from(ORACLES),
            "passed": st.booleans(),
            "runner": PARTY,
            "content_identity": CONTENT,
        }
    ),
)
admit = st.tuples(st.just("admit"), st.sampled_from(UNITS), st.just({}))
writes = st.lists(st.one_of(declare, produced, ran, admit), max_size=14)


def _log(lg: MemoryLedger) -> list[tuple[str, str, bytes]]:
    return [(e.stream, e.type, e.payload) for e in lg.read()]


@settings(max_examples=150, deadline=None)
@given(writes)
def test_one_by_one_equals_one_batch_and_stays_sound(items) -> None:
    one = MemoryLedger()
    accepted = []
    for item in items:
        try:
            vd.write_units(one, [item])
        except vd.UnitRejected:
            continue
        accepted.append(item)
    assert vd.verify_admissions(one) == []
    batch = MemoryLedger()
    vd.write_units(batch, accepted)
    assert _log(batch) == _log(one)
    for row in vd.admissions(one):
        events = [vd.as_unit_event(e) for e in one.read(stream=f"unit/{row.unit}")]
        evidence = [e for e in events if e.type != "verdict.admitted"]
        want = derive(unit_evidence(row.unit, evidence), ladder()).record()
        assert {k: row.record[k] for k in want} == want
