"""``validate``: a pack's migration.yaml against every rule of GRADING.md § Declaring a migration.

The pack is read as reconcile reads it (``reconcile_packs.read_pack``); the rules are
``reconcile.validate``'s, pure. Example: ``ledger.validate(PACK_DIR, base=".").findings``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ledger.app.reconcile_packs import (
    MigrationLoadError,
    Pack,
    ReconcileError,
    read_pack,
    resolve_corpus,
)
from ledger.app.result import Result
from ledger.sources.detect import discover_packs
from reconcile.validate import Finding, validate_migration
from schemas.errors import FAILED, OK


class MigrationInvalid(MigrationLoadError):
    """For validate, a migration.yaml that does not load is a finding (exit 1), where
    reconcile, which cannot run on it, exits 5."""

    exit_code = FAILED


@dataclass(frozen=True, kw_only=True)
class ValidateRequest:
    """One ``vledger validate`` as asked (its argument and flags)."""

    pack_dir: Path
    base: Path
    allow_outside: Sequence[Path] = ()


@dataclass(frozen=True)
class ValidateResult(Result):
    pack_dir: Path
    entries: int | None  # the migration's entries; None: the pack has no migration.yaml
    findings: tuple[Finding, ...]

    @property
    def exit_code(self) -> int:
        return FAILED if self.findings else OK

    def to_json(self) -> dict[str, Any]:
        return {
            "pack": str(self.pack_dir),
            "migration": self.entries is not None,
            "findings": [
                {"entry": f.entry, "criterion": f.criterion, "rule": f.rule, "message": f.message}
                for f in self.findings
            ],
            "exit_code": self.exit_code,
        }


def validate(
    pack_dir: Path | str, *, base: Path | None = None, allow_outside: Sequence[Path] = ()
) -> ValidateResult:
    """``vledger validate``: every rule the pack's migration.yaml breaks (none: it loads);
    ``MigrationLoadError`` if the sidecar does not parse, ``ReconcileError`` if unreadable."""
    request = ValidateRequest(
        pack_dir=Path(pack_dir),
        base=Path(base) if base else Path.cwd(),
        allow_outside=allow_outside,
    )
    _check_one_pack(request.pack_dir)
    try:
        pack, findings = validate_pack(request.pack_dir, request.base, request.allow_outside)
    except MigrationLoadError as exc:
        raise MigrationInvalid(str(exc)) from None
    entries = None if pack.migration is None else len(pack.migration.migrations)
    return ValidateResult(request.pack_dir, entries, tuple(findings))


def _check_one_pack(directory: Path) -> None:
    """PACK_DIR is one pack; a directory of packs (what `reconcile --packs` takes) is named
    with the packs it holds, rather than as a task.yaml that cannot be read."""
    if (directory / "task.yaml").exists():
        return
    held = [p for p in discover_packs(directory) if p != directory]
    if held:
        raise ReconcileError(
            f"{directory} is a directory of packs, not a pack (no task.yaml); validate each: "
            + "; ".join(f"vledger validate {p}" for p in held)
        )


def validate_pack(
    directory: Path, base: Path, allow_outside: Sequence[Path] = ()
) -> tuple[Pack, list[Finding]]:
    """The pack and every rule its migration.yaml breaks."""
    pack = read_pack(directory, allow_outside=allow_outside)
    if pack.migration is None:
        return pack, []
    corpora = {
        e.corpus_value: resolve_corpus(e.corpus_value, base)
        for e in pack.migration.migrations
        if e.corpus_value is not None
    }
    return pack, validate_migration(pack.migration, pack.view, corpora)
