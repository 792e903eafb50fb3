"""The trace_checks config model (GRADING.md § Trace Checks): closed models, so a misspelled
kind or constraint field is a load error rather than an unset key. The rules that read a
block as a whole run after parsing: ``replay.trace_checks.rules``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field, StrictStr, ValidationInfo, model_validator

from schemas.reading import recorded_only_keys, recorded_only_value, rule_broken
from schemas.trace_matchers import Closed, Matcher, NonNegativeInt, Real, RegexEngine

KIND_NAMES: tuple[str, ...] = (
    "present",
    "absent",
    "count",
    "before",
    "immediately_before",
    "absent_before",
    "absent_between",
    "all_of",
    "any_of",
    "negate",
)
# Kinds whose verdict is the match itself: on_missing over a tree holding one is refused.
MATCH_VERDICT_KINDS: frozenset[str] = frozenset({"present", "absent", "count"})
# Fields a bind.values[*].field may address, per matcher kind (§ Correlating arguments).
BINDABLE_FIELDS: dict[str, tuple[str, ...]] = {
    "tool_call": ("tool", "result", "args"),
    "tool_result": ("tool", "result"),
    "assistant_message": ("text",),
    "user_message": ("text",),
}

Quantifier = Literal["any", "all", "first", "last"]
AnchorQuantifier = Literal["first", "last"]
Among = Literal["tool_calls", "tool_results", "messages", "events"]
Severity = Literal["scored", "gate"]
# withhold is recorded-only (Tolokaforge 0.33.1's OnMissing; GRADING.md names fail | pass).
OnMissing = Literal["fail", "pass", "withhold"]
OnUnbound = Literal["fail", "pass"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class _Side(Closed):
    match: Matcher


class MatcherSide(_Side):
    """A side of before / immediately_before: the position is genuinely quantified."""

    quantifier: Quantifier


class AnchorSide(_Side):
    """A window anchor: one selected event, so any/all are refused at load."""

    quantifier: AnchorQuantifier

    @model_validator(mode="before")
    @classmethod
    def _anchor_quantifier(cls, data: Any, info: ValidationInfo) -> Any:
        if isinstance(data, Mapping) and data.get("quantifier") in ("any", "all"):
            q = data["quantifier"]
            instead = "first" if q == "any" else "last"
            rule_broken(
                info,
                f"an anchor's quantifier is first or last, not {q}: over a window any"
                f" collapses onto first and all onto last — write quantifier: {instead}",
            )
            # Recorded: read as the collapse GRADING.md § Quantifiers states it means.
            return {**data, "quantifier": instead}
        return data


class MatchPayload(Closed):
    """present / absent: the verdict is the match itself."""

    match: Matcher


class CountPayload(Closed):
    match: Matcher
    min: NonNegativeInt | None = None
    max: NonNegativeInt | None = None

    @model_validator(mode="after")
    def _bounds(self, info: ValidationInfo) -> CountPayload:
        # Both shapes evaluate (always within; never within), so recorded ones are advisories.
        if self.min is None and self.max is None:
            rule_broken(
                info,
                "count declares neither min nor max, so every count is within the bounds;"
                " write min: and/or max: (present is count with min: 1)",
            )
        if self.min is not None and self.max is not None and self.min > self.max:
            rule_broken(
                info,
                f"count min: {self.min} exceeds max: {self.max}, which no trajectory satisfies;"
                " swap the bounds",
            )
        return self


class BeforePayload(Closed):
    left: MatcherSide
    right: MatcherSide


class ImmediatelyBeforePayload(Closed):
    left: MatcherSide
    right: MatcherSide
    among: Among

    @model_validator(mode="before")
    @classmethod
    def _among_is_required(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "among" not in data:
            raise ValueError(
                "immediately_before requires an explicit among: one of tool_calls,"
                " tool_results, messages, events — there is no default, because a call's"
                " own result sits between it and the next call"
            )
        return data


class AbsentBeforePayload(Closed):
    forbidden: Matcher
    anchor: AnchorSide


class AbsentBetweenPayload(Closed):
    forbidden: Matcher
    start: AnchorSide
    end: AnchorSide


class Require(Closed):
    """Exactly one constraint kind, each kind's value being that kind's payload."""

    present: MatchPayload | None = None
    absent: MatchPayload | None = None
    count: CountPayload | None = None
    before: BeforePayload | None = None
    immediately_before: ImmediatelyBeforePayload | None = None
    absent_before: AbsentBeforePayload | None = None
    absent_between: AbsentBetweenPayload | None = None
    all_of: Annotated[list[Require], Field(min_length=1)] | None = None
    any_of: Annotated[list[Require], Field(min_length=1)] | None = None
    negate: Require | None = None

    @model_validator(mode="before")
    @classmethod
    def _no_after(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "after" in data:
            raise ValueError(
                "there is no after: write before with the two sides swapped —"
                " after(left=L, right=R) is before(left=R, right=L), each quantifier riding"
                " with its own matcher"
            )
        return data

    @model_validator(mode="after")
    def _exactly_one_kind(self) -> Require:
        present = [k for k in KIND_NAMES if getattr(self, k) is not None]
        if len(present) != 1:
            found = ", ".join(present) if present else "none"
            raise ValueError(
                f"require carries exactly one constraint kind (found {found}); two conditions"
                " are an all_of over two expressions. Kinds: " + ", ".join(KIND_NAMES)
            )
        return self

    @property
    def kind(self) -> str:
        return next(k for k in KIND_NAMES if getattr(self, k) is not None)

    @property
    def payload(self) -> Any:
        return getattr(self, self.kind)

    def children(self) -> tuple[Require, ...]:
        if self.all_of is not None:
            return tuple(self.all_of)
        if self.any_of is not None:
            return tuple(self.any_of)
        if self.negate is not None:
            return (self.negate,)
        return ()


class Within(Closed):
    """An inclusive window over turn_index, restricting every matcher of the constraint."""

    first_turn: NonNegativeInt | None = None
    last_turn: NonNegativeInt | None = None

    @model_validator(mode="after")
    def _window(self, info: ValidationInfo) -> Within:
        # Both evaluate (restricts nothing; keeps nothing), so recorded ones are advisories.
        if self.first_turn is None and self.last_turn is None:
            rule_broken(info, "within declares neither first_turn nor last_turn; drop within")
        if (
            self.first_turn is not None
            and self.last_turn is not None
            and self.first_turn > self.last_turn
        ):
            rule_broken(
                info,
                f"within first_turn: {self.first_turn} is after last_turn: {self.last_turn},"
                " a window no event falls in; swap the bounds",
            )
        return self

    def keeps(self, turn_index: int) -> bool:
        lo = self.first_turn if self.first_turn is not None else 0
        hi = self.last_turn
        return turn_index >= lo and (hi is None or turn_index <= hi)


class BindValue(Closed):
    """An extraction: a field of the binder's events, optionally narrowed to a regex capture."""

    field: StrictStr
    pattern: StrictStr | None = None
    regex_engine: RegexEngine | None = None  # recorded-only; None inherits the block's

    @model_validator(mode="before")
    @classmethod
    def _authored_vocabulary(cls, data: Any, info: ValidationInfo) -> Any:
        recorded_only_keys(data, info, ("regex_engine",), "§ Correlating arguments")
        return data

    def engine_under(self, block: RegexEngine) -> RegexEngine:
        return self.regex_engine or block

    @model_validator(mode="after")
    def _field_address(self) -> BindValue:
        head, _, rest = self.field.partition(".")
        ok = (head in ("tool", "text", "result") and not _) or (
            head == "args" and (not _ or all(rest.split(".")))
        )
        if not ok:
            raise ValueError(
                f"bind field {self.field!r} addresses nothing: write tool, text, result, args"
                " or args.<dotted path>"
            )
        return self


