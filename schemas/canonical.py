"""Canonical JSON: the one byte encoding every hash in the project is taken over.

orjson with sorted keys and no whitespace. Floats are written in their shortest
round-tripping form and never rewritten (1.0 stays 1.0, 1 stays 1), so a payload's
bytes are a function of its value *and* its JSON types.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import orjson

from schemas.views import Mapped, Skeleton

_OPTS = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


def canonical_json(value: Any) -> bytes:
    """Encode ``value`` as canonical JSON bytes (sorted keys, compact)."""
    return orjson.dumps(value, option=_OPTS)


def parse_json(data: bytes | str) -> Any:
    """Decode JSON bytes produced by :func:`canonical_json` (or any JSON)."""
    return orjson.loads(data)


def digest(value: Any) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``value``: config and output digests. A
    document holding sequence views (``schemas.views``) is hashed a piece at a time."""
    h = hashlib.sha256()
    for piece in canonical_pieces(value):
        h.update(piece)
    return "sha256:" + h.hexdigest()


def canonical_pieces(value: Any) -> Iterator[bytes]:
    """:func:`canonical_json` of ``value`` in pieces that join to it, each view in it
    encoded an item at a time (so the whole encoding is never held)."""
    try:
        yield canonical_json(value)
        return
    except orjson.JSONEncodeError:  # a view somewhere (else the skeleton fails alike)
        pass
    skeleton = Skeleton(value)
    data = canonical_json(skeleton.value)
    at = 0
    for m in skeleton.bytes_pattern.finditer(data):
        yield data[at : m.start()]
        at = m.end()
        yield b"["
        view = skeleton.views[int(m.group(1))]
        encoded = view.encoded() if isinstance(view, Mapped) else None
        if encoded is not None:
            for i, item in enumerate(encoded):
                yield b"," + item if i else item
        else:
            for i, value in enumerate(view):
                if i:
                    yield b","
                yield from canonical_pieces(value)
        yield b"]"
    yield data[at:]
