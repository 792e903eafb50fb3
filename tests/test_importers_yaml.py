"""Bounded safe YAML loading: alias bombs, oversize files, truncation, non-JSON types."""

from __future__ import annotations

import datetime
import math
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.sources.yaml_safe import (
    YamlAliasBomb,
    YamlLimits,
    YamlLoadError,
    YamlTooLarge,
    load_yaml,
    load_yaml_bytes,
    tree_extent,
)
from tests.data_paths import CORPORA, TOLOKAFORGE


def _bomb(levels: int, fan: int = 9) -> bytes:
    lines = ["a0: &a0 [" + ", ".join(["lol"] * fan) + "]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * fan) + "]")
    return ("\n".join(lines) + "\n").encode()


def test_alias_bomb_is_refused_by_name(tmp_path: Path) -> None:
    p = tmp_path / "trajectory.yaml"
    p.write_bytes(_bomb(9))  # 9**9 leaves when expanded; a few hundred bytes on disk
    with pytest.raises(YamlAliasBomb) as exc:
        load_yaml(p)
    assert str(p) in str(exc.value)
    assert "nodes" in str(exc.value)


def test_recursive_alias_is_refused() -> None:
    with pytest.raises(YamlAliasBomb, match="recursive alias"):
        load_yaml_bytes(b"a: &a [1, *a]\n", "x.yaml")


def test_modest_aliases_load_and_expand_as_copies() -> None:
    value = load_yaml_bytes(b"base: &b {k: 1}\nuse: [*b, *b]\n", "x.yaml")
    assert value == {"base": {"k": 1}, "use": [{"k": 1}, {"k": 1}]}


def test_tree_size_counts_each_alias_as_a_copy() -> None:
    shared = [1, 2, 3]  # 4 nodes as a tree
    assert tree_extent({"a": shared, "b": shared})[0] == 1 + 4 + 4


def test_oversize_file_is_refused_before_parsing(tmp_path: Path) -> None:
    p = tmp_path / "grade.yaml"
    p.write_text("score: 1.0\n" + "# padding\n" * 100)
    with pytest.raises(YamlTooLarge) as exc:
        load_yaml(p, YamlLimits(max_bytes=100))
    assert exc.value.path == str(p)
    assert exc.value.limit == 100
    assert exc.value.size == p.stat().st_size
    assert load_yaml(p, YamlLimits(max_bytes=10_000)) == {"score": 1.0}


def test_truncated_yaml_names_file_and_line(tmp_path: Path) -> None:
    p = tmp_path / "tool_log.yaml"
    p.write_text("- call_id: a\n  sequence: 0\n  arguments: {x: [1, 2\n")
    with pytest.raises(YamlLoadError) as exc:
        load_yaml(p)
    assert str(p) in str(exc.value)
    assert exc.value.line is not None


def test_timestamps_stay_text() -> None:
    assert load_yaml_bytes(b"ts: 2026-08-03T06:30:20.405550Z\nd: 2026-08-03\n", "t.yaml") == {
        "ts": "2026-08-03T06:30:20.405550Z",
        "d": "2026-08-03",
    }


@pytest.mark.parametrize(
    "doc", [b"a: !!binary aGVsbG8=\n", b"a: !!set {x: null}\n", b"a: !!omap [b: 1]\n"]
)
def test_non_json_tags_are_refused(doc: bytes) -> None:
    with pytest.raises(YamlLoadError, match="not allowed"):
        load_yaml_bytes(doc, "t.yaml")


@pytest.mark.parametrize("doc", [b"a: .nan\n", b"a: [-.inf]\n", b"a: {b: .Inf}\n"])
def test_non_finite_numbers_are_refused(doc: bytes) -> None:
    with pytest.raises(YamlLoadError, match="non-finite"):
        load_yaml_bytes(doc, "t.yaml")


def test_python_tags_are_refused() -> None:
    with pytest.raises(YamlLoadError):
        load_yaml_bytes(b"a: !!python/object/apply:os.system ['true']\n", "t.yaml")


