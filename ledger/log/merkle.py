"""RFC 9162 Merkle tree hashes, inclusion and consistency proofs.

A hash is addressed as ``(level, index)``: the root of the complete subtree over leaves
``[i·2^level, (i+1)·2^level)``. Every proof hash is a fold of such subtrees, so a proof is
planned, read once through a :class:`HashReader`, then computed (as Go's sumdb/tlog does).
The store keeps the *frontier* (the current tree's complete subtrees) so appending never
re-reads history (docs/readme/store.md, "Leaf hash").
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Protocol

from ledger.errors import ProofError
from ledger.log import fast

HashIndex = tuple[int, int]  # (level, index)

HASH_SIZE = 32
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


def push_many(
    frontier: list[bytes], size: int, leaves: Sequence[bytes]
) -> list[tuple[int, int, list[bytes]]]:
    """:func:`push_run` over a list of leaves, each run's digests as a list."""
    runs = push_run(frontier, size, b"".join(leaves))
    return [(lv, first, fast.split(hs)) for lv, first, hs in runs]


def push_run(frontier: list[bytes], size: int, leaves: bytes) -> list[tuple[int, int, bytes]]:
    """Append the concatenated 32-byte ``leaves`` as leaves ``size, size + 1, …``, in place.

    One :func:`ledger.log.fast.tree_level` call per level (the hot path of append and
    verify); returns the completed interior nodes as ``(level, first_index, digests)`` runs.
    """
    if len(leaves) % HASH_SIZE:
        raise ValueError("leaves must be concatenated 32-byte hashes")
    cur = memoryview(leaves)
    start = size  # index of cur's first hash at this level
    leftovers: list[bytes] = []  # new frontier entries, lowest level first
    runs: list[tuple[int, int, bytes]] = []
    level = 0
    while len(cur):
        if start & 1:  # cur[0] is a right child: its left sibling is the frontier's last
            cur = memoryview(frontier.pop() + cur)
            start -= 1
        if len(cur) // HASH_SIZE & 1:
            leftovers.append(bytes(cur[-HASH_SIZE:]))
            cur = cur[:-HASH_SIZE]
        if not len(cur):
            break
        parents = fast.tree_level(cur)
        start >>= 1
        level += 1
        runs.append((level, start, parents))
        cur = memoryview(parents)
    frontier.extend(reversed(leftovers))
    return runs


def subtree_root(leaves: bytes) -> bytes:
    """Root of the complete subtree over the concatenated leaf hashes (a power of two)."""
    count = len(leaves) // HASH_SIZE
    if count < 1 or count & (count - 1) or len(leaves) % HASH_SIZE:
        raise ValueError(f"subtree_root needs 2**k concatenated hashes, got {len(leaves)} bytes")
    level = leaves
    while len(level) > HASH_SIZE:
        level = fast.tree_level(level)
    return level


def frontier_root(frontier: Sequence[bytes]) -> bytes:
    """RFC 9162 § 2.1.1 root from the complete subtrees."""
    return fold_right(frontier) if frontier else EMPTY_ROOT


def _split(n: int) -> int:
    """RFC 9162 § 2.1.1: the largest power of two smaller than ``n`` (n > 1)."""
    return 1 << ((n - 1).bit_length() - 1)


def range_indexes(lo: int, hi: int) -> list[HashIndex]:
    """Complete aligned subtrees covering leaves ``[lo, hi)``, largest first.

    ``[lo, hi)`` must be a subtree of the RFC 9162 shape: ``lo`` a multiple of the smallest
    power of two >= ``hi - lo`` (every range a proof or root needs is one).
    """
    out: list[HashIndex] = []
    while lo < hi:
        lv = (hi - lo).bit_length() - 1
        if lo & ((1 << lv) - 1):
            raise AssertionError(f"bad math in range_indexes: [{lo}, {hi}) is not a subtree")
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


