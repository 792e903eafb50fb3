"""Bounded, safe YAML loading: one loader every importer reads through.

Its bounds (size through ``files.read_input``, alias expansion, faithful JSON-shaped values,
depth) each refuse the file by name rather than degrade: docs/readme/ingest.md, "Bad input".
Aliases are bounded as a tree (each alias a full copy) because every consumer walks it so.

Speed and memory (ingest spends most of its time here, benchmarks/ingest.py): the C
parser, a tree walk only when the bytes hold an anchor (``&``, which every alias needs),
tag resolution without path-resolver bookkeeping (the composer's per-node path hooks are C
no-ops), plain ints and floats converted in C, and core-tag documents built straight from
the parser's events, with no node graph held until the end; any other document (another
tag, a merge key, an unhashable key, any error) is composed as nodes and built by one
small recursive function that remembers nodes only when an anchor makes sharing possible,
or by the full SafeConstructor, with the same value or error (pinned by
tests/test_importers_yaml.py).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ledger.defaults import DEFAULT_MAX_BYTES, DEFAULT_MAX_EXPANSION, DEFAULT_MAX_NODES
from ledger.sources.files import COPY_IT_IN, Directory, InputError, InputTooLarge, read_input
from ledger.sources.strict_json import (
    INT64_MAX,
    INT64_MIN,
    MAX_DEPTH,
    depth_exceeds,
    too_deep,
    tree_extent,
)

try:  # the C loader comes with PyYAML (pyproject.toml); fall back only so errors stay typed
    _BaseLoader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - libyaml missing
    _BaseLoader = yaml.SafeLoader

# aliases may expand a document to this many times its size on disk (or 1 MiB of text,
# whichever is larger): generous for YAML that reuses a block, far short of a bomb
MIN_EXPANDED_CHARS = 1 << 20


@dataclass(frozen=True, slots=True)
class YamlLimits:
    """Bounds for one file: its size on disk and its size as an expanded tree."""

    max_bytes: int = DEFAULT_MAX_BYTES
    max_nodes: int = DEFAULT_MAX_NODES
    max_expansion: int = DEFAULT_MAX_EXPANSION


DEFAULT_LIMITS = YamlLimits()


def expansion_limit(size: int, limits: YamlLimits) -> int:
    """Characters of text a document of ``size`` bytes may expand to through aliases."""
    return max(size * limits.max_expansion, MIN_EXPANDED_CHARS)


class YamlLoadError(InputError):
    """A YAML file that cannot be read as bounded, JSON-shaped data; names the file."""


# the size refusal is the file reader's, for every format; kept under its old name
YamlTooLarge = InputTooLarge


class YamlAliasBomb(YamlLoadError):
    """Aliases expand the document past the node limit, or an alias refers to itself."""


_RECURSIVE = "an alias refers to a node containing itself (recursive alias)"


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


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


def _int_in_range(loader: Any, node: yaml.Node) -> int:
    value = loader.construct_yaml_int(node)
    if not INT64_MIN <= value <= INT64_MAX:
        raise YamlLoadError(
            loader.name,
            f"integer {node.value[:30]} is outside the signed 64-bit range; quote it as a string",
            line=_line(node),
        )
    return value


def _finite_float(loader: Any, node: yaml.Node) -> float:
    value = loader.construct_yaml_float(node)
    if not math.isfinite(value):
        raise YamlLoadError(
            loader.name,
            f"non-finite number {node.value[:30]!r}: canonical JSON cannot carry it; "
            "write null or a string",
            line=_line(node),
        )
    return value


def _duplicate(loader: Any, key: Any, node: yaml.Node) -> YamlLoadError:
    return YamlLoadError(
        loader.name,
        f"key {str(key)[:60]!r} is written twice in one mapping; keep one of them",
        line=_line(node),
    )


class _Loader(_BaseLoader):  # type: ignore[misc, valid-type]
    """Safe loader whose constructors only produce JSON-shaped values."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> Any:
        # the full constructor's path (merge keys, other tags): an explicit key written
        # twice is refused; a key a merge (<<) brings in may be overridden, as YAML says
        if isinstance(node, yaml.MappingNode):
            explicit = sum(1 for k_node, _ in node.value if k_node.tag != _T + "merge")
            self.flatten_mapping(node)  # merged pairs first, then the explicit ones
            seen: set[Any] = set()
            for k_node, _ in node.value[len(node.value) - explicit :]:
                if isinstance(k_node, yaml.ScalarNode):
                    k = self.construct_object(k_node)
                    if k in seen:
                        raise _duplicate(self, k, k_node)
                    seen.add(k)
        return super().construct_mapping(node, deep=deep)


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


