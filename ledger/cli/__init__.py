"""The ``vledger`` command line: thin shells over the Python API (STYLE.md, sqlite-utils).

Each area's commands live in their own module and attach themselves to ``main``; the
imports at the bottom are the whole registry.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click
import duckdb

from ledger.cli.options import GROUP_LEDGER


class _Main(click.Group):
    """The command group; a DuckDB error no command translated (a damaged block of the
    store read mid-command) becomes one ``Error:`` line naming the file, never a traceback."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except duckdb.Error as exc:
            from ledger.store import damaged_store_error

            click.echo(f"Error: {damaged_store_error(exc)}", err=True)
            ctx.exit(1)
        except BrokenPipeError:
            # the reader stopped early (`vledger log --json | head`): it has what it wanted,
            # which is success, not an error; nothing more may be written to the pipe
            _silence_stdout()
            ctx.exit(0)


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real file descriptor (an in-process runner)
        pass
    finally:
        os.close(devnull)


def _group_ledger(ctx: click.Context, _param: click.Parameter, value: Path | None) -> None:
    if value is not None:
        ctx.meta[GROUP_LEDGER] = value  # read by resolve_ledger in every subcommand


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="verdict-ledger")
@click.option(
    "--ledger",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    expose_value=False,
    callback=_group_ledger,
    help="Ledger directory for the command (also accepted after the command's name).",
)
def main() -> None:
    """verdict-ledger: an immutable, provable event log for AI-agent evaluations."""


# Command modules register themselves on ``main``; keep one import per area.
from ledger.cli import analytics as _analytics  # noqa: E402,F401
from ledger.cli import curate as _curate  # noqa: E402,F401
from ledger.cli import demo as _demo  # noqa: E402,F401
from ledger.cli import export as _export  # noqa: E402,F401
from ledger.cli import grade as _grade  # noqa: E402,F401
from ledger.cli import ingest as _ingest  # noqa: E402,F401
from ledger.cli import reconcile as _reconcile  # noqa: E402,F401
from ledger.cli import retrace as _retrace  # noqa: E402,F401
from ledger.cli import store as _store  # noqa: E402,F401
from ledger.cli import verdict as _verdict  # noqa: E402,F401
