"""Slow, clearly correct RFC 9162 definitions written straight from the text: the oracle."""

from __future__ import annotations

import hashlib


def mth(leaves: list[bytes]) -> bytes:
    """§ 2.1.1 MTH over leaf *hashes*."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return leaves[0]
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return hashlib.sha256(b"\x01" + mth(leaves[:k]) + mth(leaves[k:])).digest()


def path(m: int, leaves: list[bytes]) -> list[bytes]:
    """§ 2.1.3.1 PATH(m, D[n])."""
    n = len(leaves)
    if n == 1:
        return []
    k = 1
    while k * 2 < n:
        k *= 2
    if m < k:
        return path(m, leaves[:k]) + [mth(leaves[k:])]
    return path(m - k, leaves[k:]) + [mth(leaves[:k])]


def subproof(m: int, leaves: list[bytes], whole: bool) -> list[bytes]:
    """§ 2.1.4.1 SUBPROOF(m, D[n], b)."""
    n = len(leaves)
    if m == n:
        return [] if whole else [mth(leaves)]
    k = 1
    while k * 2 < n:
        k *= 2
    if m <= k:
        return subproof(m, leaves[:k], whole) + [mth(leaves[k:])]
    return subproof(m - k, leaves[k:], False) + [mth(leaves[:k])]
