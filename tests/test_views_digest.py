"""Documents holding sequence views (``schemas.views``) hash and list as the documents they
stand for: the canonical digest is taken a piece at a time, never over the whole encoding."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.canonical import canonical_json, canonical_pieces, digest
from schemas.views import Mapped, Skeleton, has_view, listed
from tests.views_strategy import with_views

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(doc=_JSON, data=st.data())
def test_a_document_with_views_hashes_as_its_listed_document(doc: Any, data: st.DataObject) -> None:
    viewed = with_views(doc, data)
    assert listed(viewed) == doc
    assert b"".join(canonical_pieces(viewed)) == canonical_json(doc)
    assert digest(viewed) == digest(doc)


def test_a_view_is_encoded_an_item_at_a_time() -> None:
    """The pieces of a view's encoding are its items' (the view is never listed whole)."""
    seen: list[int] = []

    def item(n: int) -> dict[str, int]:
        seen.append(n)
        return {"n": n}

    pieces = canonical_pieces({"rows": Mapped(range(3), item), "z": 1})
    assert next(pieces) == b'{"rows":'
    assert next(pieces) == b"[" and next(pieces) == b'{"n":0}' and seen == [0]
    assert b"".join(pieces) == b',{"n":1},{"n":2}],"z":1}'


def test_a_value_no_view_explains_is_still_refused() -> None:
    with pytest.raises(orjson.JSONEncodeError):
        digest({"rows": Mapped([1], lambda x: x), "bad": {1, 2}})


def test_a_string_spelling_a_placeholder_is_not_taken_for_one() -> None:
    """Each skeleton's placeholders carry a fresh random token; a value written like one is
    data (here, the very token of another skeleton)."""
    other = Skeleton({"a": Mapped([1], lambda x: x)}).value["a"]
    doc = {"a": other, "b": [1, 2]}
    assert digest({"a": other, "b": Mapped([1, 2], lambda x: x)}) == digest(doc)
    assert has_view({"x": [{"y": Mapped([], lambda x: x)}]})
    assert not has_view({"x": [{"y": (1, 2)}]})


@pytest.fixture(scope="module")
def notes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, list[Any]]:
    """A dry run over the shipped notes corpus: its document and its rows' pairs."""
    from ledger.app.reconcile import reconcile
    from tests.test_reconcile_catchup import workspace

    base = workspace(tmp_path_factory.mktemp("notes"))
    got = reconcile(packs=[base / "corpora" / "packs"], base=base, dry_run=True)
    pairs = [p for r in got.reports for e in r.entries for p in e.counterfactual.rows.items]
    return got.document, pairs


def test_a_reconcile_documents_digest_is_its_listed_documents(notes: tuple[Any, list[Any]]) -> None:
    doc, pairs = notes
    assert pairs and digest(doc) == digest(listed(doc))
    assert b"".join(canonical_pieces(doc)) == canonical_json(listed(doc))


@settings(max_examples=100, deadline=None)
@given(names=st.lists(st.text(max_size=12), min_size=1, max_size=6))
def test_counterfactual_rows_encode_as_the_rows_they_stand_for(
    notes: tuple[Any, list[Any]], names: list[str]
) -> None:
    """The counterfactual rows' view encodes each row from its trial's name and the values
    it shares (reconcile.report._rows_view): rows renamed to anything (quotes, control
    characters) hash as the rows listed."""
    from reconcile.counterfactual import _as_row
    from reconcile.report import _rows_view

    pairs = notes[1]
    renamed = [(name, pairs[i % len(pairs)][1]) for i, name in enumerate(names)]
    view = _rows_view(Mapped(renamed, _as_row))
    assert digest({"trials": view}) == digest({"trials": listed(view)})
