"""The grading.yaml model and its load-time refusals (GRADING.md § Which keys a grading
block refuses, § What shape a grading key must be, § What is validated before a run,
§ Score Combination, § Turn bounds, § Folding the hash verdict with jsonpaths).

Two tiers of key, answered differently:

* inside the five typed blocks (combine, state_checks, transcript_rules, trace_checks,
  llm_judge) an unknown key is a load error; for combine, state_checks and
  transcript_rules — and the positions they nest — the message names the file, the key,
  its closest declared field and the whole accepted set;
* the block-name tier is lenient: an unknown top-level key is ignored (and listed on
  ``GradingConfig.ignored_keys`` so nothing is dropped silently from the caller's view).

Two reads of one file:

* ``authored=True`` — a pack an author can still fix: the pre-run gate's rules apply on top
  of the model's (empty sections, blocks declaring nothing, the hash flag/source rules, the
  ``expected_state_hash`` migration, component ↔ weight mutual naming, regex compilation).
* ``authored=False`` — a grading config recorded in a bundle (task.yaml ``grading_config``):
  only the model's own rules, so a bundle written before a gate rule still loads
  (``expected_state_hash`` is dropped, per § Which keys a grading block refuses).

Every problem found in one read is reported in one raise.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from schemas.reading import ReadNotes, read_model, rule_broken
from schemas.regex_budget import compile_backtracking
from schemas.trace_checks import TraceChecksConfig, TraceChecksConfigError, load_trace_checks

GRADING_KEYS: tuple[str, ...] = (
    "combine",
    "state_checks",
    "transcript_rules",
    "trace_checks",
    "llm_judge",
    "custom_checks",
)
"""Every key a grading.yaml may carry; each is a mapping or absent."""

COMPONENT_SECTIONS: tuple[str, ...] = (
    "state_checks",
    "transcript_rules",
    "trace_checks",
    "llm_judge",
    "custom_checks",
)
"""The five components; each combine.weights key names one, and so does its section."""

CombineMethod = Literal["weighted", "all", "any"]
COMBINE_METHODS: tuple[str, ...] = ("weighted", "all", "any")

# A real number, never a bool or a numeric string coerced into one.
StrictUnit = Annotated[float, Field(strict=True, ge=0.0, le=1.0)]
StrictShare = Annotated[float, Field(strict=True, ge=0.0)]
TurnBound = Annotated[int, Field(strict=True)]


class GradingConfigError(ValueError):
    """A grading config the loader refuses; ``problems`` holds one sentence per finding."""

    def __init__(self, file: str, problems: list[str]) -> None:
        self.file = file
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _off_when_null(value: Any) -> Any:
    # "null or absent" is the flag a run reads as off (§ What is validated before a run)
    return False if value is None else value


# ---------------------------------------------------------------------------- combine


class CombineConfig(_Closed):
    """Exactly three keys; the method set is closed (§ Score Combination)."""

    method: CombineMethod = "weighted"
    weights: dict[str, StrictShare] = Field(default_factory=dict)
    pass_threshold: StrictUnit = 0.8

    @field_validator("method", mode="before")
    @classmethod
    def _closed_method(cls, value: Any) -> Any:
        if value not in COMBINE_METHODS:
            raise ValueError(
                f"combine.method {value!r} is not a combine method; write one of "
                f"{', '.join(COMBINE_METHODS)}"
            )
        return value


# ---------------------------------------------------------------------- state_checks


class StateHashConfig(_Closed):
    """The hash block: exactly enabled, expect_initial_state, golden_actions, weight, description."""

    enabled: bool = False
    expect_initial_state: bool = False
    golden_actions: Any = None  # claims nothing about its value (#907); read for truth
    weight: StrictUnit | None = None
    description: str | None = None

    @field_validator("enabled", "expect_initial_state", mode="before")
    @classmethod
    def _null_is_off(cls, value: Any) -> Any:
        return _off_when_null(value)

    @model_validator(mode="before")
    @classmethod
    def _drop_retired_digest(cls, data: Any) -> Any:
        # A recorded bundle that stored a digest still loads; nothing reads it. The
        # authored read raises the migration message before the model is built.
        if isinstance(data, Mapping) and "expected_state_hash" in data:
            data = {k: v for k, v in data.items() if k != "expected_state_hash"}
        return data

    @model_validator(mode="after")
    def _one_expected_state(self, info: ValidationInfo) -> StateHashConfig:
        if self.expect_initial_state and self.golden_actions:
            rule_broken(
                info,
                "state_checks.hash declares expect_initial_state beside golden_actions, "
                "two expected states with no precedence between them; drop "
                "expect_initial_state (the replayed golden state is expected) or drop "
                "golden_actions (the initial state is expected)",
            )
        return self

    @property
    def source(self) -> Literal["golden_actions", "expect_initial_state"] | None:
        if self.golden_actions:
            return "golden_actions"
        if self.expect_initial_state:
            return "expect_initial_state"
        return None


class DbProbe(_Closed):
    name: str
    dsn: str
    query: str
    expect: list[dict[str, Any]] = Field(default_factory=list)
    description: str | None = None


class ViewReference(_Closed):
    table: str
    field: str


class ComparisonRule(_Closed):
    """One rule of a declared comparison view (not in GRADING.md: the shape is read off the
    state_checks_comparison_view parity pack). Each kind reads only its own keys."""

    kind: Literal["exclude_tables", "exclude_records", "normalize_ids"]
    reason: str
    tables: list[str] | None = None
    table: str | None = None
    where: dict[str, Any] | None = None
    key: list[str] | None = None
    references: list[ViewReference] = Field(default_factory=list)
    scope: Literal["all"] = "all"

    @model_validator(mode="after")
    def _kind_keys(self) -> ComparisonRule:
        needs = {
            "exclude_tables": ("tables",),
            "exclude_records": ("table", "where"),
            "normalize_ids": ("table", "key"),
        }[self.kind]
        missing = [k for k in needs if not getattr(self, k)]
        if missing:
            raise ValueError(
                f"state_checks.comparison_view rule of kind {self.kind} needs "
                f"{', '.join(missing)}; declare it, or drop the rule"
            )
        return self


class ComparisonView(_Closed):
    """Which of a trial's changes count, applied to both sides of the hash comparison."""

    version: Literal[1]
    rules: list[ComparisonRule] = Field(default_factory=list)


