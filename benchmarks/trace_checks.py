"""GRADING.md § Declared limits: a bound absent_between, all three matchers undecidable.

Reproduces the published table — timelines of 20 / 60 / 200 / 600 calls with 5 / 15 / 40
/ 100 distinct candidates, one reading and the bound constraint — with this evaluator,
beside a baseline measured in the same run: the same constraint evaluated the way the
published cost shape describes it (every candidate re-scans the timeline through every
matcher, and absent_between walks the product of its start readings, end readings and
forbidden readings). Target: the bound constraint at most 1/10 of each published
figure.

Worst case: the timeline is records-less (a bundle without tool_log.yaml), and every
matcher — binder, start, end, forbidden — reads ``status``, so every event they select is
undecidable: the binder's candidates are all undecidable (D empty), each anchor has as
many readings as it has events, and every forbidden event is a possible one.

    PYTHONPATH=. python -m benchmarks.trace_checks [--repeat 5]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from replay.trace_checks import evaluate_constraint
from replay.trace_checks.bind import collect_candidates
from replay.trace_checks.matching import UNKNOWN, TimelineIndex, prepare, read_field, resolve
from replay.trace_checks.operators import apply_operator
from replay.trace_checks.rules import load_trace_checks
from schemas.timeline import TraceEvent, TraceEventKind, TrialTimeline
from schemas.trace_checks import Constraint

SHAPES = ((20, 5), (60, 15), (200, 40), (600, 100))
# Beyond the published table: few candidates, so each matcher keeps many undecidable events
# per reading — where a product over readings is cubic and the closed forms are not.
DENSE = ((600, 5), (600, 1))
PUBLISHED_MS = {20: (0.97, 4.8), 60: (2.3, 34.0), 200: (4.9, 211.0), 600: (15.0, 1400.0)}
TOOLS = ("open_case", "notify_customer", "close_case")


def make_timeline(calls: int, candidates: int) -> TrialTimeline:
    """A records-less trial: one assistant turn per three calls (open, notify, close of one
    case), each call answered by its role: tool text; case values cycle over the candidates."""
    events: list[TraceEvent] = [TraceEvent(0, 0, TraceEventKind.USER_MESSAGE, text="please")]
    for i in range(calls):
        turn = i // 3
        if i % 3 == 0:
            events.append(
                TraceEvent(len(events), turn, TraceEventKind.ASSISTANT_MESSAGE, text="working")
            )
        cid = f"call_{i}"
        args = {"case": f"CS-{turn % candidates}"}
        tool = TOOLS[i % 3]
        events.append(
            TraceEvent(
                len(events),
                turn,
                TraceEventKind.TOOL_CALL,
                call_id=cid,
                tool_name=tool,
                arguments=args,
            )
        )
        events.append(
            TraceEvent(
                len(events),
                turn,
                TraceEventKind.TOOL_RESULT,
                call_id=cid,
                tool_name=tool,
                result="ok",
            )
        )
    return TrialTimeline(tuple(events), message_view_present=True, records_present=False)


def _m(tool: str, bound: bool) -> dict[str, Any]:
    m: dict[str, Any] = {
        "kind": "tool_call",
        "tool": {"equals": tool},
        "status": {"equals": "success"},
    }
    if bound:
        m["args"] = {"case": {"equals_binding": "case"}}
    return m


def bound_constraint() -> Constraint:
    require = {
        "absent_between": {
            "forbidden": _m("notify_customer", True),
            "start": {"quantifier": "first", "match": _m("open_case", True)},
            "end": {"quantifier": "first", "match": _m("close_case", True)},
        }
    }
    block = {
        "constraints": [
            {
                "id": "not_told_while_open",
                "bind": {
                    "match": _m("open_case", False),
                    "values": {"case": {"field": "args.case"}},
                },
                "require": require,
            }
        ]
    }
    return load_trace_checks(block).shared[0]


def one_reading_constraint(value: str) -> Constraint:
    """The same require tree with one candidate's value written out: one reading."""

    def lit(tool: str) -> dict[str, Any]:
        m = _m(tool, False)
        m["args"] = {"case": {"equals": value}}
        return m

    require = {
        "absent_between": {
            "forbidden": lit("notify_customer"),
            "start": {"quantifier": "first", "match": lit("open_case")},
            "end": {"quantifier": "first", "match": lit("close_case")},
        }
    }
    return load_trace_checks({"constraints": [{"id": "one", "require": require}]}).shared[0]


# --- the baseline: the published cost shape ---------------------------------------------------


