"""An inspect_ai sample as its agents executed it (docs/readme/inspect.md § "Agents").

``sample.messages`` is the top-level conversation only: react() removes its final
``submit`` call from it, and a handoff() or as_tool() sub-agent's calls never appear in
it. ``sample.events`` records what ran: every model call (ModelEvent, of whichever agent)
with the output that declared its tool calls, and every tool call (ToolEvent) in the
order it started. This module reads that record into the executed conversation
(``trial.agent_message``) and the tool-call records, each naming its agent: the path of
agent spans above it (``boss/helper``), else the top-level solver's name.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any


def flatten(events: Iterable[Any]) -> Iterator[Any]:
    """Every event in log order, the ones an older log nests inside a tool or subtask
    event (``events``) right after it."""
    for ev in events:
        yield ev
        nested = getattr(ev, "events", None)
        if nested and getattr(ev, "event", None) in ("tool", "subtask"):
            yield from flatten(nested)


def in_start_order(events: Sequence[Any]) -> list[Any]:
    """The events sorted by when they started (stable), not by where the file holds them.

    inspect writes an original log in the order events start, but rewrites a re-scored
    one (``inspect score``, ``score()``) through its event tree, which moves a ToolEvent
    after the span of the call it made: a handoff's or an as_tool() sub-agent's own
    calls then come first. Their start times are the same in both files. A log whose
    timestamps cannot be compared (naive beside aware) keeps its file order.
    """
    try:
        return sorted(events, key=lambda ev: ev.timestamp)
    except (AttributeError, TypeError):
        return list(events)


class AgentNames:
    """Span id -> the agent it runs in, read from the sample's ``span_begin`` events."""

    def __init__(self, events: Sequence[Any]) -> None:
        self._spans = {ev.id: ev for ev in events if getattr(ev, "event", None) == "span_begin"}
        self._memo: dict[str | None, str | None] = {}

    def __call__(self, span_id: str | None) -> str | None:
        if span_id not in self._memo:
            self._memo[span_id] = self._name(span_id)
        return self._memo[span_id]

    def _name(self, span_id: str | None) -> str | None:
        agents: list[str] = []
        solver: str | None = None
        seen: set[str] = set()
        while span_id is not None and span_id in self._spans and span_id not in seen:
            seen.add(span_id)  # a malformed log's parent cycle ends the walk
            span = self._spans[span_id]
            if span.type == "agent":
                agents.append(span.name)
            elif span.type == "solver":
                solver = span.name  # the outermost one wins: the top-level solver
            span_id = span.parent_id
        return "/".join(reversed(agents)) if agents else solver


@dataclass(frozen=True, slots=True)
class Executed:
    """The executed conversation (None: the sample logged no model call) and the ToolEvents
    with the agent of each, in log order."""

    messages: list[dict[str, Any]] | None
    tools: list[tuple[Any, str | None]]


def _declarations(message: Any) -> list[dict[str, Any]]:
    return [
        {"id": c.id, "name": c.function, "arguments": dict(c.arguments or {})}
        for c in getattr(message, "tool_calls", None) or ()
    ]


def _user_key(m: Any) -> Any:
    mid = getattr(m, "id", None)
    return mid if mid is not None else ("text", m.text)


def executed(solver: Sequence[Any]) -> Executed:
    """The solver phase's model and tool events as the executed conversation and records.

    Each model call with an output is one assistant message declaring the calls its output
    made; a user message is placed before the first model call it was given to (a
    message id seen once, so a handoff's copy of the parent's history is not repeated).
    """
    agent_of = AgentNames(solver)
    messages: list[dict[str, Any]] = []
    tools: list[tuple[Any, str | None]] = []
    given: set[Any] = set()
    models = 0
    for ev in solver:
        kind = getattr(ev, "event", None)
        if kind == "tool":
            tools.append((ev, agent_of(ev.span_id)))
        elif kind == "model":
            models += 1
            agent = agent_of(ev.span_id)
            for m in ev.input or ():
                if m.role == "user" and _user_key(m) not in given:
                    given.add(_user_key(m))
                    messages.append(_entry(len(messages), "user", m.text, [], agent))
            choices = getattr(ev.output, "choices", None)
            if choices:
                out = choices[0].message
                messages.append(
                    _entry(len(messages), "assistant", out.text, _declarations(out), agent)
                )
    return Executed(messages if models else None, tools)


def _entry(
    index: int, role: str, content: str, calls: list[dict[str, Any]], agent: str | None
) -> dict[str, Any]:
    entry: dict[str, Any] = {"index": index, "role": role, "content": content}
    if calls:
        entry["tool_calls"] = calls
    if agent is not None:
        entry["agent"] = agent
    return entry
