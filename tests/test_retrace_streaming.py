"""Retrace's streamed pieces give what the whole-list versions gave: parked
results in stream order, the report folded one outcome at a time, the outputs digest
hashed row by row, and the buffer pool back at its cap after an append."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.app.retrace import outputs_digest
from ledger.engines.parked import Parked
from ledger.log import connection
from ledger.log.store import open_ledger
from replay.grading.grade import Difference
from replay.grading.retrace import ConstraintObservation, TrialRetrace
from replay.grading.retrace_report import build_report, discrimination
from schemas.canonical import digest
from schemas.envelope import NewEvent
from schemas.views import Mapped

STATUSES = ("agreed", "disagreed", "ungraded", "not_rechecked")
DECLARED = {"t0": (("c0", ""), ("c1", "p")), "t1": (("c2", ""),), "t2": ()}


@st.composite
def outcomes(draw: Any) -> list[TrialRetrace]:
    out = []
    for i in range(draw(st.integers(0, 12))):
        task = draw(st.sampled_from(sorted(DECLARED)))
        declared = DECLARED[task]
        observed = draw(st.lists(st.sampled_from(declared), max_size=3)) if declared else []
        out.append(
            TrialRetrace(
                trial=f"trial/c/{task}/{i}",
                task_id=task,
                corpus="c",
                status=draw(st.sampled_from(STATUSES)),
                differences=tuple(
                    Difference("score", 1.0, 0.5, "r") for _ in range(draw(st.integers(0, 1)))
                ),
                replayed=draw(st.sampled_from([None, {"score": 1.0}])),
                record_view=draw(st.booleans()),
                readable=draw(st.booleans()),
                predates_call_ids=draw(st.booleans()),
                regex_refused=draw(st.booleans()),
                winning_path=draw(st.sampled_from(["", "p"])),
                declared=declared,
                block_digest=draw(st.sampled_from([None, f"sha:{task}"])),
                observations=tuple(
                    ConstraintObservation(
                        task, cid, draw(st.booleans()), draw(st.booleans()),
                        draw(st.sampled_from([None, True, False])),
                    )
                    for cid, _ in observed
                ),  # fmt: skip
                advisories=tuple(draw(st.lists(st.sampled_from(["a"]), max_size=1))),
                unknown_keys=tuple(draw(st.lists(st.sampled_from(["k1", "k2"]), max_size=2))),
                unmeasured=tuple((cid, f"why {i}") for cid, _ in observed[:1]),
            )
        )
    return out


def whole_list_report(outs: list[TrialRetrace]) -> dict[str, Any]:
    """The report as it was built before it streamed: every fold over the whole list."""
    declared: dict[str, Any] = {}
    paths: dict[tuple[str, str], int] = {}
    for o in outs:
        if o.block_digest is not None:
            declared[o.task_id] = o.declared
            if o.winning_path:
                key = (o.task_id, o.winning_path)
                paths[key] = paths.get(key, 0) + 1
    rows = [r.as_dict() for r in discrimination(declared, (b for o in outs for b in o.observations))]
    seen: dict[tuple[str, str], tuple[int, str]] = {}
    for o in outs:
        for cid, reason in o.unmeasured:
            n, _ = seen.get((o.task_id, cid), (0, reason))
            seen[(o.task_id, cid)] = (n + 1, reason)
    for row in rows:
        row["not_measured_trials"], row["not_measured_reason"] = seen.get(
            (row["task_id"], row["id"]), (0, None)
        )
    readable = [o for o in outs if o.readable]
    return {
        "trials": [o.as_dict() for o in outs],
        "constraints": rows,
        "paths": [{"task_id": t, "path": p, "won": n} for (t, p), n in sorted(paths.items())],
        "evidence": {
            "bundles_read": len(outs),
            "with_tool_call_record": sum(o.record_view for o in readable),
            "messages_only": sum(not o.record_view for o in readable),
            "predating_call_ids": sum(o.predates_call_ids for o in outs),
            "failed": sum(o.status == "not_rechecked" for o in outs),
            "regex_refused": sum(o.regex_refused for o in outs),
            "with_advisories": sum(bool(o.advisories) for o in outs),
            "with_unknown_keys": sum(bool(o.unknown_keys) for o in outs),
            "unknown_keys": sorted({k for o in outs for k in o.unknown_keys}),
        },
    }


@settings(max_examples=150, deadline=None)
@given(outcomes())
def test_the_folded_report_is_the_whole_list_report(outs: list[TrialRetrace]) -> None:
    expected = outcome_of(whole_list_report, outs)
    assert outcome_of(lambda o: build_report(iter(o)), outs) == expected  # read once
    view = outcome_of(lambda o: build_report(o, Mapped(o, TrialRetrace.as_dict)), outs)
    assert view == expected


def outcome_of(fn: Any, outs: list[TrialRetrace]) -> Any:
    """The report, or the error it stops with (an undeclared constraint observed)."""
    try:
        return fn(outs)
    except ValueError as exc:
        return ("refused", str(exc))


@settings(max_examples=100, deadline=None)
@given(outcomes())
def test_the_streamed_outputs_digest_is_the_digest_of_the_rows(outs: list[TrialRetrace]) -> None:
    rows = [
        {"trial": o.trial, "status": o.status, "differences": [d.as_json() for d in o.differences],
         "replayed": o.replayed}
        for o in outs
    ]  # fmt: skip
    assert outputs_digest(iter(outs)) == digest(rows)


def test_parked_results_come_back_in_stream_order_then_the_tail() -> None:
    pairs = [("s/b", {"n": 2}), ("s/c", [3]), ("s/a", ("one",))]
    parked = Parked(iter(pairs), tail=["unreadable"])
    assert len(parked) == 4 and parked.parked == 3
    for _ in range(2):  # read back as often as a caller needs
        assert list(parked) == [("one",), {"n": 2}, [3], "unreadable"]
    assert parked[0] == ("one",) and parked[-1] == "unreadable" and parked[1:3] == [{"n": 2}, [3]]
    assert Mapped(parked, str) == ["('one',)", "{'n': 2}", "[3]", "unreadable"]
    assert Mapped(parked, str) != ["('one',)"] and len(Parked([])) == 0


def test_an_append_leaves_the_buffer_pool_at_its_cap(tmp_path: Path) -> None:
    def limit(lg: Any) -> str:
        return lg._con.execute("SELECT current_setting('memory_limit')").fetchone()[0]

    with open_ledger(tmp_path / "lg", create=True) as lg:
        cap = limit(lg)
        big = "x" * (connection.LARGE_APPEND_BYTES + 1)
        lg.append([NewEvent("s", "ext.t", {"big": big})])
        lg.append([NewEvent("s", "ext.t", {"n": 1})])
        lg.append_parts([[NewEvent("s", "ext.t", {"n": 2})], [NewEvent("s", "ext.t", {"big": big, "n": 3})]])
        assert limit(lg) == cap and lg.size() == 4
        list(lg.read())  # a streaming read trims the pool and leaves the cap too
        assert limit(lg) == cap
