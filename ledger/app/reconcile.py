"""The I/O around reconciliation: packs, corpora and bundles on disk, the ledger receipt.

``reconcile/`` is pure; this module is the seam that feeds it (RUBRIC_MIGRATION.md § Usage,
FORMATS.md § 1, § 7, § 8):

* packs — every directory under a ``--packs`` root holding ``task.yaml``; its grading file
  (``grading:`` or a sibling ``grading.yaml``) and its optional ``migration.yaml``;
* corpora — a declared ``corpus`` value resolves against a caller-supplied base, never
  escaping it by ``..``, an absolute path or a symlink, to a directory holding
  ``corpus.yaml`` or whose immediate subdirectories all do;
* trials — every bundle under the corpus, read by the project's one importer
  (``ledger.sources.tolokaforge``) and folded by ``replay.trial_inputs``; a real run
  ingests the corpus (``ledger.app.ingest``) and reads each trial back from its stream, a dry
  run folds the same events in memory; an unreadable bundle is named, never fatal;
* the candidate label — the trace-check projection over the bundle's timeline under the
  *pack's* block (``replay.timeline`` + ``replay.trace_checks``);
* the receipt — the checkpoint read, the inputs digest and the outputs digest, appended as
  ``reconcile.completed``.

Defects of the invocation raise :class:`ReconcileError`; a defect in one bundle is an
``unreadable_trials`` row.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ledger.app.ingest import IngestError
from ledger.app.ingest import ingest_into as ingest
from ledger.app.receipts import register_recompute
from ledger.sources.corpus import Corpus
from ledger.sources.files import InputError, confine, read_input
from ledger.sources.in_memory import as_stored, plan_bundle
from ledger.sources.shape import BundleError
from ledger.sources.yaml_safe import DEFAULT_LIMITS, load_yaml_bytes
from reconcile.inputs import (
    SHARED,
    Candidate,
    CandidateEvaluation,
    ConstraintDecl,
    CorpusResolution,
    CriterionResult,
    CriterionShape,
    PackView,
    RecordedGrade,
    RecordedGrading,
    TrialObservation,
    Unavailable,
    words,
)
from reconcile.reconcile import Claim, reconcile_entry
from reconcile.report import CorpusReport, run_json
from reconcile.validate import Finding, validate_migration
from replay.timeline import build_trial_timeline
from replay.trace_checks import TraceChecksResult, evaluate_trace_checks
from replay.trace_checks.authoring import inspect_trace_checks
from replay.trial_inputs import TrialInputs, TrialInputsError, trial_inputs
from schemas.canonical import canonical_json, digest
from schemas.envelope import NewEvent, StoredEvent
from schemas.grading import GradingConfig, GradingConfigError, Rubric, load_grading_config
from schemas.migration import MigrationEntry, MigrationFile, MigrationSchemaError, parse_migration
from schemas.timeline import TimelineInconsistencyError
from schemas.trace_checks import TraceChecksConfig, TraceChecksConfigError, load_trace_checks

SKIPPED_SUBTREES = frozenset({"trace_replay", "replays"})


class ReconcileError(Exception):
    """A defect of the invocation (not of one bundle or one entry); names the path."""


class MigrationLoadError(ReconcileError):
    """A migration.yaml without the sidecar's shape, or a trace_checks block its claims are
    recomputed from that does not load: an authoring error, not an I/O one."""


class UnreadableBundle(Exception):
    """One bundle that cannot be read as a trial; reported by name, never fatal to the run."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


# --- reading a pack's files: confined to the pack (ledger.sources.files) ----------------

OUTSIDE_HINT = "copy it into the pack, or name it on the command line with --allow-outside PATH"


def _pack_file(path: Path, pack: Path, allow: Sequence[Path] = ()) -> bytes:
    """The bytes of a file of ``pack``: regular, bounded, and inside the pack unless the
    user named it (or a directory holding it) with ``--allow-outside`` — never because a
    file of the pack says so."""
    try:
        return read_input(
            path,
            max_bytes=DEFAULT_LIMITS.max_bytes,
            root=pack,
            what=f"the pack {pack}",
            allow=allow,
            hint=OUTSIDE_HINT,
        )
    except InputError as exc:
        raise ReconcileError(str(exc)) from None


