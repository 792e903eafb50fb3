"""Bundles the ledger already holds, known by their bytes: an ingest does not parse them again.

Parsing a bundle's YAML is most of what an ingest of an unchanged corpus costs; hashing the
same bytes is a small part of it. So after each ingest, every tolokaforge bundle whose
stream the ledger holds as planned is remembered by a key: a digest of the files
``read_bundle`` reads (trajectory.yaml and each optional file, or its absence), of where
the bundle sits (``bundle_context``: corpus, trial name, its corpus.yaml row), of how it is
named, of the size limits and of :data:`BUNDLE_READING`. The next ingest keys each
bundle — by its files' stat where the index vouches for it (``ledger.app.ingest_stat``:
size, times, inode unchanged and not racily clean), else by hashing them; one whose key is
remembered, and whose stream has no event since, is *already
present*, with the stream, event-id digest and size it was planned with then, and is not
parsed. Any other bundle is read as before: a new one, a re-scored one (its grade.yaml
changed, so its key did), one whose stream was appended to since.

The index is derived data, never evidence, kept in ``<ledger>/projections/``: it names
the log's tree head when it was written, and it is used only if this log has that root at
that size, so a copy from another ledger, or a log rewritten since, is not used. Deleting
it costs one ingest that parses every bundle. How a key is made, and which files give
none, is ``ledger.app.ingest_key``'s. With no index, each bundle is keyed where it is read,
by the bytes it is parsed from. With one, every bundle is keyed here first (most are held
and not read at all); one read after that is remembered only if its files did not change
(size, times or inode) between the hash and the read: its key would name bytes the
importer never parsed.
"""

from __future__ import annotations

import io
import itertools
import os
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson

from ledger.app.ingest_inputs import Task, Unit
from ledger.app.ingest_key import FILES, bundle_key, key_prefix, plain
from ledger.app.ingest_read import Derive, ReadStream, TaskRead, read_tasks
from ledger.app.ingest_spool import parked_rows
from ledger.app.ingest_stat import (
    NEVER,
    Resolver,
    Stamps,
    lstamps,
    newest,
    racy,
    stat_key,
)
from ledger.log.layout import projections_of, replace_derived
from ledger.sources.yaml_safe import YamlLimits

INDEX_FORMAT = "vledger-ingest-bundles/2"
INDEX_NAME = "ingest-bundles.index"


@dataclass(frozen=True, slots=True)
class Held:
    """What a remembered bundle was planned as: enough to count it present."""

    stream: str
    digest: bytes  # of its event ids, in order (``ingest_read.ids_digest``)
    size: int
    inconsistent: str | None

    def row(self, key: bytes, stats: tuple[bytes, int] | None) -> list[Any]:
        fast, newest_ns = (None, 0) if stats is None else (stats[0].hex(), stats[1])
        return [key.hex(), self.stream, self.digest.hex(), self.size, self.inconsistent, fast,
                newest_ns]  # fmt: skip


def unchanged(task: Task, stamps: Stamps) -> bool:
    """Whether the bundle's files are still as they were hashed (a file rewritten while it
    was read would otherwise be remembered by bytes the importer never parsed)."""
    return lstamps(task.path, FILES) == stamps


