"""Hypothesis properties of the Merkle code, against the recursive RFC 9162 oracle.

Finding pinned here: the RFC 9162 § 2.1.3.2 / § 2.1.4.2 verifiers do not bind the tree
size on their own. Brute force shows e.g. the inclusion proof of leaf 0 in a 3-leaf tree
also verifies as "leaf 0 of a 4-leaf tree" *against the 3-leaf root*, because both sizes
drive the verifier through the same left/right steps. What a verifier trusts is a signed
checkpoint, which binds size and root together; so the altered-size properties below alter
the size together with the root a checkpoint of that size would carry.
"""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ledger.errors import ProofError
from ledger.log import merkle
from tests import merkle_oracle

MAX = 200


def grown(n: int) -> tuple[merkle.MemoryHashes, list[bytes]]:
    t = merkle.MemoryHashes()
    leaves = [hashlib.sha256(b"\x00" + i.to_bytes(4, "big")).digest() for i in range(n)]
    for leaf in leaves:
        t.append(leaf)
    return t, leaves


def flip(b: bytes, bit: int) -> bytes:
    bit %= len(b) * 8
    arr = bytearray(b)
    arr[bit // 8] ^= 1 << (bit % 8)
    return bytes(arr)


@st.composite
def size_and_index(draw: st.DrawFn) -> tuple[int, int]:
    n = draw(st.integers(1, MAX))
    return n, draw(st.integers(0, n - 1))


@st.composite
def two_sizes(draw: st.DrawFn) -> tuple[int, int]:
    n = draw(st.integers(1, MAX))
    return draw(st.integers(1, n)), n


@settings(max_examples=100, deadline=None)
@given(st.lists(st.binary(min_size=0, max_size=8), max_size=70))
@example([])
@example([b""])
def test_tree_hash_matches_recursive_definition(data: list[bytes]) -> None:
    t = merkle.MemoryHashes()
    leaves = [merkle.leaf_hash(d) for d in data]
    for leaf in leaves:
        t.append(leaf)
    assert t.root() == merkle_oracle.mth(leaves)
    for n in range(len(leaves) + 1):
        assert merkle.tree_hash(n, t) == merkle_oracle.mth(leaves[:n]), f"tree_hash({n})"


@settings(max_examples=150, deadline=None)
@given(size_and_index(), st.integers(0, 255), st.data())
@example((1, 0), 0, None)
@example((64, 63), 5, None)
def test_inclusion_proofs_verify_and_any_alteration_fails(
    si: tuple[int, int], bit: int, data: st.DataObject | None
) -> None:
    n, i = si
    t, leaves = grown(n + 1)
    root = merkle.tree_hash(n, t)
    proof = merkle.prove_inclusion(i, n, t)
    assert proof == merkle_oracle.path(i, leaves[:n])
    merkle.check_inclusion(i, n, leaves[i], proof, root)
    with pytest.raises(ProofError):
        merkle.check_inclusion(i, n, flip(leaves[i], bit), proof, root)
    with pytest.raises(ProofError):
        merkle.check_inclusion(i, n, leaves[i], proof, flip(root, bit))
    for j in range(len(proof)):
        with pytest.raises(ProofError):
            merkle.check_inclusion(
                i, n, leaves[i], [*proof[:j], flip(proof[j], bit), *proof[j + 1 :]], root
            )
    if proof:
        with pytest.raises(ProofError):
            merkle.check_inclusion(i, n, leaves[i], proof[:-1], root)
    with pytest.raises(ProofError):
        merkle.check_inclusion(i, n, leaves[i], [*proof, root], root)
    other = n + 1 if data is None else data.draw(st.integers(i + 1, MAX).filter(lambda m: m != n))
    t2, _ = grown(max(other, n + 1))
    with pytest.raises(ProofError):
        merkle.check_inclusion(i, other, leaves[i], proof, merkle.tree_hash(other, t2))


@settings(max_examples=150, deadline=None)
@given(two_sizes(), st.integers(0, 255), st.data())
@example((1, 1), 0, None)
@example((4, 8), 3, None)
def test_consistency_proofs_verify_and_any_alteration_fails(
    mn: tuple[int, int], bit: int, data: st.DataObject | None
) -> None:
    m, n = mn
    t, leaves = grown(n + 2)
    r1, r2 = merkle.tree_hash(m, t), merkle.tree_hash(n, t)
    proof = merkle.prove_consistency(m, n, t)
    assert proof == ([] if m == n else merkle_oracle.subproof(m, leaves[:n], True))
    merkle.check_consistency(m, n, r1, r2, proof)
    with pytest.raises(ProofError):
        merkle.check_consistency(m, n, flip(r1, bit), r2, proof)
    with pytest.raises(ProofError):
        merkle.check_consistency(m, n, r1, flip(r2, bit), proof)
    for j in range(len(proof)):
        with pytest.raises(ProofError):
            merkle.check_consistency(
                m, n, r1, r2, [*proof[:j], flip(proof[j], bit), *proof[j + 1 :]]
            )
    if proof:
        with pytest.raises(ProofError):
            merkle.check_consistency(m, n, r1, r2, proof[:-1])
    with pytest.raises(ProofError):
        merkle.check_consistency(m, n, r1, r2, [*proof, r2])
    n2 = n + 1 if data is None else data.draw(st.integers(m, n + 2).filter(lambda k: k != n))
    with pytest.raises(ProofError):
        merkle.check_consistency(m, n2, r1, merkle.tree_hash(n2, t), proof)
    if m > 1:
        m2 = m - 1
        with pytest.raises(ProofError):
            merkle.check_consistency(m2, n, merkle.tree_hash(m2, t), r2, proof)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 300), st.integers(0, 300))
@example(0, 0)
@example(1, 1)
@example(255, 1)
@example(64, 64)
def test_push_many_equals_repeated_frontier_push(size: int, k: int) -> None:
    _, leaves = grown(size + k)
    frontier: list[bytes] = []
    for i in range(size):
        merkle.frontier_push(frontier, i, leaves[i], [])
    one_by_one = list(frontier)
    nodes: list[tuple[int, int, bytes]] = []
    for i in range(size, size + k):
        merkle.frontier_push(one_by_one, i, leaves[i], nodes)
    runs = merkle.push_many(frontier, size, leaves[size:])
    assert frontier == one_by_one
    flat = sorted((lv, first + j, h) for lv, first, hs in runs for j, h in enumerate(hs))
    assert flat == sorted(nodes)
    assert merkle.frontier_root(frontier) == merkle_oracle.mth(leaves)
