"""Reconcile timings: the whole 17-trial process, and throughput over a generated corpus.

    PYTHONPATH=. python -m benchmarks.reconcile [--trials 10000] [--seed 0] [--repeat 3]

1. Whole process, start-up included: ``vledger reconcile --dry-run --json`` over the shipped
   notes corpus and packs (``corpora/``), as a fresh interpreter, median of ``--repeat``. Baseline in the
   same run: a fresh interpreter that only imports the CLI — the floor every command pays.
2. On disk: ``run_reconcile`` (dry run) over ``--trials`` bundles written by
   ``benchmarks.generate_corpus``, with one pack per generated task (its grading block taken
   from a recorded task snapshot) and a ``candidate`` migration of ``checked_before_acting``
   declared by one of them. Every bundle is read, parsed and folded into a trial; the
   declaring task's trials are also evaluated and reconciled. Baseline in the same run: the
   parse floor — PyYAML's C loader over the same bundle files and nothing else.
3. Pure: ``reconcile_entry`` over ``--trials`` observation values (labels precomputed), the
   bar and the counterfactual alone. Baseline: the 2×2 table and κ over the same labels.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from benchmarks.generate_corpus import generate
from ledger.app.reconcile import ReconcileRequest as Invocation
from ledger.app.reconcile import run_reconcile
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
from tests.data_paths import PACKS, PACKS_BASE

ROOT = Path(__file__).resolve().parents[1]
GENERATED_CRITERION = "checked_before_acting"


# --- 1. whole process ------------------------------------------------------------------------


def _process(args: list[str]) -> tuple[float, int]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    done = subprocess.run(args, cwd=ROOT, env=env, check=False, capture_output=True)
    return time.perf_counter() - start, done.returncode


def in_process(repeat: int) -> float:
    """The same 17-trial dry run inside an already-started interpreter (median)."""
    inv = Invocation(packs=[PACKS], base=PACKS_BASE)
    run_reconcile(inv)  # warm: imports and the C loader
    times = []
    for _ in range(max(repeat, 5)):
        start = time.perf_counter()
        run_reconcile(inv)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def whole_process(repeat: int) -> tuple[float, float, int]:
    cli = [sys.executable, "-c", "from ledger.cli import main; main()"]
    cmd = [*cli, "reconcile", "--packs", str(PACKS),
           "--base", str(PACKS_BASE), "--dry-run", "--json"]  # fmt: skip
    base = [_process([sys.executable, "-c", "import ledger.cli"])[0] for _ in range(repeat)]
    runs = [_process(cmd) for _ in range(repeat)]
    return statistics.median(t for t, _ in runs), statistics.median(base), runs[0][1]


# --- 2. on disk --------------------------------------------------------------------------------


def write_packs(base: Path, corpus: Path, *, every: bool = False, into: str = "packs") -> str:
    """One pack per generated task (under ``base / into``); the first task with a trace
    block declares a candidate (``every``: each task declares its own)."""
    snapshots: dict[str, dict] = {}
    for task_file in sorted(corpus.glob("*/task.yaml")):
        task = yaml.load(task_file.read_bytes(), Loader=yaml.CSafeLoader)  # noqa: S506
        if (task.get("grading_config") or {}).get("trace_checks"):
            snapshots.setdefault(task["task_id"], task["grading_config"])
    declaring = sorted(snapshots)[0]
    for task_id, grading in snapshots.items():
        pack = base / into / task_id
        pack.mkdir(parents=True)
        (pack / "task.yaml").write_text(
            yaml.safe_dump({"task_id": task_id, "grading": "grading.yaml"})
        )
        (pack / "grading.yaml").write_text(yaml.safe_dump(grading))
        if task_id != declaring and not every:
            continue
        # one criterion over one corpus is one claim (pooled): each other task claims its own
        # task-specific criterion, by its own constraint
        mine = 0 if task_id == declaring else 1
        criterion = grading["llm_judge"]["rubric"]["criteria"][mine]
        if mine == 0:
            assert criterion["id"] == GENERATED_CRITERION
        gate = grading["trace_checks"]["constraints"][mine]["id"]
        was = {k: criterion[k] for k in ("kind", "required", "weight", "description")}
        entry = {"criterion": criterion["id"], "mode": "candidate", "by": [gate],
                 "corpus": corpus.relative_to(base).as_posix(), "was": was,
                 "combine_weights": {"llm_judge": 0.6, "trace_checks": 0.4}}  # fmt: skip
        (pack / "migration.yaml").write_text(yaml.safe_dump({"migrations": [entry]}))
    return declaring


def parse_floor(corpus: Path) -> float:
    files = [p for p in corpus.rglob("*.yaml")]
    start = time.perf_counter()
    for p in files:
        yaml.load(p.read_bytes(), Loader=yaml.CSafeLoader)  # noqa: S506 - C safe loader
    return time.perf_counter() - start


def on_disk(trials: int, seed: int, repeat: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="vledger-reconcile-bench-") as tmp:
        base = Path(tmp)
        corpus = base / "corpus"
        generate(corpus, trials, seed)
        write_packs(base, corpus)
        floors, runs, outcome = [], [], None
        for _ in range(repeat):
            floors.append(parse_floor(corpus))
            start = time.perf_counter()
            outcome = run_reconcile(Invocation(packs=[base / "packs"], base=base))
            runs.append(time.perf_counter() - start)
        assert outcome is not None
        (entry,) = outcome.document["entries"]
        source = outcome.document["sources"][0]
        return {
            "seconds": min(runs),
            "floor": min(floors),
            "read": source["trials_read"],
            "observations": entry["observations"],
            "excluded": len(entry["excluded_trials"]),
            "kappa": entry["kappa"],
            "verdict": entry["verdict"],
        }


# --- 3. pure -----------------------------------------------------------------------------------

CRIT = "checked_duplicates_first"
GATE = "the_notes_were_listed_before_the_note_was_added"
RUBRIC = (
    CriterionShape(CRIT, "binary", True, 1.0, "list first and warn"),
    CriterionShape("note_saved", "graded", False, 1.0, "saved"),
    CriterionShape("clarity", "graded", False, 0.5, "clear"),
)


def observations(n: int, seed: int = 7) -> list[TrialObservation]:
    rng = random.Random(seed)
    grading = RecordedGrading(RUBRIC, {"llm_judge": 1.0}, "weighted", 0.75)
    out = []
    for i in range(n):
        met = rng.random() < 0.5
        passed = met if rng.random() > 0.05 else not met
        saved, clear = rng.choice((0.0, 0.5, 1.0)), rng.choice((0.5, 1.0))
        judge = 0.0 if not met else (saved * 1.0 + clear * 0.5) / 1.5
        rows = (
            CriterionResult(CRIT, met, 1.0 if met else 0.0, "why"),
            CriterionResult("note_saved", saved >= 0.5, saved, "why"),
            CriterionResult("clarity", clear >= 0.5, clear, "why"),
        )
        grade = RecordedGrade("completed", rows, {"llm_judge": judge}, judge, met and judge >= 0.75)
        cand = CandidateEvaluation({GATE: passed}, 1.0 if passed else 0.0, not passed)
        out.append(TrialObservation(f"gen/trial{i}", "t", grade, grading, cand))
    return out


def claim() -> Claim:
    was = {"kind": "binary", "required": True, "weight": 1.0, "description": "x"}
    doc = {"migrations": [{"criterion": CRIT, "mode": "candidate", "by": [GATE], "corpus": "gen",
                           "was": was, "combine_weights": {"llm_judge": 0.5, "trace_checks": 0.5}}]}  # fmt: skip
    (entry,) = parse_migration(doc).migrations
    return Claim(entry, ("t",), {GATE: ConstraintDecl(GATE, "", "gate")})


def pure(n: int, repeat: int) -> tuple[float, float, int]:
    obs, c = observations(n), claim()
    full, floor, rows = [], [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        rows = len(reconcile_entry(c, obs, sweep=True).counterfactual.rows)
        full.append(time.perf_counter() - start)
        start = time.perf_counter()
        t = Table()
        for o in obs:
            row = next(r for r in o.grade.criterion_results if r.id == CRIT)
            t = t.add(row.met, bool(o.evaluate().verdicts[GATE]))
        cohen_kappa(t)
        floor.append(time.perf_counter() - start)
    return min(full), min(floor), rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    a = parser.parse_args()
    proc, start_up, code = whole_process(a.repeat)
    warm = in_process(a.repeat)
    disk = on_disk(a.trials, a.seed, a.repeat)
    full, floor, rows = pure(a.trials, a.repeat)
    kappa = "undefined" if disk["kappa"] is None else f"{disk['kappa']:.3f}"
    print("| measurement | value | baseline (same run) |")
    print("| --- | --- | --- |")
    print(
        f"| `vledger reconcile --dry-run --json`, 17-trial notes corpus, whole process "
        f"(exit {code}) | {proc * 1000:.0f} ms | {start_up * 1000:.0f} ms: interpreter + "
        "`import ledger.cli` |"
    )
    print(
        f"| the same 17-trial dry run in process (`run_reconcile`, warm) | {warm * 1000:.0f} ms "
        "| — |"
    )
    print(
        f"| `run_reconcile` (dry run) over {disk['read']:,} generated bundles on disk "
        f"({disk['observations']:,} observations of the declared candidate, "
        f"{disk['excluded']:,} excluded; κ {kappa}, {disk['verdict']}) "
        f"| {disk['read'] / disk['seconds']:,.0f} trials/s ({disk['seconds']:.1f} s) "
        f"| {disk['read'] / disk['floor']:,.0f} trials/s ({disk['floor']:.1f} s): C YAML parse only |"
    )
    print(
        f"| `reconcile_entry` over {a.trials:,} observation values ({rows:,} counterfactual "
        f"rows) | {a.trials / full:,.0f} trials/s ({full * 1000:.0f} ms) "
        f"| {a.trials / floor:,.0f} trials/s ({floor * 1000:.0f} ms): table + κ only |"
    )


if __name__ == "__main__":
    main()
