"""Which recorded trials a judge-labelled corpus admits, and the manifest that says so (pure).

The admission rule and the refusals (a :class:`CurationError`, nothing written) are the
reference's: RUBRIC_MIGRATION.md, "Building a corpus"; docs/readme/curate.md. Both doors of
``vledger curate`` — run directories and the log — hand this module the same value per
trial, :class:`~replay.timeline.trial_inputs.TrialInputs` read from the trial's events, so there is
one reading and one rule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from replay.grading.recorded_grade import RecordedGradeRead
from replay.timeline.trial_inputs import TrialInputs
from schemas.curation import Authority, CorpusManifest, CuratedBundle, RejectedTrial, Rejection
from schemas.errors import LedgerError
from schemas.timeline import ToolExecutionStatus

TASK_FILE = "task.yaml"
TOOL_LOG_FILE = "tool_log.yaml"
JUDGE_COMPLETED = "completed"
_TRIAL_MARK = "_trial"


class CurationError(LedgerError, ValueError):
    """The curation cannot proceed; the message names the trial or file and the way out."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """One discovered trial: its reading, its ``label`` in messages (bundle directory, or
    stream when read from the log), and the ``keys`` an ``--exclude`` may use for it."""

    inputs: TrialInputs
    label: str
    keys: frozenset[str]


@dataclass(frozen=True, slots=True)
class Location:
    """Where a trial was recorded: the manifest's ``source`` and, if it names one, its run."""

    source: str
    run_id: str | None
    index: str | None


@dataclass(frozen=True, slots=True)
class Curation:
    """The manifest and, in manifest order, the candidate behind each admitted bundle."""

    manifest: CorpusManifest
    admitted: tuple[tuple[Candidate, CuratedBundle], ...]
    rejected: tuple[tuple[Candidate, RejectedTrial], ...]


def recorded_location(inputs: TrialInputs) -> Location:
    """The trial's recorded location, the same whichever door read it: a run directory's
    bundle (FORMATS.md § 1; recorded as ``bundle_path: trials/<task-id>/<index>`` of trial
    ``<run-id>_trial<index>``), or a curated one naming its run in its ``corpus.yaml`` row."""
    reg = inputs.registered.payload
    path = str(reg.get("bundle_path") or "")
    trial = inputs.registered.trial
    parts = path.split("/")
    if len(parts) == 3 and parts[0] == "trials" and trial.endswith(_TRIAL_MARK + parts[2]):
        run_id = trial[: -len(_TRIAL_MARK + parts[2])]
        if run_id:
            return Location(f"{run_id}/{path}", run_id, parts[2])
    entry = (reg.get("membership") or {}).get("entry") or {}
    run_id = entry.get("source_run")
    if isinstance(run_id, str) and run_id and trial.startswith(run_id + _TRIAL_MARK):
        index = trial[len(run_id + _TRIAL_MARK) :]
        if index.isdigit():
            return Location(path, run_id, index)
    return Location(path or trial, None, None)


def _location_key(location: Location) -> tuple[str, ...]:
    # Path order, part by part: the order the reference lists a sorted discovery in.
    return tuple(location.source.split("/"))


def _not_judged(grade: RecordedGradeRead, criterion: str, row: Mapping | None) -> str:
    # A row that is there with a non-boolean met is a different state from no row: listing
    # the criteria judged would name the very criterion the reason says was not judged.
    if row is not None:
        return f"{criterion} recorded met: {row.get('met')!r}, which is not a verdict"
    judged = [str(r.get("id")) for r in grade.criterion_results or () if isinstance(r, Mapping)]
    return f"criteria judged: {', '.join(judged) if judged else 'none'}"


def record_carried(inputs: TrialInputs) -> bool:
    """Whether the bundle carried ``tool_log.yaml`` — the only record the rule reads."""
    return TOOL_LOG_FILE in (inputs.registered.payload.get("files") or ())


def rule_rejection(
    inputs: TrialInputs, criterion: str, where: str | None = None
) -> tuple[Rejection, str] | None:
    """The rule's reason and observation for not admitting the trial, or ``None``; checked
    in the reference's order, so a trial failing two tests is named by the first."""
    if inputs.registered.payload.get("task_source") != TASK_FILE:
        return Rejection.MISSING_TASK_SNAPSHOT, "no task.yaml"
    grade = inputs.grade_read
    if grade is None:
        return Rejection.MISSING_GRADE, "no grade.yaml"
    status = grade.judge_status
    if status != JUDGE_COMPLETED:
        return Rejection.JUDGE_INCOMPLETE, f"judge_status: {status!r}"
    row = grade.criterion_row(criterion)
    if row is None or not isinstance(row.get("met"), bool):
        return Rejection.CRITERION_NOT_JUDGED, _not_judged(grade, criterion, row)
    return _environment_dead(inputs, where or inputs.registered.stream)


def _environment_dead(inputs: TrialInputs, where: str) -> tuple[Rejection, str] | None:
    # "Environment-dead is defined on the record, not on rendered text": a tool_log.yaml
    # with at least one call and none at status success. A record-less bundle is never
    # rejected by this rule — the claim would need evidence it does not carry.
    if inputs.registered.redacted:
        raise CurationError(
            f"{where}/metrics.yaml carries a redaction stamp, so the bundle was "
            "rewritten before it was recorded and is not evidence of what the agent did; "
            "curate from the unredacted run instead"
        )
    calls = inputs.recorded_calls or ()
    dead = calls and not any(c.status is ToolExecutionStatus.SUCCESS for c in calls)
    if record_carried(inputs) and dead:
        return Rejection.ENVIRONMENT_DEAD, f"tool_calls: {len(calls)}, succeeded: 0"
    return None