_RETIRED_STATE_KEYS = {
    "env_assertions": (
        "state_checks.env_assertions was removed; assert the final state with "
        "state_checks.jsonpaths (path + one of equals / equals_ci / contains / contains_ci)"
    ),
    "db_hash_check": (
        "state_checks.db_hash_check was removed; declare state_checks.hash with enabled: "
        "true and its source (golden_actions, or expect_initial_state: true for a "
        "refusal task)"
    ),
}


class StateChecksConfig(_Closed):
    hash: StateHashConfig | None = None
    jsonpaths: list[dict[str, Any]] = Field(default_factory=list)
    numeric_string_fields: list[str] = Field(default_factory=list)
    id_fields: dict[str, str | list[str]] = Field(default_factory=dict)
    relaxed_validation: bool = False
    db_probes: list[DbProbe] = Field(default_factory=list)
    comparison_view: ComparisonView | None = None
    # Not in GRADING.md; Tolokaforge 0.33.1 records them on every snapshot (defaults off).
    # Each loosens the hash comparison; replay/components/state_checks.py says which it
    # re-derives offline.
    compare_columns: dict[str, dict[str, dict[str, Any]]] = Field(default_factory=dict)
    auto_mask_clock_columns: bool = False
    auto_normalize_nullables: bool = False

    @model_validator(mode="before")
    @classmethod
    def _retired_keys(cls, data: Any, info: ValidationInfo) -> Any:
        if not isinstance(data, Mapping):
            return data
        problems = [msg for key, msg in _RETIRED_STATE_KEYS.items() if data.get(key)]
        if problems:
            rule_broken(info, "; ".join(problems))
        # an inert retired key (env_assertions: [] / db_hash_check: false) is dropped so a
        # bundle serialised against the old schema still loads
        return {k: v for k, v in data.items() if k not in _RETIRED_STATE_KEYS}

    @field_validator("id_fields")
    @classmethod
    def _id_field_shapes(
        cls, value: dict[str, str | list[str]], info: ValidationInfo
    ) -> dict[str, str | list[str]]:
        for table, key in value.items():
            parts = [key] if isinstance(key, str) else list(key)
            if not parts:
                rule_broken(
                    info, f"state_checks.id_fields.{table} is an empty list; name the key field(s)"
                )
            for part in parts:
                if not isinstance(part, str) or not part.strip():
                    rule_broken(
                        info,
                        f"state_checks.id_fields.{table} holds a blank or non-string key "
                        f"component {part!r}; every component is a field name",
                    )
            repeated = sorted({p for p in parts if parts.count(p) > 1})
            if repeated:
                rule_broken(
                    info,
                    f"state_checks.id_fields.{table} repeats key component(s) {repeated}; "
                    "list each field once",
                )
        return value

    @model_validator(mode="after")
    def _fold_rules(self, info: ValidationInfo) -> StateChecksConfig:
        hash_block = self.hash
        hash_sourced = bool(hash_block and hash_block.enabled and hash_block.source)
        if self.db_probes and (self.jsonpaths or hash_sourced):
            other = "jsonpaths" if self.jsonpaths else "hash"
            rule_broken(
                info,
                f"state_checks declares db_probes beside {other}, two candidate state "
                "scores with no share to fold them by; keep the probes and drop "
                f"{other}, or drop the probes and let the hash and jsonpaths grade the state",
            )
        if hash_sourced and self.jsonpaths and hash_block is not None and hash_block.weight is None:
            rule_broken(
                info,
                "state_checks folds the hash verdict with non-empty jsonpaths, so "
                "state_checks.hash.weight is required and has no default: 1.0 lets the "
                "hash decide, 0.0 lets the jsonpaths decide, 0.5 gives them equal shares",
            )
        return self

    @property
    def weight_consulted(self) -> bool:
        """ "Needs a weight" exactly: enabled, a source, and non-empty jsonpaths."""
        h = self.hash
        return bool(h and h.enabled and h.source and self.jsonpaths)


