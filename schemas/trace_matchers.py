"""The trace_checks matcher vocabulary (GRADING.md § Matchers, § Operators): closed models, so a
misspelled operator or matcher field is a load error rather than an unset key.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationInfo,
    model_validator,
)

from schemas.closed import Closed
from schemas.reading import recorded_only_keys, recorded_only_value, rule_broken

OPERATORS: tuple[str, ...] = (
    "equals",
    "not_equals",
    "equals_ci",
    "contains",
    "contains_ci",
    "regex",
    "gt",
    "gte",
    "lt",
    "lte",
    "in_",
    "not_in",
    "len_gt",
    "len_gte",
    "exists",
    "equals_binding",
    "contains_binding",
)
# Operators a recorded snapshot carries beyond GRADING.md's seventeen: Tolokaforge 0.33.1's
# ValuePredicate writes them (null-expanded) and evaluates them. GRADING.md § Operators
# says "there is no not_contains / not_regex", so an authored block is still refused them;
# a recorded one is evidence and is read as the recorder wrote it.
RECORDED_OPERATORS: tuple[str, ...] = (
    "not_contains",
    "not_regex",
    "is_null",
    "omitted",
    "date_gt",
    "date_gte",
    "date_lt",
    "date_lte",
)
ALL_OPERATORS: tuple[str, ...] = OPERATORS + RECORDED_OPERATORS
BINDING_OPERATORS: tuple[str, ...] = ("equals_binding", "contains_binding")
REGEX_OPERATORS: tuple[str, ...] = ("regex", "not_regex")

# Which fields a matcher of each kind may carry a predicate on (§ Matchers).
MATCHABLE_FIELDS: dict[str, tuple[str, ...]] = {
    "tool_call": ("tool", "executor", "args", "status", "result"),
    "tool_result": ("tool", "executor", "status", "result"),
    "assistant_message": ("text",),
    "user_message": ("text",),
}
FIELD_NAMES: tuple[str, ...] = ("tool", "executor", "args", "status", "result", "text")

EventKind = Literal["tool_call", "tool_result", "assistant_message", "user_message"]
RegexEngine = Literal["linear", "backtracking"]

Real = StrictInt | StrictFloat
NonNegativeInt = Annotated[StrictInt, Field(ge=0)]
Patterns = StrictStr | Annotated[list[StrictStr], Field(min_length=1)]


class Predicate(Closed):
    """A conjunction of operators over one field. An operator counts as declared when not null."""

    equals: Any = None
    not_equals: Any = None
    equals_ci: StrictStr | None = None
    contains: Any = None
    contains_ci: StrictStr | None = None
    regex: Patterns | None = None  # a list (every pattern must search) is recorded-only
    gt: Real | None = None
    gte: Real | None = None
    lt: Real | None = None
    lte: Real | None = None
    in_: list[Any] | None = None
    not_in: list[Any] | None = None
    len_gt: NonNegativeInt | None = None
    len_gte: NonNegativeInt | None = None
    exists: StrictBool | None = None
    equals_binding: StrictStr | None = None
    contains_binding: StrictStr | None = None
    # --- recorded-only (RECORDED_OPERATORS, and the engine modifier) ---
    not_contains: Any = None
    not_regex: Patterns | None = None
    is_null: StrictBool | None = None
    omitted: StrictBool | None = None
    date_gt: StrictStr | None = None
    date_gte: StrictStr | None = None
    date_lt: StrictStr | None = None
    date_lte: StrictStr | None = None
    regex_engine: RegexEngine | None = None  # None inherits trace_checks.regex_engine

    @model_validator(mode="before")
    @classmethod
    def _authored_vocabulary(cls, data: Any, info: ValidationInfo) -> Any:
        recorded_only_keys(data, info, (*RECORDED_OPERATORS, "regex_engine"), "§ Operators")
        if isinstance(data, Mapping) and isinstance(data.get("regex"), list):
            recorded_only_value(
                info,
                "regex takes one pattern; a list of patterns is only read in a recorded"
                " snapshot — write a single pattern, or all_of over two predicates",
            )
        return data

    @model_validator(mode="after")
    def _engine_reads_a_pattern(self, info: ValidationInfo) -> Predicate:
        if self.regex_engine is not None and self.regex is None and self.not_regex is None:
            rule_broken(
                info,
                f"regex_engine: {self.regex_engine} on a predicate declaring neither regex nor"
                " not_regex reads no pattern; drop regex_engine",
            )
        return self

    @model_validator(mode="after")
    def _declares_an_operator(self) -> Predicate:
        if not self.declared():
            raise ValueError(
                "a predicate declares no operator; write one of "
                + ", ".join(OPERATORS)
                + " (an operator written as null counts as undeclared, so equals: null is not"
                " expressible — write exists: false for an absent field)"
            )
        return self

    def declared(self) -> tuple[tuple[str, Any], ...]:
        """(operator, value) for every operator this predicate declares, in vocabulary order."""
        return tuple(
            (op, getattr(self, op)) for op in ALL_OPERATORS if getattr(self, op) is not None
        )

    def patterns(self, op: str) -> tuple[str, ...]:
        """The patterns a declared regex / not_regex names; one string is the one-item list."""
        value = getattr(self, op)
        return (value,) if isinstance(value, str) else tuple(value)

    def engine_under(self, block: RegexEngine) -> RegexEngine:
        """The engine this predicate's patterns run on inside a block defaulting to ``block``."""
        return self.regex_engine or block

    def binding_names(self) -> tuple[str, ...]:
        return tuple(v for op, v in self.declared() if op in BINDING_OPERATORS)


