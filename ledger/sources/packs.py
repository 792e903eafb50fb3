"""Task packs → ``pack.registered`` (+ ``migration.declared``) on ``pack/<name>`` (FORMATS.md § 7)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ledger.sources.files import OutsideRoot, confine, present
from ledger.sources.plan import PlannedEvent, pack_stream, to_events
from ledger.sources.shape import check_keys, check_type, need_list, need_mapping
from ledger.sources.yaml_safe import DEFAULT_LIMITS, YamlLimits, load_confined_yaml

MIGRATION_KEYS = frozenset({"migrations"})


@dataclass(frozen=True, slots=True)
class RawPack:
    label: str
    name: str
    task: Any = None
    grading: Any = None
    grading_file: str | None = None
    migration: Any = None
    has_migration: bool = False
    files: tuple[str, ...] = ()


def read_pack(path: Path, label: str, limits: YamlLimits = DEFAULT_LIMITS) -> RawPack:
    """Parse a pack's task.yaml, its grading file and migration.yaml (each optional).

    The pack directory is the root: the grading file task.yaml names must resolve inside
    it (ingest has no --allow-outside: what goes into the log comes from the pack)."""
    what = f"the pack {label}"

    def read(name: str) -> Any:
        return load_confined_yaml(path, name, label, what, limits) if present(path / name) else None

    task = read("task.yaml")
    grading_file = "grading.yaml"
    if isinstance(task, dict) and isinstance(task.get("grading"), str):
        grading_file = task["grading"]
        try:
            confine(path / grading_file, path, f"{label}/task.yaml: key 'grading'", what)
        except OutsideRoot as exc:
            raise OutsideRoot(exc.path, "names a grading file that " + exc.problem) from None
    grading = read(grading_file)
    has_migration = present(path / "migration.yaml")
    migration = read("migration.yaml")
    files = [
        f
        for f, found in (
            ("task.yaml", task is not None),
            (grading_file, grading is not None),
            ("migration.yaml", has_migration),
        )
        if found
    ]
    return RawPack(
        label=label,
        name=path.name,
        task=task,
        grading=grading,
        grading_file=grading_file if grading is not None else None,
        migration=migration,
        has_migration=has_migration,
        files=tuple(files),
    )


def pack_events(raw: RawPack, pack_path: str) -> tuple[str, tuple[PlannedEvent, ...]]:
    """A pack → ``pack.registered`` (+ ``migration.declared``) on ``pack/<name>``."""
    task = None
    if raw.task is not None:
        task = need_mapping(raw.task, f"{raw.label}/task.yaml", None)
    grading, source = None, None
    if raw.grading is not None:
        grading = need_mapping(raw.grading, f"{raw.label}/{raw.grading_file}", None)
        source = raw.grading_file
    elif task is not None and isinstance(task.get("grading_config"), dict):
        grading, source = task["grading_config"], "task.yaml:grading_config"
    task_id = task.get("task_id") if task else None
    if task_id is not None:
        check_type(task_id, (str,), f"{raw.label}/task.yaml", "task_id", "the task id as a string")
    typed: list[tuple[str, dict[str, Any]]] = [
        (
            "pack.registered",
            {
                "pack": raw.name,
                "pack_path": pack_path,
                "task_id": task_id,
                "task": task,
                "grading": grading,
                "grading_source": source,
                "files": list(raw.files),
            },
        )
    ]
    if raw.has_migration:
        mfile = f"{raw.label}/migration.yaml"
        decl = need_mapping(raw.migration, mfile, None)
        check_keys(decl, MIGRATION_KEYS, mfile, required=("migrations",))
        need_list(decl["migrations"], mfile, "migrations")
        typed.append(
            (
                "migration.declared",
                {"pack": raw.name, "file": "migration.yaml", "declaration": decl},
            )
        )
    stream = pack_stream(raw.name)
    return stream, to_events(stream, typed, raw.label)
