"""The grading.yaml models (GRADING.md § Which keys a grading block refuses, § What shape a
grading key must be, § Score Combination, § Turn bounds, § Folding the hash verdict with
jsonpaths). Each typed block is closed; a rule one model checks sits on it, through
``schemas.reading.rule_broken``. Reading a whole file is ``replay.grading.rules``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from schemas.closed import Closed
from schemas.reading import rule_broken
from schemas.trace_checks import TraceChecksConfig

COMPONENT_SECTIONS: tuple[str, ...] = (
    "state_checks",
    "transcript_rules",
    "trace_checks",
    "llm_judge",
    "custom_checks",
)
"""The five components; each combine.weights key names one, and so does its section."""

GRADING_KEYS: tuple[str, ...] = ("combine", *COMPONENT_SECTIONS)
"""Every key a grading.yaml may carry; each is a mapping or absent."""

CombineMethod = Literal["weighted", "all", "any"]
COMBINE_METHODS: tuple[str, ...] = ("weighted", "all", "any")

# A real number, never a bool or a numeric string coerced into one.
StrictUnit = Annotated[float, Field(strict=True, ge=0.0, le=1.0)]
StrictShare = Annotated[float, Field(strict=True, ge=0.0)]
TurnBound = Annotated[int, Field(strict=True)]


class CombineConfig(Closed):
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


class StateHashConfig(Closed):
    """The hash block: exactly enabled, expect_initial_state, golden_actions, weight, description."""

    enabled: bool = False
    expect_initial_state: bool = False
    golden_actions: Any = None  # claims nothing about its value (#907); read for truth
    weight: StrictUnit | None = None
    description: str | None = None

    @field_validator("enabled", "expect_initial_state", mode="before")
    @classmethod
    def _null_is_off(cls, value: Any) -> Any:
        # "null or absent" is the flag a run reads as off (§ What is validated before a run)
        return False if value is None else value

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


class DbProbe(Closed):
    name: str
    dsn: str
    query: str
    expect: list[dict[str, Any]] = []
    description: str | None = None


class ViewReference(Closed):
    table: str
    field: str


class ComparisonRule(Closed):
    """One rule of a declared comparison view (not in GRADING.md: the shape is read off the
    state_checks_comparison_view parity pack). Each kind reads only its own keys."""

    kind: Literal["exclude_tables", "exclude_records", "normalize_ids"]
    reason: str
    tables: list[str] | None = None
    table: str | None = None
    where: dict[str, Any] | None = None
    key: list[str] | None = None
    references: list[ViewReference] = []
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


class ComparisonView(Closed):
    """Which of a trial's changes count, applied to both sides of the hash comparison."""

    version: Literal[1]
    rules: list[ComparisonRule] = []


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


class StateChecksConfig(Closed):
    hash: StateHashConfig | None = None
    jsonpaths: list[dict[str, Any]] = []
    numeric_string_fields: list[str] = []
    id_fields: dict[str, str | list[str]] = Field(default_factory=dict)
    relaxed_validation: bool = False
    db_probes: list[DbProbe] = []
    comparison_view: ComparisonView | None = None
    # Not in GRADING.md; Tolokaforge 0.33.1 records them on every snapshot (defaults off).
    # Each loosens the hash comparison; replay/grading/components/state_checks.py says which it
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


class RequiredAction(Closed):
    action_id: str
    requestor: Literal["assistant", "user"] = "assistant"
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    compare_args: list[str] | None = None


class CommunicateInfo(Closed):
    info: str
    required: bool = True


class ToolExpectations(Closed):
    required_tools: list[str] = []
    disallowed_tools: list[str] = []


class TranscriptRulesConfig(Closed):
    must_contain: list[str] = []
    disallow_regex: list[str] = []
    max_turns: TurnBound | None = None
    min_assistant_turns: TurnBound | None = None
    required_actions: list[RequiredAction] = []
    communicate_info: list[CommunicateInfo] = []
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


class RubricCriterion(Closed):
    id: str
    description: str = ""
    weight: StrictShare = 1.0
    kind: Literal["binary", "graded"] = "binary"
    required: bool = False
    expected: str | None = None


class Rubric(Closed):
    criteria: list[RubricCriterion] = []
    reference: str | None = None


class LlmJudgeConfig(Closed):
    model_ref: str | None = None
    rubric: Rubric | None = None
    customization: dict[str, Any] | None = None
    # Not in GRADING.md; Tolokaforge 0.33.1 records the judge kind that ran the rubric and
    # its opaque options. Every kind hands the same rubric fold its final per-criterion
    # results (a voted kind merges its samples first), which is what grade.yaml records, so
    # the offline re-aggregation reads them the same whatever the kind.
    judge_kind: str = "single_shot_rubric"
    kind_config: dict[str, Any] | None = None


class CustomChecksConfig(Closed):
    """Constructed at grade time (§ Which keys a grading block refuses: custom_checks
    key names are refused only then); the load tier keeps the block as a raw mapping."""

    enabled: bool = False
    file: str = "checks.py"
    interface_version: str = "1.0"
    timeout_seconds: Annotated[float, Field(strict=True, gt=0)] = 30.0
    weight: StrictShare | None = None
    fail_on_error: bool = True
    relative_imports: list[str] = []  # recorded by 0.33.1


class GradingConfig(BaseModel):
    """The grading config as loaded: typed blocks, the effective combine, lenient tier."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True, defer_build=True)

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
        # custom_checks with enabled off is an explicit opt-out: it asks for nothing
        return tuple(
            name
            for name in COMPONENT_SECTIONS
            if getattr(self, name) is not None
            and (name != "custom_checks" or getattr(self, name).get("enabled"))
        )


JSONPATH_OPERATORS: tuple[str, ...] = ("equals", "equals_ci", "contains", "contains_ci")
