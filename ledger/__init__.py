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
    # the log
    "open": "ledger.log.store:open_ledger",
    "init": "ledger.log.store:init_ledger",
    "append": "ledger.app.store_ops:append",
    "events": "ledger.app.store_ops:events",  # `vledger log` (ledger.log is the package)
    "keygen": "ledger.app.store_ops:keygen",
    "checkpoint": "ledger.app.store_ops:checkpoint",
    "prove": "ledger.app.store_ops:prove",
    "seal": "ledger.app.store_ops:seal",
    "repair": "ledger.app.store_ops:repair",
    "verify": "ledger.app.verify:verify",
    # evidence in, projections out
    "ingest": "ledger.app.ingest:ingest",
    "grade": "ledger.app.grade:grade",
    "retrace": "ledger.app.retrace:retrace",
    "reconcile": "ledger.app.reconcile:reconcile",
    "validate": "ledger.app.validate:validate",
    "curate": "ledger.app.curate:curate",
    "export": "ledger.app.export:export",
    # analytics
    "sql": "ledger.analytics.sql:sql",
    "view": "ledger.analytics.frames:view",
    "report": "ledger.analytics.report:report",
    # verdict grades and receipts
    "verdict_declare": "ledger.app.verdicts:verdict_declare",
    "verdict_ran": "ledger.app.verdicts:verdict_ran",
    "verdict_produced": "ledger.app.verdicts:verdict_produced",
    "verdict_admit": "ledger.app.verdicts:verdict_admit",
    "verdict_record": "ledger.app.verdicts:verdict_record",
    "verdict_derive": "ledger.app.verdicts:verdict_derive",
    "admissions": "ledger.app.verdicts:admissions",
    "receipt_verify": "ledger.app.receipts:receipt_verify",
    "receipt_show": "ledger.app.receipts:receipt_show",
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