@dataclass
class KnownBundles:
    """One ingest's view of the index: remembered bundles it may skip, and the bundles it
    read, remembered once the ledger holds them."""

    held: dict[bytes, Held] = field(default_factory=dict)
    read: dict[bytes, Held] = field(default_factory=dict)
    # streams of remembered bundles met in this ingest -> their ids' digest: the log holds
    # them so (the index's tree head, and no event since), so their ids need not be read
    present: dict[str, bytes] = field(default_factory=dict)
    # content key -> (stat key, newest file time) of the files it was last seen as; and the
    # trusted stat keys -> content key (``ledger.app.ingest_stat``)
    stats: dict[bytes, tuple[bytes, int]] = field(default_factory=dict)
    fast: dict[bytes, bytes] = field(default_factory=dict)

    @staticmethod
    def of(lg: Any) -> KnownBundles:
        """The index as this log still vouches for it (empty when it does not)."""
        loaded = _load(lg)
        if loaded is None:
            return KnownBundles()
        lines, written = loaded
        try:
            head = orjson.loads(next(lines, b"null"))
            size, root = int(head["size"]), str(head["root"])
            if head.get("format") != INDEX_FORMAT or not 0 < size <= lg.size():
                return KnownBundles()
            if lg.root(size).hex() != root:
                return KnownBundles()
            held, stats = {}, {}
            for line in lines:  # one row at a time: the rows are never all parsed at once
                k, s, d, n, i, fk, t = orjson.loads(line)
                key = bytes.fromhex(k)
                held[key] = Held(s, bytes.fromhex(d), int(n), i)
                if fk is not None and not racy(int(t), written):
                    stats[key] = (bytes.fromhex(fk), int(t))
        except (KeyError, TypeError, ValueError, OSError, orjson.JSONDecodeError):
            return KnownBundles()
        if size < lg.size():  # a stream appended to since may no longer be as planned
            touched = {ev.stream for ev in lg.read(from_seq=size)}
            held = {k: h for k, h in held.items() if h.stream not in touched}
        fast = {fk: k for k, (fk, _) in stats.items() if k in held}
        return KnownBundles(held, stats=stats, fast=fast)

    def key(
        self, task: Task, limits: YamlLimits, resolve: Resolver
    ) -> tuple[bytes, Stamps | None] | None:
        """The bundle's content key (as :func:`bundle_key`), taken from its stat key when
        that is remembered and trusted, so its files are not read; with the stamps of its
        files as hashed when it is not held (its read is remembered only if they hold)."""
        prefix = key_prefix(task, limits, resolve)
        if prefix is None:
            return None
        now = lstamps(task.path, FILES)
        if now is not None and (known := self.fast.get(stat_key(prefix, now))) is not None:
            return known, None
        got = bundle_key(task, limits, prefix)
        if got is None:
            return None
        key, stamps = got
        self.stats[key] = (stat_key(prefix, stamps), newest(stamps))
        return key, None if key in self.held else stamps  # the stamps of one to be read

    def reads(self, tasks: Sequence[Task], request: Any, derive: Derive | None) -> Iterator[Any]:
        """Every task's read, in task order: a remembered bundle as its held stream, every
        other task read by ``ingest_read.read_tasks`` as ``request`` (an ``IngestRequest``)
        asks, in workers sized for those alone."""
        limits, resolve = request.limits, Resolver()
        # Nothing remembered, nothing to skip: each bundle is keyed where it is read, by the
        # bytes it is parsed from (``ingest_key.keyed_unit``), not hashed here beforehand.
        late = not self.held and not self.fast
        keyed = [None] * len(tasks) if late else [self.key(t, limits, resolve) for t in tasks]
        hits = [k is not None and k[0] in self.held for k in keyed]
        rest = [t for t, hit in zip(tasks, hits, strict=True) if not hit]
        rest = plain(rest) if late else rest
        others = read_tasks(rest, limits, request.reader(len(rest)), derive) if rest else iter(())
        for task, k, hit in zip(tasks, keyed, hits, strict=True):
            if hit:
                assert k is not None
                held = self.held[k[0]]
                self.present[held.stream] = held.digest
                yield (self._stream(task, held),)
                continue
            got: TaskRead | Any = next(others)
            if isinstance(got, tuple) and len(got) == 1:
                (one,) = got
                u = one.head
                if u.key is not None:  # keyed by the bytes parsed: nothing to re-check
                    self.stats[u.key.content] = (u.key.stat, u.key.newest)
                    self.read[u.key.content] = Held(u.stream, one.digest, one.size, u.inconsistent)
                elif k is not None and k[1] is not None and unchanged(task, k[1]):
                    self.read[k[0]] = Held(u.stream, one.digest, one.size, u.inconsistent)
            yield got

    def unread(self, planned: Mapping[str, Any]) -> list[str]:
        """The planned streams whose ids must be read from the log to compare them."""
        return [s for s, p in planned.items() if self.present.get(s) != p.digest]

    @staticmethod
    def _stream(task: Task, held: Held) -> ReadStream:
        head = Unit("bundle", task.source, held.stream, (), held.inconsistent, trial=True)
        return ReadStream(head, held.size, 0, held.digest, _EMPTY)

    def save(self, lg: Any, planned: Mapping[str, Any], accepted: Iterable[str]) -> None:
        """Remember every bundle whose stream the ledger now holds as planned: ``accepted``
        are the trial streams this ingest found new or already present, ``planned`` each
        stream's plan (its ``digest``: of its event ids). A bundle read as other content of
        the same stream is not kept."""
        ok = {s: planned[s].digest for s in accepted if s in planned}
        rows = dict(self.held)
        rows.update((k, h) for k, h in self.read.items() if ok.get(h.stream) == h.digest)
        size = lg.size()
        if size == 0:
            return
        head = {"format": INDEX_FORMAT, "size": size, "root": lg.root(size).hex()}
        rest = (orjson.dumps(h.row(k, self.stats.get(k))) for k, h in rows.items())
        _store(lg, itertools.chain([orjson.dumps(head)], rest))  # written as made


_EMPTY = parked_rows([], [])

# ------------------------------------------------------------------ where it is kept

_IN_MEMORY: weakref.WeakKeyDictionary[Any, bytes] = weakref.WeakKeyDictionary()


def _path(lg: Any) -> Path | None:
    """``<ledger>/projections/ingest-bundles.index``; None for a store held in memory."""
    folder = projections_of(lg)
    return None if folder is None else folder / INDEX_NAME


def _load(lg: Any) -> tuple[Iterator[bytes], int] | None:
    """The index's lines (a head, then one row each), read as they are consumed (a row per
    bundle: never the whole file at once), and when it was written (``NEVER`` for one held
    in memory: no file time)."""
    path = _path(lg)
    if path is None:
        body = _IN_MEMORY.get(lg)
        return None if body is None else (iter(io.BytesIO(body)), NEVER)
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed by _lines once read
        written = os.fstat(f.fileno()).st_mtime_ns
    except OSError:
        return None
    return _lines(f), written


def _lines(f: IO[bytes]) -> Iterator[bytes]:
    with f:
        yield from f


def _store(lg: Any, lines: Iterable[bytes]) -> None:
    """Replace the index whole (a crash leaves the old one, which the log still vouches for)."""
    path = _path(lg)
    if path is None:  # an in-memory store: kept as long as the store lives
        _IN_MEMORY[lg] = b"".join(line + b"\n" for line in lines)
        return
    replace_derived(path, (line + b"\n" for line in lines))
