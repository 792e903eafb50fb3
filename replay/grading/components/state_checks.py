"""The state_checks component (GRADING.md § Hash-Based Grading, § The jsonpaths assertion
vocabulary, § Folding the hash verdict with jsonpaths, § Substrate Grading). Offline, the
hash's one decidable source is ``expect_initial_state``; what is not measurable, and why:
docs/readme/grading.md § What is measurable offline.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from jsonpath_ng.exceptions import JsonPathLexerError, JsonPathParserError
from jsonpath_ng.ext import parse as parse_jsonpath

from replay.grading.accounting import KeyRecord, evaluated, skipped
from replay.grading.components.canonical import extract_db_state, state_digest
from replay.grading.components.comparison_view import apply_view
from replay.grading.components.result import ComponentResult
from schemas.grading import JSONPATH_OPERATORS, ComparisonView, StateChecksConfig, StateHashConfig

HASH_MATCH = "State hash matches (tau-bench algorithm)"
WEIGHT_NOT_CONSULTED = (
    "state_checks.hash.weight was declared but not consulted: the block yields at most one "
    "score, so there is nothing to divide"
)
NO_SOURCE_SKIPPED = (
    "state_checks.hash is enabled with no source (neither golden_actions nor "
    "expect_initial_state), so no hash verdict was taken"
)
GOLDEN_NOT_MEASURABLE = (
    "state_checks.hash.golden_actions needs the golden actions replayed in a live world; "
    "the recorded evidence holds no replayed state"
)
PROBES_NOT_MEASURABLE = (
    "state_checks.db_probes query a live postgres inside the task's network; the recorded "
    "evidence holds no probe result"
)


@dataclass(frozen=True, slots=True)
class StateEvidence:
    """What the bundle recorded: the final environment state and the task's initial db."""

    final_state: Mapping[str, Any] | None
    initial_db: Any = None  # initial_state.json_db as the task snapshot carries it