def _parse_pack_file(data: bytes, path: Path) -> Any:
    try:
        return load_yaml_bytes(data, str(path), DEFAULT_LIMITS)
    except InputError as exc:
        raise ReconcileError(str(exc)) from None


# --- corpora -------------------------------------------------------------------------------


def resolve_corpus(value: str, base: Path) -> CorpusResolution:
    """Resolve a declared ``corpus`` against ``base``; every failure is named, never raised."""
    base_real = base.resolve()
    joined = base / value
    shown = CorpusResolution(value, str(base), str(joined))
    if Path(value).is_absolute() or ".." in Path(value).parts:
        return _with_error(shown, f"corpus {value!r} must be a relative path below the base {base}")
    real = joined.resolve()
    if not real.is_relative_to(base_real):
        return _with_error(
            shown,
            # the link's target is not named: where it points is not ours to print
            f"corpus {value!r} resolves outside the base {base_real} (through a "
            "symlink) — point it at a directory inside the base",
        )
    if not real.is_dir():
        return _with_error(
            shown,
            f"corpus {value!r} names no directory: resolved {joined}, against the base {base} "
            "— run from the directory the value is written relative to, or pass --base",
        )
    if not (real / "corpus.yaml").is_file():
        parts = [p for p in sorted(real.iterdir()) if p.is_dir()]
        if not parts or not all((p / "corpus.yaml").is_file() for p in parts):
            return _with_error(
                shown,
                f"corpus {value!r} ({joined}) holds no corpus.yaml, and not every immediate "
                "subdirectory does — point it at a curated corpus (a directory holding "
                "corpus.yaml) or at a directory of such parts",
            )
    bundles = frozenset(p.relative_to(real).as_posix() for p in discover_bundles(real))
    return CorpusResolution(value, str(base), str(joined), None, bundles)


def _with_error(r: CorpusResolution, error: str) -> CorpusResolution:
    return CorpusResolution(r.value, r.base, r.resolved, error, r.bundles)


def discover_bundles(root: Path) -> list[Path]:
    """Directories directly holding ``trajectory.yaml``, sorted (FORMATS.md § 1).

    A bundle does not nest, ``trace_replay`` / ``replays`` subtrees are never searched, and
    symlinked directories are not followed: a corpus cannot reach outside its base.
    """
    found = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        if "trajectory.yaml" in filenames:
            found.append(Path(dirpath))
            dirnames[:] = []
        else:
            dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_SUBTREES)
    return sorted(found)


# --- packs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pack:
    directory: Path
    view: PackView
    grading: Mapping[str, Any]
    migration: MigrationFile | None
    digest: str
    trace_checks: TraceChecksConfig | None = None  # loaded when a migration reads it
    migration_doc: Any = None  # the sidecar as loaded, so a receipt can carry it

    def document(self, shown: str) -> dict[str, Any]:
        """What a receipt records of the pack, enough to rebuild it with :func:`pack_from`."""
        return {
            "directory": shown,
            "task_id": self.view.task_id,
            "grading": self.grading,
            "migration": self.migration_doc,
        }


def find_packs(
    roots: Sequence[Path], base: Path | None = None, allow_outside: Sequence[Path] = ()
) -> list[Pack]:
    """Every pack (a directory holding task.yaml) under the roots, sorted by path."""
    packs = []
    for root in roots:
        if not root.is_dir():
            raise ReconcileError(f"--packs {root}: no such directory")
        for task_file in sorted(root.rglob("task.yaml")):
            if any(part in SKIPPED_SUBTREES for part in task_file.parts):
                continue
            if (task_file.parent / "trajectory.yaml").exists():
                continue  # a recorded bundle's frozen task, not a pack
            packs.append(read_pack(task_file.parent, base, allow_outside))
    return packs


