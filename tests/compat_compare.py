"""Compare ``vledger retrace --json`` with what Tolokaforge 0.33.1 concluded on its own bundles.

The compatibility corpora (tests/data/README.md) carry the reference's conclusions beside
the bundles: ``trace-expected.json`` (its ``retrace`` over the trace corpus) and
``grade-expected.json`` (its grade of every trial of the grade corpus). Each function
returns one line per disagreement, so an empty list is agreement and a test can show what
differs.

Trace corpus, everything must agree:
- every (task, constraint) row: class, route, decided verdict and the evaluated / passed /
  failed / undecided counts; no row missing, repeated or extra;
- every per-trial constraint verdict (passed, undecided); no verdict the reference lacks;
- every trial's winning path, gate and score. A trial we leave unscored (never measured:
  an infrastructure abort) must be one where the reference evaluated no constraint.

Grade corpus: every trial whose flags name no departure where GRADING.md overrides the
reference (``SPEC_WINS``) is ``agreed`` against its recorded grade, and each component, the
score and binary_pass equal the reference's, or are named not measured (the evidence to
decide them is not in the bundle).
"""

from __future__ import annotations

import math
from typing import Any

Doc = dict[str, Any]

# Flags where the reference departs from GRADING.md and the spec wins: a disagreement is
# expected there, confined to these components (besides score and binary_pass, which the
# fold changes). The legend of every flag is in grade-expected.json under meta.flags_legend.
SPEC_WINS: dict[str, frozenset[str]] = {
    "fold_refused": frozenset(),  # spec folds what was evaluated; the reference refuses (0.0)
    "judge_errored": frozenset(),  # an errored judge is excluded from the combine
    "custom_nothing_decided": frozenset(),  # nothing decided: unscored, and the fold goes on
    "custom_no_check_declared_scored_0": frozenset({"custom_checks"}),  # decided nothing
    "custom_fail_on_error_false_ignored_by_core": frozenset({"custom_checks"}),  # unscored
    "jsonpath_equals_bool_vs_number": frozenset({"state_checks"}),  # bool never folds to int
    "hash_numeric_string_equals_number": frozenset({"state_checks"}),
    "transcript_lower_not_casefold": frozenset({"transcript_rules"}),  # casefold, not lower()
    "events_less_timeline": frozenset({"transcript_rules", "trace_checks"}),
}
ROW_FIELDS = ("class", "route", "decided_verdict", "evaluated", "passed", "failed", "undecided")


def bundle_name(trial: str) -> str:
    """The bundle directory a retrace trial reference names (its last path component)."""
    return trial.rstrip("/").rsplit("/", 1)[-1]


def same_number(got: float | None, want: float | None) -> bool:
    """Equal, or both numbers within float rounding (the two sides sum in other orders)."""
    if got is None or want is None:
        return got is want
    return math.isclose(got, want, rel_tol=0.0, abs_tol=1e-9)


def _trials_by_bundle(actual: Doc) -> dict[str, Doc]:
    return {bundle_name(t["trial"]): t for t in actual.get("trials", [])}


def _row_mismatches(expected: Doc, actual: Doc) -> list[str]:
    want = {(r["task_id"], r["id"]): r for r in expected["constraints"]}
    got: dict[tuple[str, str], Doc] = {}
    out: list[str] = []
    for row in actual.get("constraints", []):
        key = (row["task_id"], row["id"])
        if key in got:
            out.append(f"row {key}: reported twice")
        got[key] = row
    for key, w in want.items():
        g = got.get(key)
        if g is None:
            out.append(f"row {key}: missing (reference: {w['class']})")
            continue
        diffs = [f"{f} {g.get(f)!r} != {w[f]!r}" for f in ROW_FIELDS if g.get(f) != w[f]]
        if diffs:
            out.append(f"row {key}: " + "; ".join(diffs))
    out += [f"row {key}: not a row of the reference" for key in sorted(got.keys() - want.keys())]
    return out


def _verdict_mismatches(expected: Doc, trials: dict[str, Doc]) -> list[str]:
    out: list[str] = []
    want = {(e["trial"], e["constraint"]): e for e in expected["trials"]}
    for name, trial in sorted(trials.items()):
        for r in (trial.get("replayed") or {}).get("trace_check_results", []):
            e = want.pop((name, r["id"]), None)
            if e is None:
                out.append(f"verdict {name}/{r['id']}: not a verdict of the reference")
            elif (bool(r["passed"]), bool(r["undecided"])) != (e["passed"], e["undecided"]):
                out.append(
                    f"verdict {name}/{r['id']}: passed={r['passed']} undecided="
                    f"{r['undecided']}, reference passed={e['passed']} undecided={e['undecided']}"
                )
    out += [f"verdict {t}/{c}: missing" for t, c in sorted(want)]
    return out


def _summary_mismatches(expected: Doc, trials: dict[str, Doc]) -> list[str]:
    out: list[str] = []
    for s in expected["trial_summaries"]:
        name = s["trial"]
        t = trials.get(name)
        if t is None:
            out.append(f"trial {name}: missing")
            continue
        for field in ("winning_path", "gate_failed"):
            if t.get(field) != s[field]:
                out.append(f"trial {name}: {field} {t.get(field)!r} != {s[field]!r}")
        score = (t.get("replayed") or {}).get("score")
        if score is None and s["constraints_evaluated"] == 0:
            continue  # never measured here; the reference evaluated nothing either
        if not same_number(score, s["score"]):
            out.append(f"trial {name}: score {score!r} != {s['score']!r}")
    return out


def trace_mismatches(expected: Doc, actual: Doc) -> list[str]:
    trials = _trials_by_bundle(actual)
    return (
        _row_mismatches(expected, actual)
        + _verdict_mismatches(expected, trials)
        + _summary_mismatches(expected, trials)
    )


def grade_mismatches(expected: Doc, actual: Doc) -> list[str]:
    trials = _trials_by_bundle(actual)
    out: list[str] = []
    for e in expected["trials"]:
        if SPEC_WINS.keys() & set(e.get("flags", [])):
            continue
        name = e["trial"]
        t = trials.get(name)
        if t is None:
            out.append(f"trial {name}: missing")
            continue
        if t["status"] != "agreed":
            out.append(f"trial {name}: {t['status']}: {t.get('reason') or t.get('differences')}")
        replayed = t.get("replayed") or {}
        unmeasured = replayed.get("not_measured") or {}
        got = {**replayed.get("components", {}), "score": replayed.get("score")}
        for key, want in {**e["components"], "score": e["score"]}.items():
            # a component may be unmeasured only by name; the score whenever one is
            excused = key in unmeasured or (key == "score" and bool(unmeasured))
            if not same_number(got.get(key), want) and not (got.get(key) is None and excused):
                out.append(f"trial {name}: {key} {got.get(key)!r} != {want!r}")
        passed = replayed.get("binary_pass")
        if passed != e["binary_pass"] and not (passed is None and unmeasured):
            out.append(f"trial {name}: binary_pass {passed!r} != {e['binary_pass']!r}")
    return out
