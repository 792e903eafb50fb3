"""``vledger export --parquet DIR``: a thin shell over :func:`ledger.app.export.export_parquet`."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ledger.app.export import ExportError, export_parquet
from ledger.app.otel import OtelExportError, export_otel
from ledger.cli import main
from ledger.cli.options import emit_json, json_option, ledger_option, resolve_ledger
from ledger.errors import LedgerError, exit_code
from ledger.log.store import open_ledger


@main.command("export")
@click.option("--parquet", "parquet_dir", default=None,
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
@click.option("--otel", "otel_file", default=None, type=click.Path(dir_okay=False, path_type=Path),
              help="Also (or only) write every trial as OTLP/JSON traces in the GenAI "
                   "conventions to this new file.")
@ledger_option
@json_option
def export_command(parquet_dir: Path | None, seal: bool, sealed_only: bool,
                   segment_rows: int | None, segment_bytes: int | None, otel_file: Path | None,
                   ledger_dir: Path | None, as_json: bool) -> None:
    """Write the sealed Parquet segments plus their manifest for other engines.

    The ledger is not changed: unsealed events go into one more Parquet file beside the
    segments (--seal seals them first instead). Each segment is verified against the
    manifest before it is copied. Read them back
    with DuckDB (read_parquet('DIR/*.parquet')), pyarrow.dataset, Spark or DataFusion.

    Example: vledger export --parquet out/   (or --otel traces.json)
    """
    if parquet_dir is None and otel_file is None:
        raise click.UsageError("pass --parquet DIR, --otel FILE or both")
    if parquet_dir is None:
        _export_otel_only(otel_file, ledger_dir, as_json)
        return
    try:
        with open_ledger(resolve_ledger(ledger_dir)) as lg:
            res = export_parquet(lg, parquet_dir, seal=seal, tail=not sealed_only,
                                 max_rows=segment_rows, max_bytes=segment_bytes)
            otel = export_otel(lg, otel_file) if otel_file is not None else None
    except (ExportError, OtelExportError) as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(1)
    except LedgerError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(exit_code(exc))
    if as_json:
        emit_json({**res.as_json(), **(otel.as_json() if otel else {})})
        return
    if otel is not None:
        click.echo(f"wrote {otel.traces} trace(s), {otel.spans} span(s) to {otel.path}")
    tail = f" and the unsealed tail as {res.tail_file}" if res.tail_file else ""
    click.echo(f"exported {res.segments} segment(s){tail}: {res.rows} event(s), and "
               f"_manifest.json, to {res.directory}")
    if res.unsealed:
        click.echo(f"{res.unsealed} unsealed event(s) not exported (drop --sealed-only to include them)")


def _export_otel_only(otel_file: Path, ledger_dir: Path | None, as_json: bool) -> None:
    """``--otel`` alone: read the log, seal nothing."""
    try:
        with open_ledger(resolve_ledger(ledger_dir)) as lg:
            res = export_otel(lg, otel_file)
    except OtelExportError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(1)
    except LedgerError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(exit_code(exc))
    if as_json:
        emit_json(res.as_json())
        return
    click.echo(f"wrote {res.traces} trace(s), {res.spans} span(s) to {res.path}")
