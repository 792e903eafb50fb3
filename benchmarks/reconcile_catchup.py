"""What it costs to reconcile a grown ledger by carrying the last run forward, against a full run.

A corpus of ``--trials`` generated trials (``benchmarks.generate_corpus``; packs as in
``benchmarks.reconcile``, one declaring a candidate over the corpus) is reconciled into a
ledger once. Then ``--add`` more generated trials join the same corpus directory (their
bundles and corpus.yaml rows). Over copies of that ledger, fresh processes reconcile it
three ways (best of ``--repeat`` alternating runs, each on its own copy):

- ``extend``: as it comes — the ingest skips the bundles it holds byte for byte, and the
  observations of unchanged trials are carried forward from the first run;
- ``full``: ``full=True`` — every trial observed again from the ledger (the ingest still
  skips held bundles: that is ingest's, not reconcile's);
- ``cold``: ``full=True`` on a copy without ``<ledger>/projections/`` — every bundle parsed
  again too, what every reconcile of a grown corpus cost before either existed.

With ``--from-ledger``, the corpus is read as the ledger holds it (``reconcile
--from-ledger``): the corpus is ingested and reconciled from the ledger once, the grown
corpus is then ingested (``vledger ingest``: adding the trials is ingest's cost, as it is
for a retrace), and two ways are timed: ``extend`` and ``full`` (``full=True``). One task
of five declares the claim, as above; with ``--claims every``, each task declares its own,
so every trial is in an entry (and has a row in the report).

All must print the same outputs digest. Reported: each one's time inside the
process (the ``ledger.reconcile`` call, imports excluded), the extension's peak RSS (its
own ``VmHWM``: ``ru_maxrss`` would report this script's peak, which a spawned process
inherits across exec on Linux), and the ratios. The same at a tenth of ``--trials``, so the extension's peak RSS at both sizes
shows whether its memory stays flat as the ledger grows.

    PYTHONPATH=. python -m benchmarks.reconcile_catchup [--trials 100000] [--add 1000] [--repeat 3]
        [--workdir DIR] [--from-ledger [--claims one|every]]

Targets (at 100,000 trials): the extension costs at most 5 % of the full run; its peak RSS
at ``--trials`` is at most 1.3x the one at a tenth of it.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

import ledger
from benchmarks.generate_corpus import generate
from benchmarks.reconcile import write_packs
from benchmarks.timing import MIB, best_alternating, flat_row
from ledger.log.store import open_ledger

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import json, resource, sys, time
from pathlib import Path
import pyarrow, ledger, ledger.app.reconcile, replay.trace_checks.evaluate  # imports: not timed
t0 = time.perf_counter()
res = ledger.reconcile(packs=[Path(sys.argv[2]) / sys.argv[5]], base=Path(sys.argv[2]),
                       ledger=sys.argv[1], full=sys.argv[3] != "extend",
                       from_ledger=sys.argv[4] == "held")
seconds = time.perf_counter() - t0
rc = res.document["receipt"]
try:  # this image's own high-water mark: ru_maxrss keeps the spawning parent's across exec
    peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
except (OSError, StopIteration):
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": seconds, "digest": rc["outputs_digest"], "carried": rc.get("carried"),
                  "evaluated": rc.get("evaluated"), "peak": peak * 1024}))
"""


