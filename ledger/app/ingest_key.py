"""A tolokaforge bundle's content key: what ``ledger.app.ingest_known`` remembers it by.

The key is a digest of where the bundle sits and how it is read (:func:`key_prefix`) and of
the bytes of each file ``read_bundle`` reads, or that file's absence. The bytes are read as
the importer would accept them — regular files directly in the bundle, within
``max_bytes``; anything else (a link, a file over the limit, one that cannot be opened)
gives no key, and the importer names the problem.

A bundle read for the first time is keyed by the very bytes it is parsed from
(:func:`read_keyed`, where the reading runs: a worker): no second read of its files, and
no window between the parse and the hash in which a rewrite could make the key name bytes
that were never parsed.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from ledger.app.ingest_stat import Resolver, Stamp, Stamps, newest, stamp, stat_key
from ledger.sources.files import Directory
from ledger.sources.tolokaforge import OPTIONAL_FILES, bundle_context
from ledger.sources.yaml_safe import YamlLimits

if TYPE_CHECKING:  # the tasks are ingest_inputs', which reads through this module
    from ledger.app.ingest_inputs import Task

# Bump when the same bundle bytes would be planned as other events (the importer's
# shape rules, event ids, payloads): remembered keys then no longer match, and every
# bundle is read again once.
BUNDLE_READING = "tolokaforge-bundle/1"
FILES = ("trajectory.yaml", *OPTIONAL_FILES)


@dataclass(frozen=True, slots=True)
class BundleKey:
    """A bundle's content key, the stat key of the files it was read from, and their newest
    time (what the index keeps beside the key: ``ledger.app.ingest_stat``)."""

    content: bytes
    stat: bytes
    newest: int


def key_prefix(task: Task, limits: YamlLimits, resolve: Resolver | None = None) -> bytes | None:
    """What a bundle's key binds besides its bytes (None: not a plain bundle): everything its
    events depend on (where it sits, its corpus and corpus.yaml row, the limits), not how
    the PATH was spelled — the same corpus named relatively, absolutely or from another
    directory plans the same events, so its bundles stay known."""
    if task.kind != "bundle" or task.log_set is not None:
        return None
    resolved = (resolve or Resolver())(task.path)
    context = bundle_context(task.path, task.corpus or resolved.parent.name, task.corpus_doc,
                             resolved)  # fmt: skip
    return orjson.dumps([BUNDLE_READING, repr(limits), repr(context)])


Files = tuple[tuple[str, bytes | None, Stamp | None], ...]  # name, bytes (None: absent), stamp


def read_files(directory: Path, max_bytes: int) -> Files | None:
    """Every file of :data:`FILES` in ``directory``, or None when one present is not a plain
    file within ``max_bytes`` (``files.Directory.read_plain``), or the directory cannot be
    listed."""
    try:
        names = set(os.listdir(directory))
    except OSError:
        return None
    folder = Directory(directory)
    out: list[tuple[str, bytes | None, Stamp | None]] = []
    for name in FILES:
        if name not in names:
            out.append((name, None, None))
            continue
        got = folder.read_plain(name, max_bytes)
        if got is None:
            return None
        data, st = got
        out.append((name, data, stamp(st)))
    return tuple(out)


def content_key(prefix: bytes, files: Files) -> bytes:
    h = hashlib.blake2b(digest_size=24)
    h.update(prefix)
    for name, data, _ in files:
        if data is None:
            h.update(b"\0" + name.encode() + b"\0absent")
            continue
        h.update(b"\0" + name.encode() + len(data).to_bytes(8, "little"))
        h.update(data)
    return h.digest()


def stamps_of(files: Files) -> Stamps:
    return tuple(st for _, _, st in files)


def bundle_key(
    task: Task, limits: YamlLimits, prefix: bytes | None = None
) -> tuple[bytes, Stamps] | None:
    """The key of one bundle task and the stamps of the files hashed, or None when it is not
    to be skipped (not a plain bundle, or a file that only the importer may judge)."""
    prefix = key_prefix(task, limits) if prefix is None else prefix
    if prefix is None:
        return None
    files = read_files(task.path, limits.max_bytes)
    return None if files is None else (content_key(prefix, files), stamps_of(files))


def read_keyed(task: Task, limits: YamlLimits) -> tuple[dict[str, bytes], BundleKey] | None:
    """A bundle task's files (the bytes of each one present) and the key they make, for the
    importer to parse (``ingest_inputs``: ``unit.key``); None when a file is not plain or
    trajectory.yaml is absent (the importer then reads it as always, and names why)."""
    prefix = key_prefix(task, limits)
    files = None if prefix is None else read_files(task.path, limits.max_bytes)
    if prefix is None or files is None or files[0][1] is None:
        return None
    stamps = stamps_of(files)
    key = BundleKey(content_key(prefix, files), stat_key(prefix, stamps), newest(stamps))
    return {name: data for name, data, _ in files if data is not None}, key


def plain(tasks: Sequence[Task]) -> list[Task]:
    """``tasks`` with every plain bundle marked to be keyed where it is read."""
    return [replace(t, keyed=True) if t.kind == "bundle" and t.log_set is None else t
            for t in tasks]  # fmt: skip
