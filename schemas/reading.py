"""Two reads of one grading document: authored, or recorded (README § Compatibility).

* **authored** (``--grading``, a pack, ``vledger validate``): a broken load-time rule raises.
* **recorded** (a run's task.yaml ``grading_config``): evidence, read as written. A broken
  rule is an *advisory*; an unknown key (a newer recorder) is listed, dropped, and its
  component reported ``not_measured``.

The read mode travels in pydantic's validation context, so one set of models serves both.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError, ValidationInfo

M = TypeVar("M", bound=BaseModel)

_CONTEXT_KEY = "grading_read"


@dataclass
class ReadNotes:
    """What a recorded read noticed: broken rules and keys it did not know."""

    authored: bool = True
    advisories: list[str] = field(default_factory=list)
    unknown_keys: list[str] = field(default_factory=list)

    def advise(self, message: str) -> None:
        if message not in self.advisories:  # a union may validate one value twice
            self.advisories.append(message)

    def context(self) -> dict[str, Any]:
        return {_CONTEXT_KEY: self}


def notes_of(info: ValidationInfo | None) -> ReadNotes | None:
    context = info.context if info is not None else None
    if isinstance(context, Mapping):
        notes = context.get(_CONTEXT_KEY)
        if isinstance(notes, ReadNotes):
            return notes
    return None


def is_recorded(info: ValidationInfo | None) -> bool:
    notes = notes_of(info)
    return notes is not None and not notes.authored


def rule_broken(info: ValidationInfo | None, message: str) -> None:
    """An authoring rule does not hold: raise it (authored read) or keep it as an advisory
    (recorded read). Without a read context the rule is an error: the strict default."""
    notes = notes_of(info)
    if notes is None or notes.authored:
        raise ValueError(message)
    notes.advise(message)


def recorded_only_keys(data: Any, info: ValidationInfo, keys: tuple[str, ...], where: str) -> None:
    """Keys only a recorded snapshot may carry: an authored block is refused them as it is any
    key outside GRADING.md's vocabulary (a recorded one is read as written)."""
    if is_recorded(info) or not isinstance(data, Mapping):
        return
    for key in keys:
        if key in data:
            raise ValueError(
                f"unknown key {key!r}; it is not part of the block's vocabulary ({where}) —"
                " only a recorded snapshot (Tolokaforge 0.33.1) carries it"
            )


def recorded_only_value(info: ValidationInfo, message: str) -> None:
    """A value only a recorded snapshot may carry: refused on an authored read."""
    if not is_recorded(info):
        raise ValueError(message)


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
    """Validate ``data`` as ``model`` under the read ``notes`` describe; a recorded read drops
    and lists (on ``notes.unknown_keys``) each key the model does not declare."""
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