class Bind(Closed):
    match: Matcher
    values: Annotated[dict[str, BindValue], Field(min_length=1)]
    on_unbound: OnUnbound | None = None

    @model_validator(mode="after")
    def _fields_fit_the_binder(self, info: ValidationInfo) -> Bind:
        # A name is only a key, and a field the kind never sets binds nothing (on_unbound
        # decides): both evaluate, so a recorded block keeps them as advisories.
        allowed = BINDABLE_FIELDS[self.match.kind]
        for name, value in self.values.items():
            if not _NAME.match(name):
                rule_broken(info, f"binding name {name!r} is not a name; use letters, digits and _")
            head = value.field.partition(".")[0]
            if head not in allowed:
                rule_broken(
                    info,
                    f"bind.values.{name}.field {value.field!r} is never set on the"
                    f" kind: {self.match.kind} events bind.match selects, so the name binds"
                    f" nothing; on that kind extract one of {', '.join(allowed)}",
                )
        return self

    @property
    def effective_on_unbound(self) -> OnUnbound:
        return self.on_unbound or "fail"


class Constraint(Closed):
    id: StrictStr = Field(min_length=1)
    description: StrictStr = ""
    weight: Real | None = None
    severity: Severity = "scored"
    on_missing: OnMissing | None = None
    within: Within | None = None
    bind: Bind | None = None
    require: Require

    @model_validator(mode="after")
    def _authored_on_missing(self, info: ValidationInfo) -> Constraint:
        if self.on_missing == "withhold":
            recorded_only_value(
                info,
                "on_missing: withhold is not part of the block's vocabulary (GRADING.md §"
                " on_missing: fail | pass) — only a recorded snapshot (Tolokaforge 0.33.1)"
                " carries it",
            )
        return self

    @property
    def effective_weight(self) -> float:
        return float(self.weight) if self.weight is not None else 1.0

    @property
    def effective_on_missing(self) -> OnMissing:
        return self.on_missing or "fail"

    @property
    def kind(self) -> str:
        return self.require.kind


class TracePath(Closed):
    """One alternative route: a named whole, scored over the shared constraints plus its own."""

    id: StrictStr = Field(min_length=1)
    description: StrictStr = ""
    constraints: Annotated[list[Constraint], Field(min_length=1)]


class TraceChecksConfig(Closed):
    constraints: list[Constraint] | None = None
    alternatives: list[TracePath] | None = None
    regex_engine: RegexEngine = "linear"

    @property
    def shared(self) -> tuple[Constraint, ...]:
        return tuple(self.constraints or ())

    @property
    def paths(self) -> tuple[TracePath, ...]:
        return tuple(self.alternatives or ())
