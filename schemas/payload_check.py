"""Accept-or-refuse checks for built-in payloads, as strict as their models and cheaper.

Building frozen model instances is a good part of append's validation (a ``trial.message``:
1.4 µs through its model, 0.8 µs as plain data). :func:`payload_checker` compiles the
model's own core schema with every ``model`` node replaced by a typed dict of its fields;
a schema that could behave differently without its class keeps the model's validator.
Only the verdict is used (``prepare_event`` re-validates with the model to word an error);
``tests/test_payload_check.py`` holds the verdicts equal.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel
from pydantic_core import SchemaValidator

# model config keys with no effect on what the fields accept, once extra is carried over
_SAFE_CONFIG = frozenset({"title", "extra_fields_behavior"})


class _Unsafe(Exception):
    """The schema has a node whose behaviour may depend on the model class."""


def _plain(node: Any) -> Any:
    """A copy of a core schema (sub)tree with model nodes replaced by their fields."""
    if isinstance(node, list):
        return [_plain(x) for x in node]
    if not isinstance(node, dict):
        return node
    kind = node.get("type")
    if isinstance(kind, str) and kind.startswith("function-"):
        raise _Unsafe(kind)
    if kind == "model":
        config = node.get("config") or {}
        if node.get("custom_init") or node.get("root_model") or node.get("post_init"):
            raise _Unsafe("model with its own init")
        if set(config) - _SAFE_CONFIG:
            raise _Unsafe(f"model config {sorted(set(config) - _SAFE_CONFIG)}")
        fields = dict(node["schema"])
        if fields.get("type") != "model-fields":
            raise _Unsafe(f"model over {fields.get('type')!r}")
        if "extra_fields_behavior" in config:
            fields.setdefault("extra_behavior", config["extra_fields_behavior"])
        if "ref" in node:  # definition-refs point here
            fields["ref"] = node["ref"]
        return _plain(fields)
    if kind == "model-fields":
        return _typed_dict(node)
    return {k: _plain(v) for k, v in node.items() if k != "metadata"}


# model-fields keys a typed-dict schema carries the same way, and those it can drop
_CARRIED = frozenset({"extra_behavior", "extras_schema", "ref", "strict"})
_DROPPED = frozenset({"type", "fields", "model_name", "computed_fields", "metadata"})


def _typed_dict(node: dict[str, Any]) -> dict[str, Any]:
    """A model's fields as a typed-dict schema: the same field schemas, required exactly
    when the field has no default; its output is a plain dict (model-fields also builds
    the set of fields given, which is a good part of the cost)."""
    if set(node) - _CARRIED - _DROPPED:
        raise _Unsafe(f"model-fields {sorted(set(node) - _CARRIED - _DROPPED)}")
    fields = {}
    for name, field in node["fields"].items():
        typed = {k: _plain(v) for k, v in field.items() if k not in ("type", "frozen", "metadata")}
        typed["type"] = "typed-dict-field"
        typed["required"] = field["schema"].get("type") != "default"
        fields[name] = typed
    out: dict[str, Any] = {"type": "typed-dict", "fields": fields}
    out.update({k: _plain(node[k]) for k in _CARRIED if k in node})
    return out


def plain_schema(model: type[BaseModel]) -> dict[str, Any] | None:
    """The model's core schema as plain data, or None when that could change a verdict."""
    model.model_rebuild()  # a deferred model (defer_build) gets its schema built here
    try:
        return _plain(model.__pydantic_core_schema__)
    except _Unsafe:
        return None


@functools.cache
def payload_checker(model: type[BaseModel]) -> Callable[[Any], Any]:
    """``check(payload)`` raising ``pydantic.ValidationError`` exactly when the model would."""
    schema = plain_schema(model)
    if schema is None:
        return model.__pydantic_validator__.validate_python
    return SchemaValidator(schema).validate_python  # type: ignore[arg-type]