# The C composer calls these two around every node to track a path for path resolvers, which
# a safe loader has none of: C builtins that take the same arguments and do nothing (no
# Python frame for each of a document's nodes, twice).
_Loader.resolve = _resolve
_Loader.descend_resolver = staticmethod(operator.is_)  # (parent, index) -> a bool, unused
_Loader.ascend_resolver = staticmethod(tuple)  # () -> (), unused
_Loader.add_constructor(_TIMESTAMP, _timestamp_as_text)
_Loader.add_constructor(_INT, _int_in_range)
_Loader.add_constructor(_FLOAT, _finite_float)


class _Fallback(Exception):
    """The document needs the full SafeConstructor (a tag or key the fast path leaves alone)."""


_MERGE = _T + "merge"
_BOOLS = yaml.constructor.SafeConstructor.bool_values


def _plain_int(v: str) -> int | None:
    """``int(v)`` where that is the constructor's value (plain decimal; YAML 1.1 reads a
    leading 0 as octal), within 64 bits; else None."""
    if len(v) < 19 and v.isascii() and v.isdigit() and (v[0] != "0" or v == "0"):
        return int(v)
    return None


def _plain_float(v: str) -> float | None:
    """``float(v)`` where that is the constructor's value (no ``_`` or ``:``) and finite."""
    if "_" not in v and ":" not in v:
        try:
            f = float(v)
        except ValueError:
            return None
        if math.isfinite(f):
            return f
    return None


def _construct_fast(loader: Any, node: yaml.Node, shared: bool = True) -> Any:
    """Build a document of core tags from its node graph; aliases stay shared objects.

    ``shared``: the document may hold aliases (its bytes hold an anchor), so a node may be
    reached twice, or from inside itself; without, the graph is a tree and no node is
    remembered. Scalars take C conversions where they give the constructor's value (plain
    decimal ints, floats ``float()`` reads as finite), else the constructor's own."""
    memo: dict[int, Any] = {}
    active: set[int] = set()
    scalar, sequence = yaml.ScalarNode, yaml.SequenceNode

    def conv(n: yaml.Node, depth: int) -> Any:
        if n.__class__ is scalar:
            tag = n.tag
            if tag is _STR:  # resolved here (_resolve): the same object
                return n.value
            if tag == _INT:
                v = _plain_int(n.value)
                return _int_in_range(loader, n) if v is None else v
            if tag == _FLOAT:
                v = _plain_float(n.value)
                return _finite_float(loader, n) if v is None else v
            if tag in (_STR, _TIMESTAMP):
                return n.value
            if tag == _NULL:
                return None
            if tag == _BOOL:
                return _BOOLS[n.value.lower()]
            raise _Fallback
        if shared:
            key = id(n)
            if key in memo:
                return memo[key]
            if key in active:
                raise YamlAliasBomb(loader.name, _RECURSIVE)
        if depth > MAX_DEPTH:
            raise YamlLoadError(loader.name, too_deep(), line=_line(n))
        depth += 1
        if n.__class__ is sequence:
            if n.tag != _SEQ:
                raise _Fallback
            if shared:
                active.add(key)
            value: Any = [conv(c, depth) for c in n.value]
        else:
            if n.tag != _MAP:
                raise _Fallback
            if shared:
                active.add(key)
            value = {}
            for k_node, v_node in n.value:
                if k_node.__class__ is scalar and k_node.tag is _STR:
                    k = k_node.value
                else:
                    k = conv(k_node, depth)
                    if isinstance(k, (dict, list)) or k_node.tag == _MERGE:
                        raise _Fallback
                if k in value:
                    raise _duplicate(loader, k, k_node)
                value[k] = conv(v_node, depth)
        if shared:
            active.discard(key)
            memo[key] = value
        return value

    try:
        return conv(node, 1)
    finally:
        # ``conv`` refers to itself through its closure: break that cycle so the memo (and
        # the whole document) is freed by reference counting, even with the GC paused
        conv = None  # type: ignore[assignment]  # noqa: F841
        memo.clear()


