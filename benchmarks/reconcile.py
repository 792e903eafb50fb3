"""Reconcile timings: the whole 17-trial process, and throughput over 10,000 trials.

1. Whole process, start-up included: ``vledger reconcile`` over ../shared's notes corpus
   and packs (``--dry-run --json``), run as a fresh interpreter, median of ``--repeat``.
   Baseline measured in the same run: a fresh interpreter that only imports the CLI — the
   floor every command pays before it reads anything.
2. Throughput: ``reconcile_entry`` over ``--trials`` generated observations (the notes
   shape, half met, candidates precomputed, ~5 % disagreements, a declared map so every
   row is re-folded). The observations are generated directly as values, because the
   bundle generator (benchmarks/generate_corpus.py, helper ingest) had not landed on this
   branch when this was written; with the trace projection in place the on-disk cost adds
   YAML reading and one timeline + evaluation per trial, which their own benchmarks cover.
   Baseline: the 2×2 table and κ alone over the same labels.

    PYTHONPATH=. python -m benchmarks.reconcile [--trials 10000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from reconcile.inputs import (
    CandidateEvaluation,
    ConstraintDecl,
    CriterionResult,
    CriterionShape,
    RecordedGrade,
    RecordedGrading,
    TrialObservation,
)
from reconcile.kappa import Table, cohen_kappa
from reconcile.reconcile import Claim, reconcile_entry
from schemas.migration import parse_migration

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT / ".." / "shared"
CRIT = "checked_duplicates_first"
GATE = "the_notes_were_listed_before_the_note_was_added"
RUBRIC = (
    CriterionShape(CRIT, "binary", True, 1.0, "list first and warn"),
    CriterionShape("note_saved", "graded", False, 1.0, "saved"),
    CriterionShape("clarity", "graded", False, 0.5, "clear"),
)


def _process(args: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    subprocess.run(args, cwd=ROOT, env=env, check=False, capture_output=True)
    return time.perf_counter() - start


def whole_process(repeat: int) -> tuple[float, float, int]:
    cli = [sys.executable, "-c", "from ledger.cli import main; main()"]
    cmd = cli + [
        "reconcile",
        "--packs",
        str(SHARED / "corpora" / "packs"),
        "--base",
        str(SHARED),
        "--dry-run",
        "--json",
    ]
    probe = subprocess.run(
        cmd, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True
    )
    base = [_process([sys.executable, "-c", "import ledger.cli"]) for _ in range(repeat)]
    full = [_process(cmd) for _ in range(repeat)]
    return statistics.median(full), statistics.median(base), probe.returncode


def observations(n: int, seed: int = 7) -> list[TrialObservation]:
    rng = random.Random(seed)
    grading = RecordedGrading(RUBRIC, {"llm_judge": 1.0}, "weighted", 0.75)
    out = []
    for i in range(n):
        met = rng.random() < 0.5
        passed = met if rng.random() > 0.05 else not met
        saved, clear = rng.choice((0.0, 0.5, 1.0)), rng.choice((0.5, 1.0))
        judge = 0.0 if not met else (saved * 1.0 + clear * 0.5) / 1.5
        grade = RecordedGrade(
            "completed",
            (
                CriterionResult(CRIT, met, 1.0 if met else 0.0, "why"),
                CriterionResult("note_saved", saved >= 0.5, saved, "why"),
                CriterionResult("clarity", clear >= 0.5, clear, "why"),
            ),
            {"llm_judge": judge, "state_checks": None},
            judge,
            met and judge >= 0.75,
        )
        cand = CandidateEvaluation({GATE: passed}, 1.0 if passed else 0.0, not passed)
        out.append(TrialObservation(f"gen/trial{i}", "t", grade, grading, cand))
    return out


def claim() -> Claim:
    (entry,) = parse_migration(
        {
            "migrations": [
                {
                    "criterion": CRIT,
                    "mode": "candidate",
                    "by": [GATE],
                    "corpus": "gen",
                    "was": {"kind": "binary", "required": True, "weight": 1.0, "description": "x"},
                    "combine_weights": {"llm_judge": 0.5, "trace_checks": 0.5},
                }
            ]
        }
    ).migrations
    return Claim(entry, ("t",), {GATE: ConstraintDecl(GATE, "", "gate")})


def throughput(n: int, repeat: int) -> tuple[float, float, int, int]:
    obs = observations(n)
    c = claim()
    full, floor = [], []
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = reconcile_entry(c, obs, sweep=True)
        full.append(time.perf_counter() - start)
        start = time.perf_counter()
        t = Table()
        for o in obs:
            cand = o.evaluate()
            (row,) = (r for r in o.grade.criterion_results if r.id == CRIT)
            t = t.add(row.met, bool(cand.verdicts[GATE]))
        cohen_kappa(t)
        floor.append(time.perf_counter() - start)
    assert result is not None
    return min(full), min(floor), result.observations, len(result.counterfactual.rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    a = parser.parse_args()
    proc, start_up, code = whole_process(a.repeat)
    full, floor, n_obs, rows = throughput(a.trials, a.repeat)
    print("| measurement | value | baseline (same run) |")
    print("| --- | --- | --- |")
    print(
        f"| `vledger reconcile --dry-run --json`, 17-trial notes corpus, whole process (exit {code}) "
        f"| {proc * 1000:.0f} ms | {start_up * 1000:.0f} ms (interpreter + `import ledger.cli`) |"
    )
    print(
        f"| `reconcile_entry` over {a.trials:,} generated observations ({n_obs:,} observed, "
        f"{rows:,} counterfactual rows) | {a.trials / full:,.0f} trials/s ({full * 1000:.0f} ms) "
        f"| {a.trials / floor:,.0f} trials/s ({floor * 1000:.0f} ms): table + κ only |"
    )


if __name__ == "__main__":
    main()
