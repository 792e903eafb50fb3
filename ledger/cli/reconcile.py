"""``vledger reconcile`` and ``vledger validate``: thin shells over ``ledger.reconcile`` /
``ledger.validate``; their exit codes: docs/readme/reconcile.md."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

import ledger
from ledger.cli import main
from ledger.cli.options import (
    emit_json,
    emitted,
    json_option,
    ledger_option,
    progress_hooks,
    resolve_ledger,
)
from ledger.cli.output import write_lines

if TYPE_CHECKING:
    from ledger import ValidateResult

allow_outside_option = click.option(
    "--allow-outside", "allow_outside", multiple=True, type=click.Path(exists=True, path_type=Path),
    help="A grading file (or a directory of them) outside the pack that a pack's task.yaml may "
         "name (repeatable). Without it, such a file is refused, unread.",
)  # fmt: skip
base_option = click.option(
    "--base", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
    help="Directory declared corpus paths resolve against (default: the working directory).",
)  # fmt: skip


@main.command()
@click.option("--packs", "packs", multiple=True, type=click.Path(file_okay=False, path_type=Path),
              help="Directory searched recursively for packs and their migration.yaml "
                   f"(repeatable; default: ./{ledger.DEFAULT_PACKS}, where the repository "
                   "ships its packs).")
@click.option("--source", type=click.Path(exists=True, file_okay=False, path_type=Path),
              default=None, help="A corpus, run directory or bundle; omitted: every declared "
                                 "migration over its own corpus.")
@base_option
@click.option("--dry-run", is_flag=True, help="Reach and print the verdict; write nothing.")
@click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="Where the per-trial candidate projection runs (ray: one task per sealed "
                   "segment; needs the [ray] extra and a ledger, seals the tail).")
@click.option("--address", default=None, metavar="auto|ray://HOST:PORT",
              help="Ray cluster to join (--engine ray); default: a local Ray with --workers CPUs.")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Processes reading the corpora into the ledger (default: the cores "
                   "available), and the CPUs of a local Ray (--engine ray; default "
                   f"{ledger.DEFAULT_RECONCILE_WORKERS}).")
@click.option("--full", is_flag=True,
              help="Observe every trial again, even where an earlier reconcile with the same "
                   "packs and corpora can be carried forward.")
@click.option("--from-ledger", is_flag=True,
              help="Read each declared corpus as the ledger holds it (ingested earlier), not "
                   "from disk: no bundle is listed or parsed, so extending an earlier run costs "
                   "what the log gained since.")
@allow_outside_option
@json_option
@ledger_option
def reconcile(as_json: bool, ledger_dir: Path | None, **flags: Any) -> None:
    """Check migration.yaml claims against the judge's recorded verdicts.

    Without --dry-run each corpus is ingested into --ledger (with --from-ledger: read as the
    ledger holds it), every trial is read back from it (or carried forward from an earlier
    run with the same inputs, unless --full), and reconcile.completed is appended with a
    receipt.

    \b
    Example, over the shipped notes corpus (from the repository root):
        vledger reconcile --packs corpora/packs --dry-run

    \b
    Exit: 0 every narrowed/retired entry reached no_counter_evidence;
          1 insufficient_evidence, a refusal or an unreadable bundle;
          2 usage; 5 the invocation cannot run. Candidates never gate.
    """
    # the options are the API's keywords; a ReconcileError exits 5 by the group's rule
    with progress_hooks("reconcile", as_json or not sys.stderr.isatty()) as hooks:
        result = ledger.reconcile(**flags, ledger=resolve_ledger(ledger_dir), **hooks)
    link = (result.document.get("receipt") or {}).get("extends")
    if link is not None:  # stderr: the report is the full run's, byte for byte
        rc = result.document["receipt"]
        click.echo(f"extends reconcile {link['run_id']}: {rc['carried']} bundle(s) carried "
                   f"forward, {rc['evaluated']} new or changed read (--full: all)", err=True)  # fmt: skip
    if result.default_packs:
        click.echo(f"packs: ./{ledger.DEFAULT_PACKS} (default; pass --packs DIR for others)",
                   err=True)  # fmt: skip
    if as_json:
        emit_json(result.to_json())
    elif not result.reports:
        roots = ", ".join(str(p) for p in result.packs)
        click.echo(
            f"No migration.yaml under {roots} declares a migration; nothing to reconcile.", err=True
        )
    else:  # the result: stdout, so `> out.txt` keeps it
        write_lines(result.text_lines())
    sys.exit(result.exit_code)


@main.command()
@click.argument("pack_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@base_option
@allow_outside_option
@json_option
def validate(pack_dir: Path, as_json: bool, **flags: Any) -> None:
    """Check a pack's migration.yaml against every rule of GRADING.md § Declaring a migration.

    \b
    Example:
        vledger validate corpora/packs/notes_duplicate_check_narrowed

    Exit 1 when any rule is broken, each error naming what to write instead.
    """
    result = ledger.validate(pack_dir, **flags)  # a LedgerError: the group's rule
    if not emitted(as_json, result):
        click.echo(_validate_text(result), nl=False)
    sys.exit(result.exit_code)


def _validate_text(result: ValidateResult) -> str:
    if result.entries is None:
        return f"{result.pack_dir}: no migration.yaml — nothing declared, nothing to check\n"
    where = result.pack_dir / "migration.yaml"
    n, k = result.entries, len(result.findings)
    lines = [f"{where}: {f}" for f in result.findings]
    lines.append(f"{where}: {n} entr{'y' if n == 1 else 'ies'}, {k} error{'' if k == 1 else 's'}")
    return "\n".join(lines) + "\n"
