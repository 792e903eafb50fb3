"""Reconciliation's declarations: task packs, the corpora they declare, the pooled claims.

A pack is a directory holding ``task.yaml``, its grading file and an optional
``migration.yaml``, each read confined to the pack; a declared corpus resolves against the
base without escaping it (RUBRIC_MIGRATION.md § Usage, FORMATS.md § 7, § 8).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ledger.errors import LedgerError
from ledger.sources.detect import NEVER_DISCOVERED, DetectError, relative_posix
from ledger.sources.detect import discover_bundles as detect_bundles
from ledger.sources.files import InputError, confine, read_input
from ledger.sources.yaml_safe import DEFAULT_LIMITS, load_yaml_bytes
from reconcile.inputs import (
    SHARED,
    ConstraintDecl,
    CorpusResolution,
    PackView,
    words,
)
from reconcile.reconcile import Claim
from reconcile.trials import rubric_of
from reconcile.validate import validate_migration
from replay.grading.rules import GradingConfigError, load_grading_config
from replay.trace_checks.rules import TraceChecksConfigError, load_trace_checks
from schemas.canonical import canonical_json
from schemas.errors import CANNOT_RUN
from schemas.grading import GradingConfig
from schemas.migration import MigrationEntry, MigrationFile, MigrationSchemaError, parse_migration
from schemas.trace_checks import TraceChecksConfig

SKIPPED_SUBTREES = NEVER_DISCOVERED


class ReconcileError(LedgerError):
    """A defect of the invocation (not of one bundle or one entry); names the path."""

    exit_code = CANNOT_RUN


class MigrationLoadError(ReconcileError):
    """A migration.yaml without the sidecar's shape, or a trace_checks block its claims are
    recomputed from that does not load: an authoring error, not an I/O one."""


# --- reading a pack's files: confined to the pack (ledger.sources.files) ----------------

OUTSIDE_HINT = "copy it into the pack, or name it on the command line with --allow-outside PATH"


def _pack_file(path: Path, pack: Path, allow: Sequence[Path] = ()) -> bytes:
    """The bytes of a file of ``pack``: regular, bounded, and inside the pack unless the
    user named it (or a directory holding it) with ``--allow-outside`` — never because a
    file of the pack says so."""
    try:
        return read_input(path, max_bytes=DEFAULT_LIMITS.max_bytes, root=pack,
                          what=f"the pack {pack}", allow=allow, hint=OUTSIDE_HINT)  # fmt: skip
    except InputError as exc:
        raise ReconcileError(str(exc)) from None


def _parse_pack_file(data: bytes, path: Path) -> Any:
    try:
        return load_yaml_bytes(data, str(path), DEFAULT_LIMITS)
    except InputError as exc:
        raise ReconcileError(str(exc)) from None


# --- corpora -------------------------------------------------------------------------------


def resolve_corpus(value: str, base: Path, list_bundles: bool = True) -> CorpusResolution:
    """Resolve a declared ``corpus`` against ``base``; every failure is named, never raised.
    ``list_bundles=False``: its bundles are not listed (nothing acknowledged in it to check)."""
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
    try:
        if not (real / "corpus.yaml").is_file():
            parts = [p for p in sorted(real.iterdir()) if p.is_dir()]
            if not parts or not all((p / "corpus.yaml").is_file() for p in parts):
                return _with_error(
                    shown,
                    f"corpus {value!r} ({joined}) holds no corpus.yaml, and not every immediate "
                    "subdirectory does — point it at a curated corpus (a directory holding "
                    "corpus.yaml) or at a directory of such parts",
                )
        found = discover_bundles(real) if list_bundles else ()
        bundles = frozenset(relative_posix(p, real) for p in found)
    except PermissionError as exc:  # a part it cannot look into: named, as discovery names one
        return _with_error(shown, f"corpus {value!r}: {exc.filename}: permission denied")
    except DetectError as exc:
        return _with_error(shown, f"corpus {value!r}: {exc}")
    return CorpusResolution(value, str(base), str(joined), None, bundles)


def _with_error(r: CorpusResolution, error: str) -> CorpusResolution:
    return CorpusResolution(r.value, r.base, r.resolved, error, r.bundles)


def discover_bundles(root: Path) -> list[Path]:
    """Directories directly holding ``trajectory.yaml``, sorted (FORMATS.md § 1): the
    bundles ingest reads under ``root`` (``ledger.sources.detect``), so reconcile reads
    each trial ingest recorded and no other.

    A bundle does not nest, ``trace_replay`` / ``replays`` subtrees are never searched, and
    symlinked directories are not followed: a corpus cannot reach outside its base.
    """
    return list(detect_bundles(root))


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
        for task_file in _task_files(root):
            if any(part in SKIPPED_SUBTREES for part in task_file.parts):
                continue
            if (task_file.parent / "trajectory.yaml").exists():
                continue  # a recorded bundle's frozen task, not a pack
            packs.append(read_pack(task_file.parent, base, allow_outside))
    return packs


def _task_files(root: Path) -> list[Path]:
    """Every ``task.yaml`` under ``root``, sorted, as ``rglob`` finds them (linked
    directories not entered), but a directory it cannot look into is refused by name:
    ``rglob`` skipped it without a word, and its pack's trials then "resolved in none of
    the searched pack roots"."""

    def refuse(exc: OSError) -> None:
        raise ReconcileError(
            f"--packs {root}: cannot look inside {exc.filename} ({exc.strerror}); make it "
            "readable, or move it out of the pack roots"
        )

    found = [Path(d) / "task.yaml" for d, _, files in os.walk(root, onerror=refuse)
             if "task.yaml" in files]  # fmt: skip
    return sorted(found)


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
    shown = display_path(directory, base) if base is not None else str(directory)
    grading = _parse_pack_file(grading_bytes, grading_path) or {}
    pack_digest = "sha256:" + hashlib.sha256(raw_bytes).hexdigest()
    return pack_from(shown, task_id, grading, migration_doc, migration_path.is_file(), pack_digest)


