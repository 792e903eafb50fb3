"""The recorded read of a grading document: unknown keys dropped, listed, and read past.

``schemas.reading`` carries the read mode (authored or recorded) into the models; this is the
read itself, shared by the grading and trace_checks loaders.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from schemas.reading import ReadNotes

M = TypeVar("M", bound=BaseModel)


def dotted(loc: tuple[Any, ...], prefix: str = "") -> str:
    out = prefix
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _without(data: Any, loc: tuple[Any, ...]) -> bool:
    """Remove the key at ``loc`` from ``data`` in place; False when ``loc`` names no key
    (pydantic's loc can hold union-member tags that are not positions of the data)."""
    node = data
    parts = list(loc)
    while parts:
        part = parts.pop(0)
        if isinstance(node, Mapping) and part in node:
            if not parts:
                del node[part]  # type: ignore[attr-defined]
                return True
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            if not parts:
                return False
            node = node[part]
        elif not isinstance(part, int):
            continue  # a union tag such as 'list[Require]': skip it, keep walking
        else:
            return False
    return False


def read_model(model: type[M], data: Any, notes: ReadNotes, *, prefix: str = "") -> M:
    """Validate ``data`` as ``model`` under the read ``notes`` describe.

    A recorded read drops each key the model does not declare, lists it (addressed from
    ``prefix``) on ``notes.unknown_keys`` and validates again; anything else still raises.
    """
    if notes.authored:
        return model.model_validate(data, context=notes.context())
    working = data
    for _ in range(10_000):  # each pass removes at least one key, so this ends
        try:
            return model.model_validate(working, context=notes.context())
        except ValidationError as exc:
            extras = [e["loc"] for e in exc.errors() if e["type"] == "extra_forbidden"]
            if not extras:
                raise
            if working is data:
                working = copy.deepcopy(data)
            removed = False
            for loc in extras:
                if _without(working, loc):
                    name = dotted(tuple(p for p in loc if isinstance(p, int | str)), prefix)
                    if name not in notes.unknown_keys:
                        notes.unknown_keys.append(name)
                    removed = True
            if not removed:
                raise
    raise AssertionError("unreachable: a recorded read removed no key")  # pragma: no cover
