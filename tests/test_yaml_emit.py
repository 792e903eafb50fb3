"""``emit_yaml``: every JSON-shaped document reads back equal through PyYAML's safe reader
(what Tolokaforge reads bundles with) and through ``yaml_safe`` (what ingest reads with)."""

from __future__ import annotations

import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from ledger.sources.yaml_emit import emit_yaml
from ledger.sources.yaml_safe import load_yaml_bytes
from tests.curate_support import NOTES

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)  # the readers refuse beyond int64
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(exclude_categories=["Cs"]))
    | st.sampled_from(["null", "No", "on", "~", "y", "1e-05", "2026-08-03T06:30:19Z", "1:20",
                       "- x", "a: b", "#c", "'q'", "\u2028", "\x85", "\ufeff", "\x7f", "", " "])
)  # fmt: skip
_docs = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)


def _back(data: bytes) -> tuple[object, object]:
    return yaml.safe_load(data.decode("utf-8")), load_yaml_bytes(data, "t.yaml")


@given(_docs)
@example({"a": [[], {}, [1, [2]], {"b": [{"c": None}]}], "": "x" * 1200})
@example([{"k": [1, 2], "j": {"x": []}}, [[{"z": 1}]]])
@example({"x" * 1100: 1})  # too long for an implicit key: PyYAML's own dumper writes it
def test_every_json_shaped_document_reads_back_equal(doc: object) -> None:
    assert _back(emit_yaml(doc)) == (doc, doc)


def test_the_shipped_bundle_documents_read_back_equal() -> None:
    for path in sorted(NOTES.rglob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        assert yaml.safe_load(emit_yaml(doc).decode("utf-8")) == doc, path
