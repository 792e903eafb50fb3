"""The key manifest is the models' key set, and every entry names a real evaluator.

The key set is derived from the grading models themselves, so a field added to a model
without a manifest entry — or an entry naming a field the models lack — fails here.
"""

from __future__ import annotations

import importlib

from pydantic import BaseModel

from schemas.grading import (
    CombineConfig,
    CustomChecksConfig,
    LlmJudgeConfig,
    StateChecksConfig,
    StateHashConfig,
    ToolExpectations,
    TranscriptRulesConfig,
)
from schemas.key_manifest import BY_KEY, MANIFEST, SCORED_KEYS, KeyKind
from schemas.trace_checks import Constraint, Require, TraceChecksConfig

# fields holding a nested model whose own fields are the author's keys
DESCEND: dict[tuple[type[BaseModel], str], type[BaseModel]] = {
    (StateChecksConfig, "hash"): StateHashConfig,
    (TranscriptRulesConfig, "tool_expectations"): ToolExpectations,
}


def _fields(model: type[BaseModel], prefix: str) -> set[str]:
    out = set()
    for name in model.model_fields:
        inner = DESCEND.get((model, name))
        out |= _fields(inner, f"{prefix}.{name}") if inner else {f"{prefix}.{name}"}
    return out


def model_keys() -> set[str]:
    keys = (
        _fields(CombineConfig, "combine")
        | _fields(StateChecksConfig, "state_checks")
        | _fields(TranscriptRulesConfig, "transcript_rules")
        | _fields(LlmJudgeConfig, "llm_judge")
        | _fields(CustomChecksConfig, "custom_checks")
    )
    for name in TraceChecksConfig.model_fields:
        if name != "constraints":
            keys.add(f"trace_checks.{name}")
    # a constraint: each kind of its require tree, and each per-constraint field
    keys |= {f"trace_checks.constraints.{k}" for k in Require.model_fields}
    keys |= {f"trace_checks.constraints.{f}" for f in Constraint.model_fields if f != "require"}
    return keys


def test_the_manifest_is_exactly_the_models_key_set() -> None:
    derived, manifest = model_keys(), set(BY_KEY)
    assert not derived - manifest, f"keys the manifest lacks: {sorted(derived - manifest)}"
    assert not manifest - derived, f"keys the models lack: {sorted(manifest - derived)}"
    assert len(MANIFEST) == len(BY_KEY)  # no key listed twice


def test_every_entry_names_an_evaluator_that_exists() -> None:
    for entry in MANIFEST:
        module, _, function = entry.evaluator.rpartition(".")
        assert callable(getattr(importlib.import_module(module), function)), entry


def test_every_kind_and_component_has_its_scored_keys() -> None:
    assert {k.kind for k in MANIFEST} == set(KeyKind)
    components = {k.split(".")[0] for k in SCORED_KEYS}
    assert components == {
        "state_checks",
        "transcript_rules",
        "trace_checks",
        "llm_judge",
        "custom_checks",
    }
    assert all(BY_KEY[k].kind is KeyKind.AGGREGATION for k in BY_KEY if k.startswith("combine."))
