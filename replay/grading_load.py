"""Reading a grading.yaml into a :class:`GradingConfig`, every problem of one read in one raise.

Two tiers of key, answered differently:

* inside the five typed blocks (combine, state_checks, transcript_rules, trace_checks,
  llm_judge) an unknown key is a load error; for combine, state_checks and
  transcript_rules — and the positions they nest — the message names the file, the key,
  its closest declared field and the whole accepted set;
* the block-name tier is lenient: an unknown top-level key is ignored (and listed on
  ``GradingConfig.ignored_keys`` so nothing is dropped silently from the caller's view).

Two reads of one file:

* ``authored=True`` — a pack an author can still fix: the pre-run gate's rules
  (``replay.grading_rules``) apply on top of the models'.
* ``authored=False`` — a grading config recorded in a bundle (task.yaml ``grading_config``):
  only the model's own rules, so a bundle written before a gate rule still loads
  (``expected_state_hash`` is dropped, per § Which keys a grading block refuses).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from replay.grading_rules import gate_problems, shape_of, shape_problems, weight_problems
from replay.reading import dotted, read_model
from replay.trace_checks.load import TraceChecksConfigError, load_trace_checks
from schemas.grading import (
    GRADING_KEYS,
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
from schemas.reading import ReadNotes


class GradingConfigError(ValueError):
    """A grading config the loader refuses; ``problems`` holds one sentence per finding."""

    def __init__(self, file: str, problems: list[str]) -> None:
        self.file = file
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


# The fields a config assembled by load_grading_config starts from (model_construct does
# not fill defaults from factories of fields it is not given).
GRADING_DEFAULTS: dict[str, Any] = {
    name: None
    for name in ("state_checks", "transcript_rules", "trace_checks", "llm_judge", "custom_checks")
} | {"advisories": (), "unknown_keys": (), "recorded": False}

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
            problems.append(f"{file}: {where}: {err['msg']} (received {shape_of(received)})")
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
                f"{shape_of(data)}; write combine:, state_checks:, … at the top level"
            ],
        )
    problems = shape_problems(file, data)
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
    gate = gate_problems(file, data, cfg)
    if authored:
        problems += gate
    if problems:
        raise GradingConfigError(file, problems)

    ignored = tuple(sorted(str(k) for k in data if k not in GRADING_KEYS))
    # every block was validated above under the read's context; GradingConfig adds no rule
    # of its own, so it is assembled without validating them a second time
    config = GradingConfig.model_construct(**(GRADING_DEFAULTS | cfg), ignored_keys=ignored)
    naming = weight_problems(file, config.configured(), config.combine.weights)
    if authored and naming:
        raise GradingConfigError(file, naming)
    for problem in (*gate, *naming):  # recorded: evidence, so advisories
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
