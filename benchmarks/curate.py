"""Curation timings beside the reference's ``tolokaforge curate`` over the same runs, and the
check that both admit and reject the same trials for the same reasons.

    PYTHONPATH=. python -m benchmarks.curate [--trials 600] [--seed 7] [--repeat 3]
        [--reference /work/tfref/bin/python]

1. ``benchmarks.generate_corpus`` writes ``--trials`` bundles; they are moved into the run
   layout a run writes (``<run-id>/trials/<task-id>/<index>``), and one in ten record-
   carrying trials gets every recorded call set to ``status: error`` (environment-dead).
   Judge-errored and ungraded trials come from the generator itself.
2. Ours, in process: ``curate`` over every run directory into a fresh ``--into``
   (read, classify, render, write, append ``corpus.curated``), best of ``--repeat``.
3. The reference, in process: ``curate_corpus`` in the reference's own interpreter over
   the same run directories, best of ``--repeat`` (its import excluded). Both whole
   processes are also timed once (start-up included; the reference's CLI start-up waits
   on a model-price fetch that fails offline, so read that figure as its start-up cost).
4. Cross-check: the admitted rows (directory, run, task, models, met, record_carried) and
   the rejections (run-relative source, reason, by, observation) must be equal; the
   script exits 1 if they are not.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from benchmarks.generate_corpus import generate
from ledger.app.curate import curate

ROOT = Path(__file__).resolve().parents[1]
CRITERION = "checked_before_acting"
DEFAULT_REFERENCE = Path("/work/tfref/bin/python")
_CLI = "from ledger.cli import main; main()"

_REFERENCE_IN_PROCESS = """
import json, sys, time
from pathlib import Path
from tolokaforge.core.grading.corpus_curation import curate_corpus
sources = [Path(p) for p in json.loads(sys.argv[1])]
into, repeat = Path(sys.argv[2]), int(sys.argv[3])
best = float("inf")
for i in range(repeat):
    target = into.parent / f"{into.name}{i}"
    start = time.perf_counter()
    outcome = curate_corpus(sources=sources, into=target, criterion=sys.argv[4])
    best = min(best, time.perf_counter() - start)
print(json.dumps({"seconds": best, "manifest": outcome.manifest.model_dump(mode="json")}))
"""


def runs_layout(flat: Path, runs: Path, seed: int) -> list[Path]:
    """Move each generated bundle to ``<run>/trials/<task>/<index>``; kill one in ten."""
    rng = random.Random(f"{seed}:dead")
    for bundle in sorted(p for p in flat.iterdir() if p.is_dir()):
        run, index = bundle.name.rsplit("_trial", 1)
        task = yaml.safe_load((bundle / "trajectory.yaml").read_text())["task_id"]
        dest = runs / run / "trials" / task / index
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(bundle), dest)
        log = dest / "tool_log.yaml"
        if log.exists() and rng.random() < 0.1:
            calls = yaml.safe_load(log.read_text()) or []
            for call in calls:
                call["status"] = "error"
            log.write_text(yaml.safe_dump(calls, sort_keys=False))
    return sorted(p for p in runs.iterdir() if p.is_dir())


def _ours(sources: list[Path], work: Path, repeat: int) -> tuple[float, dict]:
    best, manifest = float("inf"), {}
    for i in range(repeat):
        start = time.perf_counter()
        result = curate(
            sources=sources, criterion=CRITERION, into=work / f"ours{i}", ledger=work / f"lg{i}"
        )
        best = min(best, time.perf_counter() - start)
        manifest = result.curation.manifest.document()
    return best, manifest


def _reference(python: Path, sources: list[Path], work: Path, repeat: int) -> tuple[float, dict]:
    done = subprocess.run(
        [str(python), "-c", _REFERENCE_IN_PROCESS, json.dumps([str(s) for s in sources]),
         str(work / "ref"), str(repeat), CRITERION],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    out = json.loads(done.stdout.strip().splitlines()[-1])
    return out["seconds"], out["manifest"]


def _process(args: list[str], env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(args, capture_output=True, check=True, env=env, cwd=ROOT)
    return time.perf_counter() - start


def _comparable(manifest: dict, runs: Path) -> tuple[list, list]:
    """Admitted rows as written; rejections with the source relative to the runs' parent."""
    base = str(runs) + "/"
    rejected = [
        {**r, "source": r["source"][len(base) :] if r["source"].startswith(base) else r["source"]}
        for r in manifest["excluded"]
    ]
    key = lambda r: r["source"]  # noqa: E731 - both lists in one order for the comparison
    return manifest["bundles"], sorted(rejected, key=key)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=600)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--reference", type=Path, default=DEFAULT_REFERENCE)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        generate(work / "flat", args.trials, args.seed)
        runs = work / "runs"
        sources = runs_layout(work / "flat", runs, args.seed)
        ours_s, ours_m = _ours(sources, work, args.repeat)
        print(f"bundles: {args.trials} in {len(sources)} run directories")
        print(f"| curate, {args.trials} bundles, in process (ours) | {ours_s * 1000:.0f} ms "
              f"| {args.trials / ours_s:,.0f} bundles/s |")  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        flags = [a for s in sources for a in ("--source", str(s))]
        ours_p = _process([sys.executable, "-c", _CLI, "curate", "--criterion",
                           CRITERION, *flags, "--into", str(work / "ours_cli"), "--ledger",
                           str(work / "lg_cli")], env)  # fmt: skip
        print(f"| curate, whole process (ours) | {ours_p:.2f} s |")
        if not args.reference.exists():
            print(f"reference interpreter {args.reference} not found: no baseline, no cross-check")
            return 0
        ref_s, ref_m = _reference(args.reference, sources, work, args.repeat)
        print(f"| curate, in process (reference 0.33.1) | {ref_s * 1000:.0f} ms "
              f"| {args.trials / ref_s:,.0f} bundles/s | ratio ours/reference time "
              f"{ours_s / ref_s:.2f}x ({ref_s / ours_s:.2f}x as fast) |")  # fmt: skip
        cli = args.reference.parent / "tolokaforge"
        ref_p = _process([str(cli), "curate", "--criterion", CRITERION, *flags, "--into",
                          str(work / "ref_cli")])  # fmt: skip
        print(f"| curate, whole process (reference CLI) | {ref_p:.2f} s |")
        ours_b, ours_r = _comparable(ours_m, runs)
        ref_b, ref_r = _comparable(ref_m, runs)
        reasons: dict[str, int] = {}
        for r in ours_r:
            reasons[r["reason"]] = reasons.get(r["reason"], 0) + 1
        same = ours_b == ref_b and ours_r == ref_r
        print(f"cross-check: {len(ours_b)} admitted, {len(ours_r)} rejected {reasons}; "
              f"same as the reference: {same}")  # fmt: skip
        return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
