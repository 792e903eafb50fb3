"""What one distributed task does with its Parquet segment(s), without Ray: verify each
against its manifest entry before computing anything, then run the per-trial projection.
A corrupted or swapped segment is never retried (the bytes will not change)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ledger.engines.base import TrialFn, TrialSelection
from ledger.log.layout import TRIAL_PREFIX
from ledger.log.segments import SegmentInfo, segment_root
from schemas.envelope import ARROW_SCHEMA, StoredEvent, stored_events
from schemas.errors import LedgerError


class SegmentFailure(LedgerError):
    """A task's failure on one segment: ``segment`` (file name) and what went wrong."""

    def __init__(self, segment: str, detail: str) -> None:
        super().__init__(segment, detail)  # both in args, so the error pickles across Ray
        self.segment = segment
        self.detail = detail

    def __str__(self) -> str:
        return f"segment {self.segment}: {self.detail}"


class SegmentIntegrityError(SegmentFailure):
    """The segment's bytes do not match its manifest entry (corrupted or swapped)."""


class SegmentTaskError(SegmentFailure):
    """Reading or projecting the segment failed (possibly transient; retried)."""


def read_verified(folder: Path | str, info: SegmentInfo) -> pa.Table:
    """The segment's rows, after checking them against ``info``; raises a SegmentFailure."""
    path = Path(folder) / info.file
    try:
        table = pq.read_table(path, schema=ARROW_SCHEMA)
    except FileNotFoundError:
        raise SegmentTaskError(info.file, f"file {path} not found (is the ledger directory shared with the workers?)") from None
    except (OSError, pa.ArrowException) as exc:
        raise SegmentIntegrityError(info.file, f"cannot be read as a segment: {exc}") from None
    seqs = table.column("seq")
    if table.num_rows != info.rows or (
        table.num_rows
        and (seqs[0].as_py() != info.first_seq or seqs[-1].as_py() != info.last_seq)
    ):
        got = f"{seqs[0].as_py()}..{seqs[-1].as_py()}" if table.num_rows else "nothing"
        raise SegmentIntegrityError(
            info.file,
            f"holds {table.num_rows} rows (seq {got}); the manifest says {info.rows} rows, "
            f"seq {info.first_seq}..{info.last_seq} — run `vledger verify`",
        )
    root = segment_root(table).hex()
    if root != info.root:
        raise SegmentIntegrityError(
            info.file,
            f"Merkle root of its rows is {root[:16]}…, the manifest says {info.root[:16]}… "
            "(the segment was altered or swapped) — run `vledger verify`",
        )
    return table


def trial_events(table: pa.Table, to_seq: int) -> list[StoredEvent]:
    """The trial-stream events of a segment with ``seq <= to_seq``, in seq order."""
    keep = pc.and_(
        pc.starts_with(table.column("stream"), TRIAL_PREFIX),
        pc.less_equal(table.column("seq"), pa.scalar(to_seq, pa.uint64())),
    )
    return list(stored_events(table.filter(keep)))


def run_segments(
    folder: str, infos: Sequence[SegmentInfo], select: TrialSelection, fn: TrialFn, params: Any
) -> list[tuple[str, Any]]:
    """``(stream, fn(events, params))`` for every selected trial of ``infos``, stream order."""
    out: list[tuple[str, Any]] = []
    for info in infos:
        table = read_verified(folder, info)
        try:
            groups = select.group(trial_events(table, select.to_seq))
            out.extend((stream, fn(evs, params)) for stream, evs in groups.items())
        except SegmentFailure:
            raise
        except Exception as exc:
            raise SegmentTaskError(info.file, f"{type(exc).__name__}: {exc}") from None
    return out
