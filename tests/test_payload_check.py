"""The fast payload checks give every built-in type's model verdict (``schemas.payload_check``).

Payloads: every event the demo ledger records (17 of the 19 built-in types), payloads
hypothesis builds from each model, and mutations of both (a key dropped, an unknown key
added, a value replaced by each JSON kind, one level down too). Model and check must accept
and refuse exactly the same ones.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from ledger.cli import main
from ledger.log.store import open_ledger
from schemas.events import PAYLOAD_MODELS
from schemas.payload_check import payload_checker, plain_schema

KINDS: list[Any] = [None, 0, -3, 1.5, "s", "", True, [], [1, "a"], {}, {"a": 1}]


def verdict(check, payload: Any) -> bool:
    try:
        check(payload)
    except ValidationError:
        return False
    return True


def same_verdict(model: type[BaseModel], payload: Any) -> None:
    want = verdict(model.model_validate, payload)
    assert verdict(payload_checker(model), payload) == want, (model.__name__, payload)


def mutations(payload: dict[str, Any]) -> Iterator[Any]:
    yield {**payload, "zz_unknown": 1}
    for key, value in payload.items():
        yield {k: v for k, v in payload.items() if k != key}
        for kind in KINDS:
            yield {**payload, key: kind}
        if isinstance(value, dict) and value:
            inner = next(iter(value))
            for kind in (*KINDS, "drop"):
                changed = copy.deepcopy(payload)
                if kind == "drop":
                    del changed[key][inner]
                else:
                    changed[key][inner] = kind
                yield changed
            yield {**payload, key: {**value, "zz_unknown": 1}}
        if isinstance(value, list) and value:
            for kind in KINDS:
                yield {**payload, key: [kind, *value[1:]]}
            if isinstance(value[0], dict):
                yield {**payload, key: [{**value[0], "zz_unknown": 1}, *value[1:]]}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    """Every payload of the demo ledger, by type."""
    folder = tmp_path_factory.mktemp("demo")
    result = CliRunner().invoke(
        main, ["demo", "--ledger", str(folder / "l"), "--report", str(folder / "r.html")]
    )
    assert result.exit_code == 0, result.output
    out: dict[str, list[dict[str, Any]]] = {}
    with open_ledger(folder / "l") as lg:
        for e in lg.read():
            out.setdefault(e.type, []).append(e.data())
    return out


def test_every_built_in_model_compiles_to_plain_data() -> None:
    """None of today's models needs the fallback; a new model that does is still correct,
    only slower (and this test says which)."""
    assert [t for t, m in PAYLOAD_MODELS.items() if plain_schema(m) is None] == []


def test_recorded_payloads_and_their_mutations(recorded) -> None:
    assert len(recorded) >= 17
    checked = 0
    for type_, payloads in recorded.items():
        model = PAYLOAD_MODELS[type_]
        for payload in payloads[:40]:
            assert verdict(payload_checker(model), payload), (type_, payload)
            for changed in mutations(payload):
                same_verdict(model, changed)
                checked += 1
    assert checked > 5_000


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)


def paths(value: Any, prefix: tuple = ()) -> Iterator[tuple]:
    """Every (nested) key or index path inside a JSON value."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield (*prefix, k)
            yield from paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield (*prefix, i)
            yield from paths(v, (*prefix, i))


@settings(max_examples=400, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_random_deep_mutations_of_recorded_payloads(recorded, data) -> None:
    """Replace, drop or add at any depth, a few times over, with any JSON value."""
    type_ = data.draw(st.sampled_from(sorted(recorded)))
    payload = copy.deepcopy(data.draw(st.sampled_from(recorded[type_])))
    for _ in range(data.draw(st.integers(1, 3))):
        where = list(paths(payload))
        if not where:
            break
        path = data.draw(st.sampled_from(where))
        parent = payload
        for step in path[:-1]:
            parent = parent[step]
        action = data.draw(st.sampled_from(["replace", "drop", "add"]))
        if action == "replace":
            parent[path[-1]] = data.draw(json_values)
        elif action == "drop":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[data.draw(st.text(max_size=6))] = data.draw(json_values)
        else:
            parent.append(data.draw(json_values))
    same_verdict(PAYLOAD_MODELS[type_], payload)


def test_not_a_dict_is_refused_by_both() -> None:
    for model in PAYLOAD_MODELS.values():
        for value in ([], "x", 1, None):
            same_verdict(model, value)


def test_an_unsafe_schema_keeps_the_model_validator() -> None:
    """A model validator may need the instance: such a model is not compiled to plain data."""
    from pydantic import model_validator

    class Checked(BaseModel):
        a: int

        @model_validator(mode="after")
        def positive(self) -> Checked:
            if self.a < 0:
                raise ValueError("negative")
            return self

    assert plain_schema(Checked) is None
    assert not verdict(payload_checker(Checked), {"a": -1})
    assert verdict(payload_checker(Checked), {"a": 1})