def read_pack(
    directory: Path, base: Path | None = None, allow_outside: Sequence[Path] = ()
) -> Pack:
    """A pack from disk; named relative to ``base`` in every message it later produces.

    Its files are read confined to the pack; the grading file may lie outside only where
    ``allow_outside`` (``--allow-outside PATH``) says so."""
    task_path = directory / "task.yaml"
    task = _parse_pack_file(_pack_file(task_path, directory), task_path) or {}
    task_id = task.get("task_id")
    if not isinstance(task_id, str):
        raise ReconcileError(f"{directory / 'task.yaml'}: no task_id")
    grading_name = task.get("grading") or "grading.yaml"
    if not isinstance(grading_name, str):
        raise ReconcileError(
            f"{directory / 'task.yaml'}: grading is {type(grading_name).__name__}; write the "
            "path of the pack's grading file (e.g. grading: grading.yaml)"
        )
    grading_path = directory / grading_name
    try:  # refused before it is looked at: whether an outside file exists is not ours to say
        confine(grading_path, directory, f"{task_path}: key 'grading'", f"the pack {directory}",
                allow_outside, OUTSIDE_HINT)  # fmt: skip
    except InputError as exc:
        raise ReconcileError(f"{exc.path}: names a grading file that {exc.problem}") from None
    if not grading_path.is_file():
        raise ReconcileError(
            f"pack {directory} ({task_id}) has no grading file on disk (looked for "
            f"{grading_path}) — the migration is recomputed from that file's trace_checks"
        )
    grading_bytes = _pack_file(grading_path, directory, allow_outside)
    raw_bytes = grading_bytes
    migration_path = directory / "migration.yaml"
    migration_doc = None
    if migration_path.is_file():
        migration_bytes = _pack_file(migration_path, directory)
        raw_bytes += b"\0" + migration_bytes
        migration_doc = _parse_pack_file(migration_bytes, migration_path)
    shown = _display(directory, base) if base is not None else str(directory)
    return pack_from(
        shown,
        task_id,
        _parse_pack_file(grading_bytes, grading_path) or {},
        migration_doc,
        migration_path.is_file(),
        "sha256:" + hashlib.sha256(raw_bytes).hexdigest(),
    )


def pack_from(
    shown: str,
    task_id: str,
    grading: Mapping[str, Any],
    migration_doc: Any,
    has_migration: bool,
    pack_digest: str = "",
) -> Pack:
    """A pack from its loaded documents (disk, or a receipt's record of them)."""
    migration = None
    if has_migration:
        try:
            migration = parse_migration(migration_doc, source=f"{shown}/migration.yaml")
        except MigrationSchemaError as exc:
            raise MigrationLoadError(str(exc)) from None
    try:
        # a pack is authored: its grading file is read by the one reader, every rule an error
        config = load_grading_config(grading, file=f"{shown}/grading.yaml", authored=True)
    except GradingConfigError as exc:
        raise MigrationLoadError(str(exc)) from None
    view = pack_view(task_id, shown, grading, config)
    config = None
    if migration is not None and grading.get("trace_checks") is not None:
        # the block every declared claim is recomputed from: it loads, or nothing is declared
        try:
            config = load_trace_checks(grading["trace_checks"])
        except TraceChecksConfigError as exc:
            raise MigrationLoadError(f"{shown}/grading.yaml: {exc}") from None
    return Pack(Path(shown), view, grading, migration, pack_digest, config, migration_doc)


def rubric_of(config: GradingConfig) -> tuple[CriterionShape, ...] | None:
    """The rubric's criteria as the grading models read them (schemas/grading.py is the
    one reader: its defaults — kind binary, weight 1.0 — are the only ones), ``None``
    when no judge rubric is configured."""
    judge = config.llm_judge
    rubric: Rubric | None = judge.rubric if judge is not None else None
    if rubric is None:
        return None
    return tuple(
        CriterionShape(c.id, c.kind, c.required, float(c.weight), c.description)
        for c in rubric.criteria
    )


def pack_view(
    task_id: str, source: str, grading: Mapping[str, Any], config: GradingConfig
) -> PackView:
    """The ids, routes and severities of the pack's constraints, and its rubric.

    ``config`` is ``grading`` as the one reader loaded it; the raw mapping is kept only
    for each constraint's canonical bytes (two packs pool a criterion only when they
    recompute it with byte-identical constraints)."""
    block = grading.get("trace_checks") or {}
    severity: dict[str, str] = {}
    if config.trace_checks is not None:
        cfg = config.trace_checks
        severity = {
            c.id: c.severity for c in (*cfg.shared, *(c for p in cfg.paths for c in p.constraints))
        }
    constraints: dict[str, ConstraintDecl] = {}

    def add(raw: Mapping[str, Any], route: str) -> None:
        cid = str(raw.get("id"))
        constraints[cid] = ConstraintDecl(
            cid,
            route,
            severity.get(cid, "scored"),
            canonical_json(raw),  # type: ignore[arg-type]
        )

    for raw in block.get("constraints") or []:
        add(raw, SHARED)
    for path in block.get("alternatives") or []:
        for raw in path.get("constraints") or []:
            add(raw, str(path.get("id")))
    return PackView(
        task_id=task_id,
        source=source,
        criteria={c.id: c for c in rubric_of(config) or ()},
        constraints=constraints,
        combine_weights=dict(config.combine.weights),
        has_trace_checks=bool(block),
    )


