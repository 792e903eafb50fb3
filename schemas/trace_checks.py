"""The trace_checks config model (GRADING.md § Trace Checks, § What is validated before a run).

Every model is closed (``extra="forbid"``) so a misspelled operator, kind or matcher field
is a load error rather than an unset key. Refusals that depend on where a constraint sits
(its id, its route) are collected by :class:`TraceChecksConfig` in one pass, so an author
fixes every defect of a block from one error, each line naming the key it is about and what
to write instead.

Regex patterns are compiled at load with the engine the block declares — google-re2 (the
linear default) unless ``regex_engine: backtracking`` — so a pattern the engine refuses is a
load error and never a raise inside the evaluator after the trial was paid for.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    ValidationInfo,
    model_validator,
)

from schemas.reading import ReadNotes, is_recorded, notes_of, read_model, rule_broken
from schemas.regex_budget import compile_backtracking

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
# Operators that read whether a value is there at all, so they are applied to a None
# (is_null) or an argument the call never sent (omitted) rather than failing on it.
NULLNESS_OPERATORS: tuple[str, ...] = ("exists", "is_null", "omitted")

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
COMPOSITE_KINDS: frozenset[str] = frozenset({"all_of", "any_of", "negate"})
# Kinds whose verdict is the match itself: on_missing over a tree holding one is refused.
MATCH_VERDICT_KINDS: frozenset[str] = frozenset({"present", "absent", "count"})

# Which fields a matcher of each kind may carry a predicate on (§ Matchers).
MATCHABLE_FIELDS: dict[str, tuple[str, ...]] = {
    "tool_call": ("tool", "executor", "args", "status", "result"),
    "tool_result": ("tool", "executor", "status", "result"),
    "assistant_message": ("text",),
    "user_message": ("text",),
}
FIELD_NAMES: tuple[str, ...] = ("tool", "executor", "args", "status", "result", "text")
# Fields a bind.values[*].field may address, per matcher kind (§ Correlating arguments).
BINDABLE_FIELDS: dict[str, tuple[str, ...]] = {
    "tool_call": ("tool", "result", "args"),
    "tool_result": ("tool", "result"),
    "assistant_message": ("text",),
    "user_message": ("text",),
}

EventKind = Literal["tool_call", "tool_result", "assistant_message", "user_message"]
Quantifier = Literal["any", "all", "first", "last"]
AnchorQuantifier = Literal["first", "last"]
Among = Literal["tool_calls", "tool_results", "messages", "events"]
Severity = Literal["scored", "gate"]
# withhold is recorded-only (Tolokaforge 0.33.1's OnMissing; GRADING.md names fail | pass).
OnMissing = Literal["fail", "pass", "withhold"]
OnUnbound = Literal["fail", "pass"]
RegexEngine = Literal["linear", "backtracking"]

Real = StrictInt | StrictFloat
NonNegativeInt = Annotated[StrictInt, Field(ge=0)]
Patterns = StrictStr | Annotated[list[StrictStr], Field(min_length=1)]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class TraceChecksConfigError(ValueError):
    """A trace_checks block the model refuses; ``problems`` holds one line per defect."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = tuple(problems)
        super().__init__(
            "trace_checks cannot be loaded:\n" + "\n".join(f"  - {p}" for p in problems)
        )


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _recorded_only_keys(data: Any, info: ValidationInfo, keys: tuple[str, ...], where: str) -> None:
    """Keys only a recorded snapshot may carry: an authored block is refused them exactly as
    it is refused any key outside GRADING.md's vocabulary (issue 15: authored input keeps
    every load-time rule; a recorded one is read as the recorder wrote it)."""
    if is_recorded(info) or not isinstance(data, Mapping):
        return
    for key in keys:
        if key in data:
            raise ValueError(
                f"unknown key {key!r}; it is not part of the block's vocabulary ({where}) —"
                " only a recorded snapshot (Tolokaforge 0.33.1) carries it"
            )


def _recorded_value(info: ValidationInfo, message: str) -> None:
    """A value only a recorded snapshot may carry: refused on an authored read."""
    if not is_recorded(info):
        raise ValueError(message)