_OPEN_SEQ, _OPEN_MAP = yaml.SequenceStartEvent, yaml.MappingStartEvent
_CLOSE = (yaml.SequenceEndEvent, yaml.MappingEndEvent)
_NO_KEY = object()  # a mapping waiting for its next key


def _from_events(data: bytes, path: Path | str) -> Any:
    """The document built from the parser's events, with no node graph: every node and its
    two marks held ~400 bytes per scalar until the end of the parse (a 10,000-row
    corpus.yaml took 56 MiB, a 100,000-row one ten times that). The happy path of
    :func:`_construct_fast` only — core tags, scalar keys, anchors defined once and used
    after their node closes, one document: anything else, and any error, raises
    :class:`_Fallback`, and the node path then gives the value or the error, exactly."""
    loader = _Loader(data)
    loader.name = str(path)
    scalar = yaml.ScalarEvent
    try:
        get = loader.get_event
        get()  # the stream's start
        event = get()
        if event.__class__ is yaml.StreamEndEvent:
            return None
        anchors: dict[str, Any] = {}
        stack: list[list[Any]] = []  # each open node: [value, its anchor, the pending key]
        root: Any = None
        while True:
            event = get()
            cls = event.__class__
            if cls in _CLOSE:
                done = stack.pop()
                if done[2] is not _NO_KEY and cls is yaml.MappingEndEvent:
                    raise _Fallback
                value = done[0]
                if done[1] is not None:
                    anchors[done[1]] = value
            elif cls is yaml.DocumentEndEvent:
                break
            else:
                anchor = getattr(event, "anchor", None)
                if cls is scalar:
                    value = _scalar(loader, event)
                elif cls is yaml.AliasEvent:
                    value = anchors.get(event.anchor, _OPEN)
                    if value is _OPEN:  # undefined, or its node still open (recursive)
                        raise _Fallback
                    anchor = None
                else:
                    if cls not in (_OPEN_SEQ, _OPEN_MAP) or len(stack) >= MAX_DEPTH:
                        raise _Fallback
                    tag = event.tag
                    want = _SEQ if cls is _OPEN_SEQ else _MAP
                    if tag not in (None, "!", want):
                        raise _Fallback
                    if anchor is not None and anchor in anchors:
                        raise _Fallback
                    stack.append([[] if cls is _OPEN_SEQ else {}, anchor, _NO_KEY])
                    if anchor is not None:
                        anchors[anchor] = _OPEN  # an alias to it now would be recursive
                    continue
                if anchor is not None:
                    if anchor in anchors:
                        raise _Fallback
                    anchors[anchor] = value
            if not stack:
                root = value
                continue
            top = stack[-1]
            if top[0].__class__ is list:
                top[0].append(value)
            elif top[2] is _NO_KEY:
                if cls is not scalar or value in top[0]:  # (a merge key fell back as a scalar)
                    raise _Fallback  # a collection or alias as a key, or a key written twice
                top[2] = value
            else:
                top[0][top[2]] = value
                top[2] = _NO_KEY
        if get().__class__ is not yaml.StreamEndEvent:
            raise _Fallback  # a second document: the node path names it
        return root
    except Exception:  # noqa: BLE001 - any refusal is the node path's to name, exactly
        raise _Fallback from None
    finally:
        loader.dispose()


_OPEN = object()  # the anchor of a node not yet closed


def _scalar(loader: Any, event: Any) -> Any:
    """A scalar event's value as :func:`_construct_fast` builds it."""
    tag = event.tag
    if tag is None or tag == "!":
        tag = _resolve(loader, yaml.ScalarNode, event.value, event.implicit)
    if tag in (_STR, _TIMESTAMP):
        return event.value
    if tag == _NULL:
        return None
    value = event.value
    if tag == _INT and (v := _plain_int(value)) is not None:
        return v
    if tag == _FLOAT and (v := _plain_float(value)) is not None:
        return v
    if tag == _BOOL:
        return _BOOLS[value.lower()]
    node = yaml.ScalarNode(tag, value, event.start_mark, event.end_mark, event.style)
    if tag == _INT:
        return _int_in_range(loader, node)
    if tag == _FLOAT:
        return _finite_float(loader, node)
    raise _Fallback