# ------------------------------------------------------------------ transcript_rules


class RequiredAction(_Closed):
    action_id: str
    requestor: Literal["assistant", "user"] = "assistant"
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    compare_args: list[str] | None = None


class CommunicateInfo(_Closed):
    info: str
    required: bool = True


class ToolExpectations(_Closed):
    required_tools: list[str] = Field(default_factory=list)
    disallowed_tools: list[str] = Field(default_factory=list)


class TranscriptRulesConfig(_Closed):
    must_contain: list[str] = Field(default_factory=list)
    disallow_regex: list[str] = Field(default_factory=list)
    max_turns: TurnBound | None = None
    min_assistant_turns: TurnBound | None = None
    required_actions: list[RequiredAction] = Field(default_factory=list)
    communicate_info: list[CommunicateInfo] = Field(default_factory=list)
    tool_expectations: ToolExpectations | None = None
    # Not in GRADING.md; the transcript_rules_regex_engine parity pack declares it.
    # linear = RE2 (the default: a pattern cannot hang); backtracking = Python's re.
    regex_engine: Literal["linear", "backtracking"] = "linear"

    @field_validator("max_turns", "min_assistant_turns")
    @classmethod
    def _from_one(cls, value: int | None, info: ValidationInfo) -> int | None:
        if value is not None and value < 1:
            what = (
                "a ceiling of 0 closes the turn window on its own"
                if info.field_name == "max_turns"
                else "a floor of 0 asserts nothing"
            )
            rule_broken(
                info,
                f"transcript_rules.{info.field_name} is {value}, below its bound of 1: "
                f"{what}; write 1 or more, or drop the key",
            )
        return value

    @model_validator(mode="after")
    def _satisfiable_window(self, info: ValidationInfo) -> TranscriptRulesConfig:
        lo, hi = self.min_assistant_turns, self.max_turns
        if lo is not None and hi is not None and lo > hi:
            rule_broken(info, unsatisfiable_window_message(lo, hi))
        return self

    def declares_a_rule(self) -> bool:
        te = self.tool_expectations
        return bool(
            self.must_contain
            or self.disallow_regex
            or self.required_actions
            or self.communicate_info
            or self.max_turns is not None
            or self.min_assistant_turns is not None
            or (te is not None and (te.required_tools or te.disallowed_tools))
        )


def unsatisfiable_window_message(lo: int, hi: int, file: str = "grading.yaml") -> str:
    """The refusal of § Turn bounds, naming both keys and both values."""
    return (
        f"{file} transcript_rules declares an unsatisfiable turn window: "
        f"min_assistant_turns ({lo}) is above max_turns ({hi}), so no assistant-turn count "
        "satisfies both bounds and every trial fails the transcript component. Lower "
        f"min_assistant_turns to at most {hi}, or raise max_turns to at least {lo}."
    )


# ------------------------------------------------------------------------- llm_judge


class RubricCriterion(_Closed):
    id: str
    description: str = ""
    weight: StrictShare = 1.0
    kind: Literal["binary", "graded"] = "binary"
    required: bool = False
    expected: str | None = None


class Rubric(_Closed):
    criteria: list[RubricCriterion] = Field(default_factory=list)
    reference: str | None = None