# --- trials ----------------------------------------------------------------------------------
#
# A bundle is read by the project's one importer (ledger.sources.tolokaforge: bounded YAML,
# shape checks, the bundle → events mapping) and folded back by replay.trial_inputs, so
# reconcile sees a trial exactly as ingest stores it. A real run ingests the corpus and
# reads each trial's stream back out of the ledger; a dry run folds the same events in
# memory without writing them.


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UnreadableBundle(f"grade.yaml {where} is {value!r}, not a number")
    return float(value)


def recorded_grade(raw: Mapping[str, Any] | None) -> RecordedGrade:
    """grade.yaml's verdict fields; a row that is not a judge verdict is unreadable."""
    if raw is None:
        return RecordedGrade("absent (no grade.yaml)", None, {}, 0.0, False)
    rows = raw.get("criterion_results")
    results = None
    if rows is not None:
        results = []
        for i, row in enumerate(rows):
            if not isinstance(row.get("id"), str) or not isinstance(row.get("met"), bool):
                raise UnreadableBundle(f"grade.yaml criterion_results[{i}] is not a judge verdict")
            score = row.get("score")
            results.append(
                CriterionResult(
                    row["id"],
                    row["met"],
                    None if score is None else _number(score, f"criterion_results[{i}].score"),
                    str(row.get("justification") or ""),
                )
            )
        results = tuple(results)
    components = {
        k: (None if v is None else _number(v, f"components.{k}"))
        for k, v in (raw.get("components") or {}).items()
    }
    summary = raw.get("trace_checks_summary") or {}
    return RecordedGrade(
        judge_status=str(raw.get("judge_status") or "unspecified"),
        criterion_results=results,
        components=components,
        score=_number(raw.get("score"), "score"),
        binary_pass=bool(raw.get("binary_pass")),
        trace_gate_failed=bool(summary.get("gate_failed", False)),
    )


def recorded_grading(cfg: Mapping[str, Any]) -> RecordedGrading:
    """The frozen ``grading_config``: rubric, combine map, method, threshold — read by the
    one reader as evidence (a broken authoring rule is no reason to drop the trial)."""
    try:
        config = load_grading_config(cfg, file="task.yaml grading_config", authored=False)
    except GradingConfigError as exc:
        raise UnreadableBundle(str(exc)) from None
    return RecordedGrading(
        rubric=rubric_of(config),
        weights=dict(config.combine.weights),
        method=config.combine.method,
        pass_threshold=config.combine.pass_threshold,
    )


def never_ran(inputs: TrialInputs) -> bool:
    """No task.yaml, and the trajectory records an abort rather than an episode."""
    return inputs.registered.task is None and (
        inputs.status != "completed" or bool(inputs.grading_error)
    )


def graded_values(inputs: TrialInputs) -> tuple[RecordedGrade, RecordedGrading]:
    """What reconciliation reads of a trial, or UnreadableBundle naming why not."""
    if inputs.registered.redacted:
        raise UnreadableBundle("metrics.yaml carries a redaction stamp; refused by name")
    if inputs.registered.task is None:
        raise UnreadableBundle(
            "task.yaml is absent on a bundle whose trajectory records a real episode"
        )
    grading = recorded_grading(inputs.registered.grading or {})
    return recorded_grade(inputs.recorded_grade), grading


# --- the candidate label -------------------------------------------------------------------

Evaluator = Callable[[TrialInputs, "Pack"], Candidate]