# From this size on a document is built from the parser's events, its node graph never
# held; below it, the graph is small and brief, and composing it in C and building from it
# is the faster of the two (bundle files: ~10 %, measured)
EVENTS_FROM = 64 << 10


def _parse(data: bytes, path: Path | str) -> Any:
    if len(data) >= EVENTS_FROM:
        try:
            return _from_events(data, path)
        except _Fallback:
            pass
    loader = _Loader(data)
    loader.name = str(path)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        try:
            return _construct_fast(loader, node, b"&" in data)
        except _Fallback:
            value = loader.construct_document(node)
        except RecursionError:
            raise YamlLoadError(path, too_deep()) from None
        if depth_exceeds(value):  # the full constructor's path does not count levels
            raise YamlLoadError(path, too_deep())
        return value
    finally:
        loader.dispose()


for _tag in ("binary", "set", "omap", "pairs"):
    _Loader.add_constructor(f"tag:yaml.org,2002:{_tag}", _refuse(f"!!{_tag}"))


def load_yaml_bytes(data: bytes, path: Path | str, limits: YamlLimits = DEFAULT_LIMITS) -> Any:
    """Parse ``data`` (the bytes of ``path``) within ``limits``; errors name ``path``."""
    if len(data) > limits.max_bytes:
        raise InputTooLarge(path, len(data), limits.max_bytes)
    try:
        value = _parse(data, path)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise YamlLoadError(path, f"not valid YAML: {exc.problem or exc}", line=line) from None
    except yaml.YAMLError as exc:
        raise YamlLoadError(path, f"not valid YAML: {exc}") from None
    if b"&" in data:
        _check_tree_size(value, path, limits, len(data))
    return value


def load_yaml(
    path: Path,
    limits: YamlLimits = DEFAULT_LIMITS,
    *,
    root: Path | None = None,
    name: str | None = None,
    what: str = "its directory",
    allow: Sequence[Path] = (),
    hint: str = COPY_IT_IN,
) -> Any:
    """Read (``files.read_input``: regular, bounded, confined to ``root`` when given) and
    parse one YAML file within ``limits``; errors name ``name`` (default: the path)."""
    shown = name or str(path)
    data = read_input(
        path, max_bytes=limits.max_bytes, name=shown, root=root, what=what, allow=allow, hint=hint
    )
    return load_yaml_bytes(data, shown, limits)


def load_confined_yaml(
    directory: Path | Directory, name: str, label: str, what: str,
    limits: YamlLimits = DEFAULT_LIMITS,
) -> Any:  # fmt: skip
    """One file of a bundle, pack or corpus directory, read only if it stays inside it
    (``files.Directory``: a caller reading several files of one directory passes one)."""
    folder = directory if isinstance(directory, Directory) else Directory(directory, what)
    shown = f"{label}/{name}"
    return load_yaml_bytes(folder.read(name, max_bytes=limits.max_bytes, shown=shown), shown, limits)


def _check_tree_size(value: Any, path: Path | str, limits: YamlLimits, size: int) -> None:
    max_nodes, max_chars = limits.max_nodes, expansion_limit(size, limits)
    try:
        n, chars = tree_extent(value)
    except RecursionError:
        raise YamlAliasBomb(path, _RECURSIVE) from None
    if n > max_nodes:
        raise YamlAliasBomb(
            path,
            f"aliases expand the document to {n} nodes, over the {max_nodes}-node limit; "
            "write the repeated data out or raise the limit",
        )
    if chars > max_chars:
        raise YamlAliasBomb(
            path,
            f"aliases expand the document to {chars} characters of text, over the "
            f"{max_chars}-character limit ({limits.max_expansion} times its size on disk, "
            "at least 1 MiB); write the repeated data out",
        )
