"""Which event ids and streams a log may already hold: Bloom filters that spare ``append``
its lookups.

Idempotency (guarantee 4) needs to know whether each offered ``event_id`` is stored, and
``expected_version`` needs each stream's current version. Both are DuckDB scans of the
whole ``events`` table, so their cost grew with the log (measured: 0.8 µs per appended
event at 200k events, most of what append spent in DuckDB besides the insert). A key the
filter has never seen is certainly not stored, and is not looked up; only "maybe" keys are.

A filter describes the log at one state, ``(size, frontier)`` as ``tree_state`` records it
after a commit. ``append`` checks that state inside its transaction and rebuilds the filter
from the table when it differs (another process, or another ``Ledger`` object of this
process, appended meanwhile), so a stale filter is never trusted. Memory is bounded: 16 bits
per key up to :data:`MAX_BYTES` per filter; past ``capacity`` it is rebuilt for four times
the log's size (so rebuild scans add up to a third of the log), and at the cap it only
answers "maybe" more often.

Needs the native accelerator (``ledger.log.native``); without it append looks everything up.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ledger.log import hashing

PROBES = 6  # k: with 16 bits per key, ~0.05% of absent keys answer "maybe"
BITS_PER_KEY = 16
MIN_BYTES = 1 << 17  # 128 KiB: room for 65,536 keys (a multiple of the 64-byte blocks)
MAX_BYTES = 1 << 24  # 16 MiB per filter (~8.4M keys at the designed rate)

State = tuple[int, bytes]  # (log size, frontier hashes concatenated)


def _bytes_for(keys: int) -> int:
    want = max(MIN_BYTES, keys * BITS_PER_KEY // 8)
    size = 1 << (want - 1).bit_length()
    return min(size, MAX_BYTES)


@dataclass
class Bloom:
    """A Bloom filter over strings (their UTF-8 bytes), sized for ``capacity`` keys."""

    capacity: int
    bits: bytearray = field(init=False)
    count: int = 0

    def __post_init__(self) -> None:
        self.bits = bytearray(_bytes_for(self.capacity))
        # what the bits hold at the designed rate (the minimum size holds more than asked)
        self.capacity = max(self.capacity, len(self.bits) * 8 // BITS_PER_KEY)

    @property
    def full(self) -> bool:
        """More keys than it was sized for, and still room to grow."""
        return self.count > self.capacity and len(self.bits) < MAX_BYTES

    def add(self, keys: list[str]) -> None:
        hashing.native().bloom_add(self.bits, keys, PROBES)
        self.count += len(keys)

    def add_column(self, column: tuple[memoryview, memoryview, int], rows: int) -> None:
        hashing.native().bloom_add_column(self.bits, column, rows, PROBES)
        self.count += rows

    def maybe(self, keys: list[str]) -> list[str]:
        """The keys that may have been added (never misses one that was)."""
        return [keys[i] for i in hashing.native().bloom_maybe(self.bits, keys, PROBES)]


@dataclass
class Seen:
    """The ids and streams of a log at ``state``."""

    state: State
    ids: Bloom
    streams: Bloom

    @property
    def full(self) -> bool:
        return self.ids.full or self.streams.full

    def record(self, ids: list[str], streams: Iterable[str], state: State) -> None:
        """A batch committed: its new ids and streams are now in the log at ``state``."""
        self.ids.add(ids)
        self.streams.add(list(set(streams)))
        self.state = state