def trace_evaluator() -> Evaluator:
    """The production projection: the timeline, then the pack's trace_checks over it."""
    configs: dict[str, TraceChecksConfig | str] = {}

    def config_of(pack: Pack) -> TraceChecksConfig | str:
        if pack.trace_checks is not None:
            return pack.trace_checks
        key = str(pack.directory)
        if key not in configs:
            try:
                configs[key] = load_trace_checks(pack.grading.get("trace_checks"))
            except TraceChecksConfigError as exc:
                configs[key] = f"{pack.directory}: {exc}"
        return configs[key]

    def evaluate(inputs: TrialInputs, pack: Pack) -> Candidate:
        config = config_of(pack)
        if isinstance(config, str):
            return Unavailable(config)
        if inputs.timeline_inconsistency is not None:
            return Unavailable(
                "the message view and the tool-call record disagree: "
                + str(inputs.timeline_inconsistency.get("message"))
            )
        try:
            timeline = build_trial_timeline(
                inputs.messages, inputs.recorded_calls, inputs.termination_reason
            )
        except TimelineInconsistencyError as exc:
            return Unavailable(f"the timeline cannot be built: {exc}")
        return candidate_from_result(evaluate_trace_checks(timeline, config))

    return evaluate


def candidate_from_result(result: TraceChecksResult) -> Candidate:
    """Adapt a ``TraceChecksResult`` (decision-set results + summary) to our values.

    ``results`` covers the shared constraints and the winning route's, so a route-scoped
    constraint whose route lost is absent — which reconciliation names as unavailable.
    """
    if not result.results and result.skipped_reason:
        return Unavailable(f"the trace checks did not run: {result.skipped_reason}")
    verdicts: dict[str, bool | None] = {
        r.id: None if r.undecided else bool(r.passed) for r in result.results
    }
    return CandidateEvaluation(
        verdicts=verdicts,
        component=result.component,
        gate_failed=bool(result.summary.gate_failed),
        winning_path=result.summary.winning_path or "",
    )


# --- the invocation ------------------------------------------------------------------------


@dataclass
class Invocation:
    packs: Sequence[Path]
    base: Path
    source: Path | None = None
    evaluator: Evaluator | None = None
    allow_outside: Sequence[Path] = ()  # --allow-outside: grading files a pack may name outside it
    ledger: Any | None = None  # an open Ledger: ingest and read from it; None: dry run


@dataclass
class Outcome:
    reports: list[CorpusReport]
    document: dict[str, Any]
    inputs_digest: str
    exit_code: int
    config: dict[str, Any] = field(default_factory=dict)  # what a receipt needs to recompute


def load_declarations(packs: Sequence[Pack], base: Path) -> dict[str, CorpusResolution]:
    """Resolve every declared corpus and validate every migration; raise on any finding."""
    corpora: dict[str, CorpusResolution] = {}
    problems: list[str] = []
    for pack in packs:
        if pack.migration is None:
            continue
        for e in pack.migration.migrations:
            value = e.corpus_value
            if value is not None and value not in corpora:
                corpora[value] = resolve_corpus(value, base)
        problems += [
            f"{pack.directory / 'migration.yaml'}: {f}"
            for f in validate_migration(pack.migration, pack.view, corpora)
        ]
    if problems:
        raise ReconcileError("the declaration does not load:\n  " + "\n  ".join(problems))
    return corpora


def validate_pack(
    directory: Path, base: Path, allow_outside: Sequence[Path] = ()
) -> tuple[Pack, list[Finding]]:
    """``vledger validate``: the pack and every rule its migration.yaml breaks."""
    pack = read_pack(directory, allow_outside=allow_outside)
    if pack.migration is None:
        return pack, []
    corpora = {
        e.corpus_value: resolve_corpus(e.corpus_value, base)
        for e in pack.migration.migrations
        if e.corpus_value is not None
    }
    return pack, validate_migration(pack.migration, pack.view, corpora)


def _claim_key(e: MigrationEntry, pack: Pack) -> tuple:
    specs = tuple(pack.view.constraints[c].spec for c in e.by)
    return (
        words(e.was.description),
        specs,
        e.mode,
        e.residual,
        tuple(sorted((e.combine_weights or {}).items())),
        e.evidence.model_dump() if e.evidence else None,
        e.acknowledged,
    )


