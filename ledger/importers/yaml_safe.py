"""Bounded, safe YAML loading: one loader every importer reads through.

Three bounds, each refusing the file by name rather than degrading:

* **size** — a file over ``max_bytes`` is refused before it is read;
* **alias expansion** — YAML aliases share one object in memory, but every consumer
  downstream (canonical JSON, hashing, grading) walks the document as a tree, so a
  "billion laughs" file that loads in microseconds would expand exponentially later.
  The document's size *as a tree* (each alias counted as a full copy) must stay under
  ``max_nodes``; a recursive alias is refused outright;
* **types** — only JSON-shaped values come out: timestamps stay the strings the file
  wrote (``ts: 2026-08-03T06:30:20Z`` is evidence text, not a datetime), and ``!!binary``,
  ``!!set``, ``!!omap``, ``!!pairs`` and non-finite floats are refused, since canonical
  JSON cannot carry them without rewriting them.

The parser is PyYAML's C loader (``CSafeLoader``); the tree walk only runs when the
bytes contain an anchor (``&``), which every alias needs. Two Python-side costs of that
loader are trimmed, since ingest spends most of its time here (benchmarks/ingest.py):
tag resolution skips the path-resolver bookkeeping no safe loader uses, and documents
holding only the JSON-shaped core tags are built from the composed node graph by one
small recursive function instead of PyYAML's generator-based constructor. Any other tag,
a merge key (``<<``) or an unhashable key falls back to the full SafeConstructor, so
both paths give the same value (pinned by tests/test_importers_yaml.py).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

try:  # the C loader is a declared dependency (DESIGN.md § 9); fall back only so errors stay typed
    _BaseLoader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - libyaml missing
    _BaseLoader = yaml.SafeLoader

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_NODES = 2_000_000


@dataclass(frozen=True, slots=True)
class YamlLimits:
    """Bounds for one file: its size on disk and its size as an expanded tree."""

    max_bytes: int = DEFAULT_MAX_BYTES
    max_nodes: int = DEFAULT_MAX_NODES


DEFAULT_LIMITS = YamlLimits()


class YamlLoadError(ValueError):
    """A YAML file that cannot be read as bounded, JSON-shaped data; names the file."""

    def __init__(self, path: Path | str, problem: str, *, line: int | None = None) -> None:
        self.path = str(path)
        self.problem = problem
        self.line = line
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {problem}")


class YamlTooLarge(YamlLoadError):
    """The file is over the configured size limit."""

    def __init__(self, path: Path | str, size: int, limit: int) -> None:
        self.size = size
        self.limit = limit
        super().__init__(
            path,
            f"file is {size} bytes, over the {limit}-byte limit; "
            "raise the limit (--max-file-bytes) if the file is genuine",
        )


class YamlAliasBomb(YamlLoadError):
    """Aliases expand the document past the node limit, or an alias refers to itself."""


def _refuse(tag: str):
    def construct(loader: Any, node: yaml.Node) -> Any:
        raise yaml.constructor.ConstructorError(
            None,
            None,
            f"tag {tag!r} is not allowed here: write plain JSON-shaped YAML",
            node.start_mark,
        )

    return construct


def _timestamp_as_text(loader: Any, node: yaml.Node) -> str:
    return loader.construct_scalar(node)


class _Loader(_BaseLoader):  # type: ignore[misc, valid-type]
    """Safe loader whose constructors only produce JSON-shaped values."""


_T = "tag:yaml.org,2002:"
_STR, _INT, _FLOAT, _BOOL, _NULL, _TIMESTAMP = (
    _T + t for t in ("str", "int", "float", "bool", "null", "timestamp")
)
_SEQ, _MAP = _T + "seq", _T + "map"
_IMPLICIT = {
    k: tuple(v) + tuple(_BaseLoader.yaml_implicit_resolvers.get(None, ()))
    for k, v in _BaseLoader.yaml_implicit_resolvers.items()
    if k is not None
}
_WILDCARD = tuple(_BaseLoader.yaml_implicit_resolvers.get(None, ()))


def _resolve(self: Any, kind: type, value: Any, implicit: Any) -> str:
    """``BaseResolver.resolve`` for a loader with no path resolvers (a safe loader)."""
    if kind is yaml.ScalarNode:
        if implicit[0]:
            for tag, regexp in _IMPLICIT.get(value[0] if value else "", _WILDCARD):
                if regexp.match(value):
                    return tag
        return _STR
    return _SEQ if kind is yaml.SequenceNode else _MAP


def _no_path(self: Any, *args: Any) -> None:
    return None


_Loader.resolve = _resolve
_Loader.descend_resolver = _no_path
_Loader.ascend_resolver = _no_path
_Loader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_as_text)


class _Fallback(Exception):
    """The document needs the full SafeConstructor (a tag or key the fast path leaves alone)."""


def _construct_fast(loader: Any, node: yaml.Node) -> Any:
    """Build a document of core tags from its node graph; aliases stay shared objects."""
    memo: dict[int, Any] = {}
    active: set[int] = set()
    scalar, sequence = yaml.ScalarNode, yaml.SequenceNode

    def conv(n: yaml.Node) -> Any:
        if n.__class__ is scalar:
            tag = n.tag
            if tag in (_STR, _TIMESTAMP):
                return n.value
            if tag == _NULL:
                return None
            if tag == _INT:
                return loader.construct_yaml_int(n)
            if tag == _FLOAT:
                return loader.construct_yaml_float(n)
            if tag == _BOOL:
                return loader.construct_yaml_bool(n)
            raise _Fallback
        key = id(n)
        if key in memo:
            return memo[key]
        if key in active:
            raise YamlAliasBomb(
                loader.name, "an alias refers to a node containing itself (recursive alias)"
            )
        active.add(key)
        if n.__class__ is sequence:
            if n.tag != _SEQ:
                raise _Fallback
            value: Any = [conv(c) for c in n.value]
        else:
            if n.tag != _MAP:
                raise _Fallback
            value = {}
            for k_node, v_node in n.value:
                k = conv(k_node)
                if isinstance(k, (dict, list)) or k_node.tag == _T + "merge":
                    raise _Fallback
                value[k] = conv(v_node)
        active.discard(key)
        memo[key] = value
        return value

    try:
        return conv(node)
    finally:
        # ``conv`` refers to itself through its closure: break that cycle so the memo (and
        # the whole document) is freed by reference counting, even with the GC paused
        conv = None  # type: ignore[assignment]  # noqa: F841
        memo.clear()


def _parse(data: bytes, path: Path | str) -> Any:
    loader = _Loader(data)
    loader.name = str(path)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        try:
            return _construct_fast(loader, node)
        except _Fallback:
            return loader.construct_document(node)
        except RecursionError:
            raise YamlLoadError(path, "nesting too deep to read") from None
    finally:
        loader.dispose()


for _tag in ("binary", "set", "omap", "pairs"):
    _Loader.add_constructor(f"tag:yaml.org,2002:{_tag}", _refuse(f"!!{_tag}"))

_NON_FINITE = re.compile(rb"\.(?:nan|inf)\b", re.IGNORECASE)


def load_yaml_bytes(data: bytes, path: Path | str, limits: YamlLimits = DEFAULT_LIMITS) -> Any:
    """Parse ``data`` (the bytes of ``path``) within ``limits``; errors name ``path``."""
    if len(data) > limits.max_bytes:
        raise YamlTooLarge(path, len(data), limits.max_bytes)
    try:
        value = _parse(data, path)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise YamlLoadError(path, f"not valid YAML: {exc.problem or exc}", line=line) from None
    except yaml.YAMLError as exc:
        raise YamlLoadError(path, f"not valid YAML: {exc}") from None
    if b"&" in data:
        _check_tree_size(value, path, limits.max_nodes)
    if _NON_FINITE.search(data):
        _check_finite(value, path)
    return value


def load_yaml(path: Path, limits: YamlLimits = DEFAULT_LIMITS) -> Any:
    """Read and parse one YAML file within ``limits`` (size checked before reading)."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise YamlLoadError(path, f"cannot read: {exc.strerror or exc}") from None
    if size > limits.max_bytes:
        raise YamlTooLarge(path, size, limits.max_bytes)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise YamlLoadError(path, f"cannot read: {exc.strerror or exc}") from None
    return load_yaml_bytes(data, path, limits)