def _naive_resolve(
    events: tuple[TraceEvent, ...], idx: TimelineIndex, tool: str, value: Any
) -> tuple[list[int], list[int]]:
    matched, undecidable = [], []
    for e in events:
        if e.kind is not TraceEventKind.TOOL_CALL or e.tool_name != tool:
            continue
        if value is not None and not apply_operator(
            "equals", read_field(idx, e, "args.case"), value
        ):
            continue
        status = read_field(idx, e, "status")
        if status is UNKNOWN:
            undecidable.append(e.position)
        elif apply_operator("equals", status, "success"):
            matched.append(e.position)
    return matched, undecidable


def _anchor_readings(d: list[int], u: list[int]) -> list[int]:
    return sorted({min(d + [p]) for p in u} | ({min(d)} if d else set()))


def naive_bound(timeline: TrialTimeline) -> tuple[bool, bool]:
    """(can_pass, can_fail) folded over candidates, each candidate re-scanning the timeline and
    walking start readings × end readings × forbidden readings."""
    idx = TimelineIndex(timeline)
    events = timeline.events
    _, binder_u = _naive_resolve(events, idx, "open_case", None)
    values = sorted({read_field(idx, events[p], "args.case") for p in binder_u})
    outcomes: set[bool] = {False}  # the empty reading: on_unbound fail
    for v in values:
        fd, fu = _naive_resolve(events, idx, "notify_customer", v)
        sd, su = _naive_resolve(events, idx, "open_case", v)
        ed, eu = _naive_resolve(events, idx, "close_case", v)
        forbidden = [(p, True) for p in fd] + [(p, False) for p in fu]
        for s in _anchor_readings(sd, su):
            for e in _anchor_readings(ed, eu):
                if s >= e:
                    outcomes.add(False)
                    continue
                hit_definite = any(s < p < e and definite for p, definite in forbidden)
                hit_possible = any(s < p < e for p, _ in forbidden)
                outcomes.add(not hit_definite)
                if hit_possible:
                    outcomes.add(False)
    return True in outcomes, False in outcomes


# --- measurement ---------------------------------------------------------------------------------


def best_ms(fn: Callable[[], Any], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    bound = bound_constraint()
    rows = []
    for calls, candidates in SHAPES + DENSE:
        timeline = make_timeline(calls, candidates)
        idx = TimelineIndex(timeline)
        binder = resolve(idx, prepare(idx, bound.bind.match, None, "linear"), {})  # type: ignore[union-attr]
        cands = collect_candidates(idx, binder, bound.bind, "linear")  # type: ignore[arg-type]
        assert len(cands.undecidable) == candidates and not cands.definite, (
            "shape is not the worst case"
        )
        single = one_reading_constraint("CS-0")
        reading_ms = best_ms(
            lambda t=timeline, c=single: evaluate_constraint(TimelineIndex(t), c, "linear"),
            args.repeat,
        )
        bound_ms = best_ms(
            lambda t=timeline: evaluate_constraint(TimelineIndex(t), bound, "linear"), args.repeat
        )
        base_ms = best_ms(lambda t=timeline: naive_bound(t), max(1, args.repeat // 2))
        ours = evaluate_constraint(TimelineIndex(timeline), bound, "linear")
        can_pass, can_fail = naive_bound(timeline)
        agree = (ours.undecided == (can_pass and can_fail)) and (
            ours.passed == (can_pass and not can_fail)
        )
        rows.append((calls, candidates, reading_ms, bound_ms, base_ms, agree))

    print(
        "| calls | distinct candidates | one reading (published) | one reading | bound constraint (published) | bound constraint | ≤ 1/10 published | baseline, same run | verdicts agree |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | :---: | ---: | :---: |")
    for n, (calls, candidates, reading_ms, bound_ms, base_ms, agree) in enumerate(rows):
        if n < len(SHAPES):
            pub_reading, pub_bound = PUBLISHED_MS[calls]
            pub_r, pub_b = f"{pub_reading:g} ms", _fmt(pub_bound)
            ok = "yes" if bound_ms <= pub_bound / 10 else "NO"
        else:
            pub_r = pub_b = ok = "—"
        print(
            f"| {calls} | {candidates} | {pub_r} | {reading_ms:.2f} ms | {pub_b} |"
            f" {bound_ms:.2f} ms | {ok} | {base_ms:.1f} ms | {'yes' if agree else 'NO'} |"
        )


def _fmt(ms: float) -> str:
    return f"{ms / 1000:g} s" if ms >= 1000 else f"{ms:g} ms"


if __name__ == "__main__":
    main()
