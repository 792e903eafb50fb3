"""Sequence views: lists in a JSON document whose items are computed (or read from disk) when
read, so a corpus-sized document need not sit in memory whole.

A view is any :class:`~collections.abc.Sequence` that is not a list, tuple, string or bytes
(:func:`is_view`). orjson does not encode one; :func:`skeleton` replaces each view in a
document by a placeholder no value can spell, so a writer encodes the rest at C speed and
each view an item at a time in the placeholder's place (``schemas.canonical.digest``, the
CLI's ``write_json_document``): the same bytes as the document with its views listed.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Iterator, Sequence
from typing import Any, overload


def is_view(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, list | tuple | str | bytes)


def listed(value: Any) -> Any:
    """``value`` with every view in it (at any depth of dicts and lists) a list."""
    if is_view(value):
        return [listed(x) for x in value]
    if isinstance(value, dict):
        return {k: listed(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [listed(x) for x in value]
    return value


class Skeleton:
    """``value`` with each view replaced by a placeholder string (its index in ``views``),
    and the pattern that finds a placeholder, as a JSON encoder writes it, in its output."""

    def __init__(self, value: Any) -> None:
        # "\x00" is written escaped ("\u0000"), and the token is this skeleton's own
        token = secrets.token_hex(12)
        self._mark = f"\x00view:{token}:"
        self.views: list[Sequence[Any]] = []
        self.value = self._walk(value)
        self.pattern = re.compile(r'"\\u0000view:' + token + r':(\d+)"')
        self.bytes_pattern = re.compile(self.pattern.pattern.encode())

    def _walk(self, v: Any) -> Any:
        if is_view(v):
            self.views.append(v)
            return f"{self._mark}{len(self.views) - 1}"
        if isinstance(v, dict):
            return {k: self._walk(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [self._walk(x) for x in v]
        return v


def has_view(value: Any) -> bool:
    """Whether a view is anywhere in ``value`` (dicts and lists walked, views not entered)."""
    if is_view(value):
        return True
    if isinstance(value, dict):
        return any(has_view(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(has_view(v) for v in value)
    return False


class Mapped(Sequence[Any]):
    """``fn`` of each item of ``items``, computed when read: a view that holds nothing."""

    def __init__(
        self, items: Sequence[Any], fn: Callable[[Any], Any],
        encode: Callable[[Any], bytes] | None = None,
    ) -> None:  # fmt: skip
        self._items = items
        self._fn = fn
        # the canonical JSON of ``fn(item)`` from the item, without building it (optional:
        # what a digest of a corpus-sized view spends its time on)
        self._encode = encode

    @property
    def items(self) -> Sequence[Any]:
        """What it maps."""
        return self._items

    def then(self, fn: Callable[[Any], Any], encode: Callable[[Any], bytes] | None = None) -> Mapped:
        """``fn`` of each of its values, a view over the same items (``encode``: from an item,
        the canonical JSON of what the new view gives for it)."""
        first = self._fn
        return Mapped(self._items, lambda item: fn(first(item)), encode)

    def encoded(self) -> Iterator[bytes] | None:
        """Each item's canonical JSON (``schemas.canonical``), if it has an encoder."""
        if self._encode is None:
            return None
        return map(self._encode, self._items)

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, i: int) -> Any: ...
    @overload
    def __getitem__(self, i: slice) -> list[Any]: ...
    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self._fn(x) for x in self._items[i]]
        return self._fn(self._items[i])

    def __iter__(self) -> Iterator[Any]:
        return map(self._fn, self._items)

    def __eq__(self, other: object) -> bool:
        """Equal to a list (or another view) of the same items, as the list it stands for."""
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment] - mutable-looking, like the list it stands for

    def __repr__(self) -> str:
        return repr(list(self))
