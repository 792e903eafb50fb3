"""``vledger sql`` and ``vledger report``: read-only SQL over the views, and the HTML report."""

from __future__ import annotations

import csv
import io
import sys
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import orjson

import ledger
from ledger.cli import main
from ledger.cli.options import (
    emitted,
    json_option,
    ledger_option,
    nl_option,
    resolve_ledger,
)
from ledger.cli.output import escape_controls, is_terminal, render_table, terminal_width

if TYPE_CHECKING:  # pyarrow, DuckDB and the views load only when a query runs
    import pyarrow as pa
FORMATS = ("table", "csv", "json", "parquet")


def _cell(value: Any) -> str:
    """One value as text: nested values as compact JSON, bytes as hex, null as empty."""
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, (dict, list)):
        return orjson.dumps(value, default=str).decode()
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    return str(value)


def format_table(table: pa.Table, width: int | None = None) -> str:
    """The one table renderer (ledger/cli/output.py), fitted to ``width`` columns (None: a
    file or a pipe, nothing cut). Numbers through the one rounding rule; control characters
    escaped so one row prints as one line."""
    rows = [
        [float(v) if isinstance(v, Decimal) else v if _is_number(v) else escape_controls(_cell(v))
         for v in r.values()]
        for r in table.to_pylist()
    ]
    count = f"({len(rows)} row{'s' if len(rows) != 1 else ''})"
    return render_table(table.column_names, rows, width) + count + "\n"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)


def format_csv(table: pa.Table) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(table.column_names)
    for r in table.to_pylist():
        w.writerow([_cell(v) for v in r.values()])
    return buf.getvalue()


def format_json(rows: list[Any], nl: bool = False) -> str:
    """A JSON array of row objects, or (``--nl``) one compact JSON object per row; the rows
    are the result's ``to_json()`` (JSON-typed columns embedded as values)."""
    if nl:
        return "".join(orjson.dumps(r).decode() + "\n" for r in rows)
    return orjson.dumps(rows, option=orjson.OPT_INDENT_2).decode() + "\n"


def _parquet_safe(table: pa.Table) -> pa.Table:
    """Extension types (DuckDB's JSON) as plain strings, so any Parquet reader opens the file."""
    import pyarrow as pa  # noqa: PLC0415

    cols = [c.cast(c.type.storage_type) if isinstance(c.type, pa.ExtensionType) else c
            for c in table.columns]  # fmt: skip
    return pa.table(cols, names=table.column_names)


def write_result(res: ledger.SqlResult, fmt: str, out: Path | None, nl: bool = False) -> None:
    """Format last: the rows are an Arrow table until here."""
    table = res.table
    if fmt == "parquet":
        import pyarrow.parquet as pq  # noqa: PLC0415

        if out is None and is_terminal():
            raise click.UsageError(
                "--format parquet is binary and stdout is a terminal: pass --out FILE, or "
                "redirect (> out.parquet) or pipe it"
            )
        sink = io.BytesIO()
        pq.write_table(_parquet_safe(table), sink)
        if out is None:
            sys.stdout.buffer.write(sink.getvalue())
        else:
            ledger.write_output(out, sink.getvalue())
        return
    if fmt == "table":
        text = format_table(table, terminal_width() if out is None else None)
    else:
        text = format_json(res.to_json(), nl) if fmt == "json" else format_csv(table)
    _write_text(text, out)


def _write_text(text: str, out: Path | None) -> None:
    if out is None:
        sys.stdout.write(text)
    else:
        ledger.write_output(out, text.encode("utf-8"))


def _schema_text() -> str:
    parts = []
    for v in ledger.PUBLIC_VIEWS:
        parts.append(f"{v.name} — {v.doc}")
        width = max(len(c) for c, _ in v.columns)
        parts.extend(f"  {c.ljust(width)}  {d}" for c, d in v.columns)
        parts.append("")
    parts.append("macro: pass_at_k_value(n, c, k) — 1 − C(n−c, k)/C(n, k); null where n < k")
    return "\n".join(parts) + "\n"


@main.command("sql")
@click.argument("query", required=False)
@ledger_option
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
              help="Output format.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write to FILE.")  # fmt: skip
@click.option("--schema", is_flag=True, help="List the views and their columns, then exit.")
@click.option("--full", is_flag=True,
              help="Build the kept view rows (<ledger>/projections/views.duckdb) again from the whole log.")  # fmt: skip
@json_option
@nl_option
def sql_command(
    query: str | None, ledger_dir: Path | None, fmt: str, out: Path | None, schema: bool,
    full: bool, as_json: bool, as_nl: bool,
) -> None:  # fmt: skip
    """Run a read-only SQL QUERY over the ledger's documented views.

    A write statement (INSERT, UPDATE, DELETE, CREATE, DROP, ATTACH, COPY, SET, …) is refused
    with nothing changed. While a writer holds the ledger, the sealed Parquet segments are read.

    \b
    Example:
      vledger sql "SELECT task_id, k, pass_at_k FROM pass_at_k
                   WHERE level = 'task' AND model = '*' AND k IN (1, 5)"
      vledger sql --schema
    """
    if out is not None:  # a LedgerError here and below: `Error: …`, exit 1 (the group's rule)
        ledger.check_output_path(out, resolve_ledger(ledger_dir))
    as_json = as_json or as_nl
    if as_json:  # the shared --json flag: one meaning on every command
        if fmt not in ("table", "json"):
            raise click.UsageError(f"--json and --format {fmt} clash: give one of them")
        fmt = "json"
    if schema and fmt == "table":
        return _write_text(_schema_text(), out)
    result = ledger.sql(
        query, ledger=None if schema else resolve_ledger(ledger_dir), schema=schema, full=full
    )
    if result.source is not None and result.source.kind == "segments":
        detail = result.source.detail
        click.echo(f"note: read {detail}; events after the last seal are not shown", err=True)
    write_result(result, fmt, out, nl=as_nl)


@main.command("report")
@ledger_option
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              default=ledger.DEFAULT_REPORT, show_default=True,
              help="Where to write the HTML file.")  # fmt: skip
@click.option("--full", is_flag=True,
              help="Build the kept view rows (<ledger>/projections/views.duckdb) again from the whole log.")  # fmt: skip
@json_option
def report_command(ledger_dir: Path | None, out: Path, full: bool, as_json: bool) -> None:
    """Write one self-contained HTML report (inline SVG, no scripts, no network).

    \b
    Example:
      vledger report --out report.html
    """
    result = ledger.report(ledger=resolve_ledger(ledger_dir), out=out, full=full)
    if not emitted(as_json, result):
        click.echo(f"wrote {out} ({result.summary_line()})")
