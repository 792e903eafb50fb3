"""RFC 9162 tree hash and proofs against the interop vectors (tests/data/merkle).

The vectors come from transparency-dev/merkle, golang.org/x/mod and the PLANTS draft (see
their README); agreeing with them shows the tree interoperates with those implementations.
Beyond the RFC algorithms, the vectors treat ``leaf_index >= tree_size``, ``size1 >
size2`` and ``size1 == 0`` as invalid, as we do. We reject non-32-byte hashes up front, so
the one vector that is valid with 12-byte roots (sizes 1/1) is skipped, as its README allows.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from ledger.errors import ProofError
from ledger.log import merkle
from tests import merkle_oracle
from tests.data_paths import MERKLE_VECTORS

V: dict[str, Any] = json.loads(MERKLE_VECTORS.read_text())


def h(x: str) -> bytes:
    return bytes.fromhex(x)


def tree(leaf_inputs: list[bytes]) -> merkle.MemoryHashes:
    t = merkle.MemoryHashes()
    for d in leaf_inputs:
        t.append(merkle.leaf_hash(d))
    return t


def test_hash_primitives() -> None:
    for p in V["hash_primitives"]:
        if p["kind"] == "empty_root":
            got = merkle.EMPTY_ROOT
        elif p["kind"] == "leaf":
            got = merkle.leaf_hash(h(p["input"]))
        else:
            got = merkle.node_hash(h(p["left"]), h(p["right"]))
        assert got.hex() == p["expected"], p["desc"]


def test_reference_tree_levels_and_roots() -> None:
    t = merkle.MemoryHashes()
    leaves = [h(x) for x in V["leaves"]]
    assert t.root().hex() == V["roots"]["0"]
    for i, d in enumerate(leaves):
        t.append(merkle.leaf_hash(d))
        assert t.root().hex() == V["roots"][str(i + 1)], f"root({i + 1})"
        assert merkle.tree_hash(i + 1, t).hex() == V["roots"][str(i + 1)]
    for level, hashes in V["node_hashes"].items():
        assert [x.hex() for x in t.levels[int(level)]] == hashes, f"level {level}"


def _outcome(fn: Any, *args: Any) -> bool:
    try:
        fn(*args)
    except ProofError:
        return False
    return True


@pytest.mark.parametrize(
    "vec", V["inclusion"] + V["inclusion_exhaustive"], ids=lambda v: v.get("id", "exhaustive")
)
def test_inclusion_vectors(vec: dict[str, Any]) -> None:
    if vec["valid"] and vec.get("hashes_well_formed") is False:
        pytest.skip("valid only with non-32-byte hashes, which we reject up front")
    args = (
        vec["leaf_index"],
        vec["tree_size"],
        h(vec["leaf_hash"]),
        [h(p) for p in vec["path"]],
        h(vec["root"]),
    )
    assert _outcome(merkle.check_inclusion, *args) == vec["valid"], vec.get("desc")


@pytest.mark.parametrize(
    "vec", V["consistency"] + V["consistency_exhaustive"], ids=lambda v: v.get("id", "exhaustive")
)
def test_consistency_vectors(vec: dict[str, Any]) -> None:
    if vec["valid"] and vec.get("hashes_well_formed") is False:
        pytest.skip("valid only with non-32-byte hashes, which we reject up front")
    args = (
        vec["size1"],
        vec["size2"],
        h(vec["root1"]),
        h(vec["root2"]),
        [h(p) for p in vec["proof"]],
    )
    assert _outcome(merkle.check_consistency, *args) == vec["valid"], vec.get("desc")


def test_exhaustive_vectors_are_what_we_prove() -> None:
    t = tree([h(x) for x in V["leaves"]])
    for vec in V["inclusion_exhaustive"]:
        got = merkle.prove_inclusion(vec["leaf_index"], vec["tree_size"], t)
        assert [x.hex() for x in got] == vec["path"], (vec["leaf_index"], vec["tree_size"])
    for vec in V["consistency_exhaustive"]:
        got = merkle.prove_consistency(vec["size1"], vec["size2"], t)
        assert [x.hex() for x in got] == vec["proof"], (vec["size1"], vec["size2"])


def _valid_subtree(start: int, end: int) -> bool:
    if start == 0 or start == end:
        return True
    p = 1
    while p < end - start:
        p *= 2
    return start % p == 0


def test_accumulated_subtree_hashes_and_paths() -> None:
    """PLANTS-draft digests over every subtree hash and subtree inclusion path of 130 leaves."""
    t = tree([bytes([i]) for i in range(130)])
    want = {a["name"]: a["expected_sha256"] for a in V["accumulated"]}
    hashes = hashlib.sha256()
    paths = hashlib.sha256()
    for end in range(131):
        for start in range(end + 1):
            if not _valid_subtree(start, end):
                continue
            hashes.update(f"[{start}, {end}) {merkle.subtree_hash(start, end, t).hex()}\n".encode())
            for index in range(start, end):
                proof = merkle._read_ranges(merkle.inclusion_plan(index, start, end), t)
                line = f"{index} [{start}, {end})" + "".join(f" {x.hex()}" for x in proof) + "\n"
                paths.update(line.encode())
    assert hashes.hexdigest() == want["subtree_hashes"]
    assert paths.hexdigest() == want["subtree_inclusion_proofs"]


def test_tree_grown_to_100_leaves_proves_everything_and_rejects_flipped_bits() -> None:
    """tlog's TestTree loop: at each size prove every leaf and every older tree, then mutate."""
    t = merkle.MemoryHashes()
    leaves: list[bytes] = []
    for n in range(1, 101):
        leaf = merkle.leaf_hash(n.to_bytes(4, "big"))
        t.append(leaf)
        leaves.append(leaf)
        root = t.root()
        assert root == merkle_oracle.mth(leaves), f"root({n})"
        step = 1 if n <= 40 else 7  # keep the loop quick beyond 40 leaves
        for i in range(0, n, step):
            proof = merkle.prove_inclusion(i, n, t)
            assert proof == merkle_oracle.path(i, leaves), f"prove_inclusion({i}, {n})"
            merkle.check_inclusion(i, n, leaves[i], proof, root)
            for j in range(len(proof)):
                bad = list(proof)
                bad[j] = bytes([bad[j][0] ^ 1]) + bad[j][1:]
                with pytest.raises(ProofError):
                    merkle.check_inclusion(i, n, leaves[i], bad, root)
        for m in range(1, n + 1, step):
            proof = merkle.prove_consistency(m, n, t)
            want = [] if m == n else merkle_oracle.subproof(m, leaves, True)
            assert proof == want, f"prove_consistency({m}, {n})"
            old_root = merkle_oracle.mth(leaves[:m])
            merkle.check_consistency(m, n, old_root, root, proof)
            for j in range(len(proof)):
                bad = list(proof)
                bad[j] = bytes([bad[j][0] ^ 1]) + bad[j][1:]
                with pytest.raises(ProofError):
                    merkle.check_consistency(m, n, old_root, root, bad)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda t: merkle.prove_inclusion(3, 3, t),
            "prove_inclusion(index=3, size=3): need 0 <= index < size",
        ),
        (
            lambda t: merkle.prove_consistency(0, 2, t),
            "prove_consistency(old=0, new=2): need 0 < old <= new",
        ),
        (
            lambda t: merkle.prove_consistency(3, 2, t),
            "prove_consistency(old=3, new=2): need 0 < old <= new",
        ),
    ],
)
def test_caller_errors_name_function_and_values(call: Any, message: str) -> None:
    t = tree([b"a", b"b", b"c"])
    with pytest.raises(ProofError) as info:
        call(t)
    assert str(info.value) == message
