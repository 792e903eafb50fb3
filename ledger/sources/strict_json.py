"""JSON read faithfully or refused: the one JSON parser for every file input.

Kept exactly or refused naming the file, the line and what to write instead: integers
outside int64, ``NaN`` / ``±Infinity``, a key written twice, nesting past
:data:`MAX_DEPTH` (canonical JSON stops at 254 levels and the document sits a few levels
down in a payload). docs/readme/ingest.md, "Bad input". The standard library's parser,
because orjson turns an integer beyond 64 bits into a float before any hook could see it.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ledger.sources.files import InputError

MAX_DEPTH = 200
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class JsonInputError(InputError):
    """A JSON input that cannot be kept exactly as written."""


class JsonSyntaxError(JsonInputError):
    """Not JSON at all; ``detail`` is the parser's own complaint."""

    def __init__(self, name: str, detail: str, *, line: int | None = None) -> None:
        self.detail = detail
        super().__init__(name, f"not valid JSON: {detail}", line=line)


class _Refused(Exception):
    def __init__(self, problem: str) -> None:
        self.problem = problem


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _Refused(f"key {k!r} is written twice in one object; keep one of them")
        out[k] = v
    return out


def _int(text: str) -> int:
    value = int(text)
    if not INT64_MIN <= value <= INT64_MAX:
        shown = text if len(text) <= 30 else text[:27] + "..."
        raise _Refused(f"integer {shown} is outside the signed 64-bit range; write it as a string")
    return value


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400: a literal too large for a double
        raise _Refused(f"number {text[:30]} overflows to infinity; write it as a string")
    return value


def _constant(name: str) -> Any:
    raise _Refused(f"{name} is not a JSON number; write null or a string")


def depth_exceeds(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests containers deeper than ``limit`` (iterative: no recursion)."""
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            children: Any = v.values()
        elif isinstance(v, list):
            children = v
        else:
            continue
        if d > limit:
            return True
        stack.extend((c, d + 1) for c in children if isinstance(c, (dict, list)))
    return False


def too_deep(limit: int = MAX_DEPTH) -> str:
    return (
        f"nesting deeper than {limit} levels, which canonical JSON cannot store; "
        "flatten the document"
    )


def loads(data: bytes | str, name: str, *, line: int | None = None) -> Any:
    """Parse one JSON document of file ``name`` (``line``: its line, for JSONL)."""
    try:
        value = json.loads(
            data,
            object_pairs_hook=_pairs,
            parse_int=_int,
            parse_float=_float,
            parse_constant=_constant,
        )
    except _Refused as exc:
        raise JsonInputError(name, exc.problem, line=line) from None
    except RecursionError:
        raise JsonInputError(name, too_deep(), line=line) from None
    except (ValueError, TypeError) as exc:  # JSONDecodeError, undecodable bytes
        raise JsonSyntaxError(name, str(exc), line=line) from None
    if depth_exceeds(value):
        raise JsonInputError(name, too_deep(), line=line)
    return value


def tree_extent(value: Any) -> tuple[int, int]:
    """``(nodes, characters)`` of ``value`` read as a tree: shared sub-objects counted once
    per reference, every string's characters (keys included), one per other scalar.

    Memoised per container, so linear in *distinct* objects; ``RecursionError`` on a cycle.
    """
    memo: dict[int, tuple[int, int]] = {}
    active: set[int] = set()

    def scalar(v: Any) -> int:
        return len(v) if isinstance(v, str) else 1

    def size(v: Any) -> tuple[int, int]:
        if isinstance(v, dict):
            children: Any = v.values()
            chars = sum(scalar(k) for k in v)
        elif isinstance(v, list):
            children, chars = v, 0
        else:
            return 1, scalar(v)
        key = id(v)
        if key in memo:
            return memo[key]
        if key in active:
            raise RecursionError("recursive alias")
        active.add(key)
        nodes = 1
        for c in children:
            n, k = size(c)
            nodes += n
            chars += k
        active.discard(key)
        memo[key] = (nodes, chars)
        return nodes, chars

    try:
        return size(value)
    finally:
        size = None  # type: ignore[assignment]  # noqa: F841  (break the closure cycle)
