"""Correlating arguments: candidates, universal quantification, the three-valued candidate set.

GRADING.md § Correlating arguments across matchers. Candidates are distinct *values* (value
and JSON type, so True and 1 are two). The set is three-valued: D definitely bound, U the
values of undecidable binder events (a value in D absorbs its undecidable reading); the
readings compared are D, D ∪ {u} for each u in U, and D ∪ U. Each distinct candidate costs
one evaluation of the require tree; the readings are folds of those verdicts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import product
from typing import Any

from replay.grading.patterns import compile_regex
from replay.trace_checks.kleene import Truth, Verdict, fold_truths
from replay.trace_checks.matching import (
    UNKNOWN,
    Resolution,
    TimelineIndex,
    describe_missing,
    read_field,
    render_value,
)
from schemas.trace_checks import Bind
from schemas.trace_matchers import RegexEngine


@dataclass(frozen=True, slots=True)
class Candidate:
    """One distinct assignment of every bound name; ``env`` is None where a value is unread."""

    key: Any
    env: Mapping[str, Any] | None
    label: str


def identity(value: Any) -> Any:
    """A hashable key equal exactly when the values are equal and of the same JSON type."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, int):
        return ("i", value)
    if isinstance(value, float):
        return ("f", value)
    if isinstance(value, str):
        return ("s", str(value))
    if isinstance(value, dict):
        return ("o", tuple(sorted((str(k), identity(v)) for k, v in value.items())))
    if isinstance(value, list | tuple):
        return ("a", tuple(identity(v) for v in value))
    if value is None:
        return ("n",)
    return ("x", repr(value))


def label_of(env: Mapping[str, Any]) -> str:
    return "(" + ", ".join(f"{k}={render_value(v)}" for k, v in env.items()) + ")"


def _extract(idx: TimelineIndex, event: Any, field: str, pattern: Any) -> list[Any] | Any:
    """The values one event binds for one name: [] binds nothing, UNKNOWN is unreadable."""
    value = read_field(idx, event, field)
    if value is UNKNOWN:
        return UNKNOWN
    if value is None:
        return []  # an argument the agent omitted binds nothing
    if pattern is None:
        return [value]
    if not isinstance(value, str):
        return []  # a capture is taken off text alone
    return [m.group(1) if pattern.groups else m.group(0) for m in pattern.finditer(value)]


def event_candidates(
    idx: TimelineIndex, event: Any, bind: Bind, engine: RegexEngine
) -> list[Candidate] | None:
    """The candidates one binder event supplies; None when one of its values is unreadable."""
    names = list(bind.values)
    per_name: list[list[Any]] = []
    for name in names:
        spec = bind.values[name]
        pattern = (
            compile_regex(spec.pattern, spec.engine_under(engine))
            if spec.pattern is not None
            else None
        )
        values = _extract(idx, event, spec.field, pattern)
        if values is UNKNOWN:
            return None
        per_name.append(values)
    out = []
    for combo in product(*per_name):
        env = dict(zip(names, combo, strict=True))
        key = tuple(identity(v) for v in combo)
        out.append(Candidate(key, env, label_of(env)))
    return out


@dataclass(frozen=True, slots=True)
class CandidateSet:
    definite: tuple[Candidate, ...]
    undecidable: tuple[Candidate, ...]
    binder: Resolution
    unread: tuple[int, ...]  # binder positions whose value the trial does not carry
    names: tuple[str, ...] = ()