def _read_ranges(ranges: Sequence[tuple[int, int]], reader: HashReader) -> list[bytes]:
    """Hash of each range, with one batched read of every stored hash they need."""
    plans = [range_indexes(lo, hi) for lo, hi in ranges]
    flat = [ix for plan in plans for ix in plan]
    got = reader.read_hashes(flat)
    if len(got) != len(flat):
        raise AssertionError(f"bad math in _read_ranges: asked {len(flat)}, got {len(got)}")
    hashes = iter(got)
    return [fold_right([next(hashes) for _ in plan]) for plan in plans]


def tree_hash(size: int, reader: HashReader) -> bytes:
    """RFC 9162 § 2.1.1 ``MTH(D[0:size])``; reads at most log₂(size)+1 stored hashes."""
    if size < 0:
        raise ProofError(f"tree_hash(size={size}): size must be >= 0")
    if size == 0:
        return EMPTY_ROOT
    return fold_right(reader.read_hashes(range_indexes(0, size)))


def subtree_hash(lo: int, hi: int, reader: HashReader) -> bytes:
    """``MTH(D[lo:hi])`` of an RFC-shaped subtree (see :func:`range_indexes`)."""
    if lo == hi:
        return EMPTY_ROOT
    return _read_ranges([(lo, hi)], reader)[0]


# --- inclusion proofs (RFC 9162 § 2.1.3) ------------------------------------------------


def inclusion_plan(index: int, lo: int, hi: int) -> list[tuple[int, int]]:
    """The ranges whose hashes form ``PATH(index - lo, D[lo:hi])`` (§ 2.1.3.1), leaf first."""
    ranges: list[tuple[int, int]] = []
    while hi - lo > 1:
        k = _split(hi - lo)
        if index < lo + k:
            ranges.append((lo + k, hi))
            hi = lo + k
        else:
            ranges.append((lo, lo + k))
            lo += k
    ranges.reverse()
    return ranges


def prove_inclusion(index: int, size: int, reader: HashReader) -> list[bytes]:
    """Inclusion proof of leaf ``index`` in the tree of ``size`` leaves (one batched read)."""
    if not 0 <= index < size:
        raise ProofError(f"prove_inclusion(index={index}, size={size}): need 0 <= index < size")
    return _read_ranges(inclusion_plan(index, 0, size), reader)


def check_inclusion(index: int, size: int, leaf: bytes, path: Sequence[bytes], root: bytes) -> None:
    """Verify an inclusion proof per RFC 9162 § 2.1.3.2; raise ProofError naming why."""
    where = f"check_inclusion(index={index}, size={size})"
    if not 0 <= index < size:
        raise ProofError(f"{where}: need 0 <= index < size")
    _check_lengths(where, [leaf, root, *path])
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            raise ProofError(f"{where}: proof has {len(path)} hashes, more than the tree needs")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ProofError(f"{where}: proof has {len(path)} hashes, fewer than the tree needs")
    if r != root:
        raise ProofError(f"{where}: computed root {r.hex()}, want {root.hex()}")


# --- consistency proofs (RFC 9162 § 2.1.4) ----------------------------------------------


def consistency_plan(old: int, new: int) -> list[tuple[int, int]]:
    """The ranges whose hashes form ``PROOF(old, D[0:new])`` (§ 2.1.4.1), deepest first."""
    ranges: list[tuple[int, int]] = []
    lo, hi, m, whole = 0, new, old, True
    while m != hi - lo:
        k = _split(hi - lo)
        if m <= k:
            ranges.append((lo + k, hi))
            hi = lo + k
        else:
            ranges.append((lo, lo + k))
            lo += k
            m -= k
            whole = False
    if not whole:  # SUBPROOF(m, D[m], false) = {MTH(D[m])}
        ranges.append((lo, hi))
    ranges.reverse()
    return ranges


def prove_consistency(old: int, new: int, reader: HashReader) -> list[bytes]:
    """Consistency proof between the trees of ``old`` and ``new`` leaves (one batched read)."""
    if not 0 < old <= new:
        raise ProofError(f"prove_consistency(old={old}, new={new}): need 0 < old <= new")
    if old == new:
        return []
    return _read_ranges(consistency_plan(old, new), reader)


