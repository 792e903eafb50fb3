"""Store benchmarks: append and verify throughput against their baselines, and
peak memory of appending 1M events. Prints a markdown table; every number is measured in
this run on the same generated events.

    PYTHONPATH=. python -m benchmarks.store [--events 200000] [--memory-events 1000000]

* append: ``Ledger.append`` of 10k-event batches (validation, canonical JSON, leaf hashes,
  Merkle frontier and interior nodes, one DuckDB transaction each) vs a raw DuckDB insert
  of the same rows as a ready-made Arrow table (the same ``from_arrow(…).insert_into`` call
  the store makes), no hashing, same DuckDB settings. Each side: best of ``--reps`` runs, alternating, since the machine may
  be shared and contention only ever slows a run down.
* verify: ``verify_ledger`` (re-derive every leaf hash from the stored columns, rebuild the
  tree, compare nodes) in MB/s of canonical entry bytes vs ``hashlib.sha256`` over the same
  bytes, one call per entry (the leaf hashes alone, nothing read or compared).
* memory: a fresh process appends 1M events in 10k batches; its peak RSS (VmHWM) sampled
  as the log grows.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pyarrow as pa

from ledger.log import fast as hashing
from ledger.log import merkle
from ledger.log.connection import duckdb_memory_limit
from ledger.log.layout import DDL as _DDL
from ledger.log.layout import NODE_MIN_LEVEL
from ledger.log.rows import insert_nodes
from ledger.log.store import init_ledger
from ledger.log.verify import verify_ledger
from schemas.canonical import canonical_json
from schemas.envelope import ARROW_SCHEMA, NewEvent, envelope_bytes, leaf_hash

BATCH = 10_000


def make_batch(b: int) -> list[NewEvent]:
    """10k events, payloads ~300 bytes of canonical JSON, 100 trials per batch."""
    out = []
    for i in range(BATCH):
        n = b * BATCH + i
        payload = {
            "index": n % 100,
            "role": "assistant" if i % 2 else "user",
            "content": f"message {n}: " + "lorem ipsum dolor sit amet " * 7,
            "tool_calls": [
                {"id": f"call_{n}", "name": "search", "arguments": {"q": f"query {n % 13}"}}
            ],
        }
        out.append(
            NewEvent(f"trial/bench/task{n // 100}/0", "trial.message", payload, event_id=f"e{n}")
        )
    return out


def arrow_batch(events: list[NewEvent], first_seq: int) -> pa.Table:
    """The rows the baseline inserts: same columns and bytes, leaf hash precomputed."""
    payloads = [canonical_json(e.payload) for e in events]
    versions = [(first_seq + i) % 100 for i in range(len(events))]
    leaves = [
        leaf_hash(
            envelope_bytes(
                first_seq + i, e.stream, versions[i], e.event_id or "", e.type, 1, payloads[i]
            )
        )
        for i, e in enumerate(events)
    ]
    now = datetime.now(UTC)
    return pa.table(
        [
            pa.array(range(first_seq, first_seq + len(events)), pa.uint64()),
            pa.array([e.stream for e in events]),
            pa.array(versions, pa.uint32()),
            pa.array([e.event_id for e in events]),
            pa.array([e.type for e in events]),
            pa.array([1] * len(events), pa.uint16()),
            pa.array([now] * len(events), pa.timestamp("us", tz="UTC")),
            pa.array(payloads, pa.binary()),
            pa.array(leaves, pa.binary(32)),
        ],
        schema=ARROW_SCHEMA,
    )


def time_ours(path: Path, batches: list[list[NewEvent]]) -> float:
    """Seconds for Ledger.append over all batches, into a fresh ledger at ``path``."""
    lg = init_ledger(path)
    t0 = time.perf_counter()
    for batch in batches:
        lg.append(batch)
    dt = time.perf_counter() - t0
    lg.close()
    return dt


def node_runs(tables: list[pa.Table]) -> list[list[tuple[int, int, bytes]]]:
    """The interior nodes each batch completes and the store keeps (from NODE_MIN_LEVEL
    up): what append writes besides events."""
    frontier: list[bytes] = []
    out = []
    size = 0
    for t in tables:
        leaves = t.column("leaf_hash").to_pylist()
        runs = merkle.push_run(frontier, size, b"".join(leaves))
        out.append([run for run in runs if run[0] >= NODE_MIN_LEVEL])
        size += len(leaves)
    return out


def time_raw(
    path: Path, tables: list[pa.Table], nodes: list[list[tuple[int, int, bytes]]] | None = None
) -> float:
    """Seconds for raw DuckDB inserts of ready Arrow tables (same DDL, same settings).

    With ``nodes``, each transaction also inserts that batch's ready node rows and updates
    ``tree_state``, as append does: the DuckDB work of our schema with no Python work.
    """
    con = duckdb.connect(str(path))
    con.execute(f"SET memory_limit = '{duckdb_memory_limit()}'")
    con.execute(_DDL)
    con.execute("INSERT INTO tree_state VALUES (0, ''::BLOB)")
    t0 = time.perf_counter()
    for i, t in enumerate(tables):
        con.execute("BEGIN TRANSACTION")
        con.from_arrow(t).insert_into("events")  # the insert call the store makes
        if nodes is not None:
            insert_nodes(con, nodes[i])  # the store's node insert
            con.execute("UPDATE tree_state SET size = ?, frontier = ?", [i, bytes(32 * 18)])
        con.execute("COMMIT")
    dt = time.perf_counter() - t0
    con.close()
    return dt


def bench_append(
    tmp: Path, batches: list[list[NewEvent]], reps: int
) -> tuple[float, float, float, Path]:
    """Best of ``reps`` alternating runs each (the machine is shared: contention only slows).

    Returns events/s of: ours, the raw insert, the raw insert plus node rows and tree_state.
    """
    n = sum(len(b) for b in batches)
    tables = []
    seq = 0
    for batch in batches:
        tables.append(arrow_batch(batch, seq))
        seq += len(batch)
    nodes = node_runs(tables)
    ours, raw, raw_nodes = [], [], []
    for r in range(reps):
        ours.append(time_ours(tmp / f"ledger{r}", batches))
        raw.append(time_raw(tmp / f"raw{r}.duckdb", tables))
        raw_nodes.append(time_raw(tmp / f"rawn{r}.duckdb", tables, nodes))
    return n / min(ours), n / min(raw), n / min(raw_nodes), tmp / "ledger0"


def bench_verify(ledger_dir: Path, reps: int) -> tuple[float, float, float, int]:
    from ledger.log.store import open_ledger

    with open_ledger(ledger_dir) as lg:
        entries = [e.entry() for e in lg.read()]
        blob = b"".join(entries)
        sha = hashlib.sha256
        ours, per_entry, streaming = [], [], []
        for _ in range(reps):
            t0 = time.perf_counter()
            report = verify_ledger(lg)
            ours.append(time.perf_counter() - t0)
            assert report.ok, report.problems[:3]
            t0 = time.perf_counter()
            for entry in entries:
                sha(b"\x00" + entry).digest()
            per_entry.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            sha(blob).digest()
            streaming.append(time.perf_counter() - t0)
    mb = report.bytes_hashed / 1e6
    return mb / min(ours), mb / min(per_entry), mb / min(streaming), report.bytes_hashed


MEMORY_CHILD = """
import sys, time
from pathlib import Path
from benchmarks.store import make_batch
from ledger.log.store import init_ledger
total = int(sys.argv[2])
lg = init_ledger(Path(sys.argv[1]))
spent = 0.0  # in append only: generating each batch is not the ledger's time
marks = {}
for b in range(total // 10_000):
    batch = make_batch(b)
    t0 = time.perf_counter()
    lg.append(batch)
    spent += time.perf_counter() - t0
    done = (b + 1) * 10_000
    if done in (100_000, 250_000, 500_000, 750_000, 1_000_000) or done == total:
        # VmHWM: this process's own peak RSS (ru_maxrss would include the forking parent's)
        hwm = next(l for l in open("/proc/self/status") if l.startswith("VmHWM"))
        marks[done] = int(hwm.split()[1]) // 1024
lg.close()
print(total / spent)
print(" ".join(f"{k}:{v}" for k, v in sorted(marks.items())))
"""


def bench_memory(tmp: Path, total: int) -> tuple[float, dict[int, int]]:
    proc = subprocess.run(
        [sys.executable, "-c", MEMORY_CHILD, str(tmp / "mem-ledger"), str(total)],
        capture_output=True,
        text=True,
    )
    if proc.returncode:
        raise RuntimeError(f"memory benchmark child failed:\n{proc.stderr[-3000:]}")
    out = proc.stdout.strip().split("\n")[-2:]
    marks = dict(tuple(map(int, kv.split(":"))) for kv in out[1].split())
    return float(out[0]), marks


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--memory-events", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=3, help="best of N alternating runs")
    args = ap.parse_args()
    batches = [make_batch(b) for b in range(args.events // BATCH)]
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        ours, raw, raw_nodes, ledger_dir = bench_append(tmp, batches, args.reps)
        v_ours, v_sha, v_stream, nbytes = bench_verify(ledger_dir, args.reps)
        rate, marks = bench_memory(tmp, args.memory_events) if args.memory_events else (0.0, {})
    n = args.events
    accel = "native accelerator" if hashing.NATIVE else "pure Python (no ledger.log.native)"
    print(
        f"Store benchmarks: {n} events in {n // BATCH} batches of {BATCH}, {nbytes / n:.0f} canonical bytes/event, "
        f"best of {args.reps} alternating runs per side, {accel}\n"
    )
    print("| measure | verdict-ledger | baseline | ratio | target |")
    print("| --- | --- | --- | --- | --- |")
    print(
        f"| append (events/s) | {ours:,.0f} | {raw:,.0f} (raw DuckDB insert of the same Arrow rows) | {ours / raw:.2f}× | ≥ 0.5× |"
    )
    print(
        f"| raw insert incl. node rows + tree_state (events/s) | {ours:,.0f} | {raw_nodes:,.0f} (the DuckDB work of append, no Python) | {ours / raw_nodes:.2f}× | — |"
    )
    print(
        f"| verify (MB/s of canonical bytes) | {v_ours:,.1f} | {v_sha:,.1f} (hashlib SHA-256, one call per entry) | {v_ours / v_sha:.2f}× | ≥ 0.5× |"
    )
    print(
        f"| verify vs one streaming SHA-256 | {v_ours:,.1f} | {v_stream:,.1f} (hashlib over the concatenated bytes) | {v_ours / v_stream:.2f}× | — |"
    )
    if marks:
        grow = ", ".join(f"{k // 1000}k: {v} MiB" for k, v in sorted(marks.items()))
        print(f"| peak RSS appending {args.memory_events:,} events | {grow} | — | — | bounded |")
        print(
            f"| append rate in that run (events/s, append calls only) | {rate:,.0f} | — | — | — |"
        )


if __name__ == "__main__":
    main()