def collect_candidates(
    idx: TimelineIndex, binder: Resolution, bind: Bind, engine: RegexEngine
) -> CandidateSet:
    definite: dict[Any, Candidate] = {}
    undecidable: dict[Any, Candidate] = {}
    unread: list[int] = []
    for positions, into in ((binder.matched, definite), (binder.undecidable, undecidable)):
        for pos in positions:
            cands = event_candidates(idx, idx.events[pos], bind, engine)  # positions are dense (G1)
            if cands is None:
                unread.append(pos)
                key = ("unread", pos)
                into[key] = Candidate(key, None, f"(the value at position {pos})")
                continue
            for c in cands:
                into.setdefault(c.key, c)
    # A value the trial definitely binds absorbs its undecidable reading.
    for key in definite:
        undecidable.pop(key, None)
    # A set has nothing to choose: candidates are reported in a canonical order of their
    # values, never in the order the binder's events happened to occur.
    return CandidateSet(
        tuple(definite[k] for k in sorted(definite, key=repr)),
        tuple(undecidable[k] for k in sorted(undecidable, key=repr)),
        binder,
        tuple(unread),
        tuple(bind.values),
    )


def fold_bound(
    cands: CandidateSet,
    evaluate: Callable[[Mapping[str, Any]], Verdict],
    on_unbound: str,
) -> tuple[Verdict, tuple[Mapping[str, Any], ...]]:
    """∀ candidate: the require tree folded over the compared readings of the set, and the
    failing bindings (the values whose own reading failed)."""
    verdicts: dict[Any, Verdict] = {}
    for c in (*cands.definite, *cands.undecidable):
        if c.env is None:
            verdicts[c.key] = Verdict(Truth.UNKNOWN, "the bound value is not carried by the trial")
        else:
            verdicts[c.key] = evaluate(c.env)
    unbound = Truth.TRUE if on_unbound == "pass" else Truth.FALSE
    d, u = list(cands.definite), list(cands.undecidable)
    if d:
        base = fold_truths(verdicts[c.key].truth for c in d)
        readings = {base}
        if u:
            readings.add(fold_truths([base, *(verdicts[c.key].truth for c in u)]))
            readings.update(fold_truths([base, verdicts[c.key].truth]) for c in u)
    else:
        # D empty: the empty reading is on_unbound, and each singleton is its own reading.
        readings = {unbound}
        if u:
            readings.add(fold_truths(verdicts[c.key].truth for c in u))
            readings.update(verdicts[c.key].truth for c in u)
    positions = (
        frozenset().union(*(v.positions for v in verdicts.values())) if verdicts else frozenset()
    )
    diagnostics = tuple(dict.fromkeys(x for v in verdicts.values() for x in v.diagnostics))
    failing = [c for c in (*d, *u) if verdicts[c.key].truth is Truth.FALSE]
    failing_envs = tuple(c.env for c in failing if c.env is not None)

    if readings == {Truth.TRUE}:
        return Verdict(Truth.TRUE, "", positions, diagnostics), failing_envs
    if readings == {Truth.WITHHELD}:
        first = next(v for v in verdicts.values() if v.truth is Truth.WITHHELD)
        return Verdict(Truth.WITHHELD, first.message, frozenset(), diagnostics), failing_envs
    if readings == {Truth.FALSE}:
        if failing:
            first = verdicts[failing[0].key]
            under = ", ".join(c.label for c in failing)
            msg = f"{first.message}; failed under {under}"
        else:
            msg = (
                "bind selected no candidate: no binder event carried a value for "
                f"{', '.join(cands.names)} (on_unbound: fail)"
            )
        return Verdict(Truth.FALSE, msg, positions, diagnostics), failing_envs
    return Verdict(
        Truth.UNKNOWN, _undecided_message(cands, verdicts), positions, diagnostics
    ), failing_envs


def _undecided_message(cands: CandidateSet, verdicts: Mapping[Any, Verdict]) -> str:
    for c in (*cands.definite, *cands.undecidable):
        v = verdicts[c.key]
        if v.truth is Truth.UNKNOWN and c.env is not None:
            return f"{v.message} under {c.label}"
    parts = []
    if cands.binder.undecidable:
        parts.append(
            f"binder events at {list(cands.binder.undecidable[:5])} may or may not bind"
            f" ({describe_missing(cands.binder)})"
        )
    if cands.unread:
        parts.append(f"the bound value at positions {list(cands.unread[:5])} is not carried")
    detail = "; ".join(parts) or "the candidate set is not determined"
    return f"bind is undecided: the readings of the candidate set disagree — {detail}"
