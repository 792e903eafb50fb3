"""The grading.yaml load-time rules and the read that applies them (GRADING.md § Which keys a
grading block refuses, § What shape a grading key must be, § What is validated before a run,
§ Score Combination); every problem found in one read is reported in one raise.

An authored read raises the pre-run gate's findings; a recorded one (task.yaml
``grading_config``) keeps them as advisories, so a bundle written before a rule still loads.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from replay.grading.patterns import compile_regex
from replay.trace_checks.rules import TraceChecksConfigError, load_trace_checks
from schemas.errors import LedgerError
from schemas.grading import (
    COMPONENT_SECTIONS,
    GRADING_KEYS,
    JSONPATH_OPERATORS,
    CombineConfig,
    CommunicateInfo,
    GradingConfig,
    LlmJudgeConfig,
    RequiredAction,
    StateChecksConfig,
    StateHashConfig,
    ToolExpectations,
    TranscriptRulesConfig,
)
from schemas.reading import ReadNotes, dotted, read_model


class GradingConfigError(LedgerError, ValueError):
    """A grading config the loader refuses; ``problems`` holds one sentence per finding."""

    def __init__(self, file: str, problems: list[str]) -> None:
        self.file = file
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


_BLOCK_MODELS: dict[str, type[BaseModel]] = {
    "combine": CombineConfig,
    "state_checks": StateChecksConfig,
    "transcript_rules": TranscriptRulesConfig,
    "llm_judge": LlmJudgeConfig,
}

# positions whose refusal names the closest declared field and the accepted set
_DID_YOU_MEAN: dict[tuple[str, ...], type[BaseModel]] = {
    ("combine",): CombineConfig,
    ("state_checks",): StateChecksConfig,
    ("state_checks", "hash"): StateHashConfig,
    ("transcript_rules",): TranscriptRulesConfig,
    ("transcript_rules", "tool_expectations"): ToolExpectations,
    ("transcript_rules", "required_actions", "*"): RequiredAction,
    ("transcript_rules", "communicate_info", "*"): CommunicateInfo,
}


def _shape(value: Any) -> str:
    if isinstance(value, list):
        return f"a list ({len(value)} item{'s' if len(value) != 1 else ''})"
    if isinstance(value, str):
        return f"a string ({value!r})"
    if isinstance(value, bool):
        return f"a boolean ({value})"
    if isinstance(value, int | float):
        return f"a number ({value})"
    return f"a {type(value).__name__}"


def _describe_errors(file: str, block: str, exc: ValidationError) -> list[str]:
    problems = []
    for err in exc.errors():
        loc = (block, *err["loc"])
        where = dotted(loc)
        if err["type"] == "extra_forbidden":
            parent = tuple("*" if isinstance(p, int) else p for p in loc[:-1])
            model = _DID_YOU_MEAN.get(parent)
            if model is None:
                problems.append(f"{file}: {where} is not a key {dotted(loc[:-1])} declares")
                continue
            accepted = list(model.model_fields)
            close = difflib.get_close_matches(str(loc[-1]), accepted, n=1, cutoff=0.0)
            hint = f" (closest declared field: {close[0]})" if close else ""
            problems.append(
                f"{file}: {where} is not a key {dotted(loc[:-1])} declares{hint}; "
                f"{dotted(loc[:-1])} accepts: {', '.join(accepted)}"
            )
        elif err["type"] == "value_error":
            msg = str(err["msg"]).removeprefix("Value error, ")
            if msg.startswith("grading.yaml "):
                msg = file.rsplit("/", 1)[-1] + msg.removeprefix("grading.yaml")
                problems.append(msg)
            else:
                problems.append(f"{file}: {msg}")
        else:
            received = err.get("input")
            problems.append(f"{file}: {where}: {err['msg']} (received {_shape(received)})")
    return problems


def _shape_problems(file: str, data: Mapping[str, Any]) -> list[str]:
    """Every grading key a mapping or absent — all offenders in one list."""
    problems = []
    for key in GRADING_KEYS:
        value = data.get(key)
        if value is None or isinstance(value, Mapping):
            continue
        problems.append(
            f"{file}: grading key {key} must be a mapping or absent, but it holds "
            f"{_shape(value)}; indent the block's own keys one level under {key}: "
            "rather than writing its contents beside it"
        )
    return problems


def _compile_problems(file: str, rules: TranscriptRulesConfig) -> list[str]:
    out = []
    for i, pattern in enumerate(rules.disallow_regex):
        try:
            compile_regex(pattern, rules.regex_engine, ignore_case=True)
        except Exception as exc:  # re2.error / re.error: an authoring error, named
            out.append(
                f"{file}: transcript_rules.disallow_regex[{i}] {pattern!r} does not compile "
                f"under the {rules.regex_engine} engine ({exc}); fix the pattern"
            )
    return out


def _gate_problems(file: str, data: Mapping[str, Any], cfg: dict[str, Any]) -> list[str]:
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
            f"{file}: state_checks.hash.golden_actions holds {_shape(h.golden_actions)}, "
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


def _weight_problems(
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


def _combine_layer(
    raw: Any, where: str, file: str, notes: ReadNotes | None = None
) -> tuple[dict[str, Any], list[str]]:
    """Validate one combine layer; return the fields it sets, or the problems."""
    if raw is None:
        return {}, []
    try:
        model = read_model(CombineConfig, raw, notes or ReadNotes(), prefix=where)
    except ValidationError as exc:
        return {}, _describe_errors(file, where, exc)
    return {k: getattr(model, k) for k in model.model_fields_set}, []


def project_combine(project: Any) -> Any:
    """project.yaml's task_defaults.grading_defaults.combine, or None. The tiers above the
    combine block are lenient (GradingDefaults ignores keys it does not declare); the
    block itself is closed and validated by :func:`effective_combine`."""
    if not isinstance(project, Mapping):
        return None
    defaults = project.get("task_defaults")
    grading = defaults.get("grading_defaults") if isinstance(defaults, Mapping) else None
    return grading.get("combine") if isinstance(grading, Mapping) else None


def effective_combine(
    task_combine: Any,
    project_combine: Any = None,
    *,
    file: str = "grading.yaml",
    project_file: str = "project.yaml",
    notes: ReadNotes | None = None,
) -> CombineConfig:
    """The project's task_defaults.grading_defaults.combine with the task's block on top:
    task fields win, weights merge key by key, unset fields fall to the defaults."""
    project, p_problems = _combine_layer(
        project_combine, "task_defaults.grading_defaults.combine", project_file
    )
    if p_problems:
        raise GradingConfigError(project_file, p_problems)
    task, t_problems = _combine_layer(task_combine, "combine", file, notes)
    if t_problems:
        raise GradingConfigError(file, t_problems)
    merged: dict[str, Any] = {**project, **task}
    if "weights" in project or "weights" in task:
        merged["weights"] = {**project.get("weights", {}), **task.get("weights", {})}
    return CombineConfig.model_validate(merged)


def load_grading_config(
    data: Any,
    *,
    file: str = "grading.yaml",
    authored: bool = True,
    project_combine: Any = None,
) -> GradingConfig:
    """Build a :class:`GradingConfig` from parsed YAML, or raise every problem at once."""
    if data is None:
        data = {}  # an empty file reads as a config declaring nothing
    if not isinstance(data, Mapping):
        raise GradingConfigError(
            file,
            [
                f"{file}: a grading file must be a mapping of grading keys, but it holds "
                f"{_shape(data)}; write combine:, state_checks:, … at the top level"
            ],
        )
    problems = _shape_problems(file, data)
    if problems:
        raise GradingConfigError(file, problems)

    notes = ReadNotes(authored=authored)
    cfg: dict[str, Any] = {}
    for key, model in _BLOCK_MODELS.items():
        if key == "combine" or data.get(key) is None:
            continue
        try:
            cfg[key] = read_model(model, data[key], notes, prefix=key)
        except ValidationError as exc:
            problems += _describe_errors(file, key, exc)
    try:
        cfg["combine"] = effective_combine(
            data.get("combine"), project_combine, file=file, notes=notes
        )
    except GradingConfigError as exc:
        problems += exc.problems
    if data.get("trace_checks") is not None:
        try:
            cfg["trace_checks"] = load_trace_checks(data["trace_checks"], notes)
        except TraceChecksConfigError as exc:  # its model's bare refusal, addressed
            problems += [f"{file}: {p}" for p in exc.problems]
    if data.get("custom_checks") is not None:
        cfg["custom_checks"] = dict(data["custom_checks"])
    gate = _gate_problems(file, data, cfg)
    if authored:
        problems += gate
    if problems:
        raise GradingConfigError(file, problems)

    ignored = tuple(sorted(str(k) for k in data if k not in GRADING_KEYS))
    # every block was validated above under the read's context; GradingConfig adds no rule
    # of its own, so it is assembled without validating them a second time
    config = GradingConfig.model_construct(**cfg, ignored_keys=ignored)
    weight_problems = _weight_problems(file, config.configured(), config.combine.weights)
    if authored and weight_problems:
        raise GradingConfigError(file, weight_problems)
    for problem in (*gate, *weight_problems):  # recorded: evidence, so advisories
        notes.advise(problem)
    if not authored:
        config = config.model_copy(
            update={
                "advisories": tuple(notes.advisories),
                "unknown_keys": tuple(notes.unknown_keys),
                "recorded": True,
            }
        )
    return config