def pool_claims(packs: Sequence[Pack]) -> list[tuple[str, Claim]]:
    """(corpus value, claim) pairs; packs declaring one criterion the same way are pooled."""
    groups: dict[tuple[str, str], list[tuple[MigrationEntry, Pack]]] = {}
    for pack in packs:
        for e in pack.migration.migrations if pack.migration else ():
            groups.setdefault((e.corpus_value or "", e.criterion), []).append((e, pack))
    out = []
    for (corpus, criterion), members in sorted(groups.items()):
        first_entry, first_pack = members[0]
        key = _claim_key(first_entry, first_pack)
        for e, pack in members[1:]:
            if _claim_key(e, pack) != key:
                raise ReconcileError(
                    f"criterion {criterion!r} over corpus {corpus!r} is declared differently by "
                    f"{first_pack.view.task_id} ({first_pack.directory}) and {pack.view.task_id} "
                    f"({pack.directory}) — one criterion over one corpus is one measurement: make "
                    "the two declarations and their by constraints identical"
                )
        task_ids = tuple(sorted({p.view.task_id for _, p in members}))
        constraints = {c: first_pack.view.constraints[c] for c in first_entry.by}
        current = first_pack.view.criteria.get(criterion)
        out.append((corpus, Claim(first_entry, task_ids, constraints, current)))
    return out


@dataclass(frozen=True)
class _TrialRef:
    """A readable trial: how it is shown, its stream, every spelling a waiver may use."""

    trial: str
    stream: str
    keys: tuple[str, ...]


@dataclass
class _Read:
    """One corpus as read: readable trials (with their inputs), unreadable and excluded rows."""

    source: str
    corpus_value: str | None
    trials: list[tuple[_TrialRef, TrialInputs]] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    excluded: list[tuple[str, str]] = field(default_factory=list)
    digests: list[str] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        """What a receipt keeps of this read, enough to redo everything after it."""
        return {
            "source": self.source,
            "corpus_value": self.corpus_value,
            "trials": [[r.trial, r.stream, list(r.keys)] for r, _ in self.trials],
            "unreadable": [list(u) for u in self.unreadable],
            "excluded": [list(x) for x in self.excluded],
        }


@dataclass(frozen=True)
class _Context:
    base: Path
    packs_by_task: Mapping[str, Pack]
    evaluator: Evaluator
    roots: tuple[str, ...]
    ledger: Any | None  # an open Ledger on a real run, None on a dry run


def _ingest(ctx: _Context, root: Path, corpus: str) -> None:
    """A real run: the corpus into the ledger (idempotent; bad bundles recorded as skipped)."""
    if ctx.ledger is None:
        return
    try:
        ingest(ctx.ledger, [str(root)], corpus=corpus, skip_bad=True, keep_inconsistent=True)
    except IngestError as exc:
        raise ReconcileError(f"ingesting {root} into the ledger: {exc}") from None


def _trial_inputs(
    ctx: _Context, directory: Path, label: str, corpus: str, manifests: dict[Path, Corpus]
) -> tuple[str, str, TrialInputs]:
    """(stream, stream digest, TrialInputs) for one bundle: from the ledger on a real run."""
    plan = plan_bundle(directory, label, corpus, manifests)
    events = as_stored(plan.events)
    if ctx.ledger is not None:
        events = list(ctx.ledger.read(stream=plan.stream))
        if [e.event_id for e in events] != [e.event_id for e in plan.events]:
            held = "no events" if not events else f"{len(events)} events of other content"
            raise UnreadableBundle(
                f"the ledger's stream {plan.stream!r} holds {held}, not this bundle as it is on "
                "disk (ingest skipped it or ingested an earlier version) — see `vledger ingest`"
            )
    stream_digest = digest([plan.stream, [e.event_id for e in plan.events]])
    return plan.stream, stream_digest, trial_inputs(events)


def _read_corpus(ctx: _Context, root: Path, shown: str, corpus_value: str | None) -> _Read:
    """Every bundle under ``root``: a readable trial, an unreadable row or an exclusion."""
    bundles = discover_bundles(root)
    if not bundles:
        raise ReconcileError(f"no bundle under {root} (a bundle directly holds trajectory.yaml)")
    corpus = root.resolve().name
    _ingest(ctx, root, corpus)
    out = _Read(shown, corpus_value)
    manifests: dict[Path, Corpus] = {}
    for directory in bundles:
        trial = _display(directory, ctx.base)
        try:
            stream, stream_digest, inputs = _trial_inputs(ctx, directory, trial, corpus, manifests)
            if never_ran(inputs):
                out.excluded.append((trial, "no task.yaml: the trial never ran"))
                continue
            graded_values(inputs)  # unreadable here, not halfway through reconciling
        except (BundleError, InputError, TrialInputsError, UnreadableBundle) as exc:
            out.unreadable.append((trial, str(exc)))
            continue
        relative = directory.relative_to(root).as_posix()
        keys = {trial, relative}
        if corpus_value is not None:
            keys.add(f"{corpus_value.rstrip('/')}/{relative}")
        out.trials.append((_TrialRef(trial, stream, tuple(sorted(keys))), inputs))
        out.digests.append(stream_digest)
    return out


