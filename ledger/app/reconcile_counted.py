"""Kept reconcile records not held as objects (:class:`Counted`): read from the ledger, a
carried trial is only counted when no claim covers its task, and held as where its line is
when one does (read back as the report reaches it). ``ledger.app.reconcile_kept`` reads
the file; this is what its reader keeps of those records.
"""

from __future__ import annotations

import hashlib
import heapq
from array import array
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ledger.app.reconcile_packs import ReconcileError

_DIGEST = "sha256:"  # how a stream digest is spelt (schemas.canonical.digest)


def line_check(line: bytes) -> bytes:
    return hashlib.blake2b(line, digest_size=8).digest()


@dataclass
class CountedSource:
    """One corpus's counted records: those carried (their stream digests, 32 bytes each, and
    where their lines are) and how many more were kept but are read again (``stale``). Of
    the carried, those of a task a claim covers (``lazy_at``/``lazy_size``) are read back
    one at a time, in the order of their trials' names (``lazy_order``), when the report
    reaches them (:meth:`KeptReader.lazy`); the others (``at``/``size``) are only
    counted."""

    carried: int = 0  # the carried only counted (not in ``lazy_at``)
    stale: int = 0
    digests: bytearray = field(default_factory=bytearray)
    at: array = field(default_factory=lambda: array("Q"))
    size: array = field(default_factory=lambda: array("I"))
    lazy_at: array = field(default_factory=lambda: array("Q"))
    lazy_size: array = field(default_factory=lambda: array("I"))
    lazy_order: array = field(default_factory=lambda: array("I"))
    # each lazy record's line as first read (8 bytes of its BLAKE2b): it must read back so
    lazy_check: bytearray = field(default_factory=bytearray)
    # while the file is read: each lazy record's (trial, stream, offset, size), to sort
    pending: list[tuple[str, str, int, int]] = field(default_factory=list)

    def lazy_line(self, i: int, read: Callable[[int, int], bytes]) -> bytes:
        """Lazy record ``i``'s line, read back with ``read(offset, size)``; refused unless it
        is the line first read (the report must count what was checked)."""
        line = read(self.lazy_at[i], self.lazy_size[i])
        if line_check(line) != self.lazy_check[8 * i : 8 * i + 8]:
            raise ReconcileError(
                "the kept observations of the run this one extends changed while it read them "
                f"(the line at byte {self.lazy_at[i]}); nothing was appended — run again (the "
                "next run reads every trial)"
            )
        return line

    def digest_strings(self) -> Iterator[str]:
        """The carried trials' stream digests as the inputs digest binds them."""
        d = self.digests
        return (_DIGEST + d[i : i + 32].hex() for i in range(0, len(d), 32))

    def settle(self) -> None:
        """The lazy records' order by their trials' names (then streams), as the report
        names trials (``lazy_order``: indices into ``lazy_at``, which is in the file's
        order); their names let go."""
        p = self.pending
        self.lazy_at = array("Q", (at for _, _, at, _ in p))
        self.lazy_size = array("I", (size for _, _, _, size in p))
        self.lazy_order = array("I", sorted(range(len(p)), key=lambda i: (p[i][0], p[i][1])))
        self.pending = []

    def lines(self) -> Iterator[int]:
        """Where every carried record's line is, in the file's order."""
        return heapq.merge(self.at, self.lazy_at)


class Counted:
    """Which kept records are not held as objects, and what is kept of them: a readable
    trial in a corpus read from the ledger (``covered``: corpus -> the task ids its claims
    cover). Of a task no claim covers, it is only counted: it is in no entry's table, row or
    list; the report counts it, the inputs digest binds its stream digest, and the next
    run's file holds its line. Of a covered task (with its candidate kept), its line is read
    back when the report reaches it (``CountedSource.lazy_at``), so the report holds no
    carried trial beyond the one it is counting. A record whose stream had an event since
    (``touched``) is read again."""

    def __init__(self, covered: Mapping[str, Collection[str]], touched: Collection[str]) -> None:
        self.covered, self.touched = covered, touched
        self.sources: dict[str, CountedSource] = {}

    def takes(self, source: str, rec: dict[str, Any], at: int, line: bytes) -> bool:
        covered = self.covered.get(source)
        if covered is None or rec.get("excluded"):
            return False
        lazy = rec["task_id"] in covered
        if lazy and rec["candidate"] is None:  # to be evaluated (and kept anew) if asked
            return False
        digest = rec["stream_digest"]
        try:
            raw = bytes.fromhex(digest.removeprefix(_DIGEST))
        except (AttributeError, ValueError):
            return False
        if len(raw) != 32 or _DIGEST + raw.hex() != digest:  # kept only as it is spelt
            return False
        mine = self.sources.setdefault(source, CountedSource())
        if rec["stream"] in self.touched:
            mine.stale += 1
            return True
        mine.digests += raw
        if lazy:
            mine.pending.append((rec["trial"], rec["stream"], at, len(line)))
            mine.lazy_check += line_check(line)
            return True
        mine.carried += 1
        mine.at.append(at)
        mine.size.append(len(line))
        return True

    def listed(self, source: str) -> int:
        """How many streams of ``source`` its counted records name."""
        mine = self.sources.get(source)
        return 0 if mine is None else mine.carried + len(mine.lazy_at) + mine.stale

    def settle(self) -> None:
        for mine in self.sources.values():
            mine.settle()