def _named_model(inputs: TrialInputs, role: str) -> str | None:
    name = inputs.registered.models.get(role)
    return name if isinstance(name, str) and name else None


def admitted_entry(candidate: Candidate, criterion: str) -> CuratedBundle:
    """The manifest row of a trial the rule admits; refuses what the row cannot state."""
    inputs = candidate.inputs
    where = candidate.label
    location = recorded_location(inputs)
    if location.run_id is None:
        raise CurationError(
            f"{where} does not sit at <run-id>/trials/<task-id>/<index> (it was recorded as "
            f"{location.source!r}), so nothing names the run it came from and its corpus "
            "directory cannot be named <run-id>_trial<index>; curate from the run directory "
            f"instead, or --exclude {where}=REASON"
        )
    task = inputs.registered.task or {}
    task_id = task.get("task_id")
    if not (isinstance(task_id, str) and task_id):
        raise CurationError(
            f"{where}/task.yaml: task_id is missing, so nothing attributes the trial's verdict "
            f"to a task; write task_id: {inputs.registered.task_id} there, or --exclude "
            f"{where}=REASON"
        )
    agent = _named_model(inputs, "agent")
    if agent is None:
        raise CurationError(
            f"{where}/task.yaml: model_config.agent.name is missing, so the corpus cannot say "
            "which model produced the trial it would admit; write model_config.agent.name, "
            f"or --exclude {where}=REASON"
        )
    grade = inputs.grade_read
    row = (None if grade is None else grade.criterion_row(criterion)) or {}
    return CuratedBundle(
        directory=f"{location.run_id}{_TRIAL_MARK}{location.index}",
        source_run=location.run_id,
        task_id=task_id,
        agent_model=agent,
        judge_model=_named_model(inputs, "judge"),
        met=bool(row["met"]),
        record_carried=record_carried(inputs),
    )


def _refuse_unmatched_exclusions(
    exclusions: Mapping[str, str], candidates: Sequence[Candidate]
) -> None:
    known = set().union(*(c.keys for c in candidates)) if candidates else set()
    unmatched = sorted(set(exclusions) - known)
    if unmatched:
        raise CurationError(
            f"--exclude names {', '.join(unmatched)}, which no source discovered: an exclusion "
            "the run never reached excludes nothing. Name a bundle directory the sources hold "
            "(or, from the log, a trial stream or its recorded source path)"
        )


def _exclusion_for(candidate: Candidate, exclusions: Mapping[str, str]) -> str | None:
    for key in sorted(candidate.keys):
        if key in exclusions:
            return exclusions[key]
    return None


def _refuse_clashes(admitted: Sequence[tuple[Candidate, CuratedBundle]]) -> None:
    # One run's trials are indexed per task, so two tasks of one run share an index and
    # the <run-id>_trial<index> naming cannot hold both (RUBRIC_MIGRATION.md).
    claimed: dict[str, Candidate] = {}
    for candidate, entry in admitted:
        other = claimed.get(entry.directory)
        if other is not None:
            raise CurationError(
                f"{candidate.label} and {other.label} both curate to {entry.directory}: a "
                "corpus naming bundles <run-id>_trial<index> cannot hold two tasks' trials "
                "from one run; curate each task into a corpus of its own"
            )
        claimed[entry.directory] = candidate


def curate(
    candidates: Sequence[Candidate],
    *,
    criterion: str,
    curated_at: str,
    exclusions: Mapping[str, str] | None = None,
) -> Curation:
    """Classify every candidate and assemble the manifest (raises :class:`CurationError`),
    in recorded-location order so a corpus cut from the log lists what the runs' would."""
    exclusions = dict(exclusions or {})
    _refuse_unmatched_exclusions(exclusions, candidates)
    ordered = sorted(candidates, key=lambda c: _location_key(recorded_location(c.inputs)))
    admitted: list[tuple[Candidate, CuratedBundle]] = []
    rejected: list[tuple[Candidate, RejectedTrial]] = []
    for candidate in ordered:
        source = recorded_location(candidate.inputs).source
        by_rule = rule_rejection(candidate.inputs, criterion, candidate.label)
        by_author = _exclusion_for(candidate, exclusions)
        if by_rule is not None:
            if by_author is not None:
                # one reason per trial, and the rule's is the one that names what was observed
                raise CurationError(
                    f"--exclude {candidate.label}={by_author}: the rule already rejects it as "
                    f"{by_rule[0].value} ({by_rule[1]}); --exclude is for a bundle no rule "
                    "covers, so drop this --exclude"
                )
            row = RejectedTrial(
                source=source, reason=by_rule[0], by=Authority.RULE, observation=by_rule[1]
            )
            rejected.append((candidate, row))
        elif by_author is not None:
            row = RejectedTrial(
                source=source,
                reason=Rejection.AUTHOR_EXCLUDED,
                by=Authority.AUTHOR,
                observation=by_author,
            )
            rejected.append((candidate, row))
        else:
            admitted.append((candidate, admitted_entry(candidate, criterion)))
    _refuse_clashes(admitted)
    manifest = CorpusManifest(
        criterion=criterion,
        task_ids=sorted({e.task_id for _, e in admitted}),
        curated_from=sorted({e.source_run for _, e in admitted}),
        curated_at=curated_at,
        bundles=[e for _, e in admitted],
        excluded=[r for _, r in rejected],
    )
    return Curation(manifest, tuple(admitted), tuple(rejected))
