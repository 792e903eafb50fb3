"""``vledger export --parquet DIR`` / ``--otel FILE``: a thin shell over ``ledger.export``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

import ledger
from ledger.cli import main
from ledger.cli.options import emitted, json_option, ledger_option, resolve_ledger


@main.command("export")
@click.option("--parquet", default=None,
              type=click.Path(file_okay=False, path_type=Path),
              help="Directory to write the segments and _manifest.json into (new or empty).")
@click.option("--seal", is_flag=True,
              help="Seal the tail into segments first, as `vledger seal` does (sealed trial "
                   "streams then take no more events). Default: the ledger is not changed; "
                   "the tail is exported as one more Parquet file.")
@click.option("--sealed-only", is_flag=True, help="Export the sealed segments only, no tail.")
@click.option("--segment-rows", type=click.IntRange(min=1), default=None,
              help="With --seal: target rows per segment (a trial is never split).")
@click.option("--segment-bytes", type=click.IntRange(min=1), default=None,
              help="With --seal: target uncompressed bytes per segment.")
@click.option("--otel", default=None, type=click.Path(dir_okay=False, path_type=Path),
              help="Also (or only) write every trial as OTLP/JSON traces in the GenAI "
                   "conventions to this new file.")
@ledger_option
@json_option
def export_command(ledger_dir: Path | None, as_json: bool, **kw: Any) -> None:
    """Write the sealed Parquet segments plus their manifest for other engines.

    The ledger is not changed: unsealed events go into one more Parquet file beside the
    segments (--seal seals them first instead). Each segment is verified against the
    manifest before it is copied. Read them back
    with DuckDB (read_parquet('DIR/*.parquet')), pyarrow.dataset, Spark or DataFusion.

    Example: vledger export --parquet out/   (or --otel traces.json)
    """
    res = ledger.export(ledger=resolve_ledger(ledger_dir), **kw)  # a LedgerError: the group's rule
    if emitted(as_json, res):
        return
    if res.otel is not None:
        click.echo(f"wrote {res.otel.traces} trace(s), {res.otel.spans} span(s) to {res.otel.path}")
    pq = res.parquet
    if pq is None:  # --otel alone: the log was only read
        return
    tail = f" and the unsealed tail as {pq.tail_file}" if pq.tail_file else ""
    click.echo(f"exported {pq.segments} segment(s){tail}: {pq.rows} event(s), and "
               f"_manifest.json, to {pq.directory}")
    if pq.unsealed:
        click.echo(f"{pq.unsealed} unsealed event(s) not exported (drop --sealed-only to include them)")