def probe(
    ledger_dir: Path, base: Path, mode: str, held: bool = False, packs: str = "packs"
) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(ledger_dir), str(base), mode, "held" if held else "disk",
         packs],
        capture_output=True, text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT)}, check=False,
    )  # fmt: skip
    if done.returncode not in (0, 1):  # 1: the generated candidate is refused; still a verdict
        raise SystemExit(f"reconcile ({mode}) failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def add_trials(corpus: Path, tmp: Path, add: int, seed: int) -> None:
    """``add`` generated trials (another seed: other directory names) into ``corpus``."""
    more = tmp / "more"
    generate(more, trials=add, seed=seed)
    doc = yaml.load((corpus / "corpus.yaml").read_bytes(), Loader=yaml.CSafeLoader)  # noqa: S506
    extra = yaml.load((more / "corpus.yaml").read_bytes(), Loader=yaml.CSafeLoader)  # noqa: S506
    for key in ("task_ids", "curated_from"):
        doc[key] = sorted(set(doc[key]) | set(extra[key]))
    doc["bundles"] += extra["bundles"]
    (corpus / "corpus.yaml").write_text(yaml.dump(doc, Dumper=yaml.CSafeDumper, sort_keys=False))
    for row in extra["bundles"]:
        (more / row["directory"]).rename(corpus / row["directory"])
    shutil.rmtree(more)


def build(tmp: Path, trials: int, add: int, seed: int) -> float | None:
    """The corpus of ``trials``, reconciled once, then grown by ``add``: the first run's
    seconds, or None when ``tmp`` holds it already (``--workdir``, built by an earlier run
    with the same sizes and seed)."""
    base, grown = tmp / f"b-{trials}", tmp / f"L-{trials}"
    marker = tmp / f"built-{trials}-{add}-{seed}"
    if marker.is_file() and base.is_dir() and grown.is_dir():
        return None
    shutil.rmtree(base, ignore_errors=True)
    shutil.rmtree(grown, ignore_errors=True)
    corpus = base / "corpus"
    generate(corpus, trials=trials, seed=seed)
    write_packs(base, corpus)
    with open_ledger(grown, create=True):
        pass
    t0 = time.perf_counter()
    ledger.reconcile(packs=[base / "packs"], base=base, ledger=grown)
    first = time.perf_counter() - t0
    add_trials(corpus, tmp, add, seed + 1)
    marker.write_text(f"{first}\n")
    return first


def build_held(tmp: Path, trials: int, add: int, seed: int, every: bool = False) -> float | None:
    """The ledger of a team that reconciles from the ledger: the corpus of ``trials``
    ingested, reconciled from the ledger once, then the grown corpus (``build``'s) ingested;
    the first run's seconds, or None when ``tmp`` holds it already. Not a copy of
    ``build``'s ledger: its reconcile from disk appended a receipt naming every trial (one
    row of ~19 MB at 100,000), and DuckDB then fails every checkpoint within the steady
    pool for a while, so the next command's close checkpoints at the cap (~60 MiB more).
    ``every``: with packs in which every task declares a claim (``packs-every``)."""
    first = build(tmp, trials, add, seed)
    base, held = tmp / f"b-{trials}", tmp / f"{'He' if every else 'H'}-{trials}"
    marker = tmp / f"built-held-{'every-' if every else ''}{trials}-{add}-{seed}"
    if first is None and marker.is_file() and held.is_dir():
        return None
    shutil.rmtree(held, ignore_errors=True)
    packs = base / packs_of(every)
    if every and not packs.is_dir():
        write_packs(base, base / "corpus", every=True, into=packs.name)
    original = tmp / f"h-{trials}" / "corpus"  # the corpus before it grew (the same seed)
    shutil.rmtree(original.parent, ignore_errors=True)
    generate(original, trials=trials, seed=seed)
    with open_ledger(held, create=True):
        pass
    ledger.ingest(original, ledger=held, skip_bad=True, keep_inconsistent=True)
    shutil.rmtree(original.parent)
    t0 = time.perf_counter()
    ledger.reconcile(packs=[packs], base=base, ledger=held, from_ledger=True)
    seconds = time.perf_counter() - t0
    ledger.ingest(base / "corpus", ledger=held, skip_bad=True, keep_inconsistent=True)
    marker.write_text(f"{seconds}\n")
    return seconds


def packs_of(every: bool) -> str:
    return "packs-every" if every else "packs"


def measure(
    tmp: Path, trials: int, add: int, seed: int, repeat: int, keep: bool, held: bool = False,
    every: bool = False,
) -> dict[str, Any]:  # fmt: skip
    first = build_held(tmp, trials, add, seed, every) if held else build(tmp, trials, add, seed)
    kind = ("He" if every else "H") if held else "L"
    base, grown = tmp / f"b-{trials}", tmp / f"{kind}-{trials}"

    def cold(run: Path, mode: str) -> None:
        if mode == "cold":
            shutil.rmtree(run / "projections")

    modes = ("extend", "full") if held else ("extend", "full", "cold")
    runs = [(mode, grown) for mode in modes]
    best = best_alternating(
        runs, lambda run, mode: probe(run, base, mode, held, packs_of(every)), tmp / "run",
        repeat, cold,
    )
    digests = {b["digest"] for b in best.values()}
    if len(digests) != 1 or best["extend"]["evaluated"] != add:
        raise SystemExit(f"the extension differs from the full run: {best}")
    if not keep:
        for done in (grown, tmp / f"L-{trials}", base):
            shutil.rmtree(done, ignore_errors=True)
    return {"trials": trials, "first": first, **best}


def disk_row(row: dict[str, Any], add: int) -> str:
    n, ext, full, cold = row["trials"], row["extend"], row["full"], row["cold"]
    return (
        f"| reconcile of {n:,} + {add:,} added trials, extending the first run "
        f"({ext['carried']:,} carried, {ext['evaluated']:,} read) | {ext['seconds']:.2f} s, "
        f"peak {ext['peak'] / MIB:.0f} MiB | `full=True`: {full['seconds']:.2f} s; "
        f"without projections/: {cold['seconds']:.2f} s{first_run(row['first'])} | "
        f"{ext['seconds'] / full['seconds']:.1%} of full, "
        f"{ext['seconds'] / cold['seconds']:.1%} of cold (target <= 5 %) |"
    )


def held_row(row: dict[str, Any], add: int) -> str:
    n, ext, full = row["trials"], row["extend"], row["full"]
    return (
        f"| reconcile --from-ledger of {n:,} + {add:,} ingested trials, extending the first run "
        f"({ext['carried']:,} carried, {ext['evaluated']:,} read) | {ext['seconds']:.2f} s, "
        f"peak {ext['peak'] / MIB:.0f} MiB | `full=True`: {full['seconds']:.2f} s, "
        f"peak {full['peak'] / MIB:.0f} MiB{first_run(row['first'])} | "
        f"{ext['seconds'] / full['seconds']:.1%} of full (target <= 5 %) |"
    )


def first_run(seconds: float | None) -> str:
    return "" if seconds is None else f" (first run {seconds:.2f} s)"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=100_000)
    ap.add_argument("--add", type=int, default=None, help="default: --trials / 100")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=3, help="alternating runs; the best is kept")
    ap.add_argument("--workdir", type=Path, default=None,
                    help="keep the corpora and ledgers here, and reuse those built before")  # fmt: skip
    ap.add_argument("--from-ledger", action="store_true",
                    help="reconcile the corpus as the ledger holds it (reconcile --from-ledger)")  # fmt: skip
    ap.add_argument("--claims", choices=("one", "every"), default="one",
                    help="one task's pack declares a claim (default), or every task's")  # fmt: skip
    args = ap.parse_args()
    add = args.add or max(args.trials // 100, 1)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d) if args.workdir is None else args.workdir
        tmp.mkdir(parents=True, exist_ok=True)
        keep = args.workdir is not None
        held, every = args.from_ledger, args.claims == "every"
        if every and not held:
            ap.error("--claims every is measured with --from-ledger")
        small = measure(tmp, max(args.trials // 10, 1), add, args.seed, args.repeat, keep, held,
                        every)  # fmt: skip
        large = measure(tmp, args.trials, add, args.seed, args.repeat, keep, held, every)
    print("| measurement | result | baseline (same run) | ratio |")
    print("| --- | --- | --- | --- |")
    for row in (small, large):
        print(held_row(row, add) if held else disk_row(row, add))
    print(flat_row("extension", large["extend"] | {"trials": large["trials"]},
                   small["extend"] | {"trials": small["trials"]}))  # fmt: skip


if __name__ == "__main__":
    main()
