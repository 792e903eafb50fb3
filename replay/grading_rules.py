"""The pre-run gate's rules over a grading document (GRADING.md § What shape a grading key
must be, § What is validated before a run, § Score Combination): what the closed models
cannot see alone — empty sections, blocks declaring nothing, the hash flag/source rules,
the ``expected_state_hash`` migration, component ↔ weight mutual naming, regex compilation.

Each function returns one sentence per finding, addressed by ``file``; the loader
(``replay.grading_load``) raises them on an authored read and keeps them as advisories on a
recorded one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from replay.patterns import compile_rule_regex
from schemas.grading import (
    COMPONENT_SECTIONS,
    GRADING_KEYS,
    JSONPATH_OPERATORS,
    StateChecksConfig,
    TranscriptRulesConfig,
)


def shape_of(value: Any) -> str:
    if isinstance(value, list):
        return f"a list ({len(value)} item{'s' if len(value) != 1 else ''})"
    if isinstance(value, str):
        return f"a string ({value!r})"
    if isinstance(value, bool):
        return f"a boolean ({value})"
    if isinstance(value, int | float):
        return f"a number ({value})"
    return f"a {type(value).__name__}"


def shape_problems(file: str, data: Mapping[str, Any]) -> list[str]:
    """Every grading key a mapping or absent — all offenders in one list."""
    problems = []
    for key in GRADING_KEYS:
        value = data.get(key)
        if value is None or isinstance(value, Mapping):
            continue
        problems.append(
            f"{file}: grading key {key} must be a mapping or absent, but it holds "
            f"{shape_of(value)}; indent the block's own keys one level under {key}: "
            "rather than writing its contents beside it"
        )
    return problems


def _compile_problems(file: str, rules: TranscriptRulesConfig) -> list[str]:
    out = []
    for i, pattern in enumerate(rules.disallow_regex):
        try:
            compile_rule_regex(pattern, rules.regex_engine)
        except Exception as exc:  # re2.error / re.error: an authoring error, named
            out.append(
                f"{file}: transcript_rules.disallow_regex[{i}] {pattern!r} does not compile "
                f"under the {rules.regex_engine} engine ({exc}); fix the pattern"
            )
    return out


def gate_problems(file: str, data: Mapping[str, Any], cfg: dict[str, Any]) -> list[str]:
    """The authoring gate's rules that read the block rather than the task."""
    problems: list[str] = []
    for key in ("state_checks", "transcript_rules", "custom_checks"):
        if isinstance(data.get(key), Mapping) and not data[key]:
            problems.append(
                f"{file}: {key} is an empty mapping, which asserts nothing and scores "
                f"nothing; declare what the block checks, or drop {key}"
            )
    raw_custom = data.get("custom_checks")
    if isinstance(raw_custom, Mapping) and raw_custom and "enabled" not in raw_custom:
        problems.append(
            f"{file}: custom_checks declares no enabled key, so the suite never runs; "
            "write enabled: true, or enabled: false to opt out explicitly"
        )
    raw_state = data.get("state_checks")
    if isinstance(raw_state, Mapping):
        raw_hash = raw_state.get("hash")
        if isinstance(raw_hash, Mapping) and "expected_state_hash" in raw_hash:
            problems.append(
                f"{file}: state_checks.hash.expected_state_hash is retired: a stored digest "
                "is written in one substrate's hash algebra and cannot be compared by the "
                "other; name a state instead — golden_actions for a task that changes "
                "state, or expect_initial_state: true for a refusal task"
            )
    state: StateChecksConfig | None = cfg.get("state_checks")
    if state is not None and raw_state:
        problems += _state_gate(file, state)
    rules: TranscriptRulesConfig | None = cfg.get("transcript_rules")
    if rules is not None and data.get("transcript_rules"):
        if not rules.declares_a_rule():
            problems.append(
                f"{file}: transcript_rules declares no rule (every list empty, both turn "
                "bounds absent, tool_expectations expecting neither tool), so the "
                "component averages over no sub-check; declare a rule, or drop transcript_rules"
            )
        problems += _compile_problems(file, rules)
    return problems


def _state_gate(file: str, state: StateChecksConfig) -> list[str]:
    problems: list[str] = []
    h = state.hash
    if h is not None and not h.enabled:
        for source in ("golden_actions", "expect_initial_state"):
            if getattr(h, source):
                problems.append(
                    f"{file}: state_checks.hash.{source} is declared under a hash.enabled a "
                    "run reads as off, so the comparison never runs; write enabled: true, "
                    f"or drop {source}"
                )
                break
    if h is not None and h.enabled and h.source is None:
        problems.append(
            f"{file}: state_checks.hash.enabled is on with no source to compare against; "
            "declare golden_actions, or expect_initial_state: true for a refusal task, "
            "or turn the hash off"
        )
    if h is not None and h.enabled and h.golden_actions and not isinstance(h.golden_actions, list):
        problems.append(
            f"{file}: state_checks.hash.golden_actions holds {shape_of(h.golden_actions)}, "
            "which no substrate can replay; write a list of actions (- name: <tool>)"
        )
    hash_names_something = h is not None and (h.enabled or h.source is not None)
    if not state.jsonpaths and not state.db_probes and not hash_names_something:
        problems.append(
            f"{file}: state_checks declares no source (no non-empty jsonpaths, no "
            "db_probes, and a hash block naming neither its flag nor a source); declare "
            "one, or drop state_checks"
        )
    for i, assertion in enumerate(state.jsonpaths):
        path = assertion.get("path")
        if "path_glob" in assertion:
            ops = [op for op in JSONPATH_OPERATORS if assertion.get(op) is not None]
            if ops != ["contains_ci"]:
                problems.append(
                    f"{file}: state_checks.jsonpaths[{i}] pairs path_glob with "
                    f"{', '.join(ops) or 'no operator'}; a file is asserted with "
                    "path_glob + contains_ci, the pairing both substrates read"
                )
        elif isinstance(path, str) and re.match(r"^\$\.?\[?['\"]?filesystem", path):
            problems.append(
                f"{file}: state_checks.jsonpaths[{i}].path {path!r} is rooted at filesystem, "
                "which the runner's JSONPath state does not carry; address a file with "
                "path_glob + contains_ci"
            )
    return problems


def weight_problems(
    file: str, configured: tuple[str, ...], weights: Mapping[str, float]
) -> list[str]:
    problems = []
    for name in configured:
        if name not in weights:
            problems.append(
                f"{file}: {name} is configured but the effective combine.weights declares no "
                f"weight for it; declare combine.weights.{name}, or drop the {name} section"
            )
    for key in weights:
        if key not in COMPONENT_SECTIONS:
            problems.append(
                f"{file}: combine.weights.{key} names no grading component (components: "
                f"{', '.join(COMPONENT_SECTIONS)}); drop the weight"
            )
        elif key not in configured:
            problems.append(
                f"{file}: combine.weights.{key} weights a component the pack does not "
                f"configure; configure the {key} section, or drop the weight"
            )
    return problems
