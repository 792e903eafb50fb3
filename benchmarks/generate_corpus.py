"""Generate a realistic synthetic corpus of recorded trial bundles, deterministic from a seed.

    python -m benchmarks.generate_corpus OUT --trials N --seed S [--alter K]

Writes ``OUT/corpus.yaml`` and one bundle directory per trial in the recorded format
(FORMATS.md §§ 1–6): ``task.yaml``, ``trajectory.yaml``, ``tool_log.yaml`` (not in the
older generation), ``grade.yaml`` (not when grading refused), ``metrics.yaml``,
``tools_schemas.yaml``. What varies, so scale tests exercise every path of ingest and the
timeline: several tasks and tools; providers minting unique ids (``call_…``,
``toolu_…``) and one numbering calls per turn (``<tool>:<i>``), whose ids repeat across
turns — written raw (as before the disambiguation rule) or already as ``<id>#2``;
bundles without a tool log (generation 1: ``schema_version: 1``, judge-only grades);
user-executed calls (N2: declared on a ``role: user`` message, no ``role: tool`` reply);
terminating turns whose calls never ran (``max_turns``); failed calls (the four failure
texts of G5, ``Error:`` prefixed on the message view); judge ``criterion_results``
(required binary gate + graded criteria, sometimes ``errored``); and a ``trace_checks``
block in every generation-4 task snapshot (a ``before`` gate, a scored ``present`` and a
scored ``absent``) with its ``trace_check_results`` and ``trace_checks_summary``.

Every recorded grade is computed by the fold rules of FORMATS.md § 4 / GRADING.md
(judge: required gate, weighted mean of the non-required; trace: gate → 0.0, weighted
fraction of the scored; weighted combine; binary_pass gated), so a correct re-derivation
agrees with every unaltered trial. ``--alter K`` then changes the recorded
``components.llm_judge`` of K trials (chosen by the seed) and lists them in
``OUT/altered.json`` and on stdout: a retrace must report exactly those K.
"""

from __future__ import annotations

import argparse
import json
import random
import string
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

try:
    _Dumper: type = yaml.CSafeDumper
except AttributeError:  # pragma: no cover
    _Dumper = yaml.SafeDumper

CRITERION = "checked_before_acting"
JUDGE_MODEL = "openai/gpt-4.1-mini"
AGENT_MODELS = ("openai/gpt-4o-mini", "anthropic/claude-sonnet-4-6", "google/gemini-2.5-flash")
USER_MODEL = "anthropic/claude-sonnet-4-6"

# task_id -> (check tool, act tool, forbidden tool, extra tools, user tools)
TASKS: dict[str, tuple[str, str, str, tuple[str, ...], tuple[str, ...]]] = {
    "notes_add_note_checked": ("list_notes", "add_note", "delete_note", ("search_notes",), ()),
    "orders_refund_verified": ("lookup_order", "refund_order", "cancel_order", ("get_customer",), ("confirm_identity",)),
    "calendar_book_free_slot": ("list_events", "create_event", "delete_event", ("get_timezone",), ()),
    "tickets_close_resolved": ("get_ticket", "close_ticket", "reassign_ticket", ("add_comment", "search_kb"), ("share_screenshot",)),
    "inventory_restock_low": ("check_stock", "place_order", "write_off_stock", ("get_supplier",), ()),
}  # fmt: skip
FAILURE_TEXTS = (
    "upstream service returned 503",  # the tool's own ToolResult.error
    "KeyError",  # an exception carrying no message: its class name
    "Tool returned failure with no error message",
)