class Predicate(_Closed):
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
        _recorded_only_keys(data, info, (*RECORDED_OPERATORS, "regex_engine"), "§ Operators")
        if isinstance(data, Mapping) and isinstance(data.get("regex"), list):
            _recorded_value(
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


class Matcher(_Closed):
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


class _Side(_Closed):
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


class MatchPayload(_Closed):
    """present / absent: the verdict is the match itself."""

    match: Matcher


class CountPayload(_Closed):
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


class BeforePayload(_Closed):
    left: MatcherSide
    right: MatcherSide


class ImmediatelyBeforePayload(_Closed):
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


class AbsentBeforePayload(_Closed):
    forbidden: Matcher
    anchor: AnchorSide


class AbsentBetweenPayload(_Closed):
    forbidden: Matcher
    start: AnchorSide
    end: AnchorSide


class Require(_Closed):
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


class Within(_Closed):
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


class BindValue(_Closed):
    """An extraction: a field of the binder's events, optionally narrowed to a regex capture."""

    field: StrictStr
    pattern: StrictStr | None = None
    regex_engine: RegexEngine | None = None  # recorded-only; None inherits the block's

    @model_validator(mode="before")
    @classmethod
    def _authored_vocabulary(cls, data: Any, info: ValidationInfo) -> Any:
        _recorded_only_keys(data, info, ("regex_engine",), "§ Correlating arguments")
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


class Bind(_Closed):
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


class Constraint(_Closed):
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
            _recorded_value(
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


class TracePath(_Closed):
    """One alternative route: a named whole, scored over the shared constraints plus its own."""

    id: StrictStr = Field(min_length=1)
    description: StrictStr = ""
    constraints: Annotated[list[Constraint], Field(min_length=1)]


class TraceChecksConfig(_Closed):
    constraints: list[Constraint] | None = None
    alternatives: list[TracePath] | None = None
    regex_engine: RegexEngine = "linear"

    @model_validator(mode="after")
    def _block_rules(self, info: ValidationInfo) -> TraceChecksConfig:
        problems = block_problems(self)
        notes = notes_of(info)
        if notes is not None and not notes.authored:
            # Recorded: a rule the evaluator can still run past is an advisory (issue 15);
            # only what it cannot run (nothing to score, a pattern that does not compile,
            # a reference to a value nothing binds) is still refused.
            for p in problems:
                if p.advisory:
                    notes.advise(p.message)
            problems = [p for p in problems if not p.advisory]
        if problems:
            raise ValueError("\n".join(p.message for p in problems))
        return self

    @property
    def shared(self) -> tuple[Constraint, ...]:
        return tuple(self.constraints or ())

    @property
    def paths(self) -> tuple[TracePath, ...]:
        return tuple(self.alternatives or ())


_MISSING_HINTS = {
    "quantifier": "quantifier: any | all | first | last (an anchor takes first | last)",
    "match": "match: {kind: …, …} — the matcher this side selects events with",
    "require": "require: {<one of " + ", ".join(KIND_NAMES) + ">: …}",
    "id": "id: <a name unique across the block>",
    "forbidden": "forbidden: {kind: …, …} — a bare matcher",
    "left": "left: {quantifier: …, match: …}",
    "right": "right: {quantifier: …, match: …}",
    "anchor": "anchor: {quantifier: first | last, match: …}",
    "start": "start: {quantifier: first | last, match: …}",
    "end": "end: {quantifier: first | last, match: …}",
    "values": "values: {<name>: {field: …}}",
    "field": "field: tool | text | result | args | args.<dotted path>",
    "constraints": "constraints: [<constraint>, …]",
}


def load_trace_checks(data: Any, notes: ReadNotes | None = None) -> TraceChecksConfig:
    """Validate a trace_checks mapping, raising :class:`TraceChecksConfigError` on refusal.

    ``notes`` selects the read (``schemas.reading``): none or authored, every rule is an
    error; recorded, broken rules and unknown keys are noted there instead."""
    try:
        return read_model(
            TraceChecksConfig, data, notes or ReadNotes(authored=True), prefix="trace_checks"
        )
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"])
            msg = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                msg = f"unknown key {err['loc'][-1]!r}; it is not part of the block's vocabulary"
            elif err["type"] == "missing":
                key = str(err["loc"][-1])
                msg = f"{key} is required; write {_MISSING_HINTS.get(key, f'{key}: …')}"
            if loc:
                lines.append(f"trace_checks.{loc}: {msg}")
            else:  # block-level refusals arrive addressed, one per line
                lines.extend(msg.splitlines())
        raise TraceChecksConfigError(lines) from exc


# --- block-level refusals -----------------------------------------------------------------


class Problem(NamedTuple):
    """One refusal line. ``advisory``: the evaluator can still run the block as written, so
    a recorded read keeps the line as an advisory instead of refusing (issue 15)."""

    message: str
    advisory: bool = True


def _unrunnable(message: str) -> Problem:
    return Problem(message, advisory=False)


def block_problems(cfg: TraceChecksConfig) -> list[Problem]:
    """Every refusal that depends on the block as a whole, one line per defect."""
    problems: list[Problem] = []
    if not cfg.constraints and not cfg.alternatives:
        problems.append(
            _unrunnable(
                "trace_checks declares neither constraints nor alternatives, which scores"
                " nothing; declare constraints: [...] or two or more alternatives"
            )
        )
    if cfg.alternatives is not None and len(cfg.alternatives) < 2:
        problems.append(
            Problem(
                f"trace_checks.alternatives carries {len(cfg.alternatives)} path(s); two is the"
                " floor — the best of one path is that path, so move its constraints under"
                " constraints:"
            )
        )
    problems.extend(_duplicate_ids(cfg))
    problems.extend(_gate_only_routes(cfg))
    for address, constraint in iter_constraints(cfg):
        problems.extend(constraint_problems(constraint, address, cfg.regex_engine))
    return problems


def iter_constraints(cfg: TraceChecksConfig) -> Iterator[tuple[str, Constraint]]:
    """(address, constraint): trace_checks.<id> shared, trace_checks.<path>.<id> in a route."""
    for c in cfg.shared:
        yield f"trace_checks.{c.id}", c
    for path in cfg.paths:
        for c in path.constraints:
            yield f"trace_checks.{path.id}.{c.id}", c


def _duplicate_ids(cfg: TraceChecksConfig) -> list[Problem]:
    seen: dict[str, str] = {}
    problems = []
    entries = [(c.id, f"trace_checks.{c.id}") for c in cfg.shared]
    for path in cfg.paths:
        entries.append((path.id, f"trace_checks.alternatives[{path.id}]"))
        entries.extend((c.id, f"trace_checks.{path.id}.{c.id}") for c in path.constraints)
    for ident, where in entries:
        if ident in seen:
            problems.append(
                Problem(
                    f"{where}: id {ident!r} repeats {seen[ident]}; path ids and every constraint"
                    " id share one space, so two sub-check results would be indistinguishable —"
                    " rename one"
                )
            )
        else:
            seen[ident] = where
    return problems


def _gate_only_routes(cfg: TraceChecksConfig) -> list[Problem]:
    if len(cfg.paths) < 2:
        return []
    shared_scored = any(c.severity == "scored" for c in cfg.shared)
    scored = {
        p.id: shared_scored or any(c.severity == "scored" for c in p.constraints) for p in cfg.paths
    }
    if all(scored.values()) or not any(scored.values()):
        return []
    first_scored = next(pid for pid, s in scored.items() if s)
    return [
        Problem(
            f"trace_checks.alternatives[{pid}]: the route's decision set (the shared constraints"
            f" plus its own) has no scored member while route {first_scored!r}'s does, so it"
            " scores a constant 1.0 wherever its gates hold and stands in front of every scored"
            " route; move its gates into the shared constraints: list, or give it a scored"
            " constraint"
        )
        for pid, s in scored.items()
        if not s
    ]


# --- per-constraint refusals --------------------------------------------------------------


def constraint_problems(c: Constraint, address: str, engine: RegexEngine) -> list[Problem]:
    problems: list[Problem] = []
    if c.weight is not None and c.weight <= 0:
        # Not an advisory: a non-positive weight can leave the fold with no denominator.
        problems.append(
            _unrunnable(
                f"{address}.weight: {c.weight} is not positive; a zero weight is a check nothing"
                " scores — write severity: gate for evaluated-but-not-scored, or a weight > 0"
            )
        )
    if c.severity == "gate":
        # Recorded: the weight is read by nothing (a gate enters no fold) and the two pass
        # policies are evaluated as written — the reference serialises weight: 1.0 on every
        # gate, so this is the commonest advisory on a real snapshot.
        if c.weight is not None:
            problems.append(
                Problem(
                    f"{address}.weight: a severity: gate constraint enters neither the"
                    " numerator nor the denominator, so the weight is a key nothing reads; drop"
                    " weight, or drop severity: gate to score the constraint"
                )
            )
        if c.on_missing == "pass":
            problems.append(
                Problem(
                    f"{address}.on_missing: pass beside severity: gate opens the gate on every"
                    " trial whose anchor matched nothing; drop on_missing (it defaults to fail),"
                    " or make the constraint scored"
                )
            )
        if c.bind is not None and c.bind.on_unbound == "pass":
            problems.append(
                Problem(
                    f"{address}.bind.on_unbound: pass beside severity: gate holds the gate"
                    " vacuously whenever the binder selects nothing; drop on_unbound (it"
                    " defaults to fail), or make the constraint scored"
                )
            )
    if c.on_missing is not None:
        problems.extend(_on_missing_problems(c, address))
    problems.extend(_binding_problems(c, address))
    problems.extend(_same_matcher_problems(c.require, f"{address}.require"))
    problems.extend(_view_problems(c.require, f"{address}.require"))
    problems.extend(_regex_problems(c, address, engine))
    return problems


# Kinds over which each on_missing policy has nothing to decide. fail / pass: the three
# whose verdict is the match (GRADING.md § on_missing). withhold (recorded-only): the
# reference admits it over present and count — an empty match is withheld there, not
# decided — and refuses it only over absent, whose empty match is its positive verdict.
_REFUSING_ON_MISSING: dict[str, frozenset[str]] = {
    "fail": MATCH_VERDICT_KINDS,
    "pass": MATCH_VERDICT_KINDS,
    "withhold": frozenset({"absent"}),
}


def _on_missing_problems(c: Constraint, address: str) -> list[Problem]:
    """The policy reaches every kind in the tree (composites pass it down unchanged), so a
    kind it cannot decide over anywhere in the tree is refused. Recorded: an advisory — the
    policy is simply never consulted by those kinds (withhold still withholds an empty
    present / count, as the reference does)."""
    assert c.on_missing is not None
    refusing = _REFUSING_ON_MISSING[c.on_missing]
    verdict_kinds = sorted({k for k, _ in iter_kinds(c.require, "require") if k in refusing})
    if not verdict_kinds:
        return []
    return [
        Problem(
            f"{address}.on_missing: the require tree holds {', '.join(verdict_kinds)}, whose"
            " verdict is the match itself, so a policy for 'the matcher found nothing'"
            " would answer the question the constraint asks; drop on_missing (for"
            " 'applies only when X happened' write any_of: [absent X, …])"
        )
    ]


def iter_kinds(req: Require, address: str) -> Iterator[tuple[str, str]]:
    """(kind, address) for every node of a require tree, depth-first."""
    kind = req.kind
    yield kind, f"{address}.{kind}"
    for i, child in enumerate(req.children()):
        sub = f"{address}.{kind}[{i}]" if kind != "negate" else f"{address}.negate"
        yield from iter_kinds(child, sub)


def iter_nodes(req: Require, address: str) -> Iterator[tuple[Require, str]]:
    yield req, address
    kind = req.kind
    for i, child in enumerate(req.children()):
        sub = f"{address}.{kind}[{i}]" if kind != "negate" else f"{address}.negate"
        yield from iter_nodes(child, sub)


def leaf_matchers(req: Require) -> tuple[tuple[str, Matcher], ...]:
    """(payload path, matcher) for a leaf kind's matchers; () for a composite.

    The path's first segment is the role (match, left, right, forbidden, anchor, start, end).
    """
    p = req.payload
    match req.kind:
        case "present" | "absent" | "count":
            return (("match", p.match),)
        case "before" | "immediately_before":
            return (("left.match", p.left.match), ("right.match", p.right.match))
        case "absent_before":
            return (("forbidden", p.forbidden), ("anchor.match", p.anchor.match))
        case "absent_between":
            return (
                ("forbidden", p.forbidden),
                ("start.match", p.start.match),
                ("end.match", p.end.match),
            )
    return ()


def iter_matchers(req: Require, address: str) -> Iterator[tuple[str, Matcher]]:
    """(address, matcher) for every matcher of a require tree, in declaration order."""
    for node, where in iter_nodes(req, address):
        for path, matcher in leaf_matchers(node):
            yield f"{where}.{node.kind}.{path}", matcher


def _binding_problems(c: Constraint, address: str) -> list[Problem]:
    """A reference to a name nothing binds cannot be read (there is no value to compare), so
    those stay refusals on every read; a bound name nothing references only multiplies the
    candidate set, which evaluates — an advisory on a recorded read."""
    problems: list[Problem] = []
    referenced: dict[str, str] = {}
    for where, matcher in iter_matchers(c.require, f"{address}.require"):
        for label, pred in matcher.predicates():
            for name in pred.binding_names():
                referenced.setdefault(name, f"{where}.{label}")
    if c.bind is None:
        for name, where in referenced.items():
            problems.append(
                _unrunnable(
                    f"{where}: references binding {name!r} but the constraint declares no bind;"
                    f" add bind: {{match: …, values: {{{name}: {{field: …}}}}}} or compare"
                    " against a literal with equals / contains"
                )
            )
        return problems
    for label, pred in c.bind.match.predicates():
        if pred.binding_names():
            problems.append(
                _unrunnable(
                    f"{address}.bind.match.{label}: the binder cannot reference a binding — it"
                    " is what supplies the values; compare against a literal there"
                )
            )
    for name, where in referenced.items():
        if name not in c.bind.values:
            problems.append(
                _unrunnable(
                    f"{where}: references binding {name!r}, which this constraint's bind does"
                    f" not declare (it binds {', '.join(sorted(c.bind.values))}); a binding is"
                    " scoped to its own constraint — declare it under bind.values or fix the"
                    " name"
                )
            )
    for name in c.bind.values:
        if name not in referenced:
            problems.append(
                Problem(
                    f"{address}.bind.values.{name}: binds {name!r} but no predicate in this"
                    f" constraint references it; reference it with equals_binding: {name} or"
                    f" contains_binding: {name}, or drop it"
                )
            )
    return problems


_LEFT_OK = ("first", "any")
_RIGHT_OK = ("last", "any")


def _same_matcher_problems(req: Require, address: str) -> list[Problem]:
    """Constant or redundant shapes: each evaluates (to its constant), so all advisories."""
    problems: list[Problem] = []
    for node, where in iter_nodes(req, address):
        p = node.payload
        kind = node.kind
        if kind in ("before", "immediately_before") and p.left.match == p.right.match:
            ql, qr = p.left.quantifier, p.right.quantifier
            if ql in _LEFT_OK and qr in _RIGHT_OK:
                continue
            why = []
            if ql not in _LEFT_OK:
                why.append(
                    f"left: {ql} selects the last of the matched events and nothing follows it"
                )
            if qr not in _RIGHT_OK:
                why.append(
                    f"right: {qr} selects the first of the matched events and nothing precedes it"
                )
            problems.append(
                Problem(
                    f"{where}.{kind}: the same matcher on both sides under left: {ql}, right:"
                    f" {qr} is false on every trajectory ({'; '.join(why)}). To require the"
                    " events to occur at least twice write left: first (or any) with right:"
                    " last (or any)"
                )
            )
        elif kind == "absent_before" and p.forbidden == p.anchor.match:
            if p.anchor.quantifier == "first":
                problems.append(
                    Problem(
                        f"{where}.absent_before: forbidding its own anchor under anchor: first"
                        " is a present constraint written the long way round — nothing precedes"
                        " the first of the matched events, so it only asks whether they"
                        " occurred; write present: {match: …} instead (anchor: last reads 'the"
                        " events occur once')"
                    )
                )
        elif (
            kind == "absent_between"
            and p.forbidden == p.start.match
            and p.forbidden == p.end.match
            and (p.start.quantifier, p.end.quantifier) != ("first", "last")
        ):
            problems.append(
                Problem(
                    f"{where}.absent_between: forbidding its own anchors under start:"
                    f" {p.start.quantifier}, end: {p.end.quantifier} leaves an empty or inverted"
                    " window on every trajectory, so it is false on every trajectory; write"
                    " start: first, end: last to say the events occur exactly twice"
                )
            )
    return problems


_VIEW_KINDS: dict[str, tuple[str, ...]] = {
    "tool_calls": ("tool_call",),
    "tool_results": ("tool_result",),
    "messages": ("assistant_message", "user_message"),
    "events": ("tool_call", "tool_result", "assistant_message", "user_message"),
}


def _view_problems(req: Require, address: str) -> list[Problem]:
    """A side whose kind the ``among`` view never holds is adjacent to nothing, so the
    adjacency never holds there (the reference evaluates it so): an advisory when recorded."""
    problems: list[Problem] = []
    for node, where in iter_nodes(req, address):
        if node.kind != "immediately_before":
            continue
        p = node.payload
        for role, side in (("left", p.left), ("right", p.right)):
            if side.match.kind not in _VIEW_KINDS[p.among]:
                fits = [v for v, kinds in _VIEW_KINDS.items() if side.match.kind in kinds]
                problems.append(
                    Problem(
                        f"{where}.immediately_before.{role}: a kind: {side.match.kind} matcher"
                        f" never appears in the among: {p.among} view, so no adjacency holds on"
                        f" any trajectory; write among: {' or '.join(fits)}"
                    )
                )
    return problems


def compile_pattern(pattern: str, engine: RegexEngine) -> Any:
    """Compile with the declared engine; raises ValueError naming the engine's complaint."""
    if engine == "backtracking":
        try:  # every match time-bounded: a recorded snapshot's pattern must not hang retrace
            return compile_backtracking(pattern)
        except re.error as exc:
            raise ValueError(str(exc)) from exc
    import re2

    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile(pattern, options=options)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise ValueError(str(detail)) from exc


def _predicate_patterns(
    where: str, pred: Predicate, block: RegexEngine
) -> Iterator[tuple[str, str, RegexEngine]]:
    engine = pred.engine_under(block)
    for op in REGEX_OPERATORS:
        if getattr(pred, op) is None:
            continue
        many = not isinstance(getattr(pred, op), str)
        for i, pattern in enumerate(pred.patterns(op)):
            yield (f"{where}.{op}[{i}]" if many else f"{where}.{op}"), pattern, engine


def _regex_problems(c: Constraint, address: str, engine: RegexEngine) -> list[Problem]:
    """A pattern its engine refuses cannot be evaluated, on any read (the reference refuses
    such a bundle too: ``bundles_uncompilable_pattern``)."""
    sites: list[tuple[str, str, RegexEngine]] = []
    matchers = list(iter_matchers(c.require, f"{address}.require"))
    if c.bind is not None:
        matchers.append((f"{address}.bind.match", c.bind.match))
    for where, matcher in matchers:
        for label, pred in matcher.predicates():
            sites.extend(_predicate_patterns(f"{where}.{label}", pred, engine))
    if c.bind is not None:
        sites.extend(
            (f"{address}.bind.values.{name}.pattern", v.pattern, v.engine_under(engine))
            for name, v in c.bind.values.items()
            if v.pattern is not None
        )
    problems = []
    for where, pattern, site_engine in sites:
        try:
            compile_pattern(pattern, site_engine)
        except ValueError as exc:
            linear = site_engine == "linear"
            engine_name = "the linear engine (RE2)" if linear else "the backtracking engine"
            hint = (
                " — RE2 has no backreferences or lookaround; rewrite the pattern without them"
                if linear
                else ""
            )
            problems.append(
                _unrunnable(
                    f"{where}: {pattern!r} does not compile under {engine_name}: {exc}{hint}"
                )
            )
    return problems


def iter_block_matchers(cfg: TraceChecksConfig) -> Iterator[tuple[str, Matcher]]:
    """Every matcher of a block with the address the authoring gate reports it at:
    ``trace_checks.<id>`` (shared) or ``trace_checks.<path>.<id>`` (in a route), then
    ``.require.…`` for the require tree and ``.bind.match`` for the binder."""
    for address, constraint in iter_constraints(cfg):
        yield from iter_matchers(constraint.require, f"{address}.require")
        if constraint.bind is not None:
            yield f"{address}.bind.match", constraint.bind.match
