"""``vledger demo``: the guided tour that ``make demo`` runs."""

from __future__ import annotations

import click

from ledger.cli import main


@main.command()
def demo() -> None:
    """Build a fresh ledger from the shipped corpora and walk through what it proves."""
    click.echo("verdict-ledger demo: the ledger, ingest and projections are being built;")
    click.echo("this tour grows as each lands. Try `vledger --help`.")
