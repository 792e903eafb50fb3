"""Writer processes for the crash and concurrency tests (run as ``python -m tests.store_worker``).

``crash ROOT ROUND BATCHES SIZE KEY``: open the ledger, print ``ready``, then append
BATCHES batches of SIZE events (each batch its own trial stream), printing ``committed B``
after each append returns, signing a checkpoint after every batch and sealing after every
third. The parent SIGKILLs it at a random moment.

``writer ROOT TAG BATCHES SIZE TIMEOUT``: append BATCHES batches, opening and closing the
ledger around each one (as separate CLI invocations would), print ``busy B`` when the
bounded retry gives up and ``committed B`` otherwise.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ledger.errors import LedgerBusy
from ledger.log.keys import load_signer
from ledger.log.store import open_ledger
from schemas.envelope import NewEvent


def batch(tag: str, b: int, size: int) -> list[NewEvent]:
    stream = f"trial/{tag}/b{b}/0"
    return [
        NewEvent(
            stream,
            "ext.work",
            {"tag": tag, "batch": b, "i": i, "n": size, "pad": "p" * 200},
            event_id=f"{tag}-b{b}-i{i}",
        )
        for i in range(size)
    ]


def crash(root: Path, rnd: int, batches: int, size: int, key: Path) -> None:
    signer = load_signer(key)
    lg = open_ledger(root, busy_timeout=30)
    print("ready", flush=True)
    for b in range(batches):
        lg.append(batch(f"r{rnd}", b, size))
        print(f"committed {b}", flush=True)
        lg.checkpoint(signer)
        if b % 3 == 2:
            lg.seal()
    lg.close()
    print("done", flush=True)


def writer(root: Path, tag: str, batches: int, size: int, timeout: float) -> None:
    for b in range(batches):
        try:
            with open_ledger(root, busy_timeout=timeout) as lg:
                lg.append(batch(tag, b, size))
        except LedgerBusy:
            print(f"busy {b}", flush=True)
            continue
        print(f"committed {b}", flush=True)


def hold(root: Path, seconds: float) -> None:
    """Keep the ledger open (the DuckDB file lock held) until stdin is closed or written
    to, or ``seconds`` pass: the test releases it when done, so a slow machine cannot make
    the lock lapse while the test still relies on it."""
    import select

    with open_ledger(root):
        print("ready", flush=True)
        select.select([sys.stdin], [], [], seconds)


if __name__ == "__main__":
    cmd, root, *rest = sys.argv[1:]
    if cmd == "hold":
        hold(Path(root), float(rest[0]))
    elif cmd == "crash":
        crash(Path(root), int(rest[0]), int(rest[1]), int(rest[2]), Path(rest[3]))
    else:
        writer(Path(root), rest[0], int(rest[1]), int(rest[2]), float(rest[3]))