def _observations(ctx: _Context, read: _Read) -> list[TrialObservation]:
    """The readable trials as observations, each labelled against its own task's pack."""
    gated: set[tuple[str, str]] = set()
    out = []
    for ref, inputs in read.trials:
        grade, grading = graded_values(inputs)
        task_id = inputs.registered.task_id
        pack = ctx.packs_by_task.get(task_id)
        if pack is None:
            raise ReconcileError(
                f"task_id {task_id!r} of {ref.trial} resolves in none of the searched pack "
                f"roots ({', '.join(ctx.roots)}) — pass --packs with the directory holding its pack"
            )
        _authoring_gate(pack, inputs, ref.trial, gated)
        lazy = _once(ctx.evaluator, inputs, pack)
        out.append(TrialObservation(ref.trial, task_id, grade, grading, lazy, frozenset(ref.keys)))
    return out


def recorded_tools(inputs: TrialInputs) -> dict[str, Any] | None:
    """``tools_schemas.yaml`` as ``name -> parameters schema``; ``None`` when not recorded."""
    schemas = inputs.registered.tool_schemas
    if schemas is None:
        return None
    tools: dict[str, Any] = {}
    for item in schemas:
        fn = item.get("function") if isinstance(item, Mapping) else None
        if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
            params = fn.get("parameters")
            tools[fn["name"]] = params if isinstance(params, Mapping) else None
    return tools


def _authoring_gate(
    pack: Pack, inputs: TrialInputs, trial: str, checked: set[tuple[str, str]]
) -> None:
    """The pack's block against the tools this bundle recorded: a constraint naming a tool
    the corpus never had would fail every trial and read as a disagreement with the judge."""
    if pack.trace_checks is None:
        return
    tools = recorded_tools(inputs)
    key = (str(pack.directory), digest(tools))
    if key in checked:
        return
    checked.add(key)
    errors = [f for f in inspect_trace_checks(pack.trace_checks, tools) if f.klass == "error"]
    if errors:
        raise ReconcileError(
            f"{pack.directory}'s trace_checks cannot be graded against the tools {trial} "
            "recorded: " + "; ".join(f"{f.address}: {f.message}" for f in errors)
        )


def _once(evaluator: Evaluator, inputs: TrialInputs, pack: Pack) -> Callable[[], Candidate]:
    """Evaluate on first demand only, and once: two entries over one trial share the result."""
    memo: list[Candidate] = []

    def compute() -> Candidate:
        if not memo:
            memo.append(evaluator(inputs, pack))
        return memo[0]

    return compute


def _display(path: Path, base: Path) -> str:
    try:
        return path.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _packs_by_task(packs: Sequence[Pack]) -> dict[str, Pack]:
    by_task: dict[str, Pack] = {}
    for pack in packs:
        other = by_task.get(pack.view.task_id)
        if other is not None:
            raise ReconcileError(
                f"task_id {pack.view.task_id!r} is declared by two packs: {other.directory} and "
                f"{pack.directory} — search one root, or give the fixture its own task_id"
            )
        by_task[pack.view.task_id] = pack
    return by_task


def _corpus_report(ctx: _Context, read: _Read, claims: Sequence[Claim]) -> CorpusReport:
    """Every claim over one corpus reconciled; the sweep knows which corpus it names."""
    obs = _observations(ctx, read)
    if read.corpus_value is None:  # --source: the claims of the packs behind its trials
        tasks = {o.task_id for o in obs}
        claims = _dedupe(c for c in claims if tasks & set(c.task_ids))
    sweep = read.corpus_value is not None
    entries = tuple(reconcile_entry(c, obs, sweep=sweep) for c in claims)
    return CorpusReport(
        read.source,
        ctx.roots,
        len(obs) + len(read.unreadable),
        entries,
        tuple(read.unreadable),
        tuple(read.excluded),
    )


