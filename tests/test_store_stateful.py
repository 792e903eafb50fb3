"""A stateful machine driving the DuckDB store and the in-memory reference store together.

Rules: append (with optional ids and expected versions), re-append a stored event,
checkpoint, seal, verify, reopen. Invariants: seq dense, both stores agree on every result, error type,
size and root, and every checkpoint signed so far stays consistent with the current tree.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from ledger.errors import LedgerError
from ledger.log import merkle, note
from ledger.log.memory_store import MemoryLedger
from ledger.log.store import init_ledger, open_ledger
from ledger.log.verify import verify_ledger
from schemas.envelope import NewEvent
from tests.store_helpers import core_checks_only

SIGNER = note.generate_signer("stateful.test/log")
STREAMS = ["run/a", "run/b", "test/c"]

events = st.builds(
    NewEvent,
    stream=st.sampled_from(STREAMS),
    type=st.sampled_from(["ext.x", "ext.y"]),
    payload=st.fixed_dictionaries({"v": st.integers(0, 3)}),
    event_id=st.one_of(st.none(), st.sampled_from(["id1", "id2", "id3", "id4"])),
    expected_version=st.one_of(
        st.just("any"), st.sampled_from(["no_stream", "exists"]), st.integers(0, 4)
    ),
)


class StoreAgreement(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp())
        self.db = init_ledger(self.dir / "l")
        self.mem = MemoryLedger(origin=self.db.origin)
        self.checkpoints: list[note.Checkpoint] = []

    def teardown(self) -> None:
        self.db.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def both(self, fn: Any) -> Any:
        outcomes = []
        for store in (self.db, self.mem):
            try:
                outcomes.append(("ok", fn(store)))
            except LedgerError as exc:
                outcomes.append(("error", type(exc).__name__, str(exc)))
        assert outcomes[0] == outcomes[1], outcomes
        return outcomes[0]

    @rule(batch=st.lists(events, max_size=6))
    def append(self, batch: list[NewEvent]) -> None:
        self.both(lambda s: s.append(batch))

    @precondition(lambda self: self.mem.size() > 0)
    @rule(data=st.data())
    def reappend_stored(self, data: st.DataObject) -> None:
        e = data.draw(st.sampled_from(list(self.mem.read())))
        outcome = self.both(
            lambda s: s.append(
                [
                    NewEvent(
                        e.stream,
                        e.type,
                        e.data(),
                        event_id=e.event_id,
                        expected_version="no_stream",
                    )
                ]
            )
        )
        assert outcome[0] == "ok" and outcome[1].seqs == (e.seq,) and outcome[1].appended == 0

    @rule()
    def checkpoint(self) -> None:
        outcome = self.both(lambda s: s.checkpoint(SIGNER))
        self.checkpoints.append(note.parse_checkpoint(note.note_text(outcome[1])))

    @rule()
    def seal(self) -> None:
        """Sealing (DuckDB only) changes nothing the two stores are compared on."""
        before = self.db.sealed_upto()
        made = self.db.seal(max_rows=3)
        assert self.db.sealed_upto() == self.mem.size()
        assert sum(m.rows for m in made) == self.mem.size() - before

    @rule()
    def verify_clean(self) -> None:
        with core_checks_only():
            report = verify_ledger(self.db)
        assert report.ok, report.problems

    @rule()
    def reopen(self) -> None:
        self.db.close()
        self.db = open_ledger(self.dir / "l")

    @invariant()
    def agree_and_stay_consistent(self) -> None:
        n = self.mem.size()
        assert self.db.size() == n
        assert [e.seq for e in self.db.read()] == list(range(n))
        assert self.db.root() == self.mem.root()
        for cp in self.checkpoints:
            if cp.size:
                proof = self.db.prove_consistency(cp.size, n)
                merkle.check_consistency(cp.size, n, cp.root, self.db.root(), proof)


StoreAgreement.TestCase.settings = settings(max_examples=25, stateful_step_count=12, deadline=None)
TestStoreAgreement = StoreAgreement.TestCase
