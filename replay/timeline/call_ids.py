"""The trial's episode-unique call ids, derived from the provider's raw ids (GRADING.md G3).

The k-th occurrence (0-based) of a raw id ``x`` is ``x`` for k = 0 and ``x#<k+1>`` after,
the identity on already-unique ids (so a bundle carrying ``x#2`` derives what it recorded).
Left open by the spec: a provider minting a raw id spelled like a derived one (``x, x,
x#2``) would get ``x#2`` twice, breaking N7, so we take the next free suffix (``x#2#2``).
That depends only on ids observed earlier, so the k-th-declaration / k-th-record pairing
derives the same keys on both views.
"""

from __future__ import annotations

from collections.abc import Iterable


class CallIdDeriver:
    """Online derivation for one view (each derives from its own observation order, G3):
    feed raw ids in observation order, get keys back."""

    __slots__ = ("_counts", "_issued")

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}
        self._issued: set[str] = set()

    def derive(self, raw: str) -> str:
        """Return the episode-unique key for the next occurrence of ``raw``."""
        counts = self._counts
        k = counts.get(raw, 0)
        counts[raw] = k + 1
        key = raw if k == 0 else f"{raw}#{k + 1}"
        issued = self._issued
        while key in issued:  # only a raw id spelled like a derived one gets here
            k += 1
            key = f"{raw}#{k + 1}"
        issued.add(key)
        return key


def derive_call_ids(raw_ids: Iterable[str]) -> list[str]:
    """Keys for ``raw_ids`` taken as one view in observation order.

    >>> derive_call_ids(["read:0", "read:0", "a", "read:0"])
    ['read:0', 'read:0#2', 'a', 'read:0#3']
    """
    deriver = CallIdDeriver()
    return [deriver.derive(raw) for raw in raw_ids]
