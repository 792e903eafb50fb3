"""The event envelope: what every row of the log is, and the bytes its leaf hash covers.

One Arrow schema, one DuckDB table, one Parquet layout (docs/readme/store.md). The leaf hash
is RFC 9162's ``SHA-256(0x00 || entry)`` where ``entry`` is :func:`envelope_bytes` —
every column except ``recorded_at`` (wall-clock time is not evidence) and the hash itself.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import orjson

from schemas.canonical import parse_json

if TYPE_CHECKING:
    import pyarrow as pa


def __getattr__(name: str) -> Any:
    """``ARROW_SCHEMA``, built on first use: importing pyarrow is a fifth of a small
    command's start-up, and only the Arrow paths need it (benchmarks/startup.py)."""
    if name != "ARROW_SCHEMA":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()["ARROW_SCHEMA"] = schema = _arrow_schema()
    return schema


def _arrow_schema() -> pa.Schema:
    import pyarrow as pa  # noqa: PLC0415

    return pa.schema(
        [
            pa.field("seq", pa.uint64(), nullable=False),
            pa.field("stream", pa.string(), nullable=False),
            pa.field("stream_version", pa.uint32(), nullable=False),
            pa.field("event_id", pa.string(), nullable=False),
            pa.field("type", pa.string(), nullable=False),
            pa.field("schema_version", pa.uint16(), nullable=False),
            pa.field("recorded_at", pa.timestamp("us", tz="UTC"), nullable=False),
            pa.field("payload", pa.binary(), nullable=False),
            pa.field("leaf_hash", pa.binary(32), nullable=False),
        ]
    )


def envelope_bytes(
    seq: int,
    stream: str,
    stream_version: int,
    event_id: str,
    type: str,
    schema_version: int,
    payload: bytes,
) -> bytes:
    """The canonical bytes of one event: a JSON header line, a newline, the payload bytes
    verbatim (already canonical), so verification hashes exactly what is stored."""
    header = orjson.dumps([seq, stream, stream_version, event_id, type, schema_version])
    return header + b"\n" + payload


def leaf_hash(entry: bytes) -> bytes:
    """RFC 9162 § 2.1.1 leaf hash: ``SHA-256(0x00 || entry)``."""
    return hashlib.sha256(b"\x00" + entry).digest()


@dataclass(frozen=True, slots=True)
class NewEvent:
    """An event offered to ``append`` (the store assigns seq, stream_version, time, hash);
    ``expected_version`` is checked against the stream before this batch touches it."""

    stream: str
    type: str
    payload: dict[str, Any]
    event_id: str | None = None
    schema_version: int = 1
    expected_version: int | str = "any"


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One row of the log, as read back."""

    seq: int
    stream: str
    stream_version: int
    event_id: str
    type: str
    schema_version: int
    recorded_at: datetime
    payload: bytes
    leaf_hash: bytes

    def data(self) -> Any:
        """The decoded payload."""
        return parse_json(self.payload)

    def entry(self) -> bytes:
        return envelope_bytes(
            self.seq,
            self.stream,
            self.stream_version,
            self.event_id,
            self.type,
            self.schema_version,
            self.payload,
        )


# What pyarrow's to_pylist gives a timestamp[us, tz=UTC]: the same tzinfo object.
_EPOCH = datetime(1970, 1, 1, tzinfo=ZoneInfo("UTC"))


def stored_events(rows: pa.Table | pa.RecordBatch) -> Iterator[StoredEvent]:
    """Rows of the log (``ARROW_SCHEMA`` columns, by name) as :class:`StoredEvent`s, column
    by column. ``recorded_at`` is converted once per distinct time (an append shares one):
    pyarrow's per-element conversion of a tz-aware column was ~3/4 of decoding a window."""
    import pyarrow as pa  # noqa: PLC0415 - loaded by whoever built ``rows``

    times = rows.column("recorded_at").cast(pa.int64()).to_pylist()
    at = _times(times)
    cols = [rows.column(name).to_pylist() for name in _NAMES if name != "recorded_at"]
    cols.insert(_NAMES.index("recorded_at"), [at[us] for us in times])
    return map(StoredEvent, *cols)


def stored_rows(rows: Iterable[tuple[Any, ...]]) -> Iterator[StoredEvent]:
    """:func:`stored_events` of rows given as tuples in ``ARROW_SCHEMA`` order with
    ``recorded_at`` as epoch microseconds (the store's read path without Arrow)."""
    rows = list(rows)
    at = _times(row[6] for row in rows)
    return (StoredEvent(a, b, c, d, e, f, at[g], h, i) for a, b, c, d, e, f, g, h, i in rows)


_NAMES = [f.name for f in StoredEvent.__dataclass_fields__.values()]


def _times(micros: Iterable[int]) -> dict[int, datetime]:
    """Each distinct epoch-microsecond time as the datetime pyarrow gives for it."""
    return {us: _EPOCH + timedelta(microseconds=us) for us in set(micros)}