def pack_from(
    shown: str, task_id: str, grading: Mapping[str, Any], migration_doc: Any,
    has_migration: bool, pack_digest: str = "",
) -> Pack:  # fmt: skip
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
        spec = canonical_json(raw)  # type: ignore[arg-type]
        constraints[cid] = ConstraintDecl(cid, route, severity.get(cid, "scored"), spec)

    for raw in block.get("constraints") or []:
        add(raw, SHARED)
    for path in block.get("alternatives") or []:
        for raw in path.get("constraints") or []:
            add(raw, str(path.get("id")))
    return PackView(
        task_id=task_id, source=source, criteria={c.id: c for c in rubric_of(config) or ()},
        constraints=constraints, combine_weights=dict(config.combine.weights),
        has_trace_checks=bool(block),
    )  # fmt: skip


def load_declarations(
    packs: Sequence[Pack], base: Path, held: bool = False
) -> dict[str, CorpusResolution]:
    """Resolve every declared corpus and validate every migration; raise on any finding.
    ``held``: the corpora are read from the ledger, so a corpus's bundles are listed only
    to check the trials an entry over it acknowledges."""
    corpora: dict[str, CorpusResolution] = {}
    problems: list[str] = []
    entries = [e for p in packs if p.migration is not None for e in p.migration.migrations]
    acknowledging = {e.corpus_value for e in entries if e.acknowledged}
    for pack in packs:
        if pack.migration is None:
            continue
        for e in pack.migration.migrations:
            value = e.corpus_value
            if value is not None and value not in corpora:
                listed = not held or value in acknowledging
                corpora[value] = resolve_corpus(value, base, list_bundles=listed)
        problems += [
            f"{pack.directory / 'migration.yaml'}: {f}"
            for f in validate_migration(pack.migration, pack.view, corpora)
        ]
    if problems:
        raise ReconcileError("the declaration does not load:\n  " + "\n  ".join(problems))
    return corpora


def _claim_key(e: MigrationEntry, pack: Pack) -> tuple:
    specs = tuple(pack.view.constraints[c].spec for c in e.by)
    weights = tuple(sorted((e.combine_weights or {}).items()))
    evidence = e.evidence.model_dump() if e.evidence else None
    return (words(e.was.description), specs, e.mode, e.residual, weights, evidence, e.acknowledged)


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


def display_path(
    path: Path, base: Path, real: Path | None = None, real_base: Path | None = None
) -> str:
    """``path`` relative to ``base`` once both are resolved (``real``, ``real_base``: those
    resolved already), else as given."""
    try:
        return relative_posix(real or path.resolve(), real_base or base.resolve())
    except ValueError:
        return path.as_posix()


def packs_by_task(packs: Sequence[Pack]) -> dict[str, Pack]:
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