def run_reconcile(inv: Invocation) -> Outcome:
    """Every report the invocation asks for, their JSON document and the exit code.

    With ``inv.ledger`` (an open ledger) each corpus is ingested first and every trial is
    read back from its stream; without, nothing is written.
    """
    packs = find_packs(inv.packs, inv.base, inv.allow_outside)
    corpora = load_declarations(packs, inv.base)
    claims = pool_claims(packs)
    ctx = _Context(
        inv.base,
        _packs_by_task(packs),
        inv.evaluator or trace_evaluator(),
        tuple(str(p) for p in inv.packs),
        inv.ledger,
    )
    reads: list[tuple[_Read, list[Claim]]] = []
    if inv.source is not None:
        shown = _display(inv.source, inv.base)
        reads.append((_read_corpus(ctx, inv.source, shown, None), [c for _, c in claims]))
    else:
        for value in sorted({v for v, _ in claims}):
            root = Path(corpora[value].resolved)
            reads.append(
                (_read_corpus(ctx, root, value, value), [c for v, c in claims if v == value])
            )
    reports = [_corpus_report(ctx, read, mine) for read, mine in reads]
    digests = [f"pack:{p.directory}={p.digest}" for p in packs]
    digests += [d for read, _ in reads for d in read.digests]
    document = run_json(reports)
    config = {
        "packs_searched": list(ctx.roots),
        "packs": [p.document(str(p.directory)) for p in packs],
        "corpora": [read.record() for read, _ in reads],
    }
    return Outcome(reports, document, digest(sorted(digests)), document["exit_code"], config)


def _dedupe(claims: Iterable[Claim]) -> list[Claim]:
    """With --source, a criterion pooled under two corpus values is reconciled once."""
    seen, out = set(), []
    for c in claims:
        key = (c.entry.criterion, c.task_ids)
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


# --- the receipt -----------------------------------------------------------------------------


def append_receipt(lg: Any, outcome: Outcome, *, run_id: str) -> dict[str, Any]:
    """Append ``reconcile.completed`` with {checkpoint, inputs_digest, outputs_digest}.

    The checkpoint is the log as the reconciliation read it (after its corpus was
    ingested, before this event), so the receipt names the state the verdict came from.
    ``config`` records the packs and the trial streams read, which is what
    :func:`recompute_reconcile` needs to redo the verdict from the log alone.
    """
    size = lg.size()
    receipt = {
        "checkpoint": {"size": size, "root": lg.root(size).hex()},
        "inputs_digest": outcome.inputs_digest,
        "outputs_digest": digest(outcome.document),
    }
    keys = ("criterion", "task_ids", "mode", "verdict", "observations", "kappa")
    payload = {
        "run_id": run_id,
        "exit_code": outcome.exit_code,
        "entries": [{k: e[k] for k in keys} for e in outcome.document["entries"]],
        "config": outcome.config,
        "receipt": receipt,
    }
    lg.append([NewEvent(f"reconcile/{run_id}", "reconcile.completed", payload)])
    return receipt


def recompute_reconcile(lg: Any, ev: StoredEvent) -> str:
    """The outputs digest of a recorded reconciliation, redone from the log prefix its
    receipt read and the packs it recorded — no file on disk is opened."""
    payload = ev.data()
    config = payload["config"]
    size = payload["receipt"]["checkpoint"]["size"]
    packs = [
        pack_from(
            d["directory"], d["task_id"], d["grading"], d["migration"], d["migration"] is not None
        )
        for d in config["packs"]
    ]
    claims = pool_claims(packs)
    ctx = _Context(
        Path("."), _packs_by_task(packs), trace_evaluator(), tuple(config["packs_searched"]), lg
    )
    reports = []
    for record in config["corpora"]:
        read = _Read(record["source"], record["corpus_value"])
        for trial, stream, keys in record["trials"]:
            events = list(lg.read(stream=stream, to_seq=size - 1)) if size else []
            read.trials.append((_TrialRef(trial, stream, tuple(keys)), trial_inputs(events)))
        read.unreadable = [tuple(u) for u in record["unreadable"]]
        read.excluded = [tuple(x) for x in record["excluded"]]
        value = record["corpus_value"]
        mine = [c for v, c in claims if value is None or v == value]
        reports.append(_corpus_report(ctx, read, mine))
    return digest(run_json(reports))


register_recompute("reconcile.completed", recompute_reconcile)
