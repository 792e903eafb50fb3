"""Every author-facing grading key, its kind, and the evaluator that consumes it.

GRADING.md § Substrate Parity, "The runtime ledger": a key that silently scores nothing is
the failure to prevent. ``replay/grading/accounting.py`` accounts each populated scored key per
grade; ``tests/test_key_manifest.py`` derives the key set from the models, so a new field
without an entry here fails. Trace-check kinds and constraint fields are one entry each
(the kinds are independently implementable); a kind written only inside an alternatives
path is accounted under ``trace_checks.alternatives`` (#772).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from schemas.trace_checks import KIND_NAMES


class KeyKind(StrEnum):
    SCORED_CHECK = "scored_check"  # produces a component score
    CONFIG_INPUT = "config_input"  # shapes another check; no score of its own
    AGGREGATION = "aggregation"  # folds component scores into the final score


@dataclass(frozen=True, slots=True)
class GradingKey:
    key: str
    kind: KeyKind
    evaluator: str  # the function that reads it (module.function)


_S, _C, _A = KeyKind.SCORED_CHECK, KeyKind.CONFIG_INPUT, KeyKind.AGGREGATION

_COMBINE = "replay.grading.components.combine.combine_components"
_STATE = "replay.grading.components.state_checks.evaluate_state_checks"
_HASH = "replay.grading.components.state_checks.hash_verdict"
_JSONPATHS = "replay.grading.components.state_checks.jsonpath_score"
_TRANSCRIPT = "replay.grading.components.transcript_rules.evaluate_transcript_rules"
_TRACE = "replay.trace_checks.evaluate.evaluate_trace_checks"
_JUDGE = "replay.grading.components.judge.evaluate_judge"
_CUSTOM = "replay.grading.components.custom_checks.evaluate_custom_checks"

CONSTRAINT_FIELDS: tuple[str, ...] = (
    "id",
    "description",
    "weight",
    "severity",
    "on_missing",
    "within",
    "bind",
)

MANIFEST: tuple[GradingKey, ...] = (
    GradingKey("combine.method", _A, _COMBINE),
    GradingKey("combine.weights", _A, _COMBINE),
    GradingKey("combine.pass_threshold", _A, _COMBINE),
    # state_checks: two scored sources of the hash, the assertions, the probes
    GradingKey("state_checks.hash.enabled", _C, _HASH),
    GradingKey("state_checks.hash.expect_initial_state", _S, _HASH),
    GradingKey("state_checks.hash.golden_actions", _S, _HASH),
    GradingKey("state_checks.hash.weight", _C, _STATE),
    GradingKey("state_checks.hash.description", _C, _STATE),
    GradingKey("state_checks.jsonpaths", _S, _JSONPATHS),
    GradingKey("state_checks.db_probes", _S, _STATE),
    GradingKey("state_checks.numeric_string_fields", _C, _HASH),
    GradingKey("state_checks.id_fields", _C, _HASH),
    GradingKey("state_checks.relaxed_validation", _C, _STATE),
    GradingKey("state_checks.comparison_view", _C, _HASH),
    GradingKey("state_checks.compare_columns", _C, _HASH),
    GradingKey("state_checks.auto_mask_clock_columns", _C, _HASH),
    GradingKey("state_checks.auto_normalize_nullables", _C, _HASH),
    # transcript_rules: every rule is a sub-check of the one component
    GradingKey("transcript_rules.must_contain", _S, _TRANSCRIPT),
    GradingKey("transcript_rules.disallow_regex", _S, _TRANSCRIPT),
    GradingKey("transcript_rules.max_turns", _S, _TRANSCRIPT),
    GradingKey("transcript_rules.min_assistant_turns", _S, _TRANSCRIPT),
    GradingKey("transcript_rules.required_actions", _S, _TRANSCRIPT),
    GradingKey("transcript_rules.communicate_info", _S, _TRANSCRIPT),
    GradingKey("transcript_rules.tool_expectations.required_tools", _S, _TRANSCRIPT),
    GradingKey("transcript_rules.tool_expectations.disallowed_tools", _S, _TRANSCRIPT),
    GradingKey("transcript_rules.regex_engine", _C, _TRANSCRIPT),
    # trace_checks, at leaf granularity
    *(GradingKey(f"trace_checks.constraints.{k}", _S, _TRACE) for k in KIND_NAMES),
    *(GradingKey(f"trace_checks.constraints.{f}", _C, _TRACE) for f in CONSTRAINT_FIELDS),
    GradingKey("trace_checks.alternatives", _S, _TRACE),
    GradingKey("trace_checks.regex_engine", _C, _TRACE),
    # llm_judge: the rubric scores (re-aggregated from recorded verdicts)
    GradingKey("llm_judge.rubric", _S, _JUDGE),
    GradingKey("llm_judge.model_ref", _C, _JUDGE),
    GradingKey("llm_judge.customization", _C, _JUDGE),
    GradingKey("llm_judge.judge_kind", _C, _JUDGE),
    GradingKey("llm_judge.kind_config", _C, _JUDGE),
    # custom_checks: the suite is the scored check; enabled decides whether it runs
    GradingKey("custom_checks.enabled", _S, _CUSTOM),
    GradingKey("custom_checks.file", _C, _CUSTOM),
    GradingKey("custom_checks.interface_version", _C, _CUSTOM),
    GradingKey("custom_checks.timeout_seconds", _C, _CUSTOM),
    GradingKey("custom_checks.weight", _C, _CUSTOM),
    GradingKey("custom_checks.fail_on_error", _C, _CUSTOM),
    GradingKey("custom_checks.relative_imports", _C, _CUSTOM),
)

BY_KEY: dict[str, GradingKey] = {k.key: k for k in MANIFEST}
SCORED_KEYS: tuple[str, ...] = tuple(k.key for k in MANIFEST if k.kind is KeyKind.SCORED_CHECK)


def component_of(key: str) -> str:
    return key.split(".", 1)[0]
