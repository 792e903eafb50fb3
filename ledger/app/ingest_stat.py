"""A stat fast path in front of a bundle's content key, as git's index keeps one.

Hashing every file of every bundle is most of what a re-ingest of an unchanged corpus
costs once parsing is skipped. So beside each remembered content key the index keeps a
*stat key*: a digest of what the key's prefix binds (reading, limits, source, context) and
of each file's ``lstat`` (mode, size, mtime_ns, ctime_ns, inode, device; or its absence).
A bundle whose stat key is remembered is taken to hold the bytes its content key names,
without reading them. Any rewrite changes the ctime (which no call can set back), and a
replaced file changes its inode, so a file rewritten with the same size and its mtime set
back is still read.

One case the stat cannot see: a file rewritten within the same timestamp tick as it was
hashed, with the same size. As in git ("racily clean" entries), a stamp is trusted only if
its newest time (mtime or ctime) is strictly older than the index file's own write time;
any other is re-hashed, and an index written with an entry it did not re-check stores no
stat key for it (the write time moved past the tick that made it untrustworthy). An index
held in memory has no file time to compare with: its stamps are never trusted.
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

Stamp = tuple[int, int, int, int, int, int]  # mode, size, mtime_ns, ctime_ns, inode, device
Stamps = tuple[Stamp | None, ...]  # per file read, in order: its stamp, or None when absent
NEVER = 0  # the write time of an index without one: no stamp is older, so every one is racy


def stamp(st: os.stat_result) -> Stamp:
    return (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


def lstamps(directory: Path, names: Sequence[str]) -> Stamps | None:
    """Each file's stamp as ``lstat`` gives it (a link is stamped as a link), None for an
    absent one; None for all when one cannot be looked at."""
    out: list[Stamp | None] = []
    base = os.fspath(directory) + os.sep
    for name in names:
        try:
            out.append(stamp(os.lstat(base + name)))
        except FileNotFoundError:
            out.append(None)
        except OSError:
            return None
    return tuple(out)


_PACKED = struct.Struct("<QQqqQQ")  # a stamp's fields: unsigned, but the two times


def stat_key(prefix: bytes, stamps: Stamps) -> bytes:
    """The digest the fast path looks a bundle up by. Each stamp packed in 48 bytes, or in
    9 bytes a field when one is out of that range (tagged apart: no two stamps hash alike)."""
    h = hashlib.blake2b(prefix, digest_size=24)
    for s in stamps:
        if s is None:
            h.update(b"\0absent")
            continue
        try:
            h.update(b"\0" + _PACKED.pack(*s))
        except struct.error:
            h.update(b"\1" + b"".join(v.to_bytes(9, "little", signed=True) for v in s))
    return h.digest()


def newest(stamps: Stamps) -> int:
    """The latest mtime or ctime among the files (0 when none is present)."""
    return max((max(s[2], s[3]) for s in stamps if s is not None), default=0)


def racy(newest_ns: int, written_ns: int) -> bool:
    """Whether a stamp is too young to vouch for the bytes: not strictly older than the
    time the index holding it was written."""
    return newest_ns >= written_ns


class Resolver:
    """``path.resolve()`` for the bundles of a corpus, resolving each parent once: a bundle
    directory that is not itself a link resolves to its resolved parent / its name. By the
    path's string (a corpus has many bundles; a ``Path`` parse per bundle cost more than
    the ``lstat``). Within :func:`one_resolver`, every ``Resolver()`` is the same one, and
    each path is resolved once for all the steps of a command."""

    def __new__(cls) -> Resolver:
        shared = _SHARED.get()
        return shared if shared is not None else super().__new__(cls)

    def __init__(self) -> None:
        if not hasattr(self, "_done"):
            self._parents: dict[str, Path] = {}
            self._done: dict[str, Path] = {}

    def __call__(self, path: Path) -> Path:
        key = os.fspath(path)
        got = self._done.get(key)
        if got is None:
            got = self._done[key] = self._resolve(key, path)
        return got

    def _resolve(self, key: str, path: Path) -> Path:
        head, name = os.path.split(key)
        if name in ("", ".", "..") or os.path.islink(path):
            return path.resolve()
        parent = self._parents.get(head)
        if parent is None:
            parent = self._parents[head] = Path(head).resolve()
        # resolved already (its parent is): the same path, not a second object per bundle
        return path if os.fspath(parent) == head else parent / name


_SHARED: ContextVar[Resolver | None] = ContextVar("resolver", default=None)


@contextmanager
def one_resolver() -> Iterator[None]:
    """Within it, each path is resolved once (links as they were then): reconcile resolves
    a bundle to name it, to key it and to read it back; a reader keys and plans it. Inside
    another, the outer one serves."""
    if _SHARED.get() is not None:
        yield
        return
    token = _SHARED.set(Resolver())
    try:
        yield
    finally:
        _SHARED.reset(token)
