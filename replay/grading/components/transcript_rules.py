"""The transcript_rules component over the trial event timeline (GRADING.md § Transcript
Rules, § Turn bounds, § tool_expectations, § The runtime ledger: every skip is recorded).

A declared ``min_assistant_turns`` gates the whole component rather than adding a row, so
it cannot be diluted into a score a threshold swallows. Phrase rules read the agent's own
text; tool rules read the agent's own calls and need the record view.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from replay.grading.accounting import evaluated, skipped, transcript_populated
from replay.grading.components.result import ComponentResult
from replay.grading.patterns import RegexBudgetExceeded, compile_regex
from replay.timeline.build import assistant_texts, attempted_calls
from schemas.grading import CommunicateInfo, RequiredAction, TranscriptRulesConfig
from schemas.timeline import ToolExecutionStatus, ToolExecutorIdentity, TrialTimeline

UNRECORDED = (
    "the trial carries no tool-call record, so nothing says whether the calls it declared "
    "ran or who ran them (a bundle re-graded without its tool_log.yaml is in that state)"
)
_REQUESTOR = {"assistant": ToolExecutorIdentity.AGENT, "user": ToolExecutorIdentity.USER}


@dataclass(frozen=True, slots=True)
class AttemptedCall:
    """A tool_call event joined with its tool_result (None status: never ran or unrecorded)."""

    call_id: str | None
    tool_name: str | None
    arguments: dict[str, Any]
    executor: ToolExecutorIdentity | None
    status: ToolExecutionStatus | None


@dataclass(frozen=True, slots=True)
class SubCheck:
    rule: str
    passed: bool
    message: str


def agent_view_calls(timeline: TrialTimeline) -> list[AttemptedCall]:
    """The timeline module's one call/result join, as the tool rules read it."""
    out = []
    for call, result in attempted_calls(timeline):
        executor = (
            call.executor if call.executor is not None else (result.executor if result else None)
        )
        out.append(
            AttemptedCall(
                call_id=call.call_id,
                tool_name=call.tool_name,
                arguments=dict(call.arguments or {}),
                executor=executor,
                status=result.status if result is not None else None,
            )
        )
    return out


def evaluate_transcript_rules(
    timeline: TrialTimeline, rules: TranscriptRulesConfig
) -> ComponentResult:
    if not timeline.events:
        return _events_less(rules)
    texts = assistant_texts(timeline)
    calls = agent_view_calls(timeline)
    checks: list[SubCheck] = []
    floor_unmet = _floor(rules, len(texts))
    for text in rules.must_contain:
        checks.append(_must_contain(text, texts))
    try:
        for pattern in rules.disallow_regex:
            checks.append(_disallow_regex(pattern, rules.regex_engine, texts))
    except RegexBudgetExceeded as exc:  # a backtracking pattern past its time budget
        return ComponentResult.unmeasurable(f"transcript_rules.disallow_regex: {exc}")
    if rules.max_turns is not None:
        n = len(texts)
        ok = n <= rules.max_turns
        verb = "within limit of" if ok else "exceeds limit of"
        checks.append(
            SubCheck("max_turns", ok, f"Assistant turn count {n} {verb} {rules.max_turns}")
        )
    te = rules.tool_expectations
    if te is not None:
        present = timeline.records_present
        checks += [_required_tool(t, calls, present) for t in te.required_tools]
        checks += [_disallowed_tool(t, calls, present) for t in te.disallowed_tools]
    for action in rules.required_actions:
        checks.append(_required_action(action, calls, timeline.records_present))
    for info in rules.communicate_info:
        check = _communicate_info(info, texts)
        if check is not None:
            checks.append(check)
    result = _score(checks, floor_unmet)
    return replace(result, accounted=evaluated(transcript_populated(rules)))


def _events_less(rules: TranscriptRulesConfig) -> ComponentResult:
    """§ Turn bounds: on an events-less timeline min_assistant_turns is the one rule read;
    every sibling is skipped, and the skip is recorded (§ The runtime ledger)."""
    populated = transcript_populated(rules)
    floor_key = "transcript_rules.min_assistant_turns"
    accounted = evaluated(k for k in populated if k == floor_key) + skipped(
        "the timeline carries no events, so only min_assistant_turns is read",
        (k for k in populated if k != floor_key),
    )
    unread = [k for k in _declared_keys(rules) if k != "min_assistant_turns"]
    notes = (
        (
            f"Transcript: the timeline carries no events, so {', '.join(unread)} "
            f"{'was' if len(unread) == 1 else 'were'} skipped",
        )
        if unread
        else ()
    )
    if rules.min_assistant_turns is None:
        return ComponentResult(score=None, reasons=notes, accounted=accounted)
    result = _score([], _floor(rules, 0))
    return ComponentResult(score=result.score, reasons=result.reasons + notes, accounted=accounted)


def _declared_keys(rules: TranscriptRulesConfig) -> list[str]:
    te = rules.tool_expectations
    flags = {
        "min_assistant_turns": rules.min_assistant_turns is not None,
        "must_contain": bool(rules.must_contain),
        "disallow_regex": bool(rules.disallow_regex),
        "max_turns": rules.max_turns is not None,
        "tool_expectations": te is not None and bool(te.required_tools or te.disallowed_tools),
        "required_actions": bool(rules.required_actions),
        "communicate_info": any(i.required for i in rules.communicate_info),
    }
    return [k for k, on in flags.items() if on]


