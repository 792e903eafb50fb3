"""verdict-ledger's Python API: one function per ``vledger`` verb, with the CLI's keywords.

``import ledger`` is cheap: each name below is imported from its use case the first time it
is read (PEP 562), so a notebook pays only for what it calls. Every verb takes the ledger as
the keyword ``ledger=`` and returns a typed result whose ``to_json()`` is what the command's
``--json`` prints, and whose ``exit_code`` (where it has one) is the command's; the CLI is a
thin layer over these and imports nothing else of the package (docs/readme/api.md).
"""

from __future__ import annotations

import importlib
from typing import Any

# public name -> "module:attribute"; tests/test_api.py checks every entry resolves
VERBS: dict[str, str] = {
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
}

# the error classes a caller catches: each carries the exit code the CLI exits with
ERRORS: dict[str, str] = {
    "LedgerError": "schemas.errors:LedgerError",
    "UsageError": "schemas.errors:UsageError",
    "Interrupted": "schemas.errors:Interrupted",
    "LedgerNotFound": "ledger.errors:LedgerNotFound",
    "LedgerExists": "ledger.errors:LedgerExists",
    "LedgerBusy": "ledger.errors:LedgerBusy",
    "StreamVersionConflict": "ledger.errors:StreamVersionConflict",
    "EventIdConflict": "ledger.errors:EventIdConflict",
    "StreamSealed": "ledger.errors:StreamSealed",
    "InvalidEvent": "ledger.errors:InvalidEvent",
    "ProofError": "ledger.errors:ProofError",
    "CheckpointError": "ledger.errors:CheckpointError",
    "TamperDetected": "ledger.errors:TamperDetected",
    "OutputInLedger": "ledger.errors:OutputInLedger",
    "AppendFileError": "ledger.app.store_ops:AppendFileError",
    "IngestError": "ledger.app.ingest:IngestError",
    "GradeInputError": "ledger.app.grade:GradeInputError",
    "RetraceError": "ledger.app.retrace:RetraceError",
    "EngineError": "ledger.engines.base:EngineError",
    "ReconcileError": "ledger.app.reconcile_packs:ReconcileError",
    "MigrationLoadError": "ledger.app.reconcile_packs:MigrationLoadError",
    "CurationError": "replay.receipts.curation:CurationError",
    "CurateUsage": "ledger.app.curate:CurateUsage",
    "ExportError": "ledger.app.export:ExportError",
    "SqlRefused": "ledger.analytics.sql:SqlRefused",
    "SqlQueryError": "ledger.analytics.sql:SqlQueryError",
    "UnknownView": "ledger.analytics.frames:UnknownView",
    "UnitRejected": "ledger.app.units:UnitRejected",
    "VerdictInputError": "ledger.app.verdicts:VerdictInputError",
    "ReceiptNotFound": "ledger.app.receipts:ReceiptNotFound",
    "ReceiptMalformed": "ledger.app.receipts:ReceiptMalformed",
}

# what the verbs return (each a frozen dataclass; ``to_json()`` is the command's --json)
RESULTS: dict[str, str] = {
    "Result": "ledger.app.result:Result",
    "AppendFileResult": "ledger.app.store_ops:AppendFileResult",
    "EventsResult": "ledger.app.store_ops:EventsResult",
    "KeygenResult": "ledger.app.store_ops:KeygenResult",
    "CheckpointResult": "ledger.app.store_ops:CheckpointResult",
    "ProveResult": "ledger.app.store_ops:ProveResult",
    "SealResult": "ledger.app.store_ops:SealResult",
    "RepairResult": "ledger.app.store_ops:RepairResult",
    "VerifyResult": "ledger.app.verify:VerifyResult",
    "IngestResult": "ledger.app.ingest:IngestResult",
    "GradeResult": "ledger.app.grade:GradeResult",
    "RetraceResult": "ledger.app.retrace:RetraceResult",
    "RetraceStatus": "schemas.retrace_status:RetraceStatus",
    "ReconcileResult": "ledger.app.reconcile:ReconcileResult",
    "ValidateResult": "ledger.app.validate:ValidateResult",
    "CurateResult": "ledger.app.curate:CurateResult",
    "Exported": "ledger.app.export:Exported",
    "SqlResult": "ledger.analytics.sql:SqlResult",
    "ReportResult": "ledger.analytics.report:ReportResult",
    "Recorded": "ledger.app.verdicts:Recorded",
    "Admitted": "ledger.app.verdicts:Admitted",
    "RecordedBatch": "ledger.app.verdicts:RecordedBatch",
    "DerivedCase": "ledger.app.verdicts:DerivedCase",
    "Derivations": "ledger.app.verdicts:Derivations",
    "Admissions": "ledger.app.verdicts:Admissions",
    "ReceiptCheck": "ledger.app.receipts:ReceiptCheck",
    "ReceiptShown": "ledger.app.receipts:ReceiptShown",
    "ABSENT": "replay.receipts.verify:ABSENT",  # a receipt leaf one side does not have
    "COUNTER_NAMES": "schemas.gvc:COUNTER_NAMES",  # a derived grade's counters, in order
    "PUBLIC_VIEWS": "ledger.analytics.views:PUBLIC_VIEWS",  # what `sql` and `view` read
}

# the defaults every verb and option shows (ledger/defaults.py, stdlib only), and helpers
# a caller that prints or writes results needs
NAMES: dict[str, str] = {
    "DEFAULT_LEDGER": "ledger.defaults:DEFAULT_LEDGER",
    "DEFAULT_DEMO_LEDGER": "ledger.defaults:DEFAULT_DEMO_LEDGER",
    "DEFAULT_BUSY_TIMEOUT": "ledger.defaults:DEFAULT_BUSY_TIMEOUT",
    "DEFAULT_KEY_NAME": "ledger.defaults:DEFAULT_KEY_NAME",
    "DEFAULT_MAX_ROWS": "ledger.defaults:DEFAULT_MAX_ROWS",
    "DEFAULT_MAX_BYTES": "ledger.defaults:DEFAULT_MAX_BYTES",
    "DEFAULT_PACKS": "ledger.defaults:DEFAULT_PACKS",
    "DEFAULT_WORKERS": "ledger.defaults:DEFAULT_WORKERS",
    "DEFAULT_RECONCILE_WORKERS": "ledger.defaults:DEFAULT_RECONCILE_WORKERS",
    "DEFAULT_MAX_RETRIES": "ledger.defaults:DEFAULT_MAX_RETRIES",
    "DEFAULT_SEGMENT_BYTES": "ledger.defaults:DEFAULT_SEGMENT_BYTES",
    "DEFAULT_REPORT": "ledger.defaults:DEFAULT_REPORT",
    "default_ledger_path": "ledger.defaults:default_ledger_path",
    "escape_controls": "ledger.text:escape_controls",
    # a result document's per-trial lists are sequence views: these list or stream them
    "listed": "schemas.views:listed",
    "has_view": "schemas.views:has_view",
    "Skeleton": "schemas.views:Skeleton",
    "check_output_path": "ledger.log.outputs:check_output_path",
    "write_output": "ledger.log.outputs:write_output",
    "is_ledger_dir": "ledger.log.outputs:is_ledger_dir",
    "damaged_store_error": "ledger.log.connection:damaged_store_error",
}

API: dict[str, str] = {**VERBS, **ERRORS, **RESULTS, **NAMES}

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
