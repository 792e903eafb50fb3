"""``vledger ingest PATH…``: a thin shell over :func:`ledger.ingest`."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

import ledger
from ledger.cli import main
from ledger.cli.options import (
    busy_option,
    emit_json,
    json_option,
    ledger_chosen,
    ledger_option,
    resolve_ledger,
)
from ledger.cli.output import error

if TYPE_CHECKING:
    from rich.console import Console

    from ledger import IngestResult


@main.command("ingest")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option(
    "--corpus",
    default=None,
    metavar="NAME",
    help="Corpus name for every trial read (default: the PATH directory's name).",
)
@click.option(
    "--skip-bad",
    is_flag=True,
    help="Record each unreadable or changed input as an ingest.skipped event and go on.",
)
@click.option(
    "--keep-inconsistent",
    is_flag=True,
    help="Ingest trials whose message view and tool_log disagree, recording the disagreement.",
)
@click.option(
    "--max-file-bytes",
    type=click.IntRange(min=1),
    default=ledger.DEFAULT_MAX_BYTES,
    show_default=True,
    help="Refuse any YAML or run file larger than this, by name.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    show_default="the cores available",
    help="Processes reading the inputs; the log appended is identical for any N.",
)
@click.option(
    "--engine",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="Read the inputs in local processes, or as Ray tasks where they lie "
    "(needs the [ray] extra; every node sees the PATHs at the same place).",
)
@click.option(
    "--address",
    default=None,
    metavar="auto|ray://HOST:PORT",
    help="Ray cluster to join (--engine ray); default: a local Ray with --workers CPUs.",
)
@ledger_option
@busy_option
@json_option
def ingest_command(
    paths: tuple[str, ...],
    corpus: str | None,
    skip_bad: bool,
    keep_inconsistent: bool,
    max_file_bytes: int,
    workers: int | None,
    engine: str,
    address: str | None,
    ledger_dir: Path | None,
    busy_timeout: float,
    as_json: bool,
) -> None:
    """Ingest trial bundles, corpora, run directories, task packs or verdict-core runs.

    Each PATH may be a bundle (a directory holding trajectory.yaml), a run directory
    (trials/<task>/<idx>/), a flat collection of bundles, a corpus (corpus.yaml beside
    bundle dirs) or a directory of corpora, a task pack or a directory of packs, or a
    verdict-core run directory (events.jsonl). The whole invocation is all or nothing:
    an unreadable input aborts it with the ledger unchanged (exit 1) unless --skip-bad.
    Re-ingesting the same material appends nothing. The ledger is created if absent.

    Exit codes: 0 ingested (also when nothing was new); 1 aborted on bad, changed or
    inconsistent input; 3 ledger busy; 4 a concurrent writer appended the same stream.

    Example: vledger ingest corpora/notes_duplicate_check corpora/packs
    """
    from rich.console import Console  # noqa: PLC0415 - not loaded for --help

    err = Console(stderr=True)
    root = resolve_ledger(ledger_dir)
    # a ledger this command makes is removed again if it aborts (in a directory of other
    # files, only what it added)
    fresh = None if ledger.is_ledger_dir(root) else root.is_dir()
    if fresh is not None:
        hint = "" if ledger_chosen(ledger_dir) else " (pass --ledger DIR to choose)"
        err.print(f"no ledger at {str(root)!r}: creating one{hint}")
    bar = not as_json and sys.stderr.isatty()
    try:
        report = _with_progress(
            err, root, paths, corpus, skip_bad, keep_inconsistent, max_file_bytes, busy_timeout,
            bar, workers=workers, engine=engine, address=address,
        )  # fmt: skip
    except ledger.UsageError:
        raise  # click's usage lines (ledger/cli/__init__.py)
    except ledger.LedgerError as exc:  # a refused input; busy; a concurrent ingest appended first
        # one transaction (ledger.app.ingest_append): whatever failed, nothing was appended
        refused = isinstance(exc, ledger.IngestError)
        if as_json:
            source = {"source": exc.source} if refused else {}
            kind = exc.kind if refused else type(exc).__name__
            emit_json({"error": str(exc), "kind": kind, **source, "ledger_unchanged": True})
        error(exc)
        click.echo(
            _unchanged(root, fresh) + ("" if refused else " (the batch is atomic)"), err=True
        )
        sys.exit(exc.exit_code)  # 1 for a refused input (IngestError)
    if as_json:
        emit_json(report.to_json())
        return
    _print_summary(report)


def _unchanged(root: Path, fresh: bool | None) -> str:
    """After an abort: a ledger this invocation created was removed by the ingest (a
    mistyped PATH must not leave a new, empty ledger behind). ``fresh``: None, the ledger
    was there; True, its directory was (only the ledger's files were removed)."""
    if fresh is None:
        return "Nothing was ingested; the ledger is unchanged."
    if fresh:
        return f"Nothing was ingested; the new ledger's files were removed from {str(root)!r}."
    return f"Nothing was ingested; the new ledger {str(root)!r} was removed."


def _with_progress(
    err: Console,
    lg: object,
    paths: Sequence[str],
    corpus: str | None,
    skip_bad: bool,
    keep_inconsistent: bool,
    max_file_bytes: int,
    busy_timeout: float = ledger.DEFAULT_BUSY_TIMEOUT,
    bar: bool = True,
    **reading: object,
) -> IngestResult:
    """The one ingest call, under a progress bar on ``err`` when ``bar`` (a terminal)."""
    import rich.progress as rp  # noqa: PLC0415 - only the command pays for rich

    columns = (
        rp.TextColumn("[bold]ingest"),
        rp.BarColumn(),
        rp.MofNCompleteColumn(),
        rp.TimeElapsedColumn(),
        rp.TextColumn("{task.description}"),
    )
    with rp.Progress(*columns, console=err, transient=True, disable=not bar) as shown:
        task = shown.add_task("", total=None)

        def tick(done: int, total: int, source: str) -> None:
            shown.update(task, completed=done, total=total, description=source[-60:])

        return ledger.ingest(
            *paths,
            ledger=lg,
            corpus=corpus,
            skip_bad=skip_bad,
            keep_inconsistent=keep_inconsistent,
            max_file_bytes=max_file_bytes,
            busy_timeout=busy_timeout,
            progress=tick if bar else None,
            **reading,  # type: ignore[arg-type]  # workers / engine / address, as given
        )


def _print_summary(report: IngestResult) -> None:
    for p in report.paths:
        click.echo(f"{p['path']}: {p['kind'].replace('_', ' ')}")
    click.echo(f"Ingested: {report.summary()}")
    if report.first_seq is not None:
        click.echo(f"  appended seq {report.first_seq}..{report.last_seq}")
    for s in report.skipped:
        click.echo(f"  skipped · {s['source']}: {s['reason']}")
    for s in report.inconsistent:
        click.echo(f"  inconsistent views (kept) · {s['source']}: {s['reason']}")
