"""Verdict grades and verdict-core receipts: how fast, measured on this machine.

1. Admissions derived per second, one core, for units with 1, 2, 5, 10 and 20 declared
   oracles (mixed tiers and chains, some failing, all run):
   * ``derive``          — the pure derivation over already-assembled evidence;
   * ``derive_verdict``  — from the unit's stream events, payload validation included;
   * baseline            — an orjson dump+load round-trip of the same events: the floor
     any consumer of those events pays before deciding anything.
2. verdict-core receipt verification of corpora/verdict-core/demo-run:
   in-process (``check_run_dir``), and as a whole process
   (``vledger receipt verify DIR --json``), with ``python -c pass`` as the
   process-start baseline.

    PYTHONPATH=. python -m benchmarks.verdict [--units 2000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from ledger.app.receipts import check_run_dir
from ledger.app.units import load_ladder
from replay.verdicts.derive import derive
from replay.verdicts.evidence import UnitEvent, derive_verdict, unit_evidence
from tests.data_paths import VCORE_DEMO_RUN

ROOT = Path(__file__).resolve().parents[1]
DEMO = VCORE_DEMO_RUN
SIZES = (1, 2, 5, 10, 20)
TIERS = ("proof", "known_answer", "interop", "constructed_check", "review_only")


def make_unit(rng: random.Random, n: int, unit: str) -> list[UnitEvent]:
    events = []
    for i in range(n):
        author = {
            "identity": f"author-{rng.randrange(4)}",
            "kind": rng.choice(("human", "agent", "kernel")),
            "chain_id": rng.choice(("", "chain-1", "chain-2")),
        }
        events.append(
            UnitEvent(
                "oracle.declared",
                {"unit": unit, "oracle_id": f"o{i}", "tier": rng.choice(TIERS), "author": author},
            )
        )
    producer = {"identity": "producer", "kind": "agent", "chain_id": "chain-1"}
    events.append(
        UnitEvent(
            "work.produced", {"unit": unit, "producer": producer, "content_identity": "sha:a"}
        )
    )
    for i in range(n):
        events.append(
            UnitEvent(
                "oracle.ran",
                {
                    "unit": unit,
                    "oracle_id": f"o{i}",
                    "passed": rng.random() < 0.8,
                    "runner": {"identity": "ci", "kind": "kernel", "chain_id": "ci"},
                    "content_identity": rng.choice(("sha:a", "sha:a", "sha:a", "sha:b", "")),
                },
            )
        )
    return events


def best_rate(fn: Callable[[], None], count: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return count / best


def bench_admissions(units: int, repeat: int) -> list[str]:
    ladder = load_ladder()
    rows = [
        "| oracles per unit | `derive` (admissions/s) | `derive_verdict` from events (admissions/s) "
        "| baseline: orjson round-trip of the events (units/s) |",
        "| ---: | ---: | ---: | ---: |",
    ]
    for n in SIZES:
        rng = random.Random(n)
        streams = [make_unit(rng, n, f"u{k}") for k in range(units)]
        evidence = [unit_evidence(f"u{k}", s) for k, s in enumerate(streams)]
        raw = [[(e.type, dict(e.data)) for e in s] for s in streams]

        def pure(evidence=evidence) -> None:
            for ev in evidence:
                derive(ev, ladder)

        def from_events(streams=streams) -> None:
            for s in streams:
                derive_verdict(s, ladder)

        def baseline(raw=raw) -> None:
            for s in raw:
                orjson.loads(orjson.dumps(s))

        rows.append(
            f"| {n} | {best_rate(pure, units, repeat):,.0f} | {best_rate(from_events, units, repeat):,.0f} "
            f"| {best_rate(baseline, units, repeat):,.0f} |"
        )
    return rows


def bench_ledger(units: int) -> list[str]:
    """Through the store: record + admit units of 5 oracles (12 events + 1 admission
    each), event by event as the CLI verbs do, and as one ``write_units`` batch as the
    JSONL path does; then re-derive them all."""
    import tempfile

    from ledger.app import units as verdicts
    from ledger.log.store import init_ledger
    from schemas.envelope import NewEvent

    rng = random.Random(7)
    streams = [make_unit(rng, 5, f"u{k}") for k in range(units)]
    few = max(1, units // 10)
    with tempfile.TemporaryDirectory() as tmp:
        with init_ledger(Path(tmp) / "each") as lg:
            start = time.perf_counter()
            for k, events in enumerate(streams[:few]):
                for e in events:
                    verdicts.record(lg, f"u{k}", e.type, dict(e.data))
                verdicts.admit(lg, f"u{k}")
            each = (time.perf_counter() - start) / few
        with init_ledger(Path(tmp) / "batch") as lg:
            items = [
                *((e.type, f"u{k}", dict(e.data)) for k, s in enumerate(streams) for e in s),
                *(("admit", f"u{k}", {}) for k in range(units)),
            ]
            start = time.perf_counter()
            verdicts.write_units(lg, items)
            batch = (time.perf_counter() - start) / units
            start = time.perf_counter()
            problems = verdicts.verify_admissions(lg)
            verify = (time.perf_counter() - start) / units
        with init_ledger(Path(tmp) / "raw") as raw:
            start = time.perf_counter()
            raw.append(
                [
                    NewEvent(f"unit/u{k}", e.type, dict(e.data))
                    for k, s in enumerate(streams)
                    for e in s
                ]
            )
            unchecked = (time.perf_counter() - start) / units
    assert problems == [], problems[:3]
    return [
        "| through the ledger: units of 5 oracles (12 events + 1 admission) | units/s |",
        "| --- | ---: |",
        f"| event by event (`record` × 12 + `admit`; one append each, {few} units) | {1 / each:,.0f} |",
        f"| one `write_units` batch ({units} units; the JSONL path) | {1 / batch:,.0f} |",
        f"| `verify_admissions` (streams checked, admissions re-derived) | {1 / verify:,.0f} |",
        f"| baseline: the same events as one unchecked `append`, no admission | {1 / unchecked:,.0f} |",
    ]


def bench_receipt(repeat: int) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    in_process = min(_time(lambda: check_run_dir(DEMO).problems) for _ in range(repeat))

    def run(args: list[str]) -> None:
        subprocess.run(args, check=True, env=env, stdout=subprocess.DEVNULL, cwd=ROOT)

    whole = min(
        _time(
            lambda: run(
                [
                    sys.executable,
                    "-c",
                    "from ledger.cli import main; main()",
                    "receipt",
                    "verify",
                    str(DEMO),
                    "--json",
                ]
            )
        )
        for _ in range(repeat)
    )
    python_start = min(_time(lambda: run([sys.executable, "-c", "pass"])) for _ in range(repeat))
    assert check_run_dir(DEMO).problems == [], "the demo run must verify clean"
    return [
        "| demo-run receipt verification (83 events) | time |",
        "| --- | ---: |",
        f"| in-process `check_run_dir` | {in_process * 1000:.1f} ms |",
        f"| whole process `vledger receipt verify DIR --json` | {whole * 1000:.0f} ms |",
        f"| baseline: `python -c pass` | {python_start * 1000:.0f} ms |",
    ]


def _time(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--ledger-units", type=int, default=1000)
    args = parser.parse_args()
    print("\n".join(bench_admissions(args.units, args.repeat)))
    print()
    print("\n".join(bench_ledger(args.ledger_units)))
    print()
    print("\n".join(bench_receipt(args.repeat)))


if __name__ == "__main__":
    main()
