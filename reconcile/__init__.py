"""Rubric-migration reconciliation, pure (RUBRIC_MIGRATION.md; FORMATS.md § 8), one concept per
module, each named in its own docstring. No I/O: ``ledger.app.reconcile`` reads packs, corpora
and the ledger and hands values in.
"""
