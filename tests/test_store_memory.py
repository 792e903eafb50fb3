"""The in-memory reference store held to the same contract as the DuckDB store."""

from __future__ import annotations

from pathlib import Path

from ledger.log.memory_store import MemoryLedger
from tests.store_contract import StoreContract


class TestMemoryStore(StoreContract):
    persistent = False
    multi_process = False

    def open_store(self, path: Path) -> MemoryLedger:
        return MemoryLedger(path)
