"""Timeline construction rate: ``build_trial_timeline`` over 40-event trials, one core.

Target: >= 20,000 timelines/s. Printed beside a baseline measured in the same
run: 40 plain ``TraceEvent(...)`` dataclass constructions and no join work at all — what
a straightforward implementation pays before it has joined anything. The builder beats it
by constructing events through the slot descriptors (see replay/timeline/build.py).

    PYTHONPATH=. python -m benchmarks.timeline [--trials 2000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import random

from benchmarks.timing import rate
from replay.timeline.build import build_trial_timeline, timeline_to_payloads
from replay.timeline.views import agent_facing_text
from schemas.timeline import (
    Message,
    RecordedToolCall,
    Role,
    ToolCallDecl,
    ToolExecutionStatus,
    ToolExecutorIdentity,
    TraceEvent,
)

TOOLS = ("list_notes", "add_note", "search_policy", "create_case", "get_order")
TARGET = 20_000


def make_trial(rng: random.Random, *, calls_per_turn: int = 2, turns: int = 7):
    """One conversational trial shaped like the shared corpus: 40 events with these defaults.

    user prompt (1) + 7 × (assistant + 2 × (call + result)) (35) + final assistant,
    user reply, closing assistant (3) + 1 never-executed call on the closing turn = 40.
    Provider ids repeat per turn (``<tool>:<index>``) so the G3 disambiguation runs.
    """
    messages = [Message(Role.USER, "Please tidy my notes.")]
    records = []
    sequence = 0
    for turn in range(turns):
        decls = []
        for index in range(calls_per_turn):
            tool = rng.choice(TOOLS)
            decls.append(ToolCallDecl(f"{tool}:{index}", tool, {"turn": turn, "q": "x" * 8}))
        messages.append(Message(Role.ASSISTANT, f"step {turn}", tuple(decls)))
        for decl in decls:
            status = ToolExecutionStatus.SUCCESS
            record = RecordedToolCall(
                decl.id,
                sequence,
                decl.name,
                decl.arguments,
                ToolExecutorIdentity.AGENT,
                status,
                '{"ok": true}',
                0.01,
                None,
            )
            sequence += 1
            records.append(record)
            messages.append(Message(Role.TOOL, agent_facing_text(record), tool_call_id=decl.id))
    messages.append(Message(Role.ASSISTANT, "Done."))
    messages.append(Message(Role.USER, "One more thing."))
    messages.append(Message(Role.ASSISTANT, "", (ToolCallDecl("add_note:0", "add_note", {}),)))
    messages.append(Message(Role.SYSTEM, "Maximum turns (9) reached. Dialogue terminated."))
    return messages, records


def baseline(trial) -> tuple[TraceEvent, ...]:
    """40 positional ``TraceEvent(...)`` constructions and nothing else."""
    return tuple(
        TraceEvent(i, 0, None, None, None, None, None, None, None, None, None) for i in range(40)
    )




def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(7)
    trials = [make_trial(rng) for _ in range(args.trials)]
    sizes = {len(build_trial_timeline(m, r, "max_turns").events) for m, r in trials}
    assert sizes == {40}, sizes
    rows = [
        ("baseline: 40 TraceEvent(...) inits, no join", rate(baseline, trials, args.repeat)),
        (
            "records present (G5/G8 join)",
            rate(lambda t: build_trial_timeline(t[0], t[1], "max_turns"), trials, args.repeat),
        ),
        (
            "messages only (G6b join)",
            rate(lambda t: build_trial_timeline(t[0], None, "max_turns"), trials, args.repeat),
        ),
        (
            "records present + timeline_to_payloads",
            rate(
                lambda t: timeline_to_payloads(build_trial_timeline(t[0], t[1], "max_turns")),
                trials,
                args.repeat,
            ),
        ),
        (
            "records only (G6)",
            rate(lambda t: build_trial_timeline((), t[1], None), trials, args.repeat),
        ),
    ]
    print(f"{args.trials} trials × 40 events, best of {args.repeat}, one core\n")
    print("| case | timelines/s | µs/timeline | vs target 20,000/s |")
    print("|---|---:|---:|---|")
    for name, value in rows:
        targeted = not (name.startswith("baseline") or "payloads" in name)  # build rate only
        verdict = ("meets" if value >= TARGET else "BELOW") if targeted else "— (not targeted)"
        print(f"| {name} | {value:,.0f} | {1e6 / value:.1f} | {verdict} |")


if __name__ == "__main__":
    main()
