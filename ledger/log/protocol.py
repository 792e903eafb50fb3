"""What the application and the engines may call on a store (docs/readme/store.md § Guarantees).

Both the DuckDB store (:class:`ledger.log.store.Ledger`) and the in-memory reference store
(:class:`ledger.log.memory_store.MemoryLedger`) satisfy :class:`Store`;
``tests/test_store_protocol.py`` checks both, member by member, signatures included.
Each protocol lists only what its callers call: a store's other methods (``append_parts``,
``stream_version``, ``latest_checkpoint``…) are its own, not the seam's. Only the on-disk
store is a :class:`SealedStore`: the Ray engine reads sealed segments. :class:`Sealable` is
the narrower seam :mod:`ledger.log.segments` seals and checks a store through (so it never
imports the store, which imports it), as tlog's one-method ``HashReader`` is the Merkle
tree's; :class:`SegmentRows` is its read-only part.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # types only: this module imports nothing of the log at runtime
    import pyarrow as pa

    from ledger.log.batch import Batch
    from schemas.envelope import NewEvent, StoredEvent


@runtime_checkable
class Store(Protocol):
    """An open append-only log: append, read, Merkle roots and proofs, checkpoints."""

    path: Path

    def close(self) -> None: ...
    def append(self, events: Iterable[NewEvent] | Batch) -> Any: ...
    def size(self) -> int: ...
    def streams(
        self, prefix: str | None = None, by_first_seq: bool = False, to_seq: int | None = None,
        from_seq: int | None = None,
    ) -> list[str]: ...  # fmt: skip
    def read(
        self,
        stream: str | None = None,
        type: str | None = None,
        from_seq: int | None = None,
        to_seq: int | None = None,
        types: Sequence[str] | None = None,
        stream_prefix: str | None = None,
    ) -> Iterator[StoredEvent]: ...
    def read_arrow(
        self,
        stream: str | None = None,
        type: str | None = None,
        from_seq: int | None = None,
        to_seq: int | None = None,
        types: Sequence[str] | None = None,
        stream_prefix: str | None = None,
    ) -> pa.Table: ...
    def root(self, size: int | None = None) -> bytes: ...
    def prove_inclusion(self, seq: int, size: int | None = None) -> list[bytes]: ...
    def prove_consistency(self, old: int, new: int | None = None) -> list[bytes]: ...
    def checkpoints(self) -> list[tuple[Path, str]]: ...


@runtime_checkable
class SealedStore(Store, Protocol):
    """A store whose trial events can be sealed into Parquet segments (ledger.log.segments)."""

    def sealed_upto(self) -> int: ...
    def trial_spans(self, start: int, end: int) -> list[tuple[int, int]]: ...
    def seal(self, max_rows: int | None = None, max_bytes: int | None = None) -> Any: ...


@runtime_checkable
class SegmentRows(Protocol):
    """What checking segments against the store reads (:mod:`ledger.log.segments`): the
    store's rows as stored, its roots and its sealing boundary."""

    path: Path

    def size(self) -> int: ...
    def root(self, size: int | None = None) -> bytes: ...
    def sealed_upto(self) -> int: ...
    def trial_spans(self, start: int, end: int) -> list[tuple[int, int]]: ...
    def raw_rows(self, lo: int, hi: int, *, ordered: bool = True) -> pa.Table: ...


@runtime_checkable
class Sealable(SegmentRows, Protocol):
    """What sealing also does: size rows and record the sealing boundary. The store keeps
    these off its public surface and hands sealing a view that has them
    (:class:`ledger.log.raw.Sealing`)."""

    def row_sizes(self, start: int, end: int) -> list[int]: ...
    def record_sealed_upto(self, n: int) -> None: ...


class Findings(Protocol):
    """Where a check reports what it found (``ledger.log.verify.VerifyReport``)."""

    def add(self, where: str, what: str) -> None: ...
