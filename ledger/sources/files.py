"""The one way a file input is read: confined to its root, regular, and bounded in size.

Every reader of evidence or of a user's document goes through :func:`read_input`; the rules:
docs/readme/ingest.md § Re-ingest, change and bad input ("Confinement"). What lies outside a
root was not handed to us, so neither its content nor its location belongs in an append-only
log or an error message; only the command line (``allow``) widens a root, never a file.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from collections.abc import Sequence
from pathlib import Path

from ledger.text import escape_controls
from schemas.errors import LedgerError

# A file or directory name is the input's own content: one holding a newline or an
# escape sequence must not forge a line of output (``ledger.text`` is the one rule).
printable = escape_controls


class InputError(LedgerError, ValueError):
    """A file input that cannot be read as bounded data; names the file (and line)."""

    def __init__(self, path: Path | str, problem: str, *, line: int | None = None) -> None:
        self.path = str(path)
        self.problem = problem
        self.line = line
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{printable(where)}: {printable(problem)}")


class InputTooLarge(InputError):
    """The file is over the configured size limit."""

    def __init__(self, path: Path | str, size: int, limit: int) -> None:
        self.size = size
        self.limit = limit
        super().__init__(
            path,
            f"file is {size} bytes, over the {limit}-byte limit; "
            "raise the limit (--max-file-bytes) if the file is genuine",
        )


class OutsideRoot(InputError):
    """A file under a root resolves outside it; the target is deliberately not named."""


class NotRegularFile(InputError):
    """A device, FIFO, socket or directory where a regular file was expected."""


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def _inside(real: str, roots: Sequence[str]) -> bool:
    return any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


COPY_IT_IN = "copy the file into the directory"


def confine(
    path: Path,
    root: Path,
    name: str,
    what: str = "its directory",
    allow: Sequence[Path] = (),
    hint: str = COPY_IT_IN,
) -> Path:
    """``path`` with every link resolved, or :class:`OutsideRoot` if that leaves ``root``
    (and each of ``allow``: directories or files the user named on the command line)."""
    base = os.path.realpath(root)
    given = os.fspath(path)
    head, leaf = os.path.split(given)
    if head == os.fspath(root) and leaf not in ("", ".", ".."):
        # a file directly in ``root`` that is not a link (every file of a bundle, pack or
        # corpus directory): it resolves to the root's own path and its name, with one
        # lstat instead of resolving the whole path again (a tenth of reading a bundle)
        try:
            if not stat.S_ISLNK(os.lstat(given).st_mode):
                return Path(os.path.join(base, leaf))
        except OSError:
            pass  # absent or unreadable: resolved (and then refused) as before
    real = os.path.realpath(path)
    roots = [base, *(os.path.realpath(a) for a in allow)]
    if not _inside(real, roots):
        raise OutsideRoot(
            name,
            f"resolves outside {what} (through a symlink, '..' or an absolute path); "
            f"refused without reading it — {hint}",
        )
    return Path(real)


def present(path: Path) -> bool:
    """Whether a name exists at all, a dangling link included: an optional file that is a
    link to somewhere unreadable is refused by :func:`read_input`, never read as absent."""
    return os.path.lexists(path)


def is_file(path: str) -> bool:
    """``Path(path).is_file()``: False where it is (no such file, a name through a
    non-directory, a link loop), the same error where it raises."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP):
            return False
        raise
    except ValueError:
        return False


def read_input(
    path: Path | str,
    *,
    max_bytes: int,
    name: str | None = None,
    root: Path | None = None,
    what: str = "its directory",
    allow: Sequence[Path] = (),
    hint: str = COPY_IT_IN,
    allow_stdin: bool = False,
    allow_pipe: bool = False,
) -> bytes:
    """The bytes of one regular file, at most ``max_bytes`` of them; errors name ``name``
    (default: the path as given). With ``root``, the file must resolve inside it. With
    ``allow_pipe`` a FIFO the user named (``mkfifo``, or ``<(cmd)`` in a shell) is read to
    its end as ``-`` is, still bounded; opened without blocking first, so any other kind
    of special file is refused before anything waits on it."""
    shown = name or str(path)
    if allow_stdin and str(path) == "-":
        return _read_bounded(sys.stdin.buffer.fileno(), shown, max_bytes, pipe_ok=True)
    target = Path(path)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if root is not None:
        target = confine(target, root, shown, what, allow, hint)
        flags |= getattr(os, "O_NOFOLLOW", 0)  # resolved already: a link now is a swap
    fd = _open(target, flags, shown)
    try:
        if allow_pipe and stat.S_ISFIFO(os.fstat(fd).st_mode):
            # a FIFO opened without blocking reads as empty until its writer opens it:
            # open it again, waiting for the writer as reading from `-` does
            fd, first = _open(target, flags & ~os.O_NONBLOCK, shown), fd
            os.close(first)
        return _read_bounded(fd, shown, max_bytes, pipe_ok=allow_pipe)
    finally:
        os.close(fd)