def contains(haystack: Any, needle: Any, *, ci: bool = False) -> bool:
    """Recursive containment: strings by substring, containers by descent into elements
    (dict values, never keys), any other pair by equality; a container needle is never
    found (GRADING.md § Trace Checks, contains)."""
    if isinstance(haystack, str) and isinstance(needle, str):
        return needle.casefold() in haystack.casefold() if ci else needle in haystack
    if isinstance(haystack, Mapping):
        return any(contains(v, needle, ci=ci) for v in haystack.values())
    if isinstance(haystack, list | tuple | set | frozenset):
        return any(contains(v, needle, ci=ci) for v in haystack)
    if isinstance(needle, Mapping | list | tuple | set | frozenset):
        return False
    return json_equal(haystack, needle)


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values: a boolean is never a number (GRADING.md: "bool never folds
    to int"; Python's ``True == 1`` is not a JSON equality), numbers compare by value
    (72 == 72.0), containers element-wise."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _equals(actual: Any, expected: Any, *, ci: bool) -> bool:
    if ci and isinstance(actual, str) and isinstance(expected, str):
        return actual.casefold() == expected.casefold()
    return json_equal(actual, expected)


def _holds(op: str, actual: Any, expected: Any) -> bool:
    ci = op.endswith("_ci")
    if op.startswith("equals"):
        return _equals(actual, expected, ci=ci)
    return contains(actual, expected, ci=ci)


def check_assertion(state: Mapping[str, Any], assertion: Mapping[str, Any]) -> tuple[bool, str]:
    """One jsonpaths entry: exactly one of the four operators, else a failed check."""
    description = assertion.get("description") or ""
    suffix = f" ({description})" if description else ""
    ops = [op for op in JSONPATH_OPERATORS if assertion.get(op) is not None]
    glob = assertion.get("path_glob")
    target = glob if glob is not None else assertion.get("path")
    if target is None:
        return False, f"Assertion declares neither path nor path_glob{suffix}"
    if len(ops) > 1:
        return False, f"Assertion at {target} has multiple operators ({', '.join(ops)}){suffix}"
    if not ops:
        others = sorted(k for k in assertion if k not in {"path", "path_glob", "description"})
        return False, (
            f"Assertion at {target} has no recognized operator (got keys: {others}); "
            f"supported operators are {', '.join(JSONPATH_OPERATORS)}{suffix}"
        )
    values = _resolve(state, assertion, glob)
    if isinstance(values, str):
        return False, values + suffix
    if not values:
        return False, f"Path not found: {target}{suffix}"
    op = ops[0]
    expected = assertion[op]
    if any(_holds(op, v, expected) for v in values):
        return True, f"Path {target}: {op} {expected!r} holds{suffix}"
    return False, f"Path {target}: expected {op} {expected!r}, got {values[0]!r}{suffix}"


def _resolve(state: Mapping[str, Any], assertion: Mapping[str, Any], glob: Any) -> list[Any] | str:
    if glob is not None:
        files = state.get("filesystem")
        if not isinstance(files, Mapping):
            return f"filesystem is missing from the final state for glob {glob}"
        return [v for k, v in files.items() if fnmatch.fnmatchcase(str(k), str(glob))]
    try:
        expr = _compiled_path(str(assertion["path"]))
    except (JsonPathLexerError, JsonPathParserError, Exception) as exc:  # noqa: B014
        return f"Path {assertion['path']!r} does not parse as JSONPath: {exc}"
    return [m.value for m in expr.find(dict(state))]


@lru_cache(maxsize=4096)
def _compiled_path(path: str) -> Any:
    # parsing dominates an assertion's cost (a yacc parser per call); expressions are
    # immutable once parsed, so one per distinct path serves every trial
    return parse_jsonpath(path)


def jsonpath_score(
    state: Mapping[str, Any], assertions: list[dict[str, Any]]
) -> tuple[float, list[str]]:
    passed, reasons = 0, []
    for assertion in assertions:
        ok, reason = check_assertion(state, assertion)
        passed += ok
        if not ok:
            reasons.append(reason)
    return passed / len(assertions), reasons


def hash_verdict(
    block: StateHashConfig,
    evidence: StateEvidence,
    numeric_string_fields: list[str],
    view: ComparisonView | None = None,
    id_fields: Mapping[str, str | list[str]] | None = None,
) -> tuple[float | None, str, bool]:
    """(verdict, reason, measurable): 0.0 / 1.0, or None with why no verdict exists."""
    source = block.source
    if source is None:
        return None, NO_SOURCE_SKIPPED, True
    if source == "golden_actions":
        return None, GOLDEN_NOT_MEASURABLE, False
    if evidence.final_state is None:
        return None, "the bundle recorded no final state to hash", False
    if evidence.initial_db is None:
        return None, "the task snapshot records no initial_state.json_db to compare against", False
    expected_db = evidence.initial_db
    actual_db = extract_db_state(dict(evidence.final_state))
    if view is not None:
        expected_db = apply_view(expected_db, view, id_fields or {})
        actual_db = apply_view(actual_db, view, id_fields or {})
    expected = state_digest(expected_db, numeric_string_fields)
    actual = state_digest(actual_db, numeric_string_fields)
    extra = f" ({block.description})" if block.description else ""
    if actual == expected:
        return 1.0, HASH_MATCH + extra, True
    return (
        0.0,
        f"State hash mismatch: expected {expected[:16]}..., got {actual[:16]}...{extra}",
        True,
    )


def evaluate_state_checks(config: StateChecksConfig, evidence: StateEvidence) -> ComponentResult:
    """The folded component: hash only, jsonpaths only, both by weight, or neither."""
    if config.db_probes:
        return ComponentResult.unmeasurable(PROBES_NOT_MEASURABLE)
    reasons: list[str] = []
    h_score: float | None = None
    block = config.hash
    accounted: list[KeyRecord] = []
    if block is not None and block.source is not None and not block.enabled:
        accounted += skipped(
            "state_checks.hash.enabled is off, so the hash source is never read",
            _hash_sources(block),
        )
    if block is not None and block.enabled:
        loosened = hash_loosenings(config)
        if loosened:
            return ComponentResult.unmeasurable(
                f"state_checks.{loosened[0]} loosens the hash comparison the way Tolokaforge's "
                "live hash does, which this version does not re-derive offline"
            )
        h_score, reason, measurable = hash_verdict(
            block, evidence, config.numeric_string_fields, config.comparison_view, config.id_fields
        )
        if not measurable:
            return ComponentResult.unmeasurable(reason)
        reasons.append(reason)
        if block.source is not None:
            accounted += evaluated((f"state_checks.hash.{block.source}",))
            accounted += skipped(
                f"state_checks.hash.{block.source} is the expected state read (golden_actions "
                "is read first when both are declared)",
                (s for s in _hash_sources(block) if s != f"state_checks.hash.{block.source}"),
            )
    j_score: float | None = None
    if config.jsonpaths:
        if evidence.final_state is None:
            return ComponentResult.unmeasurable(
                "state_checks.jsonpaths read the final environment state, which the bundle did not record"
            )
        j_score, j_reasons = jsonpath_score(evidence.final_state, config.jsonpaths)
        reasons += j_reasons
        accounted += evaluated(("state_checks.jsonpaths",))
    if block is not None and block.weight is not None and not config.weight_consulted:
        reasons.append(WEIGHT_NOT_CONSULTED)
    if h_score is not None and j_score is not None and block is not None and block.weight is None:
        # only a recorded snapshot gets here (an authored one is refused at load)
        return ComponentResult.unmeasurable(
            "state_checks folds the hash with jsonpaths but the recorded snapshot declares no "
            "state_checks.hash.weight, and GRADING.md gives that fold no default share"
        )
    score = fold_state_sources(h_score, j_score, block.weight if block else None)
    if score is not None and not reasons:
        # every scored component names itself in the reasons (§ The runtime ledger), also
        # when every assertion held and nothing else had a sentence to add
        reasons.append(f"score={score:.2f}")
    return ComponentResult(
        score=score,
        reasons=(state_segment(reasons),) if reasons else (),
        accounted=tuple(accounted),
    )


def _hash_sources(block: StateHashConfig) -> tuple[str, ...]:
    return tuple(
        f"state_checks.hash.{f}"
        for f in ("expect_initial_state", "golden_actions")
        if getattr(block, f)
    )


def hash_loosenings(config: StateChecksConfig) -> tuple[str, ...]:
    """The recorded hash options a snapshot turns on that the offline hash does not apply."""
    options = ("compare_columns", "auto_mask_clock_columns", "auto_normalize_nullables")
    return tuple(name for name in options if getattr(config, name))


def state_segment(reasons: list[str]) -> str:
    """The one ``State:`` segment grade.reasons carries for this component."""
    return "State: " + "; ".join(reasons)


def fold_state_sources(
    hash_score: float | None, jsonpath: float | None, weight: float | None
) -> float | None:
    """hash only → the verdict; jsonpaths only → the assertion score; both →
    jsonpath × (1 − weight) + hash × weight; neither → no verdict."""
    if hash_score is None:
        return jsonpath
    if jsonpath is None:
        return hash_score
    if weight is None:
        raise ValueError(
            "both state sources produced a verdict but state_checks.hash.weight is not "
            "declared; the config model refuses this shape, so it was built around the loader"
        )
    return jsonpath * (1.0 - weight) + hash_score * weight
