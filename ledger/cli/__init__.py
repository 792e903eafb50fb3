"""The ``vledger`` command line: thin shells over the Python API (as sqlite-utils's CLI is).

Each area's commands live in their own module and attach themselves to ``main``.
``COMMANDS`` is the registry: a command's module is imported only when that command runs
(or help lists it), so ``vledger retrace`` never pays for the report, curation or the
inspect importer. ``tests/test_cli_registry.py`` pins it to what the modules register.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import os
import sys
from pathlib import Path
from typing import NamedTuple

import click

import ledger
from ledger.cli.options import GROUP_LEDGER
from ledger.cli.output import error

# A command's start-up builds ~100,000 long-lived objects (classes, functions, schemas) and
# no garbage cycles, and the collector scans each object once per generation it passes
# through, whatever the thresholds: at the default (700) that was ~90 collections, 11-13 ms
# of a small retrace or reconcile (benchmarks/startup.py), and ~0 of its work. Collecting
# every GC_EVERY allocations instead costs a long command the same per object and holds
# back at most that many. The command line only: `import ledger` leaves the caller's GC.
GC_EVERY = 100_000
gc.set_threshold(GC_EVERY, *gc.get_threshold()[1:])
# At exit the interpreter runs full collections over every object while it tears modules
# down: 35-45 ms of a small command, more than its own work (benchmarks/startup.py). Frozen,
# they are skipped; objects are still freed by reference counting, and files and
# connections are closed by the commands themselves. Registered first, so it runs last.
atexit.register(gc.freeze)


class Entry(NamedTuple):
    module: str  # the ledger.cli module that defines the command
    summary: str  # its line in `vledger --help`: the first sentence of its help


# command name -> where it lives and how `vledger --help` lists it without importing it
COMMANDS: dict[str, Entry] = {
    "admissions": Entry(
        "verdict", "List admitted units, weakest evidence first, and units still pending admission."
    ),
    "append": Entry(
        "store", "Append every event of FILE.jsonl as one atomic batch; print the seq range."
    ),
    "checkpoint": Entry(
        "store",
        "Sign the current tree head (C2SP checkpoint), store it in the ledger and print it.",
    ),
    "curate": Entry(
        "curate",
        "Write a judge-labelled corpus (corpus.yaml + bundles) from run directories or the log.",
    ),
    "demo": Entry(
        "demo", "Build a fresh ledger from the shipped corpora and walk through what it proves."
    ),
    "export": Entry(
        "export", "Write the sealed Parquet segments plus their manifest for other engines."
    ),
    "grade": Entry(
        "grade",
        "Re-derive a trial's grade from its recorded evidence and compare it with the recorded one.",
    ),
    "ingest": Entry(
        "ingest", "Ingest trial bundles, corpora, run directories, task packs or verdict-core runs."
    ),
    "init": Entry("store", "Create an empty ledger directory."),
    "keygen": Entry("store", "Create an Ed25519 checkpoint key OUTSIDE the ledger directory."),
    "log": Entry("store", "Print events in seq order."),
    "prove": Entry(
        "store", "Print a C2SP tlog-proof: the inclusion proof of SEQ plus the signed checkpoint."
    ),
    "receipt": Entry(
        "verdict",
        "Show and verify receipts: ledger receipts by seq/event_id, verdict-core run dirs.",
    ),
    "reconcile": Entry(
        "reconcile", "Check migration.yaml claims against the judge's recorded verdicts."
    ),
    "repair": Entry(
        "store",
        "Finish an interrupted seal or restore a lost segment manifest; a dry run by default.",
    ),
    "report": Entry(
        "analytics", "Write one self-contained HTML report (inline SVG, no scripts, no network)."
    ),
    "retrace": Entry(
        "retrace",
        "Re-derive every recorded trial's grade from the log and compare it to the record.",
    ),
    "seal": Entry(
        "store", "Seal unsealed events into immutable Parquet segments (trial streams never split)."
    ),
    "sql": Entry("analytics", "Run a read-only SQL QUERY over the ledger's documented views."),
    "validate": Entry(
        "reconcile",
        "Check a pack's migration.yaml against every rule of GRADING.md § Declaring a migration.",
    ),
    "verdict": Entry(
        "verdict", "Record a unit's judges and work, admit it, and check derivations (GVC)."
    ),
    "verify": Entry(
        "store", "Recompute every leaf hash and the tree; check checkpoints and segments."
    ),
}


class _Command(click.Command):
    """A command whose API call refused its arguments as contradictory (``ledger.UsageError``)
    fails as click's own usage errors do: the usage line, the message, exit 2."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except ledger.UsageError as exc:
            raise click.UsageError(str(exc), ctx) from None


class _Main(click.Group):
    """The command group; a DuckDB error no command translated (a damaged block of the
    store read mid-command) becomes one ``Error:`` line naming the file, never a traceback."""

    command_class = _Command

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(COMMANDS) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if cmd_name not in self.commands and entry is not None:
            importlib.import_module(f"ledger.cli.{entry.module}")  # it registers itself on main
        cmd = self.commands.get(cmd_name)
        return None if cmd is None else _refuse_empty_paths(cmd)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The listing from the registry: `vledger --help` imports no command's module."""
        limit = formatter.width - 6 - max(map(len, COMMANDS))
        rows = [(name, _shorten(entry.summary, limit)) for name, entry in sorted(COMMANDS.items())]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            # the reader stopped early (`vledger log --json | head`): it has what it wanted,
            # which is success, not an error; nothing more may be written to the pipe
            _silence_stdout()
            ctx.exit()
        except ledger.LedgerError as exc:  # one the command did not render: never a traceback
            error(exc)
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:  # click's own answer is "Aborted!" and 1, a failed check's
            stopped = ledger.Interrupted()
            error(stopped)
            ctx.exit(stopped.exit_code)
        except Exception as exc:
            duckdb = sys.modules.get("duckdb")  # a command that raised one has loaded it
            if duckdb is None or not isinstance(exc, duckdb.Error):
                raise
            damaged = ledger.damaged_store_error(exc)
            error(damaged)
            ctx.exit(damaged.exit_code)


class _Path(click.Path):
    """A path parameter of ours, refusing an empty one: ``Path("")`` is ``.``, so an empty
    ``--out`` or PATH (an unset shell variable) silently named the working directory."""

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> object:
        if value == "":
            self.fail("an empty path; name a file or directory ('.' for this one)", param, ctx)
        return super().convert(value, param, ctx)


def _refuse_empty_paths(cmd: click.Command) -> click.Command:
    """Every ``click.Path`` parameter of ``cmd`` and its subcommands as a :class:`_Path` (the
    same fields, one more rule): one place, for every command module."""
    for param in cmd.params:
        if type(param.type) is click.Path:
            param.type.__class__ = _Path
    for sub in getattr(cmd, "commands", {}).values():
        _refuse_empty_paths(sub)
    return cmd


def _shorten(text: str, limit: int) -> str:
    """Click's own cut for a listing line (words kept whole, an ellipsis when cut)."""
    return click.Command(None, help=text).get_short_help_str(limit)


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
@click.option("--ledger", type=click.Path(file_okay=False, path_type=Path), default=None,
              expose_value=False, callback=_group_ledger,
              help="Ledger directory for the command (also accepted after the command's "
                   "name).")  # fmt: skip
def main() -> None:
    """verdict-ledger: an immutable, provable event log for AI-agent evaluations."""


_refuse_empty_paths(main)  # its own --ledger
