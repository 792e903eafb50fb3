"""``vledger grade BUNDLE [--grading FILE] [--json]``: the re-derived grade beside the
recorded one, every difference named.

Reads a trial bundle directory through ingest's importer in memory (trajectory.yaml,
tool_log.yaml, task.yaml or bundle.yaml, grade.yaml, env.yaml), so it needs no ledger, or
a trial stream from the ledger; the grading itself is
``replay.grade.grade_trial``. Exit codes: 0 graded (differences or not), 1 a bundle or
config that cannot be read or graded (the error names the file and key), 2 usage.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from ledger.cli import main
from ledger.cli.options import emit_json, json_option, ledger_option, resolve_ledger
from ledger.errors import LedgerError
from ledger.log.store import open_ledger
from ledger.sources.files import InputError
from ledger.sources.in_memory import as_stored, plan_bundle
from ledger.sources.shape import BundleError as ImporterBundleError
from ledger.sources.yaml_safe import load_yaml
from replay.grade import (
    Grade,
    GradeInputs,
    compare_grades,
    grade_trial,
    inputs_from_trial,
    recorded_grade,
)
from replay.grading_rules import GradingConfigError, load_grading_config
from replay.trial_inputs import TrialInputs, TrialInputsError, trial_inputs
from schemas.grading import GradingConfig
from schemas.timeline import (
    TimelineInconsistencyError,
)


class BundleError(ValueError):
    """A bundle file that cannot be read as what it claims to be; names the path."""


@dataclass(frozen=True, slots=True)
class LoadedBundle:
    inputs: GradeInputs
    grading: Mapping[str, Any] | None  # the recorded grading snapshot
    recorded: Grade | None


def _read(path: Path) -> Any:
    try:
        return load_yaml(path)
    except InputError as exc:
        raise BundleError(str(exc)) from exc


def load_bundle(bundle: Path) -> LoadedBundle:
    """Read one bundle directory into grading inputs, its recorded config and grade.

    Through the project's one importer (bounded YAML, shape checks) and the same fold the
    ledger's trials go through, so a bundle on disk and the same bundle ingested grade
    identically.
    """
    if not (bundle / "trajectory.yaml").is_file():
        raise BundleError(f"{bundle}: not a bundle (no trajectory.yaml)")
    try:
        plan = plan_bundle(bundle, bundle.name, corpus="local")
    except (ImporterBundleError, InputError) as exc:
        raise BundleError(str(exc)) from exc
    if plan.inconsistency is not None:
        raise plan.inconsistency
    return _loaded(trial_inputs(as_stored(plan.events)))


def _loaded(trial: TrialInputs) -> LoadedBundle:
    grade = trial.recorded_grade
    return LoadedBundle(
        inputs_from_trial(trial),
        trial.registered.grading,
        recorded_grade(grade) if grade is not None else None,
    )


def load_ledger_trial(ledger_dir: Path, stream: str) -> LoadedBundle:
    """Read one trial stream from the ledger into grading inputs (ingest's reading)."""
    with open_ledger(ledger_dir) as lg:
        events = list(lg.read(stream=stream))
    if not events:
        raise BundleError(
            f"{stream}: no such trial stream in the ledger at {ledger_dir}, and no bundle "
            'directory by that name; list trials with: vledger sql "SELECT DISTINCT stream FROM events"'
        )
    return _loaded(trial_inputs(events))


def grade_bundle(bundle: Path, grading_file: Path | None = None) -> dict[str, Any]:
    """The JSON contract for a bundle directory: {trial, recorded, replayed, differences}."""
    return grade_loaded(load_bundle(bundle), str(bundle), grading_file)


def grade_loaded(
    loaded: LoadedBundle, label: str, grading_file: Path | None = None
) -> dict[str, Any]:
    """The JSON contract: {trial, recorded, replayed, differences}."""
    config = _config(loaded, label, grading_file)
    replayed = grade_trial(loaded.inputs, config)
    diffs = compare_grades(loaded.recorded, replayed) if loaded.recorded is not None else []
    return {
        "trial": label,
        "recorded": loaded.recorded.model_dump() if loaded.recorded is not None else None,
        "replayed": replayed.model_dump(),
        "differences": [d.as_json() for d in diffs],
    }


def _config(loaded: LoadedBundle, bundle: str, grading_file: Path | None) -> GradingConfig:
    if grading_file is not None:
        # an authored file an author can still fix: the gate's rules apply
        return load_grading_config(_read(grading_file), file=str(grading_file), authored=True)
    if loaded.grading is None:
        raise BundleError(
            f"{bundle}: the bundle records no grading_config (task.yaml / bundle.yaml); pass "
            "--grading FILE to grade it under a grading.yaml"
        )
    return load_grading_config(
        loaded.grading, file=f"{bundle}/task.yaml grading_config", authored=False
    )


def _fmt(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return str(value)
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
@click.option(
    "--grading",
    "grading_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Grade under this grading.yaml instead of the bundle's recorded config.",
)
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
    try:
        path = Path(bundle_or_trial)
        if path.is_dir():
            result = grade_bundle(path, grading_file)
        else:
            loaded = load_ledger_trial(resolve_ledger(ledger_dir), bundle_or_trial)
            result = grade_loaded(loaded, bundle_or_trial, grading_file)
    except (
        BundleError,
        GradingConfigError,
        TimelineInconsistencyError,
        TrialInputsError,
        LedgerError,
        ValueError,
    ) as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        emit_json(result)
    else:
        _print_human(result)
