"""A JSON value with some of its lists, at any depth, turned into sequence views
(``schemas.views.Mapped``), each drawn from a hypothesis ``data`` object."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from schemas.views import Mapped


def with_views(value: Any, data: st.DataObject) -> Any:
    if isinstance(value, dict):
        return {k: with_views(v, data) for k, v in value.items()}
    if isinstance(value, list):
        items = [with_views(v, data) for v in value]
        return Mapped(items, lambda x: x) if data.draw(st.booleans()) else items
    return value