_IN_DIRECTORY = (
    os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
)


_UNLISTED = frozenset({"/"})  # no listing holds "/": the directory could not be listed


def _plain(name: str) -> bool:
    """A name directly in a directory: what a listing holds and ``O_NOFOLLOW`` guards."""
    return name not in ("", ".", "..") and os.sep not in name and "/" not in name


class Directory:
    """A directory whose files are read one after another as :func:`read_input` reads each
    with the directory as its ``root`` (a bundle's files), resolving the directory once and
    listing it once instead of once per file (a fifth of reading a bundle, measured).

    A file is opened in the resolved directory without following a link; whatever that
    open does not give (a link, a missing or unreadable file) is read by
    :func:`read_input` itself, which resolves, confines and names it as always."""

    __slots__ = ("path", "what", "_base", "_names")

    def __init__(self, path: Path, what: str = "its directory") -> None:
        self.path = path
        self.what = what
        self._base = os.path.realpath(path)
        self._names: frozenset[str] | None = None

    @property
    def resolved(self) -> Path:
        """The directory with every link resolved (``path.resolve()``, taken once)."""
        return Path(self._base)

    def present(self, name: str) -> bool:
        """:func:`present` of ``path / name``, from one listing of the directory."""
        if self._names is None:
            try:
                self._names = frozenset(os.listdir(self._base))
            except OSError:  # not listable: each name is looked up instead
                self._names = _UNLISTED
        if self._names is _UNLISTED or not _plain(name):
            return present(self.path / name)
        return name in self._names

    def read(self, name: str, *, max_bytes: int, shown: str) -> bytes:
        """``read_input(path / name, max_bytes=max_bytes, name=shown, root=path, what=what)``
        for a file directly in the directory."""
        fd = -1
        if _plain(name):
            try:
                fd = os.open(os.path.join(self._base, name), _IN_DIRECTORY)
            except OSError:
                fd = -1
        if fd < 0:
            return read_input(
                self.path / name, max_bytes=max_bytes, name=shown, root=self.path, what=self.what
            )
        try:
            return _read_bounded(fd, shown, max_bytes, pipe_ok=False)
        finally:
            os.close(fd)

    def read_plain(self, name: str, max_bytes: int) -> tuple[bytes, os.stat_result] | None:
        """The bytes and ``fstat`` of ``name`` when it is a regular file directly in the
        directory (opened without following a link) within ``max_bytes``; None for what
        :meth:`read` would hand to :func:`read_input` to judge: a link, another kind of
        file, one over the limit, one that cannot be opened or read."""
        if not _plain(name):
            return None
        try:
            fd = os.open(os.path.join(self._base, name), _IN_DIRECTORY)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
                return None
            return _read_bounded(fd, name, max_bytes, pipe_ok=False), st
        except InputError:  # unreadable, or grown past the limit since the fstat
            return None
        finally:
            os.close(fd)


def _open(target: Path, flags: int, shown: str) -> int:
    try:
        return os.open(target, flags)
    except OSError as exc:
        raise InputError(shown, f"cannot read: {exc.strerror or exc}") from None


def _read_bounded(fd: int, shown: str, max_bytes: int, *, pipe_ok: bool) -> bytes:
    st = os.fstat(fd)
    regular = stat.S_ISREG(st.st_mode)
    if not regular and not (pipe_ok and stat.S_ISFIFO(st.st_mode)):
        raise NotRegularFile(
            shown, f"is {_kind(st.st_mode)}, not a regular file; pass a file (or - for a pipe)"
        )
    if regular and st.st_size > max_bytes:
        raise InputTooLarge(shown, st.st_size, max_bytes)
    if not regular:
        os.set_blocking(fd, True)  # a pipe named as -: wait for its writer
    chunks: list[bytes] = []
    total = 0
    while True:
        try:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
        except OSError as exc:
            raise InputError(shown, f"cannot read: {exc.strerror or exc}") from None
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > max_bytes:  # grown since fstat, or a pipe: never read past the limit
            raise InputTooLarge(shown, total, max_bytes)
