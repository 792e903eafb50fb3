"""``vledger export --parquet DIR``: a thin shell over :func:`ledger.export.export_parquet`."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ledger.cli import main
from ledger.cli.options import emit_json, json_option, ledger_option, resolve_ledger
from ledger.errors import LedgerError, exit_code
from ledger.export import ExportError, export_parquet
from ledger.store import open_ledger


@main.command("export")
@click.option("--parquet", "parquet_dir", required=True,
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
@ledger_option
@json_option
def export_command(parquet_dir: Path, seal: bool, sealed_only: bool, segment_rows: int | None,
                   segment_bytes: int | None, ledger_dir: Path | None, as_json: bool) -> None:
    """Write the sealed Parquet segments plus their manifest for other engines.

    The ledger is not changed: unsealed events go into one more Parquet file beside the
    segments (--seal seals them first instead). Each segment is verified against the
    manifest before it is copied. Read them back
    with DuckDB (read_parquet('DIR/*.parquet')), pyarrow.dataset, Spark or DataFusion.

    Example: vledger export --parquet out/
    """
    try:
        with open_ledger(resolve_ledger(ledger_dir)) as lg:
            res = export_parquet(lg, parquet_dir, seal=seal, tail=not sealed_only,
                                 max_rows=segment_rows, max_bytes=segment_bytes)
    except ExportError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(1)
    except LedgerError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(exit_code(exc))
    if as_json:
        emit_json(res.as_json())
        return
    tail = f" and the unsealed tail as {res.tail_file}" if res.tail_file else ""
    click.echo(f"exported {res.segments} segment(s){tail}: {res.rows} event(s), and "
               f"_manifest.json, to {res.directory}")
    if res.unsealed:
        click.echo(f"{res.unsealed} unsealed event(s) not exported (drop --sealed-only to include them)")
