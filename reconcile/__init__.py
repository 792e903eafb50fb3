"""Rubric-migration reconciliation, pure (DESIGN.md § 6; RUBRIC_MIGRATION.md).

One concept per module:

* ``inputs`` — the values reconciliation reads (a pack's view, one observation per trial);
* ``validate`` — the load-time rules of a ``migration.yaml`` against its pack;
* ``kappa`` — the 2×2 table, accuracy and Cohen's κ;
* ``reconcile`` — labels, exclusions, disagreements, refusals and the verdict of one claim;
* ``compose`` / ``counterfactual`` — the re-fold under the declared ``combine_weights``;
* ``report`` — the exit contract, the ``--json`` document and the human text.

No I/O: ``ledger.app.reconcile`` reads packs, corpora and the ledger and hands values in.
"""
