"""``grade``: a trial's grade re-derived from its recorded evidence, beside the recorded one.

A bundle directory is read through ingest's importer in memory (no ledger needed), a trial
stream from the ledger; either way ``replay.timeline.trial_inputs`` folds it — so a bundle and the
same bundle ingested grade identically — and ``replay.grading.grade.grade_trial`` grades it.

Example::

    result = ledger.grade("corpora/notes_duplicate_check/met/<trial>")
    print(result.differences)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ledger.app.context import LedgerArg, ledger_path, opened
from ledger.app.result import Result
from ledger.errors import LedgerError
from ledger.sources.files import InputError
from ledger.sources.in_memory import as_stored, plan_bundle
from ledger.sources.shape import BundleError as ImporterBundleError
from ledger.sources.yaml_safe import load_yaml
from replay.grading.grade import Grade, GradeInputs, compare_grades, grade_trial, inputs_from_trial
from replay.grading.grade import recorded_grade as grade_of_record
from replay.grading.rules import GradingConfigError, load_grading_config
from replay.timeline.trial_inputs import TrialInputs, TrialInputsError, trial_inputs
from schemas.grading import GradingConfig
from schemas.timeline import TimelineInconsistencyError


class GradeInputError(LedgerError, ValueError):
    """A bundle, trial or config that cannot be read or graded; names the path and key."""


@dataclass(frozen=True, kw_only=True)
class GradeRequest:
    """One ``vledger grade`` as asked: a bundle directory or a trial stream of ``ledger``."""

    bundle_or_trial: str
    grading_file: Path | None = None
    ledger: LedgerArg = None


@dataclass(frozen=True)
class GradeResult(Result):
    """``--json``: {trial, recorded, replayed, differences}."""

    trial: str
    recorded: dict[str, Any] | None
    replayed: dict[str, Any]
    differences: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class LoadedBundle:
    inputs: GradeInputs
    grading: Mapping[str, Any] | None  # the recorded grading snapshot
    recorded: Grade | None


def grade(
    bundle_or_trial: str | Path, *, grading_file: Path | None = None, ledger: LedgerArg = None
) -> GradeResult:
    """``vledger grade``: re-derive the trial's grade and name every difference."""
    request = GradeRequest(
        bundle_or_trial=str(bundle_or_trial), grading_file=grading_file, ledger=ledger
    )
    try:
        path = Path(request.bundle_or_trial)
        loaded = load_bundle(path) if path.is_dir() else load_ledger_trial(request)
        return grade_loaded(loaded, request.bundle_or_trial, request.grading_file)
    except LedgerError:
        raise
    except (GradingConfigError, TimelineInconsistencyError, TrialInputsError, ValueError) as exc:
        raise GradeInputError(str(exc)) from exc


def load_bundle(bundle: Path) -> LoadedBundle:
    """Read one bundle directory into grading inputs, its recorded config and grade
    (the project's one importer: bounded YAML, shape checks)."""
    try:
        is_bundle = (bundle / "trajectory.yaml").is_file()
    except PermissionError:  # pathlib lets EACCES through: named, not a traceback
        raise GradeInputError(f"{bundle}: permission denied: cannot look inside") from None
    if not is_bundle:
        raise GradeInputError(f"{bundle}: not a bundle (no trajectory.yaml)")
    try:
        plan = plan_bundle(bundle, bundle.name, corpus="local")
    except (ImporterBundleError, InputError) as exc:
        raise GradeInputError(str(exc)) from exc
    if plan.inconsistency is not None:
        raise plan.inconsistency
    return _loaded(trial_inputs(as_stored(plan.events)))


def _loaded(trial: TrialInputs) -> LoadedBundle:
    read = trial.grade_read
    return LoadedBundle(
        inputs_from_trial(trial),
        trial.registered.grading,
        grade_of_record(read) if read is not None else None,
    )


def load_ledger_trial(request: GradeRequest) -> LoadedBundle:
    """Read one trial stream from the ledger into grading inputs (ingest's reading)."""
    stream = request.bundle_or_trial
    with opened(request.ledger, read_only=True) as lg:  # grading a trial appends nothing
        events = list(lg.read(stream=stream))
    if not events:
        raise GradeInputError(
            f"{stream}: no such trial stream in the ledger at {ledger_path(request.ledger)}, "
            "and no bundle directory by that name; list trials with: "
            'vledger sql "SELECT DISTINCT stream FROM events"'
        )
    return _loaded(trial_inputs(events))


def grade_loaded(loaded: LoadedBundle, label: str, grading_file: Path | None) -> GradeResult:
    config = _config(loaded, label, grading_file)
    replayed = grade_trial(loaded.inputs, config)
    diffs = compare_grades(loaded.recorded, replayed) if loaded.recorded is not None else []
    return GradeResult(
        label,
        loaded.recorded.model_dump() if loaded.recorded is not None else None,
        replayed.model_dump(),
        [d.as_json() for d in diffs],
    )


def _config(loaded: LoadedBundle, bundle: str, grading_file: Path | None) -> GradingConfig:
    if grading_file is not None:
        # an authored file an author can still fix: the gate's rules apply
        try:
            raw = load_yaml(grading_file)
        except InputError as exc:
            raise GradeInputError(str(exc)) from exc
        return load_grading_config(raw, file=str(grading_file), authored=True)
    if loaded.grading is None:
        raise GradeInputError(
            f"{bundle}: the bundle records no grading_config (task.yaml / bundle.yaml); pass "
            "--grading FILE to grade it under a grading.yaml"
        )
    return load_grading_config(
        loaded.grading, file=f"{bundle}/task.yaml grading_config", authored=False
    )
