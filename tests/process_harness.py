"""Multi-process drivers for guarantees 7 (crash safety) and 8 (two writers).

Workers run ``tests/store_worker.py`` in fresh interpreters; these functions start them,
kill or wait for them, reopen the ledger and check the guarantee, asserting with messages
that name the round, batch and seq involved.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from ledger.log.keys import keygen, load_verifier, pub_path
from ledger.log.store import init_ledger, open_ledger
from ledger.log.verify import verify_ledger

ROOT = Path(__file__).resolve().parents[1]


def worker(*args: object) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen(
        [sys.executable, "-m", "tests.store_worker", *map(str, args)],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def release(proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    """Tell a ``hold`` worker to let go of the ledger, and wait for it."""
    if proc.stdin is not None:
        proc.stdin.close()
    proc.wait(timeout=timeout)


def batches_in(ledger_dir: Path) -> dict[tuple[str, int], list[tuple[int, int, int]]]:
    """``(tag, batch) -> [(seq, i, n)]`` of every stored event."""
    groups: dict[tuple[str, int], list[tuple[int, int, int]]] = defaultdict(list)
    with open_ledger(ledger_dir, busy_timeout=30) as lg:
        seqs = []
        for e in lg.read():
            seqs.append(e.seq)
            d = e.data()
            groups[(d["tag"], d["batch"])].append((e.seq, d["i"], d["n"]))
        assert seqs == list(range(len(seqs))), "seq is not dense after reopening"
    return groups


def assert_whole_batches(groups: dict[tuple[str, int], list[tuple[int, int, int]]]) -> None:
    for (tag, b), rows in groups.items():
        n = rows[0][2]
        assert sorted(i for _, i, _ in rows) == list(range(n)), (
            f"{tag} batch {b}: partial ({len(rows)}/{n} events)"
        )
        seqs = [s for s, _, _ in rows]
        assert seqs == list(range(seqs[0], seqs[0] + n)), (
            f"{tag} batch {b}: not contiguous ({seqs[:5]}…)"
        )


def crash_rounds(ledger_dir: Path, key_dir: Path, rounds: int, seed: int, size: int = 200) -> int:
    """SIGKILL a writer at random moments ``rounds`` times; check after each.

    Returns the number of batches acknowledged over all rounds (so callers can check the
    writer really was mid-stream when killed)."""
    rng = random.Random(seed)
    key = key_dir / "crash-key"
    keygen(key, "crash.test/log")
    verifier = load_verifier(pub_path(key))
    init_ledger(ledger_dir).close()
    acknowledged = 0
    for r in range(rounds):
        proc = worker("crash", ledger_dir, r, 10_000, size, key)
        assert proc.stdout is not None
        ready = proc.stdout.readline().strip()
        assert ready == b"ready", (ready, proc.stderr.read() if proc.stderr else b"")
        # the random moment counts from the first acknowledged batch, so a loaded machine
        # still kills mid-stream rather than before anything was committed
        first = proc.stdout.readline().decode()
        assert first.startswith("committed"), (first, proc.stderr.read() if proc.stderr else b"")
        time.sleep(rng.uniform(0.0, 0.35))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL, (
            f"round {r}: the writer was not running when killed: "
            f"{proc.stderr.read().decode()[-2000:] if proc.stderr else ''}"
        )
        out = [first, *proc.stdout.read().decode().split("\n")]
        committed = {int(x.split()[1]) for x in out if x.startswith("committed")}
        acknowledged += len(committed)
        groups = batches_in(ledger_dir)
        assert_whole_batches(groups)
        present = sorted(b for tag, b in groups if tag == f"r{r}")
        assert present == list(range(len(present))), f"round {r}: batches {present} not a prefix"
        assert committed <= set(present), (
            f"round {r}: acknowledged batches {sorted(committed - set(present))} lost"
        )
        with open_ledger(ledger_dir, busy_timeout=30) as lg:
            report = verify_ledger(lg, verifier)
        # A kill between a batch's commit and its checkpoint leaves an honest, unsigned tail:
        # `verify --pub` names it (the key covers less than the log; all of it when the kill
        # came before the first checkpoint), nothing else may fail.
        unsigned = ("signed by no one", "no checkpoint signed by")
        problems = [
            p for p in report.problems
            if not (p.where == "checkpoints" and any(u in p.what for u in unsigned))
        ]
        assert not problems, f"round {r}: verify after crash: {problems[:3]}"
    return acknowledged


def two_writers(
    ledger_dir: Path, batches: int = 12, size: int = 100, timeout: float = 20.0
) -> dict[str, list[str]]:
    """Two processes append concurrently; every batch is committed once or refused as busy."""
    init_ledger(ledger_dir).close()
    procs = {tag: worker("writer", ledger_dir, tag, batches, size, timeout) for tag in ("A", "B")}
    outputs = {}
    for tag, p in procs.items():
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, f"writer {tag} failed: {err.decode()[-2000:]}"
        outputs[tag] = out.decode().split()
    groups = batches_in(ledger_dir)
    assert_whole_batches(groups)
    for tag, words in outputs.items():
        committed = {int(words[i + 1]) for i, w in enumerate(words) if w == "committed"}
        busy = {int(words[i + 1]) for i, w in enumerate(words) if w == "busy"}
        stored = {b for t, b in groups if t == tag}
        assert committed | busy == set(range(batches)), f"writer {tag}: unaccounted batches"
        assert stored == committed, (
            f"writer {tag}: stored {sorted(stored)} vs acknowledged {sorted(committed)}"
        )
    with open_ledger(ledger_dir) as lg:
        assert verify_ledger(lg).ok
    return outputs
