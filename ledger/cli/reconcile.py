"""``vledger reconcile`` and ``vledger validate``: shells over ``ledger.app.reconcile``.

Exit codes (one place):

====  =====================================================================================
0     every narrowed / retired entry reached ``no_counter_evidence`` and every bundle was
      readable (``validate``: the declaration loads)
1     something blocks: ``insufficient_evidence``, a refusal, or an unreadable bundle
      (``validate``: at least one rule is broken)
2     usage error (click)
3     the invocation cannot run: a declaration that does not load, a corpus escaping the
      base, a task_id no pack (or two packs) declares, no bundle under the source
====  =====================================================================================

Candidate entries are reported and never gate the exit code.
"""

from __future__ import annotations

import datetime as _dt
import sys
from pathlib import Path

import click

from ledger.app.reconcile import (
    Invocation,
    MigrationLoadError,
    Outcome,
    ReconcileError,
    append_receipt,
    run_reconcile,
    validate_pack,
)
from ledger.cli import main
from ledger.cli.options import emit_json, json_option, ledger_option, resolve_ledger
from ledger.engines import get_engine
from ledger.engines.base import Engine, EngineError
from ledger.errors import LedgerError
from ledger.log.store import open_ledger
from reconcile.report import render_text
from schemas.migration import MigrationFile

EXIT_INVOCATION = 3
# Where this repository keeps its task packs; the default only when it exists (below).
DEFAULT_PACKS = Path("corpora") / "packs"


def allow_outside_option(fn):  # noqa: ANN001, ANN201 - a click decorator
    """``--allow-outside PATH``: the one way a pack's grading file may lie outside the pack."""
    return click.option(
        "--allow-outside",
        "allow_outside",
        multiple=True,
        type=click.Path(exists=True, path_type=Path),
        help="A grading file (or a directory of them) outside the pack that a pack's "
        "task.yaml may name (repeatable). Without it, such a file is refused, unread.",
    )(fn)


def _fail(message: str) -> None:
    click.echo(f"Error: {message}", err=True)
    sys.exit(EXIT_INVOCATION)


@main.command()
@click.option(
    "--packs",
    "packs",
    multiple=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory searched recursively for packs and their migration.yaml (repeatable; "
    f"default: ./{DEFAULT_PACKS}, where the repository ships its packs).",
)
@click.option(
    "--source",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="A corpus, run directory or bundle; omitted: every declared migration over its own corpus.",
)
@click.option(
    "--base",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Directory declared corpus paths resolve against (default: the working directory).",
)
@click.option("--dry-run", is_flag=True, help="Reach and print the verdict; write nothing.")
@click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="Where the per-trial candidate projection runs (ray: one task per sealed "
                   "segment; needs the [ray] extra and a ledger, seals the tail).")
@click.option("--address", default=None, metavar="auto|ray://HOST:PORT",
              help="Ray cluster to join (--engine ray); default: a local Ray with --workers CPUs.")
@click.option("--workers", type=click.IntRange(min=1), default=2, show_default=True,
              help="CPUs for a local Ray (--engine ray).")
@allow_outside_option
@json_option
@ledger_option
def reconcile(
    packs: tuple[Path, ...],
    source: Path | None,
    base: Path | None,
    dry_run: bool,
    engine: str,
    address: str | None,
    workers: int,
    allow_outside: tuple[Path, ...],
    as_json: bool,
    ledger_dir: Path | None,
) -> None:
    """Check migration.yaml claims against the judge's recorded verdicts.

    Without --dry-run each corpus is ingested into --ledger, every trial is read back from
    it, and reconcile.completed is appended with a receipt.

    \b
    Example, over the shared notes corpus:
        vledger reconcile --packs ../shared/corpora/packs --base ../shared --dry-run

    \b
    Exit: 0 every narrowed/retired entry reached no_counter_evidence;
          1 insufficient_evidence, a refusal or an unreadable bundle;
          2 usage; 3 the invocation cannot run. Candidates never gate.
    """
    inv = Invocation(
        packs=list(packs) or [default_packs()],
        base=base if base is not None else Path.cwd(),
        source=source,
        allow_outside=allow_outside,
    )
    eng = None
    if engine != "local":
        if dry_run:
            raise click.UsageError("--engine ray reads the ledger's sealed segments; drop --dry-run")
        eng = get_engine(engine, workers=workers, address=address)
    outcome = _run(inv) if dry_run else _run_recorded(inv, resolve_ledger(ledger_dir), eng)
    if as_json:
        emit_json(outcome.document)
    elif not outcome.reports:
        roots = ", ".join(str(p) for p in inv.packs)
        click.echo(
            f"No migration.yaml under {roots} declares a migration; nothing to reconcile.", err=True
        )
    else:
        for report in outcome.reports:  # the result: stdout, so `> out.txt` keeps it
            click.echo(render_text(report), nl=False)
    sys.exit(outcome.exit_code)


