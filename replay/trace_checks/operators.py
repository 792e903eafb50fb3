"""The predicate operators and the type rules they read (GRADING.md § Operators: a ``None``
field satisfies nothing but the nullness operators, numeric ones read a real number only).

The eight recorded-only operators (``schemas.trace_matchers.RECORDED_OPERATORS``) are the
ones Tolokaforge 0.33.1 writes beyond GRADING.md's seventeen; GRADING.md says nothing of
their meaning, so they mean what the reference evaluates: ``not_contains`` is the negation
of ``contains``, ``not_regex`` holds on a string no pattern searches, ``is_null`` reads an
explicit JSON null, ``omitted`` an argument the call never sent, and the ``date_*``
comparisons read two ISO-8601 dates or datetimes (a date is midnight UTC, a datetime with no
offset is UTC) and are false wherever either side is not one.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any


class _Sentinel:
    """A marker read by identity; it pickles and copies as itself (the module global)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name

    def __reduce__(self) -> str:
        return self.name


MISSING: Any = _Sentinel("MISSING")  # an argument path the call never sent, not a JSON null
UNKNOWN: Any = _Sentinel("UNKNOWN")  # a field whose evidence the trial does not carry

_CONTAINERS = (list, tuple, set, frozenset, dict)


def json_type(value: Any) -> str:
    """The JSON type name of a runtime value (bool before int: a bool is not a number)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list | tuple | set | frozenset):
        return "array"
    return type(value).__name__


def is_real(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def has_length(value: Any) -> bool:
    return isinstance(value, str | list | tuple | dict)


def contains(haystack: Any, needle: Any, *, ci: bool = False) -> bool:
    """Substring for two strings, descent into containers, equality for any other pair."""
    if haystack is None or isinstance(needle, _CONTAINERS):
        # A container is never found by descent, and nothing is found inside an absent value.
        return False
    if isinstance(haystack, str):
        if not isinstance(needle, str):
            return False
        return needle.casefold() in haystack.casefold() if ci else needle in haystack
    if isinstance(haystack, dict):
        return any(contains(v, needle, ci=ci) for v in haystack.values())
    if isinstance(haystack, list | tuple | set | frozenset):
        return any(contains(v, needle, ci=ci) for v in haystack)
    if isinstance(needle, str):
        return False
    return bool(haystack == needle)


def _member(value: Any, items: list[Any]) -> bool:
    return any(value == item for item in items)


# The accepted date grammar: an extended calendar date, optionally a time with fractional
# seconds and a Z or ±HH:MM offset (the reference's gate; fromisoformat alone accepts more).
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})?)?$")


def date_key(value: Any) -> datetime | None:
    """The UTC datetime a date comparison reads ``value`` as, or None when it is not a date."""
    if not isinstance(value, str) or _ISO_DATE.match(value) is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def _date_compare(value: Any, bound: Any, op: str) -> bool:
    a, b = date_key(value), date_key(bound)
    if a is None or b is None:
        return False
    match op:
        case "date_gt":
            return a > b
        case "date_gte":
            return a >= b
        case "date_lt":
            return a < b
    return a <= b


def _many(pattern: Any) -> tuple[Any, ...]:
    return pattern if isinstance(pattern, tuple) else (pattern,)


def apply_operator(op: str, value: Any, operand: Any, pattern: Any = None) -> bool:
    """Whether ``op`` holds for a field value (``MISSING``: an argument never sent);
    ``pattern`` is the compiled regex, or a recorded tuple of them."""
    if op == "is_null":
        return (value is None) is operand
    if op == "omitted":
        return (value is MISSING) is operand
    if value is MISSING:
        value = None
    if op == "exists":
        return (value is not None) is operand
    if value is None:
        return False
    match op:
        case "equals" | "equals_binding":
            return bool(value == operand)
        case "not_equals":
            return bool(value != operand)
        case "equals_ci":
            return isinstance(value, str) and value.casefold() == operand.casefold()
        case "contains" | "contains_binding":
            return contains(value, operand)
        case "contains_ci":
            return contains(value, operand, ci=True)
        case "regex":
            return isinstance(value, str) and all(
                p.search(value) is not None for p in _many(pattern)
            )
        case "not_regex":
            return isinstance(value, str) and not any(
                p.search(value) is not None for p in _many(pattern)
            )
        case "not_contains":
            return not contains(value, operand)
        case "date_gt" | "date_gte" | "date_lt" | "date_lte":
            return _date_compare(value, operand, op)
        case "gt":
            return is_real(value) and value > operand
        case "gte":
            return is_real(value) and value >= operand
        case "lt":
            return is_real(value) and value < operand
        case "lte":
            return is_real(value) and value <= operand
        case "in_":
            return _member(value, operand)
        case "not_in":
            return not _member(value, operand)
        case "len_gt":
            return has_length(value) and len(value) > operand
        case "len_gte":
            return has_length(value) and len(value) >= operand
    raise AssertionError(f"bad operator {op!r}: the config model admits no such operator")


_NUMERIC = frozenset({"integer", "number", "boolean"})
_SCALAR = frozenset({"string", "integer", "number", "boolean"})
_CONTAINER_TYPES = frozenset({"array", "object"})


def can_ever_hold(op: str, field_type: str, bound_type: str) -> bool:
    """The per-operator comparability table for a binding reference (GRADING.md § Operators:
    ``contains`` descends into containers, never finds a container needle)."""
    if op == "equals_binding":
        if field_type in _NUMERIC and bound_type in _NUMERIC:
            return True
        return field_type == bound_type and field_type != "null"
    if op == "contains_binding":
        if bound_type not in _SCALAR:
            return False
        if field_type in _CONTAINER_TYPES:
            return True
        if field_type == "string" or bound_type == "string":
            return field_type == bound_type
        return field_type in _NUMERIC and bound_type in _NUMERIC
    raise AssertionError(f"{op!r} is not a binding operator")
