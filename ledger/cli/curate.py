"""``vledger curate``: a thin shell over :func:`ledger.curate`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

import ledger
from ledger.cli import main
from ledger.cli.options import emit_json, emitted, json_option, ledger_option, resolve_ledger
from ledger.cli.output import error
from ledger.cli.output import result as out

if TYPE_CHECKING:
    from ledger import CurateResult


def _exclusions(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> dict:
    out: dict[str, str] = {}
    for item in value:
        where, sep, reason = item.partition("=")
        if not (sep and where and reason.strip()):
            raise click.BadParameter(
                f"{item!r} is not DIR=REASON; write the bundle directory (or, with "
                "--from-ledger, the trial stream), '=', and your reason for leaving it out",
                ctx=ctx, param=param,
            )  # fmt: skip
        out[where] = reason.strip()
    return out


@main.command("curate")
@click.option("--criterion", required=True, metavar="ID",
              help="Rubric criterion whose recorded judge verdicts the corpus carries.")
@click.option("--source", "sources", multiple=True, type=click.Path(path_type=Path),
              metavar="RUN_OR_BUNDLE",
              help="A run directory (trials/<task>/<index>) or one bundle; repeatable.")
@click.option("--from-ledger", is_flag=True,
              help="Curate trials already ingested; the bundles are rebuilt from their events.")
@click.option("--where", default=None, metavar="PREDICATE",
              help="With --from-ledger: an SQL predicate over the trials view, e.g. "
                   "\"corpus = 'run-a'\".")
@click.option("--into", required=True, type=click.Path(path_type=Path), metavar="DIR",
              help="The corpus directory to write.")
@click.option("--exclude", "exclusions", multiple=True, metavar="DIR=REASON",
              callback=_exclusions,
              help="Leave one bundle out by your own judgment, recorded as by: author; repeatable.")
@click.option("--replace", is_flag=True,
              help="Rewrite the whole --into corpus; without it an existing corpus.yaml is refused.")
@click.option("--dry-run", is_flag=True, help="Classify and report; write and append nothing.")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              show_default="the cores available",
              help="Processes reading the run directories; the corpus is the same for any N.")
@click.option("--full", is_flag=True,
              help="With --from-ledger: render every bundle again, none kept from an earlier run.")
@ledger_option
@json_option
def curate_command(ledger_dir: Path | None, as_json: bool, **flags: Any) -> None:
    """Write a judge-labelled corpus (corpus.yaml + bundles) from run directories or the log.

    A trial is admitted iff it carries task.yaml, trajectory.yaml and grade.yaml, its
    grade records judge_status: completed, its criterion_results holds a verdict for
    --criterion, and it is not environment-dead (a tool_log.yaml with calls, none
    successful). Every other trial is named with its reason and observation, here and
    in corpus.yaml. Appends a corpus.curated event naming what the corpus holds.

    Exit codes: 0 a corpus was written (or would be, with --dry-run); 1 a refusal, or no
    trial was admitted (nothing is written); 2 usage; 3 ledger busy.

    Example: vledger curate --criterion checked_duplicates_first --source results/run-a
    --into corpora/notes/met
    """
    try:  # the options are the API's keywords, passed through as they are
        result = ledger.curate(**flags, ledger=resolve_ledger(ledger_dir))
    except ledger.UsageError:
        raise  # click's usage lines (ledger/cli/__init__.py)
    except ledger.LedgerError as exc:  # a refusal (CurationError: 1) or the store's own
        if as_json:
            emit_json({"error": str(exc), "exit_code": exc.exit_code})
        error(exc)
        sys.exit(exc.exit_code)
    if not emitted(as_json, result):
        _print(result)
    if result.refusal:
        error(result.refusal)
    sys.exit(result.exit_code)


def _print(result: CurateResult) -> None:
    """Plain lines on stdout (ledger/cli/output.py): colour only on a terminal, and no
    markup language, so a name holding brackets prints as it is."""
    m, rq = result.curation.manifest, result.request
    verb = click.style("would admit" if rq.dry_run else "admitted", fg="green")
    for entry in m.bundles:
        record = "record" if entry.record_carried else "no record"
        out(f"{verb} {entry.directory} (met={entry.met}, {record})")
    for row in m.excluded:
        out(
            f"{click.style('rejected', fg='yellow')} {row.source} — {row.reason.value} by "
            f"{row.by.value} ({row.observation})"
        )
    origin = ", ".join(map(str, rq.sources)) or "the ledger" + (
        f" where {rq.where}" if rq.where else ""
    )
    out(f"{len(m.bundles)} admitted, {len(m.excluded)} rejected for {m.criterion} over {origin}")
    if result.written:
        ev = result.event or {}
        out(
            f"corpus: {rq.into} (corpus.yaml sha256 {result.manifest_digest[:16]}…); "
            f"appended corpus.curated at seq {ev.get('seq')}"
        )
    elif rq.dry_run and m.bundles:
        out(f"dry run: would write {rq.into}; nothing written or appended")