def default_packs() -> Path:
    """``./corpora/packs`` when it exists, said on stderr (an applied default is printed);
    otherwise a usage error naming where it looked and what to pass."""
    if not DEFAULT_PACKS.is_dir():
        raise click.UsageError(
            f"no --packs given and no ./{DEFAULT_PACKS} here; pass --packs DIR, the directory "
            "holding your task packs and their migration.yaml"
        )
    click.echo(f"packs: ./{DEFAULT_PACKS} (default; pass --packs DIR for others)", err=True)
    return DEFAULT_PACKS


def _run(inv: Invocation) -> Outcome:
    try:
        return run_reconcile(inv)
    except ReconcileError as exc:
        _fail(str(exc))
        raise AssertionError("unreachable") from exc


def _run_recorded(inv: Invocation, ledger_dir: Path, eng: Engine | None = None) -> Outcome:
    """Ingest, reconcile from the ledger, append the receipt — one open ledger throughout."""
    try:
        lg = open_ledger(ledger_dir)
    except (LedgerError, OSError) as exc:
        _fail(f"no ledger to record into at {ledger_dir} ({exc}) — create it, or pass --dry-run")
    with lg:
        inv.ledger = lg
        if eng is not None:  # candidates computed on the engine, the rest here as always
            from ledger.engines.reconcile_ray import engine_evaluator

            try:
                inv.evaluator = engine_evaluator(inv, lg, eng)
            except (ReconcileError, EngineError, LedgerError) as exc:
                _fail(f"{exc}; nothing was appended")
        outcome = _run(inv)
        run_id = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
        try:
            outcome.document["receipt"] = append_receipt(lg, outcome, run_id=run_id)
        except LedgerError as exc:
            _fail(f"could not append reconcile.completed to {ledger_dir}: {exc}")
    return outcome


@main.command()
@click.argument("pack_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--base",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Directory declared corpus paths resolve against (default: the working directory).",
)
@allow_outside_option
@json_option
def validate(
    pack_dir: Path, base: Path | None, allow_outside: tuple[Path, ...], as_json: bool
) -> None:
    """Check a pack's migration.yaml against every rule of GRADING.md § Declaring a migration.

    \b
    Example:
        vledger validate ../shared/corpora/packs/notes_duplicate_check_narrowed --base ../shared

    Exit 1 when any rule is broken, each error naming what to write instead.
    """
    try:
        pack, findings = validate_pack(
            pack_dir, base if base is not None else Path.cwd(), allow_outside
        )
    except MigrationLoadError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(1)
    except ReconcileError as exc:
        _fail(str(exc))
        return
    if as_json:
        emit_json(
            {
                "pack": str(pack_dir),
                "migration": pack.migration is not None,
                "findings": [
                    {
                        "entry": f.entry,
                        "criterion": f.criterion,
                        "rule": f.rule,
                        "message": f.message,
                    }
                    for f in findings
                ],
                "exit_code": 1 if findings else 0,
            }
        )
    else:
        click.echo(_validate_text(pack_dir, pack.migration, findings), nl=False)
    sys.exit(1 if findings else 0)


def _validate_text(pack_dir: Path, migration: MigrationFile | None, findings: list) -> str:
    if migration is None:
        return f"{pack_dir}: no migration.yaml — nothing declared, nothing to check\n"
    where = pack_dir / "migration.yaml"
    n, k = len(migration.migrations), len(findings)
    lines = [f"{where}: {f}" for f in findings]
    lines.append(f"{where}: {n} entr{'y' if n == 1 else 'ies'}, {k} error{'' if k == 1 else 's'}")
    return "\n".join(lines) + "\n"
