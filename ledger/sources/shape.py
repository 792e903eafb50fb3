"""Shape checks for parsed recorded files: every refusal names file, key and what to write.

Small helpers shared by the Tolokaforge and verdict-core importers. A key path is
written the way a reader would look it up: ``messages[3].tool_calls[0].id``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ledger.sources.files import printable
from schemas.errors import LedgerError


class BundleError(LedgerError, ValueError):
    """A recorded file that does not have the documented shape.

    ``file`` is the path as the user passed it (or below it), ``key`` the offending key
    path (``None`` for the whole document), ``expected`` what the format asks for.
    """

    def __init__(self, file: str, key: str | None, expected: str, got: str | None = None) -> None:
        self.file = file
        self.key = key
        self.expected = expected
        self.got = got
        where = f"{printable(file)}: key {key!r}" if key else printable(file)
        tail = f", got {printable(got)}" if got is not None else ""
        super().__init__(f"{where}: expected {expected}{tail}")


def describe(value: Any) -> str:
    """A short account of a value for an error message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


def need_mapping(value: Any, file: str, key: str | None) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BundleError(file, key, "a mapping", describe(value))
    return value


def need_list(value: Any, file: str, key: str | None) -> list[Any]:
    if not isinstance(value, list):
        raise BundleError(file, key, "a list", describe(value))
    return value


def check_keys(
    doc: Mapping[str, Any],
    allowed: Iterable[str],
    file: str,
    prefix: str | None = None,
    required: Iterable[str] = (),
) -> None:
    """Refuse an unknown key (naming the allowed set) or a missing required one."""
    allowed_set = allowed if isinstance(allowed, frozenset) else frozenset(allowed)
    for k in doc:
        if k not in allowed_set:
            where = f"{prefix}.{k}" if prefix else str(k)
            raise BundleError(
                file,
                where,
                "one of the documented keys: " + ", ".join(sorted(allowed_set)),
                f"unknown key {k!r}",
            )
    for k in required:
        if k not in doc:
            where = f"{prefix}.{k}" if prefix else k
            raise BundleError(file, where, "this key to be present", "nothing")


def check_type(value: Any, types: tuple[type, ...], file: str, key: str, what: str) -> None:
    """Refuse a value not of ``types`` (bool is never accepted as a number)."""
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
        raise BundleError(file, key, what, describe(value))


def check_choice(
    value: Any, choices: Sequence[str], file: str, key: str, *, nullable: bool = False
) -> None:
    """Refuse a value outside ``choices`` (null allowed when ``nullable``), naming them all."""
    if value not in choices and not (nullable and value is None):
        expected = "one of " + ", ".join(choices) + (" or null" if nullable else "")
        raise BundleError(file, key, expected, describe(value))


def opt_str(d: Mapping[str, Any], k: str, file: str, prefix: str) -> None:
    v = d.get(k)
    if v is not None and not isinstance(v, str):
        raise BundleError(file, f"{prefix}.{k}" if prefix else k, "a string or null", describe(v))
