"""verdict-ledger's Python API: one function per ``vledger`` verb, with the CLI's keywords.

``import ledger`` is cheap: each name below is imported from its use case the first time it
is read (PEP 562), so a notebook pays only for what it calls. Every function returns a
typed result whose ``to_json()`` is what the command's ``--json`` prints; the CLI is a thin
layer over these (docs/readme/api.md).
"""

from __future__ import annotations

import importlib
from typing import Any

# public name -> "module:attribute"; tests/test_api.py checks every entry resolves
API: dict[str, str] = {
    "open": "ledger.log.store:open_ledger",
    "init": "ledger.log.store:init_ledger",
    "LedgerError": "ledger.errors:LedgerError",
}

__all__ = sorted(API)


def __getattr__(name: str) -> Any:
    target = API.get(name)
    if target is None:
        raise AttributeError(f"module 'ledger' has no attribute {name!r}")
    module, _, attr = target.partition(":")
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value  # later reads skip this hook
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(API))