class Matcher(Closed):
    """Selects timeline events: a required kind plus predicates on that kind's fields."""

    kind: EventKind
    tool: Predicate | None = None
    executor: Predicate | None = None
    args: dict[str, Predicate] | None = None
    status: Predicate | None = None
    result: Predicate | None = None
    text: Predicate | None = None

    @model_validator(mode="before")
    @classmethod
    def _kind_is_required(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and ("quantifier" in data or "match" in data):
            raise ValueError(
                "a bare matcher carries no quantifier or match: key — write its kind and"
                " predicates directly (forbidden is universal over its events, so a quantifier"
                " there names nothing)"
            )
        if isinstance(data, Mapping) and "kind" not in data:
            raise ValueError(
                "a matcher needs kind: one of tool_call, tool_result, assistant_message,"
                " user_message — nothing is inferred from which predicates are present"
            )
        return data

    @model_validator(mode="after")
    def _fields_fit_the_kind(self, info: ValidationInfo) -> Matcher:
        allowed = MATCHABLE_FIELDS[self.kind]
        for name in FIELD_NAMES:
            if getattr(self, name) is not None and name not in allowed:
                carriers = [k for k, fields in MATCHABLE_FIELDS.items() if name in fields]
                raise ValueError(
                    f"a kind: {self.kind} matcher cannot carry a {name} predicate — a"
                    f" {self.kind} event never has that field, so the matcher would select"
                    f" nothing; it may match {', '.join(allowed)}. Write kind:"
                    f" {' or '.join(carriers)} to match {name}"
                )
        if self.args is not None:
            # Both are vacuous rather than unrunnable: no args predicate, or a segment no
            # argument carries (an absent value) — so a recorded block keeps an advisory.
            if not self.args:
                rule_broken(
                    info,
                    "args declares no argument path; drop args or name a path such as"
                    " args: { record_id: { equals: R-1 } }",
                )
            for path in self.args:
                if not path or any(not seg for seg in path.split(".")):
                    rule_broken(
                        info,
                        f"args path {path!r} has an empty segment; address nested arguments"
                        " by dotted segments, e.g. body.resolution_path",
                    )
        return self

    def predicates(self) -> Iterator[tuple[str, Predicate]]:
        """(field label, predicate) in a fixed order; args paths are labelled args.<path>."""
        for name in ("tool", "executor", "status", "result", "text"):
            pred = getattr(self, name)
            if pred is not None:
                yield name, pred
        if self.args:
            for path, pred in self.args.items():
                yield f"args.{path}", pred
