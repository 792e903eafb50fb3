"""``vledger grade BUNDLE [--grading FILE] [--json]``: a thin shell over :func:`ledger.grade`.
Exit 0 when graded (differences or not), else the error's own code (README.md § CLI reference).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

import ledger
from ledger.cli import main
from ledger.cli.options import emitted, json_option, ledger_option, resolve_ledger


def _fmt(value: Any) -> str:
    if value is None:
        return "—"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _print_human(result: Mapping[str, Any]) -> None:
    rec, rep = result["recorded"], result["replayed"]
    click.echo(f"Trial {result['trial']}")
    click.echo(f"  {'':16}{'recorded':>10}{'replayed':>10}")
    for name in rep["components"]:
        r = rec["components"].get(name) if rec else None
        click.echo(f"  {name:16}{_fmt(r):>10}{_fmt(rep['components'][name]):>10}")
    for name in ("score", "binary_pass"):
        click.echo(f"  {name:16}{_fmt(rec[name] if rec else None):>10}{_fmt(rep[name]):>10}")
    for name, why in rep["not_measured"].items():
        click.echo(f"  not measured · {name}: {why}")
    for d in result["differences"]:
        click.echo(
            f"  differs · {d['component']}: {_fmt(d['recorded'])} → {_fmt(d['replayed'])} ({d['reason']})"
        )
    if not result["differences"]:
        click.echo("  replayed grade equals the recorded one")


@main.command("grade")
@click.argument("bundle_or_trial")
@click.option("--grading", "grading_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Grade under this grading.yaml instead of the bundle's recorded config.")
@ledger_option
@json_option
def grade_command(
    bundle_or_trial: str, grading_file: Path | None, ledger_dir: Path | None, as_json: bool
) -> None:
    """Re-derive a trial's grade from its recorded evidence and compare it with the recorded one.

    BUNDLE_OR_TRIAL is a bundle directory (holding trajectory.yaml) or a trial stream of
    the ledger (trial/<corpus>/<task_id>/<trial>).

    Example: vledger grade corpora/notes_duplicate_check/met/<trial> --json
    """
    result = ledger.grade(bundle_or_trial, grading_file=grading_file, ledger=resolve_ledger(ledger_dir))
    if not emitted(as_json, result):
        _print_human(result.to_json())
