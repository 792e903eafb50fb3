"""Option bundles defined once, so each flag means the same on every command."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

import ledger
from ledger.cli.output import json_text, write_json_document

F = TypeVar("F", bound=Callable[..., Any])


def ledger_option(fn: F) -> F:
    """``--ledger DIR`` (default ``$VLEDGER_HOME`` or ``./.vledger``)."""
    return click.option(
        "--ledger",
        "ledger_dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Ledger directory (default: $VLEDGER_HOME or ./.vledger).",
    )(fn)


GROUP_LEDGER = "vledger.ledger"  # where `vledger --ledger DIR CMD` leaves DIR (ctx.meta)


def ledger_chosen(ledger_dir: Path | None) -> bool:
    """Whether the user named the ledger (``--ledger`` before or after the command, or
    ``$VLEDGER_HOME``), rather than falling back to ``./.vledger``."""
    ctx = click.get_current_context(silent=True)
    before = ctx.meta.get(GROUP_LEDGER) if ctx is not None else None
    return ledger_dir is not None or before is not None or bool(os.environ.get("VLEDGER_HOME"))


def resolve_ledger(ledger_dir: Path | None, *, default: Path | None = None) -> Path:
    """The ledger a command uses: its own ``--ledger``, else the one given before the
    subcommand (``vledger --ledger DIR log``), else ``default`` if given, else
    ``$VLEDGER_HOME``, else ``./.vledger``. Two different ``--ledger`` values are refused by
    name rather than one silently winning; one directory spelled two ways is one ledger."""
    ctx = click.get_current_context(silent=True)
    before = ctx.meta.get(GROUP_LEDGER) if ctx is not None else None
    if (
        ledger_dir is not None
        and before is not None
        and Path(ledger_dir).resolve() != Path(before).resolve()
    ):
        raise click.UsageError(
            f"--ledger {before} (before the command) and --ledger {ledger_dir} (after it) "
            "clash: give one of them"
        )
    chosen = ledger_dir if ledger_dir is not None else before
    if chosen is not None:
        return _a_folder(Path(chosen))
    return _a_folder(default if default is not None else ledger.default_ledger_path())


def _a_folder(path: Path) -> Path:
    """``path`` unless it, or the nearest part of it that exists, is a file: a ledger is a
    directory (``$VLEDGER_HOME`` naming a file reached ``init`` as a traceback)."""
    for part in (path, *path.parents):
        if part.exists():
            if not part.is_dir():
                where = "is a file" if part == path else f"lies inside the file {str(part)!r}"
                raise click.UsageError(
                    f"the ledger {str(path)!r} {where}; a ledger is a directory: name one with "
                    "--ledger DIR or $VLEDGER_HOME"
                )
            break
    return path


def busy_option(fn: F) -> F:
    """``--busy-timeout S``: how long to wait for another process holding the ledger."""
    return click.option(
        "--busy-timeout",
        type=click.FloatRange(min=0),
        default=ledger.DEFAULT_BUSY_TIMEOUT,
        show_default=True,
        help="Seconds to wait for another process holding the ledger.",
    )(fn)


def json_option(fn: F) -> F:
    """``--json``: machine-readable output on stdout, nothing else."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")(fn)


def nl_option(fn: F) -> F:
    """``--nl``: a list as one JSON object per line instead of one array (as sqlite-utils'
    ``--nl``); implies ``--json``."""
    return click.option(
        "--nl", "as_nl", is_flag=True, help="JSON lines: one object per line (implies --json)."
    )(fn)


def emit_json(value: Any) -> None:
    if isinstance(value, dict):  # a result document: written a value at a time, same bytes
        write_json_document(value)
    else:
        sys.stdout.write(json_text(value))


def emitted(as_json: bool, res: Any) -> bool:
    """With ``--json``, print ``res.to_json()`` and say so: the command has nothing to add."""
    if as_json:
        emit_json(res.to_json())
    return as_json


@contextmanager
def progress_hooks(label: str, quiet: bool) -> Iterator[dict[str, Any]]:
    """A command's ``on_total`` / ``on_done`` keywords: none when quiet (``--json``, or
    stderr not a terminal), else a transient bar on stderr, ``label`` before it."""
    if quiet:
        yield {}
        return
    import rich.progress as rp  # noqa: PLC0415 - only a terminal draws a bar (rich is slow to load)
    from rich.console import Console  # noqa: PLC0415

    err = Console(stderr=True)
    columns = (rp.BarColumn(), rp.MofNCompleteColumn(), rp.TimeElapsedColumn())
    with rp.Progress(rp.TextColumn(label), *columns, console=err, transient=True) as bar:
        job = bar.add_task("trials", total=None)
        yield {"on_total": lambda n: bar.update(job, total=n), "on_done": lambda n: bar.advance(job, n)}
