"""State canonicalisation for the hash verdict (GRADING.md § Hash-Based Grading, Algorithm:
its two folding tiers, numeric types and ``numeric_string_fields`` strings, and their guards).

``to_hashable`` turns a state into nested tuples with sorted dict keys and canonical
number tokens; ``consistent_hash`` is ``sha256(str(value))`` over that structure. The
digest has to reproduce the one recorded bundles carry (the ``state_checks_hash_weight``
parity pack pins one), so the structure is Python tuples and ``str()`` — not JSON.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation
from typing import Any

NUMERIC_TOKEN = "\x00tf-num:"
"""Prefix of a canonical number token; no state string can begin with it unescaped."""

_ESCAPE = "\x00tf-str:"
_RESERVED = "\x00tf-"

# A plain decimal literal whose integer part has no leading zero ("0", "130", "-5.50",
# ".5"). "00123" and "007" read as identifiers and never fold.
_DECIMAL_LITERAL = re.compile(r"[+-]?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?|[+-]?\.[0-9]+")


def _number_token(value: Decimal) -> str:
    return NUMERIC_TOKEN + format(value.normalize(), "f")


def canonical_number(value: Any, *, fold_strings: bool = False) -> Any:
    """One token for every representation of one number; everything else unchanged
    (``fold_strings``: the string tier's opt-in; reserved-prefix strings are escaped)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float | Decimal):
        try:
            return _number_token(Decimal(str(value)))
        except (InvalidOperation, ValueError):
            return value  # nan / inf have no canonical decimal; compared as written
    if isinstance(value, str):
        if value.startswith(_RESERVED):
            return _ESCAPE + value
        if fold_strings:
            stripped = value.strip()
            if stripped and _DECIMAL_LITERAL.fullmatch(stripped):
                return _number_token(Decimal(stripped))
    return value


def to_hashable(item: Any, string_fields: frozenset[str] | None = None) -> Any:
    """Sorted-key nested tuples with canonical scalars (tau-bench compatible shape)."""
    return _to_hashable(item, string_fields, False)


def _to_hashable(item: Any, string_fields: frozenset[str] | None, fold: bool) -> Any:
    # exact-type fast paths first (strings and records dominate a state); subclasses and
    # the rarer shapes take the general branches below
    kind = type(item)
    if kind is str and not fold:
        return _ESCAPE + item if item.startswith(_RESERVED) else item
    if kind is dict or isinstance(item, dict):
        if string_fields is None:
            return tuple(
                [(key, _to_hashable(value, None, False)) for key, value in sorted(item.items())]
            )
        return tuple(
            [
                (key, _to_hashable(value, string_fields, key in string_fields))
                for key, value in sorted(item.items())
            ]
        )
    if kind is list or isinstance(item, list | tuple):
        return tuple([_to_hashable(element, string_fields, fold) for element in item])
    if isinstance(item, set | frozenset):
        # canonical scalars mix bools and tokens, which do not order under a bare sort
        members = [_to_hashable(element, string_fields, fold) for element in item]
        return tuple(sorted(members, key=lambda x: (type(x).__name__, str(x))))
    return canonical_number(item, fold_strings=fold)


def consistent_hash(value: Any) -> str:
    """``sha256(str(value))`` as lowercase hex — the digest both sides are compared by."""
    return hashlib.sha256(str(value).encode("utf-8")).hexdigest()


def state_digest(state: Any, numeric_string_fields: Iterable[str] = ()) -> str:
    """The digest of one state under the block's string-tier allow-list."""
    fields = frozenset(numeric_string_fields)
    return consistent_hash(to_hashable(state, fields or None))


def extract_db_state(final_state: dict[str, Any]) -> Any:
    """The level a hash describes: ``db``, else ``agent``, else the state itself."""
    if "db" in final_state:
        return final_state["db"]
    return final_state.get("agent", final_state)
