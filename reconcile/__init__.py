"""Rubric-migration reconciliation, pure (DESIGN.md § 6; RUBRIC_MIGRATION.md), one concept per
module, each named in its own docstring. No I/O: ``ledger.app.reconcile`` reads packs, corpora
and the ledger and hands values in.
"""