def _dump(value: Any) -> str:
    return yaml.dump(value, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


@dataclass
class _Ids:
    """Provider call-id minting: unique per call, or numbered per turn (repeating)."""

    style: str  # "openai" | "anthropic" | "numbered"
    disambiguate: bool  # numbered only: write repeats as <id>#k (post-rule runtime)
    rng: random.Random
    seen: dict[str, int] = field(default_factory=dict)

    def mint(self, tool: str, index_in_turn: int) -> str:
        if self.style == "openai":
            raw = "call_" + "".join(self.rng.choices(string.ascii_letters + string.digits, k=24))
        elif self.style == "anthropic":
            raw = "toolu_01" + "".join(self.rng.choices(string.ascii_letters + string.digits, k=22))
        else:
            raw = f"{tool}:{index_in_turn}"
        k = self.seen.get(raw, 0)
        self.seen[raw] = k + 1
        if self.disambiguate and k > 0:
            return f"{raw}#{k + 1}"
        return raw


def _msg(
    role: str, content: str | None, ts: str, tool_calls=None, tool_call_id=None
) -> dict[str, Any]:
    return {"role": role, "content": content, "content_blocks": None, "tool_calls": tool_calls,
            "tool_call_id": tool_call_id, "reasoning": None, "ts": ts}  # fmt: skip


@dataclass
class _Trial:
    """The trajectory being written plus the timeline positions the grader will see."""

    records_present: bool
    messages: list[dict[str, Any]] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    positions: list[tuple[str, str | None]] = field(default_factory=list)  # (kind, tool)
    clock: float = 0.0

    def ts(self) -> str:
        self.clock += 0.731
        s = int(self.clock)
        return f"2026-09-01T10:{(s // 60) % 60:02d}:{s % 60:02d}.{int((self.clock % 1) * 1e6):06d}Z"

    def say(self, role: str, text: str) -> None:
        self.messages.append(_msg(role, text, self.ts()))
        self.positions.append((f"{role}_message", None))


def _call_output(tool: str, args: dict[str, Any], rng: random.Random) -> str:
    return json.dumps(
        {"tool": tool, "ok": True, "id": f"R-{rng.randrange(1000, 9999)}", **args}, indent=2
    )


def _run_turn(
    t: _Trial,
    ids: _Ids,
    rng: random.Random,
    calls: list[tuple[str, dict]],
    *,
    executed: bool,
    fail_last: str | None,
    executor: str = "agent",
    text: str = "",
) -> None:
    """One generation declaring ``calls``; executed ones get records and tool messages."""
    role = "assistant" if executor == "agent" else "user"
    decls = [
        {"id": ids.mint(name, i), "name": name, "arguments": args}
        for i, (name, args) in enumerate(calls)
    ]
    t.messages.append(_msg(role, text, t.ts(), tool_calls=decls))
    t.positions.append((f"{role}_message", None))
    for i, d in enumerate(decls):
        t.positions.append(("tool_call", d["name"]))
        if not executed:
            continue  # a terminating turn: declared, never run (G4)
        failing = fail_last is not None and i == len(decls) - 1
        status = fail_last if failing else "success"
        if failing and status == "tool_not_found":
            output = f"Tool '{d['name']}' not found"
        elif failing:
            output = rng.choice(FAILURE_TEXTS)
        else:
            output = _call_output(d["name"], d["arguments"], rng)
        ts = t.ts()
        t.records.append({"call_id": d["id"], "sequence": len(t.records), "tool_name": d["name"],
                          "arguments": d["arguments"], "executor": executor, "status": status,
                          "output": output, "latency_seconds": round(rng.uniform(0.002, 1.8), 6),
                          "timestamp": ts})  # fmt: skip
        if executor == "agent":
            wire = f"Error: {output}" if failing else output
            t.messages.append(_msg("tool", wire, ts, tool_call_id=d["id"]))
            t.positions.append(("tool_result", d["name"]))
        elif t.records_present:
            t.positions.append(("tool_result", d["name"]))  # N2: only the record answers it


def _trajectory(task_id: str, rng: random.Random, records_present: bool, max_turns: int):
    check, act, forbidden, extras, user_tools = TASKS[task_id]
    style = rng.choice(("openai", "anthropic", "numbered", "numbered"))
    ids = _Ids(style, disambiguate=style == "numbered" and rng.random() < 0.5, rng=rng)
    t = _Trial(records_present)
    t.say(
        "user",
        f"Please handle {task_id.replace('_', ' ')} for reference REF-{rng.randrange(100, 999)}.",
    )
    checked_first = rng.random() < 0.6
    plan: list[list[tuple[str, dict]]] = []
    if checked_first:
        plan.append(
            [(check, {})] + ([(rng.choice(extras), {"q": "x"})] if rng.random() < 0.4 else [])
        )
    if rng.random() < 0.5:
        plan.append([(rng.choice(extras), {"page": rng.randrange(3)}), (check, {"page": 1})])
    plan.append([(act, {"ref": f"REF-{rng.randrange(100, 999)}"})])
    if rng.random() < 0.07:
        plan.append([(forbidden, {"ref": "REF-1"})])
    if rng.random() < 0.3:
        plan.append([(check, {})])  # the numbered provider repeats ids here
    termination = "user_stop"
    for turns, calls in enumerate(plan, start=1):
        if turns > max_turns:
            _run_turn(t, ids, rng, calls, executed=False, fail_last=None)
            termination = "max_turns"
            break
        fail = None
        r = rng.random()
        if r < 0.06:
            fail = "error"
        elif r < 0.08:
            fail = "tool_not_found"
            calls = [*calls[:-1], (calls[-1][0] + "_v2", calls[-1][1])]
        _run_turn(t, ids, rng, calls, executed=True, fail_last=fail)
        if user_tools and rng.random() < 0.25:
            t.say("assistant", "Could you confirm that for me?")
            _run_turn(
                t,
                ids,
                rng,
                [(user_tools[0], {"value": "ok"})],
                executed=True,
                fail_last=None,
                executor="user",
                text=f"I ran {user_tools[0]}: ok",
            )
    if termination != "max_turns":
        t.say("assistant", "Done. Anything else?")
        if rng.random() < 0.5:
            t.say("user", "No, thanks!")
            t.say("assistant", "You're welcome.")
        termination = rng.choice(("user_stop", "user_stop", "agent_done"))
    notice = {
        "user_stop": "User signaled stop (###STOP###). Dialogue ended.",
        "agent_done": "Agent finished. Dialogue ended.",
        "max_turns": f"Maximum turns ({max_turns}) reached. Dialogue terminated.",
    }[termination]
    t.messages.append(_msg("system", notice, t.ts()))
    return t, termination


# --------------------------------------------------------------------------- grading


def _tool_positions(t: _Trial, tool: str) -> list[int]:
    return [i for i, (kind, name) in enumerate(t.positions) if kind == "tool_call" and name == tool]


def _trace_block(check: str, act: str, forbidden: str) -> dict[str, Any]:
    def call(tool: str) -> dict[str, Any]:
        return {"kind": "tool_call", "tool": {"equals": tool}}

    return {"constraints": [
        {"id": f"{check}_before_{act}", "description": f"{check} is called before the first {act}",
         "severity": "gate", "on_missing": "fail",
         "require": {"before": {"left": {"quantifier": "any", "match": call(check)},
                                "right": {"quantifier": "first", "match": call(act)}}}},
        {"id": f"{act}_called", "description": f"{act} is called", "weight": 1.0,
         "require": {"present": {"match": call(act)}}},
        {"id": f"no_{forbidden}", "description": f"{forbidden} is never called", "weight": 0.5,
         "require": {"absent": {"match": call(forbidden)}}},
    ]}  # fmt: skip


def _trace_results(t: _Trial, check: str, act: str, forbidden: str) -> list[dict[str, Any]]:
    left, right, bad = (
        _tool_positions(t, check),
        _tool_positions(t, act),
        _tool_positions(t, forbidden),
    )
    before_ok = bool(left and right) and min(left) < min(right)
    before_msg = (
        ""
        if before_ok
        else (
            "before: an anchor matched nothing (on_missing: fail)"
            if not (left and right)
            else "before: no match is ordered before the other side under the declared quantifiers"
        )
    )
    present_ok, absent_ok = bool(right), not bad

    def row(cid, kind, passed, weight, severity, message, matched):
        return {
            "id": cid,
            "kind": kind,
            "passed": passed,
            "weight": weight,
            "severity": severity,
            "message": "" if passed else message,
            "matched_positions": matched,
            "undecided": False,
            "withheld": False,
        }

    return [
        row(
            f"{check}_before_{act}",
            "before",
            before_ok,
            1.0,
            "gate",
            before_msg,
            sorted(set(left) | ({min(right)} if right else set())),
        ),
        row(
            f"{act}_called",
            "present",
            present_ok,
            1.0,
            "scored",
            "present: no event matched",
            right,
        ),
        row(
            f"no_{forbidden}",
            "absent",
            absent_ok,
            0.5,
            "scored",
            "absent: a forbidden event matched",
            bad,
        ),
    ]


def _judge(rng: random.Random, t: _Trial, check: str, act: str, errored: bool):
    if errored:
        return None, None, "errored"
    left, right = _tool_positions(t, check), _tool_positions(t, act)
    truth = bool(left and right) and min(left) < min(right)
    met = truth if rng.random() > 0.05 else not truth  # the judge is right 95% of the time
    done = rng.choice((0.7, 1.0)) if right else 0.0
    clarity = rng.choice((0.4, 0.8, 1.0))
    rows = [
        {"id": CRITERION, "met": met, "score": 1.0 if met else 0.0,
         "justification": f"The assistant {'did' if met else 'did not'} call {check} before {act}."},
        {"id": f"{act}_done", "met": done >= 0.5, "score": done, "justification": f"{act} score {done}."},
        {"id": "clarity", "met": clarity >= 0.5, "score": clarity, "justification": "Reply clarity."},
    ]  # fmt: skip
    # required gate; weighted mean of the non-required (weights 1.0 and 0.5)
    component = 0.0 if not met else (done * 1.0 + clarity * 0.5) / (1.0 + 0.5)
    return rows, component, "completed"


def _rubric(act: str, check: str) -> dict[str, Any]:
    return {"criteria": [
        {"id": CRITERION, "description": f"Before calling {act}, the assistant called {check}.",
         "weight": 1.0, "kind": "binary", "required": True, "expected": None},
        {"id": f"{act}_done", "description": f"{act} was called as the user asked.",
         "weight": 1.0, "kind": "graded", "required": False, "expected": None},
        {"id": "clarity", "description": "The final reply is clear.",
         "weight": 0.5, "kind": "graded", "required": False, "expected": None},
    ], "reference": "Synthetic reference."}  # fmt: skip


def _grade(task_id: str, rng: random.Random, t: _Trial, gen: int, weights: dict[str, float]):
    check, act, forbidden, _, _ = TASKS[task_id]
    rows, judge, status = _judge(rng, t, check, act, errored=gen == 4 and rng.random() < 0.03)
    comps: dict[str, float | None] = {"state_checks": None, "transcript_rules": None}
    reasons: list[str] = []
    gates_failed: list[str] = []
    required_failed = rows is not None and not rows[0]["met"]
    if judge is not None:
        reasons.append(f"Judge: score={judge:.2f} (synthetic)")
        if required_failed:
            reasons.append(f"FAILED required criteria: {CRITERION}")
    grade: dict[str, Any] = {"binary_pass": False, "score": 0.0, "components": comps}
    if gen == 4:
        results = _trace_results(t, check, act, forbidden)
        gates_failed = [r["id"] for r in results if r["severity"] == "gate" and not r["passed"]]
        scored = [r for r in results if r["severity"] == "scored"]
        trace = (
            0.0
            if gates_failed
            else sum(r["weight"] for r in scored if r["passed"]) / sum(r["weight"] for r in scored)
        )
        comps["trace_checks"] = trace
        reasons.append(f"Trace checks: score={trace:.2f}")
        if gates_failed:
            reasons.append("FAILED trace gates: " + ", ".join(gates_failed))
    comps["llm_judge"] = judge
    comps["custom_checks"] = None
    folded = {k: v for k, v in comps.items() if v is not None}
    score = sum(v * weights[k] for k, v in folded.items()) / sum(weights[k] for k in folded)
    grade["score"] = score
    grade["binary_pass"] = score >= 0.75 and not required_failed and not gates_failed
    grade["reasons"] = " | ".join(reasons)
    grade["state_diff"] = None
    grade["custom_checks_details"] = None
    if gen == 4:
        grade["trace_check_results"] = results
        grade["trace_checks_summary"] = {
            "winning_path": "",
            "gate_failed": bool(gates_failed),
            "failed_gate_ids": gates_failed,
            "paths": [],
        }
    grade["criterion_results"] = rows
    grade["judge_status"] = status
    grade["judge_usage"] = {
        "calls": 1,
        "prompt_tokens": rng.randrange(1500, 4000),
        "completion_tokens": rng.randrange(100, 500),
        "reasoning_tokens": 0,
        "cost_usd": round(rng.uniform(0.0005, 0.003), 7),
        "tool_calls": 0,
    }
    if gen == 4:
        grade["judge_usage"]["consistency_rejections"] = 0
        grade["judge_kb_gating"] = {
            "knowledge_search_disabled": False,
            "offered": [],
            "withheld": [],
        }
        grade["judge_custom_prompt"] = False
        grade["judge_agent_prompt_included"] = True
    return grade


# --------------------------------------------------------------------------- bundles


def _task_snapshot(task_id: str, trial_index: int, gen: int, agent_model: str) -> dict[str, Any]:
    check, act, forbidden, extras, user_tools = TASKS[task_id]
    weights = {"llm_judge": 0.6, "trace_checks": 0.4} if gen == 4 else {"llm_judge": 1.0}
    grading: dict[str, Any] = {
        "combine": {"method": "weighted", "weights": weights, "pass_threshold": 0.75},
        "state_checks": None,
        "transcript_rules": None,
    }
    if gen == 4:
        grading["trace_checks"] = _trace_block(check, act, forbidden)
    grading["llm_judge"] = {"rubric": _rubric(act, check), "customization": None}
    grading["custom_checks"] = None

    def model(name: str, t: float) -> dict[str, Any]:
        return {
            "provider": "openrouter",
            "name": name,
            "temperature": t,
            "max_tokens": None,
            "seed": None,
        }

    return {
        "task_id": task_id, "trial_index": trial_index, "category": "tool_use",
        "description": f"Synthetic task {task_id}: call {check} before {act}.\n",
        "grading_config": grading,
        "tools": {"agent": {"mcp_server": "_shared/mcp_server.py",
                            "enabled": [check, act, forbidden, *extras]},
                  "user": {"enabled": list(user_tools)}},
        "policies": {},
        "model_config": {"agent": model(agent_model, 0.0), "user": model(USER_MODEL, 0.2),
                         "judge": model(JUDGE_MODEL, 0.0)},
    }  # fmt: skip


def _tool_schemas(task_id: str) -> list[dict[str, Any]]:
    check, act, forbidden, extras, _ = TASKS[task_id]
    return [{"type": "function", "function": {"name": n, "description": f"The {n} tool.",
             "parameters": {"type": "object", "properties": {}, "title": f"{n}Arguments"}}}
            for n in (check, act, forbidden, *extras)]  # fmt: skip


def _metrics(t: _Trial, gen: int, rng: random.Random) -> dict[str, Any]:
    usage: dict[str, dict[str, Any]] = {}
    for r in t.records:
        u = usage.setdefault(
            r["tool_name"],
            {
                "tool_name": r["tool_name"],
                "call_count": 0,
                "success_count": 0,
                "error_count": 0,
                "total_duration_s": 0.0,
            },
        )
        u["call_count"] += 1
        u["success_count" if r["status"] == "success" else "error_count"] += 1
        u["total_duration_s"] += r["latency_seconds"]
    return {"latency_total_s": round(rng.uniform(3, 40), 3), "turns": sum(m["role"] == "assistant" for m in t.messages),
            "api_calls": sum(m["role"] == "assistant" for m in t.messages),
            "usage": {"prompt_tokens": rng.randrange(500, 9000), "completion_tokens": rng.randrange(50, 900)},
            "cost_usd": round(rng.uniform(0.0001, 0.01), 7), "tool_calls": len(t.records),
            "tool_usage": sorted(usage.values(), key=lambda u: u["tool_name"]),
            "schema_version": gen}  # fmt: skip


@dataclass(frozen=True)
class GeneratedTrial:
    directory: str
    task_id: str
    agent_model: str
    met: bool | None
    record_carried: bool
    graded: bool


def trial_shape(seed: int, n: int) -> tuple[int, str | None]:
    """Generation (4 with a tool log, 1 without) and grading_error of trial ``n``.

    Drawn from their own RNG so the set of graded trials is known before any is written.
    Only generation-4 bundles carry a ``grading_error`` key (FORMATS.md § 2).
    """
    rng = random.Random(f"{seed}:{n}:shape")
    gen = 4 if rng.random() < 0.8 else 1
    refused = gen == 4 and rng.random() < 0.02
    return gen, ("synthetic: grading refused to produce a verdict" if refused else None)


def write_trial(out: Path, seed: int, n: int, alter: bool) -> GeneratedTrial:
    """Write trial ``n`` of the corpus seeded ``seed`` (its own RNG: order-independent)."""
    rng = random.Random(f"{seed}:{n}")
    gen, grading_error = trial_shape(seed, n)
    task_id = sorted(TASKS)[n % len(TASKS)]
    run_id = f"synthetic_{seed}_{task_id.split('_')[0]}_{n // (len(TASKS) * 4):05d}"
    trial_index = (n // len(TASKS)) % 4
    directory = f"{run_id}_trial{trial_index}"
    agent_model = rng.choice(AGENT_MODELS)
    t, termination = _trajectory(
        task_id, rng, records_present=gen == 4, max_turns=rng.choice((2, 3, 4, 6, 8))
    )
    task = _task_snapshot(task_id, trial_index, gen, agent_model)
    bundle = out / directory
    bundle.mkdir(parents=True, exist_ok=False)
    trajectory: dict[str, Any] = {
        "task_id": task_id,
        "trial_index": trial_index,
        "simulator_schema_version": 1,
        "start_ts": "2026-09-01T10:00:00.000000+00:00",
        "end_ts": "2026-09-01T10:05:00.000000+00:00",
        "status": "completed",
        "termination_reason": termination,
    }
    if gen == 4:
        trajectory["grading_error"] = grading_error
    trajectory["messages"] = t.messages
    (bundle / "trajectory.yaml").write_text(_dump(trajectory))
    if gen == 4:
        (bundle / "tool_log.yaml").write_text(_dump(t.records))
    (bundle / "task.yaml").write_text(_dump(task))
    (bundle / "tools_schemas.yaml").write_text(_dump(_tool_schemas(task_id)))
    (bundle / "metrics.yaml").write_text(_dump(_metrics(t, gen, rng)))
    met = None
    graded = grading_error is None
    if graded:
        grade = _grade(task_id, rng, t, gen, task["grading_config"]["combine"]["weights"])
        if grade["criterion_results"]:
            met = grade["criterion_results"][0]["met"]
        if alter:
            old = grade["components"]["llm_judge"]
            grade["components"]["llm_judge"] = 0.25 if old is None or old > 0.5 else 0.9
        (bundle / "grade.yaml").write_text(_dump(grade))
    return GeneratedTrial(directory, task_id, agent_model, met, gen == 4, graded)


def generate(out: Path, trials: int, seed: int, alter: int = 0) -> list[str]:
    """Write the corpus; return the directories whose recorded grade was altered."""
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(f"{seed}:alter")
    graded = [n for n in range(trials) if trial_shape(seed, n)[1] is None]
    if alter > len(graded):
        raise ValueError(f"--alter {alter}: only {len(graded)} of {trials} trials carry a grade")
    altered_idx = set(rng.sample(graded, alter)) if alter else set()
    written = []
    altered: list[str] = []
    for n in range(trials):
        g = write_trial(out, seed, n, alter=n in altered_idx)
        if n in altered_idx:
            altered.append(g.directory)
        written.append(g)
    corpus = {
        "criterion": CRITERION,
        "task_ids": sorted({g.task_id for g in written}),
        "curated_from": sorted({g.directory.rsplit("_trial", 1)[0] for g in written}),
        "curated_at": "2026-09-02T00:00:00.000000Z",
        "bundles": [{"directory": g.directory, "source_run": g.directory.rsplit("_trial", 1)[0],
                     "task_id": g.task_id, "agent_model": g.agent_model, "judge_model": JUDGE_MODEL,
                     "met": g.met, "record_carried": g.record_carried} for g in written],
        "excluded": [],
    }  # fmt: skip
    (out / "corpus.yaml").write_text(_dump(corpus))
    if alter:
        (out / "altered.json").write_text(json.dumps(sorted(altered), indent=2) + "\n")
    return sorted(altered)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.generate_corpus", description=__doc__.split("\n")[0]
    )
    ap.add_argument(
        "out", type=Path, help="output directory (created; must not hold these bundles yet)"
    )
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--alter",
        type=int,
        default=0,
        metavar="K",
        help="alter the recorded grade of K trials and list them (altered.json)",
    )
    args = ap.parse_args(argv)
    altered = generate(args.out, args.trials, args.seed, args.alter)
    print(f"wrote {args.trials} bundles and corpus.yaml to {args.out}")
    for d in altered:
        print(f"altered: {d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
