"""The ``vledger`` command line: thin shells over the Python API (STYLE.md, sqlite-utils).

Each area's commands live in their own module and attach themselves to ``main``.
``COMMANDS`` is the registry: a command's module is imported only when that command runs
(or help lists it), so ``vledger retrace`` never pays for the report, curation or the
inspect importer. ``tests/test_cli_registry.py`` pins it to what the modules register.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import click

from ledger.cli.options import GROUP_LEDGER

# command name -> the ledger.cli module that defines it
COMMANDS: dict[str, str] = {
    **dict.fromkeys(
        ("init", "append", "log", "keygen", "checkpoint", "prove", "seal", "verify", "repair"),
        "store",
    ),
    **dict.fromkeys(("admissions", "receipt", "verdict"), "verdict"),
    **dict.fromkeys(("reconcile", "validate"), "reconcile"),
    **dict.fromkeys(("report", "sql"), "analytics"),
    "curate": "curate",
    "demo": "demo",
    "export": "export",
    "grade": "grade",
    "ingest": "ingest",
    "retrace": "retrace",
}


class _Main(click.Group):
    """The command group; a DuckDB error no command translated (a damaged block of the
    store read mid-command) becomes one ``Error:`` line naming the file, never a traceback."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(COMMANDS) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = COMMANDS.get(cmd_name)
        if cmd_name not in self.commands and module is not None:
            importlib.import_module(f"ledger.cli.{module}")  # it registers itself on main
        return self.commands.get(cmd_name)

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            # the reader stopped early (`vledger log --json | head`): it has what it wanted,
            # which is success, not an error; nothing more may be written to the pipe
            _silence_stdout()
            ctx.exit(0)
        except Exception as exc:
            duckdb = sys.modules.get("duckdb")  # a command that raised one has loaded it
            if duckdb is None or not isinstance(exc, duckdb.Error):
                raise
            from ledger.log.connection import damaged_store_error

            click.echo(f"Error: {damaged_store_error(exc)}", err=True)
            ctx.exit(1)


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
