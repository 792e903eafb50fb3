"""What a PATH handed to ``vledger ingest`` is: docs/readme/ingest.md § "What a PATH is",
tried in :func:`detect`'s order (FORMATS.md § 1, verdict-core FORMAT.md).

Only names on disk are looked at, never contents. Discovery never enters symlinked
directories: a link loop must not make it endless (pass the link itself as PATH).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from ledger.sources.inspect_log import discover_logs, is_log_file
from schemas.errors import LedgerError

TRAJECTORY = "trajectory.yaml"
CORPUS_FILE = "corpus.yaml"
PACK_FILES = ("task.yaml", "grading.yaml", "migration.yaml")
RUN_FILES = ("events.jsonl", "receipt.json", "graph.json")
NEVER_DISCOVERED = frozenset({"trace_replay", "replays"})


class PathKind(StrEnum):
    BUNDLE = "bundle"
    VERDICT_RUN = "verdict_run"
    CORPUS = "corpus"
    MULTI_CORPUS = "multi_corpus"
    PACK = "pack"
    PACK_SET = "pack_set"
    RUN_DIR = "run_dir"
    COLLECTION = "collection"
    INSPECT_LOG = "inspect_log"  # one inspect_ai log file
    INSPECT_LOGS = "inspect_logs"  # a directory of inspect_ai logs


class DetectError(LedgerError, ValueError):
    """PATH is not something ingest can read; names the path and what was looked for."""

    def __init__(self, path: Path | str, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{path}: {problem}")


@dataclass(frozen=True, slots=True)
class Detected:
    """A PATH and what it is; ``path`` is always the directory the kind describes."""

    kind: PathKind
    path: Path


def _unreadable(path: Path | str) -> DetectError:
    """A directory discovery cannot look into: refused by name, never skipped (what it
    holds would be silently missing from the input)."""
    return DetectError(
        path, "permission denied: cannot look inside; make it readable (chmod) or move it out"
    )


def _is_dir_with(path: Path, name: str) -> bool:
    try:
        return (path / name).is_file()
    except PermissionError:  # pathlib lets EACCES through, unlike os.path.isfile
        raise _unreadable(path) from None


def _subdirs(path: Path) -> list[Path]:
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except PermissionError:
        raise _unreadable(path) from None
    except OSError:
        return []
    return [
        Path(e.path)
        for e in entries
        if e.is_dir(follow_symlinks=False) and not e.name.startswith(".")
    ]


def is_pack(path: Path) -> bool:
    return not _is_dir_with(path, TRAJECTORY) and any(_is_dir_with(path, f) for f in PACK_FILES)


def detect(path: Path) -> Detected:
    """Say what ``path`` is, or raise :class:`DetectError` naming what was looked for."""
    if not path.exists():
        raise DetectError(path, "no such file or directory")
    if path.is_file():
        return _detect_file(path)
    if _is_dir_with(path, TRAJECTORY):
        return Detected(PathKind.BUNDLE, path)
    if _is_dir_with(path, "events.jsonl"):
        return Detected(PathKind.VERDICT_RUN, path)
    if _is_dir_with(path, CORPUS_FILE):
        return Detected(PathKind.CORPUS, path)
    subs = _subdirs(path)
    if subs and all(_is_dir_with(s, CORPUS_FILE) for s in subs):
        return Detected(PathKind.MULTI_CORPUS, path)
    if is_pack(path):
        return Detected(PathKind.PACK, path)
    if subs and all(is_pack(s) for s in subs):
        return Detected(PathKind.PACK_SET, path)
    if (path / "trials").is_dir():
        return Detected(PathKind.RUN_DIR, path)
    if any(True for _ in discover(path)):
        return Detected(PathKind.COLLECTION, path)
    if discover_logs(path):
        return Detected(PathKind.INSPECT_LOGS, path)
    raise DetectError(
        path,
        "no trial bundle (a directory holding trajectory.yaml), corpus (corpus.yaml), "
        "task pack (task.yaml / grading.yaml / migration.yaml), verdict-core run "
        "(events.jsonl) or inspect_ai log (*.eval, *.json) found here",
    )


def _detect_file(path: Path) -> Detected:
    name = path.name
    parent = path.parent
    if name == TRAJECTORY:
        return Detected(PathKind.BUNDLE, parent)
    if name == CORPUS_FILE:
        return Detected(PathKind.CORPUS, parent)
    if name in RUN_FILES:
        if not _is_dir_with(parent, "events.jsonl"):
            raise DetectError(path, "a verdict-core run directory needs events.jsonl beside it")
        return Detected(PathKind.VERDICT_RUN, parent)
    if name in PACK_FILES:
        return Detected(PathKind.PACK, parent)
    if is_log_file(path) or path.suffix == ".json":
        return Detected(PathKind.INSPECT_LOG, path)
    raise DetectError(
        path,
        "not a file ingest reads; pass a directory, or one of trajectory.yaml, corpus.yaml, "
        "task.yaml, grading.yaml, migration.yaml, events.jsonl, receipt.json, graph.json, "
        "or an inspect_ai log (*.eval, *.json)",
    )


def discover(root: Path):
    """Yield ``(kind, path)`` for every bundle, pack and verdict-core run under ``root``.

    What a collection holds: the walk does not descend into what it found (a bundle, a
    pack or a run directory), nor into ``trace_replay`` / ``replays`` subtrees.
    """
    if _is_dir_with(root, TRAJECTORY):
        yield PathKind.BUNDLE, root
        return
    if _is_dir_with(root, "events.jsonl"):
        yield PathKind.VERDICT_RUN, root
        return
    if is_pack(root):
        yield PathKind.PACK, root
        return
    for sub in _subdirs(root):
        if sub.name not in NEVER_DISCOVERED:
            yield from discover(sub)


def discover_bundles(root: Path):
    """Yield every bundle directory under ``root`` (``root`` included), in sorted order.

    A bundle's own subdirectories are not searched further: a bundle does not nest.
    """
    memo = _LISTED.get()
    if memo is None:
        yield from _discover_bundles(root)
        return
    key = os.fspath(root)
    if key not in memo:
        memo[key] = list(_discover_bundles(root))
    yield from memo[key]


_LISTED: ContextVar[dict[str, list[Path]] | None] = ContextVar("listed", default=None)


@contextmanager
def one_listing() -> Iterator[None]:
    """Within it, each directory's bundles are listed once: the steps of one command that
    each look at a corpus (reconcile resolves it, ingests it, reads it back) see the same
    bundles, and a corpus of many is not walked once per step."""
    token = _LISTED.set({})
    try:
        yield
    finally:
        _LISTED.reset(token)


def _discover_bundles(root: Path) -> Iterator[Path]:
    if _is_dir_with(root, TRAJECTORY):
        yield root
        return
    yield from _bundles_below(os.fspath(root))


def _bundles_below(top: str) -> Iterator[Path]:
    """:func:`discover_bundles` below ``top`` (no bundle itself), by strings: a ``Path`` is
    made only for each bundle found (a corpus lists thousands)."""
    try:
        entries = sorted(os.scandir(top), key=lambda e: e.name)
    except PermissionError:
        raise _unreadable(top) from None
    except OSError:
        return
    for e in entries:
        if e.name.startswith(".") or e.name in NEVER_DISCOVERED:
            continue
        if e.is_dir(follow_symlinks=False):  # as _subdirs: a linked directory is not followed
            if os.path.isfile(os.path.join(e.path, TRAJECTORY)):
                yield Path(e.path)
            else:
                yield from _bundles_below(e.path)


def relative_posix(path: Path, root: Path) -> str:
    """``path.relative_to(root).as_posix()``, by the strings when ``root``'s is a prefix of
    ``path``'s (both lexical: a ``Path``'s string is normalised, so the two agree), without
    a parse per path: a corpus holds many bundles. ``ValueError`` when not under ``root``."""
    top, here = str(root), str(path)
    if here == top:
        return "."
    cut = len(top) if top.endswith("/") else len(top) + 1
    if here.startswith(top) and (top.endswith("/") or here[len(top)] == "/"):
        return here[cut:] if os.sep == "/" else Path(here[cut:]).as_posix()
    return path.relative_to(root).as_posix()


def discover_packs(root: Path) -> list[Path]:
    """The packs of a pack set (immediate subdirectories), or ``[root]`` for one pack."""
    if is_pack(root):
        return [root]
    return [s for s in _subdirs(root) if is_pack(s)]