def tree_size(value: Any) -> int:
    """Nodes in ``value`` read as a tree (shared sub-objects counted once per reference).

    Memoised per container identity, so the walk is linear in the number of *distinct*
    objects even when the expanded count is astronomically large. Raises ``RecursionError``
    on a cycle (a recursive alias).
    """
    memo: dict[int, int] = {}
    active: set[int] = set()

    def size(v: Any) -> int:
        if isinstance(v, dict):
            children = v.values()
        elif isinstance(v, list):
            children = v
        else:
            return 1
        key = id(v)
        if key in memo:
            return memo[key]
        if key in active:
            raise RecursionError("recursive alias")
        active.add(key)
        total = 1 + sum(size(c) for c in children)
        active.discard(key)
        memo[key] = total
        return total

    try:
        return size(value)
    finally:
        size = None  # type: ignore[assignment]  # noqa: F841  (break the closure cycle)


def _check_tree_size(value: Any, path: Path | str, max_nodes: int) -> None:
    try:
        n = tree_size(value)
    except RecursionError:
        raise YamlAliasBomb(
            path, "an alias refers to a node containing itself (recursive alias)"
        ) from None
    if n > max_nodes:
        raise YamlAliasBomb(
            path,
            f"aliases expand the document to {n} nodes, over the {max_nodes}-node limit; "
            "write the repeated data out or raise the limit",
        )


def _check_finite(value: Any, path: Path | str) -> None:
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, float) and not math.isfinite(v):
            raise YamlLoadError(path, f"non-finite number {v!r}: canonical JSON cannot carry it")
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
