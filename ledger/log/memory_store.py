"""An in-memory reference store passing the same contract (``tests/store_contract.py``).

Plain lists and dicts, no I/O: a fixture for projection tests and the oracle the DuckDB
store is checked against in the stateful test. It shares the pure append rules
(validation, expected versions, idempotence) with :mod:`ledger.log.store` (:mod:`ledger.log.batch`), so the two differ
only in where rows live.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ledger.log import checkpoints, merkle
from ledger.log.batch import (
    AppendResult,
    Batch,
    Prepared,
    as_batch,
    check_expected,
    dedupe,
    prepare_part,
)
from ledger.log.note import Checkpoint, Signer
from schemas.envelope import NewEvent, StoredEvent, envelope_bytes

if TYPE_CHECKING:
    import pyarrow as pa


class MemoryLedger(merkle.TreeReads):
    """The reference store. ``path`` is only a label; nothing is written."""

    def __init__(self, path: Path | str = "memory", origin: str = "vledger.local/memory") -> None:
        self.path = Path(path)
        self.origin = origin
        self._events: list[StoredEvent] = []
        self._by_id: dict[str, StoredEvent] = {}
        self._versions: dict[str, int] = {}
        self._tree = merkle.MemoryHashes()
        self._notes: dict[int, str] = {}
        self._lock = threading.Lock()

    def close(self) -> None:
        pass

    def __enter__(self) -> MemoryLedger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # appending

    def append(self, events: Iterable[NewEvent] | Batch) -> AppendResult:
        batch = as_batch(events).rows()
        if not batch:
            return AppendResult(None, None, 0, (), ())
        with self._lock:
            return self._append(batch)

    def append_parts(self, parts: Iterable[Iterable[NewEvent] | Batch]) -> AppendResult:
        """:meth:`append` of every part's events as one batch (the DuckDB store inserts it
        a part at a time; this store holds every event in memory anyway)."""
        rows: list[Prepared] = []
        for part in parts:  # a refused event is named by its index in the whole batch
            rows += prepare_part(part, len(rows)).rows()
        if not rows:
            return AppendResult(None, None, 0, (), ())
        with self._lock:
            return self._append(rows)

    def _append(self, batch: list[Prepared]) -> AppendResult:
        size = len(self._events)
        stored = {
            e.event_id: (e.seq, (e.stream, e.type, e.schema_version, e.payload))
            for e in (self._by_id.get(p.event_id) for p in batch)
            if e is not None
        }
        new, seqs, dups = dedupe(batch, stored, size)
        for p in new:  # all checks before any change: the batch is atomic
            check_expected(p.stream, p.expected, self._versions.get(p.stream))
        now = datetime.now(UTC)
        for k, p in enumerate(new):
            seq = size + k
            version = self._versions.get(p.stream, -1) + 1
            self._versions[p.stream] = version
            entry = envelope_bytes(
                seq, p.stream, version, p.event_id, p.type, p.schema_version, p.payload
            )
            leaf = merkle.leaf_hash(entry)
            ev = StoredEvent(
                seq, p.stream, version, p.event_id, p.type, p.schema_version, now, p.payload, leaf
            )
            self._events.append(ev)
            self._by_id[p.event_id] = ev
            self._tree.append(leaf)
        if not new:
            return AppendResult(None, None, 0, tuple(dups), tuple(seqs))
        return AppendResult(size, size + len(new) - 1, len(new), tuple(dups), tuple(seqs))

    # reading

    def size(self) -> int:
        return len(self._events)

    def stream_version(self, stream: str) -> int | None:
        return self._versions.get(stream)

    def streams(
        self, prefix: str | None = None, by_first_seq: bool = False, to_seq: int | None = None,
        from_seq: int | None = None,
    ) -> list[str]:  # fmt: skip
        names = self._versions  # a dict: in the order of each stream's first event
        if to_seq is not None or from_seq is not None:
            lo, hi = max(from_seq or 0, 0), len(self._events) if to_seq is None else to_seq + 1
            names = dict.fromkeys(e.stream for e in self._events[lo : max(hi, lo)])
        found = [s for s in names if prefix is None or s.startswith(prefix)]
        return found if by_first_seq else sorted(found)

    def read(
        self,
        stream: str | None = None,
        type: str | None = None,
        from_seq: int | None = None,
        to_seq: int | None = None,
        types: Sequence[str] | None = None,
        stream_prefix: str | None = None,
    ) -> Iterator[StoredEvent]:
        lo = max(from_seq or 0, 0)
        hi = len(self._events) - 1 if to_seq is None else to_seq
        for e in self._events[lo : hi + 1]:
            if (
                (stream is None or e.stream == stream)
                and (stream_prefix is None or e.stream.startswith(stream_prefix))
                and (type is None or e.type == type)
                and (types is None or e.type in types)
            ):
                yield e

    def read_arrow(
        self,
        stream: str | None = None,
        type: str | None = None,
        from_seq: int | None = None,
        to_seq: int | None = None,
        types: Sequence[str] | None = None,
        stream_prefix: str | None = None,
    ) -> pa.Table:
        import pyarrow as pa  # noqa: PLC0415 - only Arrow's callers pay for it

        from schemas.envelope import ARROW_SCHEMA  # noqa: PLC0415

        events = self.read(stream, type, from_seq, to_seq, types, stream_prefix)
        rows = [{f: getattr(e, f) for f in ARROW_SCHEMA.names} for e in events]
        return pa.Table.from_pylist(rows, schema=ARROW_SCHEMA)

    # Merkle tree

    def read_hashes(self, indexes: Sequence[merkle.HashIndex]) -> list[bytes]:
        return self._tree.read_hashes(indexes)

    def _head(self) -> tuple[int, bytes]:
        return self.size(), self._tree.root()

    # checkpoints

    def checkpoint(self, signer: Signer) -> str:
        cp = Checkpoint(self.origin, self.size(), self.root())
        note = checkpoints.signed_checkpoint(cp, signer, self.checkpoints(), self._tree)
        self._notes[cp.size] = note
        return note

    def checkpoints(self) -> list[tuple[Path, str]]:
        return [(Path(f"{s:020d}.note"), self._notes[s]) for s in sorted(self._notes)]

    def latest_checkpoint(self) -> Checkpoint | None:
        return checkpoints.latest(self.checkpoints())