# NEL / LS / PS / CR are YAML line breaks that PyYAML's own emitter does not round-trip
# inside plain scalars; that is the writer's limit, not the loader's.
_chars = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x85\u2028\u2029\r")
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**62), max_value=2**62),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(_chars, max_size=20),
)
_json = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(_chars, max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(_json)
def test_round_trip_of_json_shaped_values(value) -> None:
    """Anything JSON-shaped that PyYAML writes reads back equal (timestamps as text)."""
    text = yaml.safe_dump({"v": value}, allow_unicode=True).encode()
    back = load_yaml_bytes(text, "rt.yaml")["v"]
    assert _same(back, value)


def _same(a, b) -> bool:
    if isinstance(b, float) and isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(b, dict):
        return isinstance(a, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in b)
    if isinstance(b, list):
        return isinstance(a, list) and len(a) == len(b) and all(map(_same, a, b))
    return a == b and type(a) is type(b)


def test_same_values_as_pyyaml_on_every_recorded_yaml_file() -> None:
    """The trimmed loader is PyYAML's safe loader (timestamps aside): pin it on real files."""
    files = sorted(CORPORA.rglob("*.yaml")) + sorted(TOLOKAFORGE.rglob("*.yaml"))
    assert len(files) > 100
    for p in files:
        data = p.read_bytes()
        assert load_yaml_bytes(data, p) == yaml.load(data, Loader=yaml.CSafeLoader), p  # noqa: S506


@pytest.mark.parametrize(
    "doc",
    [
        b"base: &b {x: 1, y: [1, 2]}\nderived:\n  <<: *b\n  y: 3\n",  # merge key: full constructor
        b"a: !!str 123\nb: !!int '7'\nc: !!float '1.5'\nd: !!bool 'yes'\ne: !!null ''\n",
        b"n: [0x1F, 0o17, 1_000, -3, +4, 1.5e3, .5, 190:20:30]\nb: [yes, No, on, OFF, true]\n",
        b"? [complex, key]\n: value\n",  # unhashable key: PyYAML's own error
        b"s: &s shared\nt: *s\nl: &l [1]\nm: [*l, *l]\n",
        b"=: value-key\n",
        b"",
        b"--- plain\n",
    ],
)
def test_fast_path_agrees_with_pyyaml(doc: bytes) -> None:
    try:
        expected = yaml.load(doc, Loader=yaml.CSafeLoader)  # noqa: S506
    except yaml.YAMLError:
        with pytest.raises(YamlLoadError):
            load_yaml_bytes(doc, "d.yaml")
        return
    assert load_yaml_bytes(doc, "d.yaml") == expected


def test_aliases_stay_shared_objects() -> None:
    value = load_yaml_bytes(b"l: &l [1]\nm: [*l, *l]\n", "d.yaml")
    assert value["m"][0] is value["m"][1] is value["l"]


def test_deep_nesting_is_a_named_error() -> None:
    with pytest.raises(YamlLoadError, match="d.yaml"):
        load_yaml_bytes(b"[" * 5000 + b"]" * 5000, "d.yaml")


# Plain scalars the implicit resolvers read as numbers or booleans, and near misses: signs,
# underscores, leading zeros (octal), bases, sexagesimal, exponents, 64-bit edges, .inf/.nan
_numberish = st.one_of(
    st.from_regex(
        r"\A[-+]?(0[box]?)?[0-9_]{0,21}(\.[0-9_]{0,4})?([eE][-+]?[0-9]{1,3})?(:[0-5]?[0-9]){0,2}\Z"
    ),
    st.text(alphabet="0123456789+-._:eExbo", max_size=12),
    st.sampled_from(
        [".inf", "-.Inf", ".NaN", "1e400", "-1e400", "00", "-0", "-0.0", "0.0", "9223372036854775807",
         "9223372036854775808", "-9223372036854775808", "999999999999999999",
         "1000000000000000000", "yes", "Off", "~", "null", "2026-12-04"]
    ),  # fmt: skip
)


@settings(max_examples=400, deadline=None)
@given(
    _numberish, st.sampled_from(["", "!!int ", "!!float ", "!!bool ", "!!str "]), st.booleans(),
    st.booleans(),
)  # fmt: skip
def test_scalars_are_pyyamls_values_with_their_types(
    text: str, tag: str, anchored: bool, events: bool
) -> None:
    """Each scalar reads as PyYAML's safe loader reads it, type included (1 is not 1.0 nor
    True, -0.0 keeps its sign), or is refused: a number JSON or 64 bits cannot carry by
    name, anything PyYAML cannot construct as an error — in a document with anchors
    (aliases possible) and without, built from nodes or from events."""
    patch = _events_first() if events else pytest.MonkeyPatch()
    try:
        _check_scalar(text, tag, anchored)
    finally:
        patch.undo()


def _check_scalar(text: str, tag: str, anchored: bool) -> None:
    doc = f"{'a: &x [1]' if anchored else 'a: [1]'}\nv: {tag}{text}\n".encode()
    try:
        want = yaml.load(doc, Loader=yaml.CSafeLoader)["v"]  # noqa: S506
    except Exception:  # noqa: BLE001 - whatever PyYAML cannot construct, we do not either
        with pytest.raises(Exception):  # noqa: B017, PT011
            load_yaml_bytes(doc, "d.yaml")
        return
    if isinstance(want, float) and not math.isfinite(want) or (
        type(want) is int and not -(2**63) <= want < 2**63
    ):
        with pytest.raises(YamlLoadError, match="d.yaml"):
            load_yaml_bytes(doc, "d.yaml")
        return
    if isinstance(want, datetime.date):
        want = text  # timestamps stay text (test_timestamps_stay_text)
    got = load_yaml_bytes(doc, "d.yaml")["v"]
    assert type(got) is type(want) and repr(got) == repr(want)


# Pieces of YAML that reach every branch of the event builder and of its hand-over to the
# node path: anchors on scalars and collections, aliases before, inside and after their
# node, keys written twice, merge keys, tags, numbers out of range, a second document.
_TOKENS = ["1", "0x1F", "1e999", "-.inf", "yes", "~", "''", "'q'", "2001-12-14", "<<",
           "9223372036854775808", "!!str 5", "!!int '7'", "!foo x", "!!binary aGk=", "a", "b"]  # fmt: skip
_ANCHOR = st.sampled_from(["", "&a ", "&b ", "&a "])


@st.composite
def _yaml_doc(draw: st.DrawFn, depth: int = 0) -> str:
    kind = draw(st.sampled_from(["scalar", "alias", "seq", "map"] if depth < 3 else ["scalar"]))
    if kind == "alias":
        return draw(st.sampled_from(["*a", "*b"]))
    anchor = draw(_ANCHOR)
    if kind == "scalar":
        return anchor + draw(st.sampled_from(_TOKENS))
    items = draw(st.lists(_yaml_doc(depth + 1), max_size=3))
    if kind == "seq":
        return anchor + "[" + ", ".join(items) + "]"
    keys = draw(st.lists(st.sampled_from(["a", "b", "1", "<<", "*a", "[k]", "1.0", "true"]),
                         min_size=len(items), max_size=len(items)))  # fmt: skip
    return anchor + "{" + ", ".join(f"{k}: {v}" for k, v in zip(keys, items, strict=True)) + "}"


def _outcome(doc: bytes) -> object:
    try:
        return ("value", load_yaml_bytes(doc, "d.yaml"))
    except YamlLoadError as exc:
        return ("error", type(exc).__name__, str(exc))


def _node_path_only() -> pytest.MonkeyPatch:
    """A patch under which every document takes the node path."""
    import ledger.sources.yaml_safe as yaml_safe

    def fall_back(*_: object) -> object:
        raise yaml_safe._Fallback

    patch = pytest.MonkeyPatch()
    patch.setattr(yaml_safe, "_from_events", fall_back)
    return patch


def _events_first() -> pytest.MonkeyPatch:
    """A patch under which every document, however small, is built from events first."""
    import ledger.sources.yaml_safe as yaml_safe

    patch = pytest.MonkeyPatch()
    patch.setattr(yaml_safe, "EVENTS_FROM", 0)
    return patch


@settings(max_examples=400, deadline=None)
@given(doc=_yaml_doc(), second=st.sampled_from(["", "\n--- 2\n", "\n"]))
def test_the_event_builder_gives_the_node_paths_value_or_error(doc: str, second: str) -> None:
    """Building from parser events (no node graph) is an optimisation only: for any
    document the value, or the error and its message, is the node path's."""
    data = (doc + second).encode()
    patch = _events_first()
    try:
        fast = _outcome(data)
    finally:
        patch.undo()
    patch = _node_path_only()
    try:
        assert _outcome(data) == fast
    finally:
        patch.undo()


def _peak(data: bytes) -> int:
    import tracemalloc

    tracemalloc.start()
    try:
        load_yaml_bytes(data, "corpus.yaml")
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_event_builder_keeps_no_node_graph() -> None:
    """A long corpus.yaml-like list is built from events: its peak memory, value
    included, is under half the node path's (whose nodes and marks hold ≈400 bytes a
    scalar until the parse ends)."""
    rows = "".join(f"- directory: b{i}\n  task_id: t{i % 7}\n  met: true\n" for i in range(20000))
    data = f"criterion: c\nbundles:\n{rows}".encode()
    events = _peak(data)
    patch = _node_path_only()
    try:
        nodes = _peak(data)
    finally:
        patch.undo()
    assert events < nodes / 2, (events, nodes)
