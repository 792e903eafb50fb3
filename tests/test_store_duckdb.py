"""The DuckDB backend held to the store contract."""

from __future__ import annotations

from pathlib import Path

from ledger.store import Ledger, init_ledger, open_ledger
from tests.store_contract import StoreContract


class TestDuckDBStore(StoreContract):
    def open_store(self, path: Path) -> Ledger:
        return init_ledger(path)

    def reopen_store(self, path: Path) -> Ledger:
        return open_ledger(path)
