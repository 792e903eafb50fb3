"""The base of every API result: a frozen dataclass whose ``to_json()`` is what ``--json`` prints.

The CLI renders a result and never computes one (as sqlite-utils does): the same
object reaches a notebook through ``import ledger``.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from enum import Enum
from pathlib import PurePath
from typing import Any


def jsonable(value: Any) -> Any:
    """A result field as JSON: paths as strings, enums by value, nested results by their JSON."""
    if isinstance(value, Result):
        return value.to_json()
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [jsonable(v) for v in value]
        return sorted(items) if isinstance(value, (set, frozenset)) else items
    return value


class Result:
    """Mixin for result dataclasses; override ``to_json`` where the JSON is not the fields."""

    def to_json(self) -> dict[str, Any]:
        assert dataclasses.is_dataclass(self), f"{type(self).__name__} is not a dataclass"
        return {f.name: jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}


def with_request_keywords(fn: Callable[..., Any], request: type) -> inspect.Signature:
    """``fn``'s signature with its ``**options`` spelled out as the request dataclass's
    fields (keyword-only, with their defaults), so ``help()`` and ``inspect`` show the verb's
    keywords although they are declared once, on the request."""
    sig = inspect.signature(fn)
    own = [p for p in sig.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    fields = [
        inspect.Parameter(
            f.name, inspect.Parameter.KEYWORD_ONLY, annotation=f.type,
            default=f.default if f.default is not dataclasses.MISSING else inspect.Parameter.empty,
        )  # fmt: skip
        for f in dataclasses.fields(request)
    ]
    return sig.replace(parameters=[*own[:1], *fields, *own[1:]])
