"""RFC 9162 Merkle tree hashes, inclusion and consistency proofs.

Hashes are addressed as ``(level, index)``: level 0 are the leaf hashes, and the node at
``(level, i)`` is the root of the complete subtree over leaves ``[i·2^level, (i+1)·2^level)``.
Every hash an RFC 9162 proof needs is a fold of such complete subtrees, so each proof is
computed in three steps (STYLE.md, Go sumdb/tlog): plan the ``(level, index)`` hashes it
needs, read them once through a one-method :class:`HashReader`, compute.

The store keeps the complete subtrees of the current tree (the *frontier*, O(log n) hashes)
so that appending never re-reads history, and persists each interior node once, when it
becomes complete.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Protocol

HashIndex = tuple[int, int]  # (level, index)

EMPTY_ROOT = hashlib.sha256(b"").digest()  # RFC 9162 § 2.1.1: MTH({}) = SHA-256()


def leaf_hash(entry: bytes) -> bytes:
    """RFC 9162 § 2.1.1: ``MTH({d}) = SHA-256(0x00 || d)``."""
    return hashlib.sha256(b"\x00" + entry).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """RFC 9162 § 2.1.1: ``SHA-256(0x01 || left || right)``."""
    return hashlib.sha256(b"\x01" + left + right).digest()


class HashReader(Protocol):
    """Anything that can return stored hashes by ``(level, index)``, in the order asked."""

    def read_hashes(self, indexes: Sequence[HashIndex]) -> list[bytes]: ...


# --- the frontier: complete subtrees of the current tree, O(log n) hashes ---------------


def frontier_levels(size: int) -> list[int]:
    """Levels of the complete subtrees that make up a tree of ``size`` leaves, largest first."""
    return [lv for lv in range(size.bit_length() - 1, -1, -1) if size >> lv & 1]


def frontier_push(
    frontier: list[bytes], size: int, leaf: bytes, new_nodes: list[tuple[int, int, bytes]]
) -> None:
    """Append ``leaf`` as leaf number ``size``: merge equal-sized subtrees, in place.

    Each interior node that becomes complete is appended to ``new_nodes`` as
    ``(level, index, hash)``. Amortised cost: one node hash per leaf.
    """
    h = leaf
    level = 0
    n = size
    while n & 1:
        h = node_hash(frontier.pop(), h)
        level += 1
        n >>= 1
        new_nodes.append((level, n, h))
    frontier.append(h)


def frontier_root(frontier: Sequence[bytes]) -> bytes:
    """RFC 9162 § 2.1.1 root from the complete subtrees, folding right to left."""
    if not frontier:
        return EMPTY_ROOT
    h = frontier[-1]
    for left in reversed(frontier[:-1]):
        h = node_hash(left, h)
    return h


def frontier_indexes(size: int) -> list[HashIndex]:
    """``(level, index)`` of each frontier hash of a tree of ``size`` leaves."""
    out: list[HashIndex] = []
    start = 0
    for lv in frontier_levels(size):
        out.append((lv, start >> lv))
        start += 1 << lv
    return out


# --- subtree hashes ---------------------------------------------------------------------


def range_indexes(lo: int, hi: int) -> list[HashIndex]:
    """Complete aligned subtrees covering leaves ``[lo, hi)``, largest first.

    Valid for the ranges RFC 9162 proofs use: ``lo`` aligned to the largest power of two
    not above ``hi - lo`` (every split point of § 2.1.1 is such a boundary).
    """
    out: list[HashIndex] = []
    while lo < hi:
        lv = (hi - lo).bit_length() - 1
        while lo & ((1 << lv) - 1):  # not aligned: take a smaller piece
            lv -= 1
        out.append((lv, lo >> lv))
        lo += 1 << lv
    return out


def fold_right(hashes: Sequence[bytes]) -> bytes:
    """The hash of consecutive subtrees whose sizes strictly decrease left to right."""
    if not hashes:
        raise AssertionError("bad math in fold_right: no subtrees")
    h = hashes[-1]
    for left in reversed(hashes[:-1]):
        h = node_hash(left, h)
    return h


def tree_hash(size: int, reader: HashReader) -> bytes:
    """RFC 9162 § 2.1.1 ``MTH(D[0:size])``; reads at most log₂(size)+1 stored hashes."""
    if size == 0:
        return EMPTY_ROOT
    return fold_right(reader.read_hashes(range_indexes(0, size)))
