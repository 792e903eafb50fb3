"""``vledger grade BUNDLE [--grading FILE] [--json]``: the re-derived grade beside the
recorded one, every difference named.

Reads a trial bundle directory directly (trajectory.yaml, tool_log.yaml, task.yaml or
bundle.yaml, grade.yaml, env.yaml), so it needs no ledger; the grading itself is
``replay.grade.grade_trial``. Exit codes: 0 graded (differences or not), 1 a bundle or
config that cannot be read or graded (the error names the file and key), 2 usage.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import yaml

from ledger.cli import main
from ledger.cli.options import emit_json, json_option, ledger_option, resolve_ledger
from ledger.errors import LedgerError
from ledger.store import open_ledger
from replay.grade import (
    Grade,
    GradeInputs,
    compare_grades,
    grade_trial,
    inputs_from_trial,
    recorded_grade,
    recorded_judge,
    recorded_suite,
)
from replay.trial_inputs import TrialInputsError, trial_inputs
from schemas.grading import GradingConfig, GradingConfigError, load_grading_config
from schemas.timeline import (
    Message,
    RecordedToolCall,
    Role,
    TimelineInconsistencyError,
    ToolCallDecl,
    ToolExecutionStatus,
    ToolExecutorIdentity,
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
        return yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise BundleError(f"{path}: not parseable YAML ({exc})") from exc


def _message(raw: Mapping[str, Any], path: Path, i: int) -> Message:
    try:
        return Message(
            role=Role(raw["role"]),
            content=raw.get("content") or "",
            tool_calls=tuple(
                ToolCallDecl(id=c["id"], name=c["name"], arguments=c.get("arguments") or {})
                for c in raw.get("tool_calls") or ()
            ),
            tool_call_id=raw.get("tool_call_id"),
        )
    except (KeyError, ValueError, TypeError) as exc:
        raise BundleError(f"{path}: messages[{i}] is not a message ({exc!r})") from exc


def _record(raw: Mapping[str, Any], path: Path, i: int) -> RecordedToolCall:
    try:
        return RecordedToolCall(
            call_id=raw["call_id"],
            sequence=raw["sequence"],
            tool_name=raw["tool_name"],
            arguments=raw.get("arguments") or {},
            executor=ToolExecutorIdentity(raw["executor"]),
            status=ToolExecutionStatus(raw["status"]),
            output=raw.get("output"),
            latency_seconds=raw.get("latency_seconds"),
            timestamp=raw.get("timestamp"),
        )
    except (KeyError, ValueError, TypeError) as exc:
        raise BundleError(f"{path}: entry [{i}] is not a recorded tool call ({exc!r})") from exc


def _records(bundle: Path, trajectory: Mapping[str, Any]) -> tuple[RecordedToolCall, ...] | None:
    path = bundle / "tool_log.yaml"
    if path.exists():
        raw = _read(path)
    elif "tool_log" in trajectory:
        path, raw = bundle / "trajectory.yaml", trajectory["tool_log"]
    else:
        return None  # no record view: not the same fact as an empty record
    if not isinstance(raw, list):
        raise BundleError(f"{path}: the tool-call record is not a list of calls")
    return tuple(_record(r, path, i) for i, r in enumerate(raw))


def load_bundle(bundle: Path) -> LoadedBundle:
    """Read one bundle directory into grading inputs, its recorded config and grade."""
    traj_path = bundle / "trajectory.yaml"
    if not traj_path.exists():
        raise BundleError(f"{bundle}: not a bundle (no trajectory.yaml)")
    trajectory = _read(traj_path) or {}
    task_path = next(
        (p for p in (bundle / "task.yaml", bundle / "bundle.yaml") if p.exists()), None
    )
    task = _read(task_path) if task_path else None
    grade_path = bundle / "grade.yaml"
    grade = _read(grade_path) if grade_path.exists() else None
    env_path = bundle / "env.yaml"
    final_state = _read(env_path) if env_path.exists() else None
    initial = ((task or {}).get("initial_state") or {}).get("json_db")
    inputs = GradeInputs(
        trial=str(bundle),
        messages=tuple(
            _message(m, traj_path, i) for i, m in enumerate(trajectory.get("messages") or [])
        ),
        recorded_calls=_records(bundle, trajectory),
        termination_reason=trajectory.get("termination_reason"),
        grading_error=trajectory.get("grading_error"),
        initial_db=initial if isinstance(initial, Mapping) else None,
        final_state=final_state,
        judge=recorded_judge(grade),
        custom_suite=recorded_suite(grade),
    )
    grading = (task or {}).get("grading_config")
    return LoadedBundle(inputs, grading, recorded_grade(grade) if grade is not None else None)


def load_ledger_trial(ledger_dir: Path, stream: str) -> LoadedBundle:
    """Read one trial stream from the ledger into grading inputs (ingest's reading)."""
    with open_ledger(ledger_dir) as lg:
        events = list(lg.read(stream=stream))
    if not events:
        raise BundleError(
            f"{stream}: no such trial stream in the ledger at {ledger_dir}, and no bundle "
            'directory by that name; list trials with: vledger sql "SELECT DISTINCT stream FROM events"'
        )
    trial = trial_inputs(events)
    grade = trial.recorded_grade
    return LoadedBundle(
        inputs_from_trial(trial),
        trial.registered.grading,
        recorded_grade(grade) if grade is not None else None,
    )


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
