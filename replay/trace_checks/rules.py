"""The trace_checks load-time rules (GRADING.md § What is validated before a run) and the load
that applies them: the closed models, then every rule that reads the block as a whole — ids,
routes, gates, on_missing, bindings, constant shapes, and each pattern compiled under its
declared engine (a refused pattern is a load error, never a raise after the trial was paid
for). All refusals of a block arrive in one error, one line per defect naming its key; a
recorded read (``schemas.reading``) keeps those the evaluator can run past as advisories.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from pydantic import ValidationError

from replay.grading.patterns import compile_regex
from replay.trace_checks.addresses import (
    constraint_matchers,
    iter_constraints,
    iter_matchers,
    iter_nodes,
)
from schemas.errors import LedgerError
from schemas.reading import ReadNotes, read_model
from schemas.timeline import VIEW_KINDS
from schemas.trace_checks import (
    KIND_NAMES,
    MATCH_VERDICT_KINDS,
    Constraint,
    Require,
    TraceChecksConfig,
)
from schemas.trace_matchers import REGEX_OPERATORS, Predicate, RegexEngine


class TraceChecksConfigError(LedgerError, ValueError):
    """A trace_checks block the model refuses; ``problems`` holds one line per defect."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = tuple(problems)
        super().__init__(
            "trace_checks cannot be loaded:\n" + "\n".join(f"  - {p}" for p in problems)
        )


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
    """Validate a trace_checks mapping under the read ``notes`` select (none: authored),
    raising :class:`TraceChecksConfigError` on refusal."""
    notes = notes or ReadNotes(authored=True)
    try:
        cfg = read_model(TraceChecksConfig, data, notes, prefix="trace_checks")
    except ValidationError as exc:
        raise TraceChecksConfigError(_described(exc)) from exc
    problems = block_problems(cfg)
    if not notes.authored:
        # Recorded: a rule the evaluator can still run past is an advisory (evidence, not
        # authorship: README § Compatibility); only
        # what it cannot run (nothing to score, a pattern that does not compile, a reference
        # to a value nothing binds) is still refused.
        for problem in problems:
            if problem.advisory:
                notes.advise(problem.message)
        problems = [p for p in problems if not p.advisory]
    if problems:
        raise TraceChecksConfigError("\n".join(p.message for p in problems).splitlines())
    return cfg


def _described(exc: ValidationError) -> list[str]:
    """The models' refusals, each addressed by its dotted location in the block."""
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
        else:  # a block that is not a mapping at all
            lines.extend(msg.splitlines())
    return lines


class Problem(NamedTuple):
    """One refusal line. ``advisory``: the evaluator can still run the block as written, so
    a recorded read keeps the line as an advisory instead of refusing (README § Compatibility)."""

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
    verdict_kinds = sorted({n.kind for n, _ in iter_nodes(c.require, "") if n.kind in refusing})
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


def _binding_problems(c: Constraint, address: str) -> list[Problem]:
    """A reference to a name nothing binds cannot be read (there is no value to compare), so
    those stay refusals on every read; a bound name nothing references only multiplies the
    candidate set, which evaluates — an advisory on a recorded read."""
    referenced: dict[str, str] = {}
    for where, matcher in iter_matchers(c.require, f"{address}.require"):
        for label, pred in matcher.predicates():
            for name in pred.binding_names():
                referenced.setdefault(name, f"{where}.{label}")
    if c.bind is None:
        return [
            _unrunnable(
                f"{where}: references binding {name!r} but the constraint declares no bind;"
                f" add bind: {{match: …, values: {{{name}: {{field: …}}}}}} or compare"
                " against a literal with equals / contains"
            )
            for name, where in referenced.items()
        ]
    problems = [
        _unrunnable(
            f"{address}.bind.match.{label}: the binder cannot reference a binding — it"
            " is what supplies the values; compare against a literal there"
        )
        for label, pred in c.bind.match.predicates()
        if pred.binding_names()
    ]
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


def _view_problems(req: Require, address: str) -> list[Problem]:
    """A side whose kind the ``among`` view never holds is adjacent to nothing, so the
    adjacency never holds there (the reference evaluates it so): an advisory when recorded."""
    problems: list[Problem] = []
    for node, where in iter_nodes(req, address):
        if node.kind != "immediately_before":
            continue
        p = node.payload
        for role, side in (("left", p.left), ("right", p.right)):
            if side.match.kind not in VIEW_KINDS[p.among]:
                fits = [v for v, kinds in VIEW_KINDS.items() if side.match.kind in kinds]
                problems.append(
                    Problem(
                        f"{where}.immediately_before.{role}: a kind: {side.match.kind} matcher"
                        f" never appears in the among: {p.among} view, so no adjacency holds on"
                        f" any trajectory; write among: {' or '.join(fits)}"
                    )
                )
    return problems


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
    for where, matcher in constraint_matchers(c, address):
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
            compile_regex(pattern, site_engine)
        except ValueError as exc:
            linear = site_engine == "linear"
            engine_name = "the linear engine (RE2)" if linear else "the backtracking engine"
            hint = " — RE2 has no backreferences or lookaround; rewrite the pattern without them"
            problems.append(
                _unrunnable(
                    f"{where}: {pattern!r} does not compile under {engine_name}: {exc}"
                    + (hint if linear else "")
                )
            )
    return problems
