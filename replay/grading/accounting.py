"""Key accounting: which populated scored key each replayed grade evaluated or skipped
(GRADING.md § Substrate Parity, "The runtime ledger"). Every evaluator records the keys it
accounted for (:func:`evaluated`, :func:`skipped`); what a leftover key does to the grade is
:func:`replay.grading.grade.account`'s. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from replay.trace_checks.addresses import iter_nodes
from replay.trace_checks.results import TraceChecksResult
from schemas.grading import GradingConfig, LlmJudgeConfig, StateChecksConfig, TranscriptRulesConfig
from schemas.key_manifest import BY_KEY
from schemas.trace_checks import Require, TraceChecksConfig

Outcome = Literal["evaluated", "skipped"]


@dataclass(frozen=True, slots=True)
class KeyRecord:
    key: str
    outcome: Outcome
    reason: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"key": self.key, "outcome": self.outcome, "reason": self.reason}


def evaluated(keys: Iterable[str]) -> tuple[KeyRecord, ...]:
    return tuple(KeyRecord(k, "evaluated") for k in keys)


def skipped(reason: str, keys: Iterable[str]) -> tuple[KeyRecord, ...]:
    return tuple(KeyRecord(k, "skipped", reason) for k in keys)


def _non_empty(value: Any) -> bool:
    # "A key counts as populated only when it is non-empty": [] / {} / "" / None / False unset
    return value is not None and value is not False and value != [] and value != {} and value != ""


def require_kinds(req: Require) -> tuple[str, ...]:
    """Every kind of a require tree, the root first, depth-first."""
    return tuple(node.kind for node, _ in iter_nodes(req, ""))


def trace_populated(block: TraceChecksConfig) -> tuple[str, ...]:
    """``trace_checks.constraints.<kind>`` for each kind the shared constraints write, then
    ``trace_checks.alternatives`` (a kind written only inside a path is covered there)."""
    kinds = dict.fromkeys(k for c in block.shared for k in require_kinds(c.require))
    out = [f"trace_checks.constraints.{k}" for k in kinds]
    if block.paths:
        out.append("trace_checks.alternatives")
    return tuple(out)


def state_populated(state: StateChecksConfig) -> tuple[str, ...]:
    out = []
    h = state.hash
    if h is not None:
        out += [
            f"state_checks.hash.{f}"
            for f in ("expect_initial_state", "golden_actions")
            if _non_empty(getattr(h, f))
        ]
    out += [f"state_checks.{f}" for f in ("jsonpaths", "db_probes") if getattr(state, f)]
    return tuple(out)


_TRANSCRIPT_RULES = (
    "must_contain",
    "disallow_regex",
    "max_turns",
    "min_assistant_turns",
    "required_actions",
    "communicate_info",
)


def transcript_populated(rules: TranscriptRulesConfig) -> tuple[str, ...]:
    out = [f"transcript_rules.{f}" for f in _TRANSCRIPT_RULES if _non_empty(getattr(rules, f))]
    te = rules.tool_expectations
    if te is not None:
        out += [
            f"transcript_rules.tool_expectations.{f}"
            for f in ("required_tools", "disallowed_tools")
            if getattr(te, f)
        ]
    return tuple(out)


def judge_populated(judge: LlmJudgeConfig) -> tuple[str, ...]:
    return ("llm_judge.rubric",) if judge.rubric is not None and judge.rubric.criteria else ()


def populated_scored_keys(config: GradingConfig) -> tuple[str, ...]:
    """The scored keys ``config`` populates, block by block."""
    out: list[str] = []
    if config.state_checks is not None:
        out += state_populated(config.state_checks)
    if config.transcript_rules is not None:
        out += transcript_populated(config.transcript_rules)
    if config.trace_checks is not None:
        out += trace_populated(config.trace_checks)
    if config.llm_judge is not None:
        out += judge_populated(config.llm_judge)
    if _non_empty(config.custom_checks):
        out.append("custom_checks.enabled")  # the block written: its suite must be accounted
    return tuple(out)


def unaccounted(populated: Sequence[str], records: Iterable[KeyRecord]) -> tuple[str, ...]:
    done = {r.key for r in records}
    return tuple(k for k in populated if k not in done)


def accounting_rows(records: Iterable[KeyRecord]) -> list[dict[str, Any]]:
    """One row per key (first record wins: an evaluation anywhere beats a skip elsewhere)."""
    by_key: dict[str, KeyRecord] = {}
    for r in records:
        seen = by_key.get(r.key)
        if seen is None or (seen.outcome == "skipped" and r.outcome == "evaluated"):
            by_key[r.key] = r
    return [r.as_json() for r in by_key.values()]


def expected_evaluators(keys: Sequence[str]) -> Mapping[str, str]:
    return {k: BY_KEY[k].evaluator for k in keys}


def trace_accounting(block: TraceChecksConfig, result: TraceChecksResult) -> tuple[KeyRecord, ...]:
    """§ The runtime ledger for trace_checks: on an events-less timeline every populated key
    is skipped; otherwise each constraint's root kind is evaluated, and the kinds nested
    in a constraint whose binder selected no value are skipped — unless another constraint
    evaluated the same kind (the skip is filed per kind). Routes count under alternatives."""
    populated = trace_populated(block)
    if result.component is None:
        return skipped(result.skipped_reason or "the timeline carries no events", populated)
    done: set[str] = set()
    why: dict[str, str] = {}
    for constraint, verdict in zip(block.shared, result.route_results.get("", ()), strict=False):
        kinds = require_kinds(constraint.require)
        done.add(kinds[0])
        if verdict.unbound:
            for kind in kinds[1:]:
                why.setdefault(
                    kind,
                    f"constraint {constraint.id}'s binder selected no value, so nothing entered "
                    f"the {kind} inside its require tree",
                )
        else:
            done.update(kinds[1:])
    out: list[KeyRecord] = []
    for key in populated:
        kind = key.rsplit(".", 1)[-1]
        if key == "trace_checks.alternatives" or kind in done:
            out.append(KeyRecord(key, "evaluated"))
        else:
            out.append(KeyRecord(key, "skipped", why.get(kind, "no constraint reached it")))
    return tuple(out)