def check_consistency(
    old: int, new: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]
) -> None:
    """Verify a consistency proof per RFC 9162 § 2.1.4.2; raise ProofError naming why."""
    where = f"check_consistency(old={old}, new={new})"
    if not 0 < old <= new:
        raise ProofError(f"{where}: need 0 < old <= new")
    _check_lengths(where, [old_root, new_root, *proof])
    if old == new:
        if proof:
            raise ProofError(f"{where}: equal sizes need an empty proof, got {len(proof)} hashes")
        if old_root != new_root:
            raise ProofError(f"{where}: equal sizes but roots differ")
        return
    if not proof:
        raise ProofError(f"{where}: empty proof")
    path = list(proof)
    if old & (old - 1) == 0:  # old is a power of two: its root is a node of the new tree
        path.insert(0, old_root)
    fn, sn = old - 1, new - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise ProofError(f"{where}: proof has more hashes than the trees need")
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ProofError(f"{where}: proof has fewer hashes than the trees need")
    if fr != old_root:
        raise ProofError(f"{where}: computed old root {fr.hex()}, want {old_root.hex()}")
    if sr != new_root:
        raise ProofError(f"{where}: computed new root {sr.hex()}, want {new_root.hex()}")


def _check_lengths(where: str, hashes: Sequence[bytes]) -> None:
    for h in hashes:
        if len(h) != 32:
            raise ProofError(f"{where}: hash {h.hex()!r} is {len(h)} bytes, not 32")


class TreeReads:
    """Roots and proofs over a store's own :meth:`read_hashes` and :meth:`_head` (mixed
    into both stores, so they bound sizes alike)."""

    def read_hashes(self, indexes: Sequence[HashIndex]) -> list[bytes]:
        raise NotImplementedError

    def _head(self) -> tuple[int, bytes]:
        """``(size, root)`` of the whole log, read together."""
        raise NotImplementedError

    def root(self, size: int | None = None) -> bytes:
        """RFC 9162 root hash of the first ``size`` events (default: the whole log)."""
        current, head = self._head()
        if size is None or size == current:
            return head
        if not 0 <= size <= current:
            raise ProofError(f"root(size={size}): the log has {current} events")
        return tree_hash(size, self)

    def prove_inclusion(self, seq: int, size: int | None = None) -> list[bytes]:
        """RFC 9162 inclusion proof of event ``seq`` in the tree of ``size`` events."""
        return prove_inclusion(seq, self._proof_size("prove_inclusion", size), self)

    def prove_consistency(self, old: int, new: int | None = None) -> list[bytes]:
        """RFC 9162 consistency proof from the tree of ``old`` events to that of ``new``."""
        return prove_consistency(old, self._proof_size("prove_consistency", new), self)

    def _proof_size(self, fn: str, size: int | None) -> int:
        current = self._head()[0]
        if size is not None and size > current:
            raise ProofError(f"{fn}: size {size} exceeds the log's {current} events")
        return current if size is None else size


class MemoryHashes:
    """Every stored hash of a growing tree, in lists by level; a :class:`HashReader`."""

    def __init__(self) -> None:
        self.levels: list[list[bytes]] = [[]]
        self.frontier: list[bytes] = []

    @property
    def size(self) -> int:
        return len(self.levels[0])

    def append(self, leaf: bytes) -> None:
        nodes: list[tuple[int, int, bytes]] = []
        frontier_push(self.frontier, self.size, leaf, nodes)
        self.levels[0].append(leaf)
        for level, index, h in nodes:
            if level == len(self.levels):
                self.levels.append([])
            if len(self.levels[level]) != index:
                raise AssertionError(f"bad math in MemoryHashes.append: node ({level}, {index})")
            self.levels[level].append(h)

    def root(self) -> bytes:
        return frontier_root(self.frontier)

    def read_hashes(self, indexes: Sequence[HashIndex]) -> list[bytes]:
        try:
            return [self.levels[lv][i] for lv, i in indexes]
        except IndexError:
            raise ProofError(f"read_hashes: no stored hash among {list(indexes)[:5]}") from None
