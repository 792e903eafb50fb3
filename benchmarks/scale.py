"""Scale-out benchmark: retrace over >= 100,000 trials, local engine with 1 and 2
workers vs Ray in local mode with 2 CPUs, start-up included and excluded; the cost of one
segment task (read, verify, project); the driver-side append rate of replay results; and
the numbers the scaling model in docs/readme/ray.md is built from. Prints markdown.

    PYTHONPATH=. python -m benchmarks.scale [--trials 100000] [--base 1000] [--keep DIR]

Corpus: ``benchmarks.generate_corpus`` writes ``--base`` bundles (every feature of the
recorded format), ``vledger ingest`` reads them into a template ledger, and the template's
trial streams are replicated into ``--trials`` streams (a new corpus name per copy; every
other byte of every event is the generated one) appended straight into the bench ledger in
large batches. Generating and ingesting 100k bundles one by one would take ~11 minutes on
2 cores for the same events; the projection cannot tell the difference.

Every projection run is ``--dry-run``-like (computes, appends nothing), so all runs read
the same log; the append of one run's results is measured on its own.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks.generate_corpus import generate
from ledger.app.ingest import ingest_into as ingest
from ledger.app.retrace import RetraceRequest, outputs_digest, replay_events
from ledger.engines.base import TrialSelection
from ledger.engines.local import LocalEngine
from ledger.engines.ray_engine import RayEngine
from ledger.engines.segment_task import read_verified, trial_events
from ledger.engines.trials import group_trials
from ledger.log.segments import load_manifest, segment_dir
from ledger.log.store import open_ledger
from replay.grading.retrace import Override, retrace_trial
from replay.grading.retrace_report import build_report
from schemas.envelope import NewEvent

BATCH = 50_000


def build(folder: Path, trials: int, base: int) -> tuple[int, float]:
    """The bench ledger at ``folder/L``; returns (events, seconds)."""
    t0 = time.perf_counter()
    generate(folder / "gen", trials=base, seed=20261130)
    with open_ledger(folder / "T", create=True) as tpl:
        ingest(tpl, [str(folder / "gen")])
        groups = group_trials(tpl.read(stream_prefix="trial/"))
    copies = -(-trials // len(groups))
    with open_ledger(folder / "L", create=True) as lg:
        batch: list[NewEvent] = []
        made = 0
        for k in range(copies):
            corpus = f"scale{k:04d}"
            for stream, evs in groups.items():
                if made == trials:
                    break
                made += 1
                new = stream.replace("trial/gen/", f"trial/{corpus}/", 1)
                for e in evs:
                    p = e.data()
                    if e.type == "trial.registered":
                        p["corpus"] = corpus
                        p["bundle_path"] = p["bundle_path"].replace("gen/", f"{corpus}/", 1)
                    batch.append(NewEvent(new, e.type, p, event_id=f"{corpus}:{e.event_id}"))
                if len(batch) >= BATCH:
                    lg.append(batch)
                    batch = []
        if batch:
            lg.append(batch)
        size = lg.size()
    shutil.rmtree(folder / "T")
    shutil.rmtree(folder / "gen")
    return size, time.perf_counter() - t0


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.scale")
    ap.add_argument("--trials", type=int, default=100_000)
    ap.add_argument("--base", type=int, default=1000, help="generated bundles replicated")
    ap.add_argument("--segment-rows", type=int, default=100_000)
    ap.add_argument("--keep", type=Path, default=None, help="reuse / keep the ledger here")
    args = ap.parse_args(argv)
    folder = args.keep or Path(tempfile.mkdtemp(prefix="vledger-scale-"))
    folder.mkdir(parents=True, exist_ok=True)
    rows: list[tuple[str, str]] = []
    if not (folder / "L").exists():
        events, secs = build(folder, args.trials, args.base)
        rows.append(("corpus build (generate + ingest base, replicate, append)",
                     f"{events:,} events, {args.trials:,} trials in {secs:.1f} s"))
    override = Override()
    with open_ledger(folder / "L") as lg:
        size = lg.size()
        select = TrialSelection(to_seq=size - 1)
        if lg.sealed_upto() < size:
            _, secs = timed(lambda: lg.seal(max_rows=args.segment_rows))
            rows.append(("seal the log (one-off; later runs seal only the tail)",
                         f"{secs:.1f} s ({size / secs:,.0f} events/s)"))
        segs = load_manifest(lg.path).segments
        n_trials = len(lg.streams(prefix="trial/"))
        rows.append(("log", f"{size:,} events, {n_trials:,} trials, {len(segs)} segments "
                            f"(target {args.segment_rows:,} rows; mean {size / len(segs):,.0f})"))
        results = {}
        for name, eng in (("local, 1 worker", LocalEngine(1)), ("local, 2 workers", LocalEngine(2))):
            pairs, secs = timed(lambda e=eng: e.map_trials(lg, select, retrace_trial, override))
            results[name] = (pairs, secs, None)
        ray_eng = RayEngine(workers=2, seal=False)
        pairs, secs = timed(lambda: ray_eng.map_trials(lg, select, retrace_trial, override))
        results["Ray local mode, 2 CPUs"] = (pairs, secs, dict(ray_eng.timings))
        digests = {name: outputs_digest([o for _, o in p]) for name, (p, _, _) in results.items()}
        assert len(set(digests.values())) == 1, f"engines disagree: {digests}"
        base_secs = results["local, 1 worker"][1]
        print("\n| engine | wall (start-up included) | start-up | wall (start-up excluded) | trials/s (excl.) | vs local 1 worker |")
        print("|---|---|---|---|---|---|")
        for name, (p, secs, tm) in results.items():
            start = tm["startup"] + tm["shutdown"] if tm else 0.0
            excl = secs - start
            startup = f"{start:.1f} s (ray.init + shutdown)" if tm else "in wall (pool spawn)"
            print(f"| {name} | {secs:.1f} s | {startup} | {excl:.1f} s | {len(p) / excl:,.0f} | "
                  f"{base_secs / secs:.2f}x |")
        print(f"\nall three: {len(pairs):,} outcomes, identical outputs digest {next(iter(digests.values()))[:23]}…")

        # one segment task's cost, in this process: read + verify, then group + project
        info = segs[len(segs) // 2]
        folder_s = segment_dir(lg.path)
        table, t_read = timed(lambda: read_verified(folder_s, info))
        evs, t_events = timed(lambda: trial_events(table, size - 1))
        groups, t_group = timed(lambda: group_trials(evs))
        _, t_proj = timed(lambda: [retrace_trial(g, override) for g in groups.values()])
        seg_total = t_read + t_events + t_group + t_proj
        rows.append((f"one segment task ({info.file}: {info.rows:,} rows, {len(groups):,} trials)",
                     f"{seg_total:.2f} s = read+verify {t_read:.2f} + rows→events {t_events:.2f} "
                     f"+ group {t_group:.2f} + project {t_proj:.2f} "
                     f"({seg_total / info.rows * 1e6:.1f} µs/row)"))

        # the driver's share: report, digest, replay events, append
        outcomes = [o for _, o in pairs]
        report, t_report = timed(lambda: build_report(outcomes))
        config = RetraceRequest().config_record({"grading": None, "constraints": None}, None)
        root = lg.root(size)
        evs_out, t_events_out = timed(lambda: replay_events(outcomes, report, config, size, root))
        _, t_digest = timed(lambda: outputs_digest(outcomes))
        res, t_append = timed(lambda: lg.append(evs_out))
        rows.append(("driver: build_report + outputs digest + replay events",
                     f"{t_report:.1f} + {t_digest:.1f} + {t_events_out:.1f} s"))
        rows.append(("driver: append of the replay results (one batch)",
                     f"{res.appended:,} events in {t_append:.1f} s = {res.appended / t_append:,.0f} events/s"))
        tm = results["Ray local mode, 2 CPUs"][2]
        rows.append(("Ray job split", f"seal check {tm['seal']:.2f} s, ray.init {tm['startup']:.1f} s, "
                                      f"tasks+gather {tm['compute']:.1f} s over {int(tm['tasks'])} tasks, "
                                      f"shutdown {tm['shutdown']:.1f} s"))
        rows.append(("machine load (1/5/15 min; 2 cores shared with other jobs)",
                     " / ".join(f"{x:.1f}" for x in os.getloadavg())))
    print("\n| measure | value |\n|---|---|")
    for k, v in rows:
        print(f"| {k} | {v} |")
    if args.keep is None:
        shutil.rmtree(folder)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