class LlmJudgeConfig(_Closed):
    model_ref: str | None = None
    rubric: Rubric | None = None
    customization: dict[str, Any] | None = None
    # Not in GRADING.md; Tolokaforge 0.33.1 records the judge kind that ran the rubric and
    # its opaque options. Every kind hands the same rubric fold its final per-criterion
    # results (a voted kind merges its samples first), which is what grade.yaml records, so
    # the offline re-aggregation reads them the same whatever the kind.
    judge_kind: str = "single_shot_rubric"
    kind_config: dict[str, Any] | None = None


# --------------------------------------------------------------------- custom_checks


class CustomChecksConfig(_Closed):
    """Constructed at grade time (§ Which keys a grading block refuses: custom_checks
    key names are refused only then); the load tier keeps the block as a raw mapping."""

    enabled: bool = False
    file: str = "checks.py"
    interface_version: str = "1.0"
    timeout_seconds: Annotated[float, Field(strict=True, gt=0)] = 30.0
    weight: StrictShare | None = None
    fail_on_error: bool = True
    relative_imports: list[str] = Field(default_factory=list)  # recorded by 0.33.1


# ---------------------------------------------------------------------- whole config


class GradingConfig(BaseModel):
    """The grading config as loaded: typed blocks, the effective combine, lenient tier."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    combine: CombineConfig = Field(default_factory=CombineConfig)
    state_checks: StateChecksConfig | None = None
    transcript_rules: TranscriptRulesConfig | None = None
    trace_checks: TraceChecksConfig | None = None
    llm_judge: LlmJudgeConfig | None = None
    custom_checks: dict[str, Any] | None = None
    ignored_keys: tuple[str, ...] = ()
    # A recorded read only (schemas.reading): rules the snapshot breaks, and keys this
    # version does not know, each a dotted path whose first segment names its block.
    advisories: tuple[str, ...] = ()
    unknown_keys: tuple[str, ...] = ()
    recorded: bool = False  # read as evidence (a recorded snapshot), not as authored input

    def unknown_in(self, block: str) -> tuple[str, ...]:
        """The unknown keys a recorded snapshot carried inside ``block``."""
        return tuple(k for k in self.unknown_keys if k.split(".", 1)[0].split("[", 1)[0] == block)

    def configured(self) -> tuple[str, ...]:
        """Components the config asks to score (custom_checks only when enabled is on)."""
        out = []
        for name in COMPONENT_SECTIONS:
            block = getattr(self, name)
            if block is None:
                continue
            if name == "custom_checks" and not block.get("enabled"):
                continue  # an explicit opt-out asks for nothing
            out.append(name)
        return tuple(out)


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


def _dotted(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


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
        where = _dotted(loc)
        if err["type"] == "extra_forbidden":
            parent = tuple("*" if isinstance(p, int) else p for p in loc[:-1])
            model = _DID_YOU_MEAN.get(parent)
            if model is None:
                problems.append(f"{file}: {where} is not a key {_dotted(loc[:-1])} declares")
                continue
            accepted = list(model.model_fields)
            close = difflib.get_close_matches(str(loc[-1]), accepted, n=1, cutoff=0.0)
            hint = f" (closest declared field: {close[0]})" if close else ""
            problems.append(
                f"{file}: {where} is not a key {_dotted(loc[:-1])} declares{hint}; "
                f"{_dotted(loc[:-1])} accepts: {', '.join(accepted)}"
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
            compile_rule_regex(pattern, rules.regex_engine)
        except Exception as exc:  # re2.error / re.error: an authoring error, named
            out.append(
                f"{file}: transcript_rules.disallow_regex[{i}] {pattern!r} does not compile "
                f"under the {rules.regex_engine} engine ({exc}); fix the pattern"
            )
    return out


@lru_cache(maxsize=4096)
def compile_rule_regex(pattern: str, engine: str) -> Any:
    """Compile a phrase-rule regex case-insensitively under the declared engine."""
    if engine == "backtracking":  # every match time-bounded (schemas/regex_budget.py)
        return compile_backtracking(pattern, re.IGNORECASE)
    import re2  # google-re2: linear time, so a pattern cannot hang the grader

    options = re2.Options()
    options.case_sensitive = False
    return re2.compile(pattern, options)


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


JSONPATH_OPERATORS: tuple[str, ...] = ("equals", "equals_ci", "contains", "contains_ci")


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
    # validated under the read's context: pydantic re-runs the blocks' after-validators here
    config = GradingConfig.model_validate({**cfg, "ignored_keys": ignored}, context=notes.context())
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