def _floor(rules: TranscriptRulesConfig, turns: int) -> SubCheck | None:
    floor = rules.min_assistant_turns
    if floor is None or turns >= floor:
        return None
    return SubCheck(
        "min_assistant_turns",
        False,
        f"Assistant turn count {turns} below min_assistant_turns of {floor}",
    )


def _score(checks: Sequence[SubCheck], floor_unmet: SubCheck | None) -> ComponentResult:
    rows = ([floor_unmet] if floor_unmet else []) + list(checks)
    if not rows:
        # a met floor alone leaves nothing that could have been violated
        return ComponentResult(score=1.0, reasons=("Transcript: score=1.00",))
    passed = sum(c.passed for c in rows)
    score = 0.0 if floor_unmet is not None else passed / len(rows)
    failures = [c.message for c in rows if not c.passed]
    head = f"Transcript: score={score:.2f}"
    return ComponentResult(
        score=score, reasons=(head + (": " + "; ".join(failures) if failures else ""),)
    )


def _must_contain(text: str, texts: Sequence[str]) -> SubCheck:
    needle = text.casefold()
    found = any(needle in t.casefold() for t in texts)
    msg = "Found required text" if found else "Required text"
    tail = "in an assistant message" if found else "not found in any assistant message"
    return SubCheck("must_contain", found, f"{msg} {text!r} {tail}")


def _disallow_regex(pattern: str, engine: str, texts: Sequence[str]) -> SubCheck:
    try:
        compiled = compile_regex(pattern, engine, ignore_case=True)
    except Exception as exc:  # an authoring error the load gate missed: a failed check
        return SubCheck("disallow_regex", False, f"Invalid disallow_regex {pattern!r}: {exc}")
    if any(compiled.search(t) for t in texts):
        return SubCheck(
            "disallow_regex", False, f"Disallowed pattern {pattern!r} matched an assistant message"
        )
    return SubCheck("disallow_regex", True, f"Disallowed pattern {pattern!r} did not match")


def _declared(calls: Sequence[AttemptedCall], tool: str) -> list[AttemptedCall]:
    return [c for c in calls if c.tool_name == tool]


def _agent_ran(calls: Sequence[AttemptedCall], tool: str) -> list[AttemptedCall]:
    return [
        c
        for c in _declared(calls, tool)
        if c.status is not None and c.executor is ToolExecutorIdentity.AGENT
    ]


def _unknown(calls: Sequence[AttemptedCall], tool: str, records_present: bool) -> bool:
    # a record can only name a declared call (G7), so an undeclared tool provably never ran
    return not records_present and bool(_declared(calls, tool))


def _required_tool(tool: str, calls: Sequence[AttemptedCall], records_present: bool) -> SubCheck:
    if _unknown(calls, tool, records_present):
        return SubCheck("required_tool", False, f"Required tool {tool!r}: {UNRECORDED}")
    ok = any(c.status is ToolExecutionStatus.SUCCESS for c in _agent_ran(calls, tool))
    verb = "was called successfully" if ok else "was never called successfully"
    return SubCheck("required_tool", ok, f"Required tool {tool!r} {verb}")


def _disallowed_tool(tool: str, calls: Sequence[AttemptedCall], records_present: bool) -> SubCheck:
    if _unknown(calls, tool, records_present):
        return SubCheck("disallowed_tool", False, f"Disallowed tool {tool!r}: {UNRECORDED}")
    offending = _agent_ran(calls, tool)
    if not offending:
        return SubCheck("disallowed_tool", True, f"Disallowed tool {tool!r} was never called")
    statuses = ", ".join(sorted({str(c.status) for c in offending}))
    return SubCheck(
        "disallowed_tool",
        False,
        f"Disallowed tool {tool!r} was called {len(offending)} time(s) (statuses: {statuses})",
    )


def _required_action(
    action: RequiredAction, calls: Sequence[AttemptedCall], records_present: bool
) -> SubCheck:
    label = f"required_action {action.action_id!r} (tool={action.name!r}, requestor={action.requestor!r})"
    if not action.name:
        return SubCheck("required_action", False, f"{label}: no name declared")
    if _unknown(calls, action.name, records_present):
        return SubCheck("required_action", False, f"{label}: {UNRECORDED}")
    keys = list(action.arguments) if action.compare_args is None else list(action.compare_args)
    executor = _REQUESTOR[action.requestor]
    for c in calls:
        if c.tool_name != action.name or c.executor is not executor:
            continue
        if c.status is not ToolExecutionStatus.SUCCESS:
            continue  # a failed call did not do the work
        if all(c.arguments.get(k) == action.arguments.get(k) for k in keys):
            return SubCheck("required_action", True, f"{label}: matched a successful tool call")
    args = f" with args {keys}" if keys else ""
    return SubCheck(
        "required_action", False, f"{label}: no matching successful tool call found{args}"
    )


def _communicate_info(info: CommunicateInfo, texts: Sequence[str]) -> SubCheck | None:
    if not info.required:
        return None  # advisory, not scored
    found = any(info.info.casefold() in t.casefold() for t in texts)
    msg = (
        f"Communicated required info {info.info!r}"
        if found
        else f"Required info {info.info!r} was not communicated to the user"
    )
    return SubCheck("communicate_info", found, msg)
