"""Loading a trace_checks block: the closed models, then the block rules, every refusal of one
block in one error (GRADING.md § Trace Checks, § What is validated before a run).

Each line names the key it is about and what to write instead, so an author fixes every
defect from one error. The read (``schemas.reading``) decides what a broken rule is: none or
authored, every rule an error; recorded, the rules the evaluator can run past are advisories.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from replay.reading import read_model
from replay.trace_checks.rules import block_problems
from schemas.reading import ReadNotes
from schemas.trace_checks import KIND_NAMES, TraceChecksConfig


class TraceChecksConfigError(ValueError):
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
    """Validate a trace_checks mapping, raising :class:`TraceChecksConfigError` on refusal.

    ``notes`` selects the read (``schemas.reading``): none or authored, every rule is an
    error; recorded, broken rules and unknown keys are noted there instead."""
    notes = notes or ReadNotes(authored=True)
    try:
        cfg = read_model(TraceChecksConfig, data, notes, prefix="trace_checks")
    except ValidationError as exc:
        raise TraceChecksConfigError(_described(exc)) from exc
    problems = block_problems(cfg)
    if not notes.authored:
        # Recorded: a rule the evaluator can still run past is an advisory (issue 15); only
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
