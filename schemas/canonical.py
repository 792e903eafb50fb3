"""Canonical JSON: the one byte encoding every hash in the project is taken over.

orjson with sorted keys and no whitespace. Floats are written in their shortest
round-tripping form and never rewritten (1.0 stays 1.0, 1 stays 1), so a payload's
bytes are a function of its value *and* its JSON types.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

_OPTS = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


def canonical_json(value: Any) -> bytes:
    """Encode ``value`` as canonical JSON bytes (sorted keys, compact)."""
    return orjson.dumps(value, option=_OPTS)


def parse_json(data: bytes | str) -> Any:
    """Decode JSON bytes produced by :func:`canonical_json` (or any JSON)."""
    return orjson.loads(data)


def digest(value: Any) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``value``: config and output digests."""
    return "sha256:" + hashlib.sha256(canonical_json(value)).hexdigest()
