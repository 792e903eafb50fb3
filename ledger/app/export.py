"""``vledger export --parquet DIR``: the sealed segments plus their manifest, for other engines
(what is written, and how to read it: docs/readme/ray.md, ``vledger export --parquet``).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from ledger.analytics.views_sql import write_views_sql
from ledger.app.context import LedgerArg, ledger_path, opened
from ledger.app.otel import OtelResult, export_otel
from ledger.app.result import Result
from ledger.engines.segment_task import SegmentFailure, read_verified
from ledger.errors import LedgerError
from ledger.log.outputs import check_output_path
from ledger.log.segments import load_manifest, segment_dir
from schemas.errors import UsageError

# Leading "_": pyarrow.dataset, Spark and Hive skip such files, so DIR reads as a dataset.
EXPORT_MANIFEST = "_manifest.json"


class ExportError(LedgerError):
    """An export that cannot be written: a non-empty target, a segment failing its check."""


class NothingToExport(UsageError, ExportError):
    """Neither ``parquet`` nor ``otel`` was asked for (exit 2: usage)."""


@dataclass(frozen=True)
class ExportResult(Result):
    directory: Path
    segments: int
    rows: int
    sealed_upto: int
    unsealed: int  # events after the last segment, not exported
    tail_file: str | None = None  # the unsealed events, written beside the segments
    tail_rows: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "directory": str(self.directory),
            "segments": self.segments,
            "rows": self.rows,
            "sealed_upto": self.sealed_upto,
            "tail": {"file": self.tail_file, "rows": self.tail_rows} if self.tail_file else None,
            "unsealed_not_exported": self.unsealed,
        }


@dataclass(frozen=True)
class Exported(Result):
    """``vledger export --json``: the Parquet export's fields, then the OTLP file's."""

    parquet: ExportResult | None
    otel: OtelResult | None

    def to_json(self) -> dict[str, Any]:
        return {**(self.parquet.to_json() if self.parquet else {}),
                **(self.otel.to_json() if self.otel else {})}  # fmt: skip


def export(
    *, ledger: LedgerArg = None, parquet: str | Path | None = None, otel: str | Path | None = None,
    seal: bool = False, sealed_only: bool = False, segment_rows: int | None = None,
    segment_bytes: int | None = None,
) -> Exported:  # fmt: skip
    """The segments into the directory ``parquet`` (``export_parquet``), every trial as
    OTLP/JSON into the file ``otel`` (``ledger.app.otel``), or both; only ``seal`` writes."""
    if parquet is None and otel is None:
        raise NothingToExport("pass --parquet DIR, --otel FILE or both")
    if otel is not None:  # before anything is written, as the Parquet directory is
        check_output_path(Path(otel), ledger_path(ledger), what="OpenTelemetry export")
    with opened(ledger, read_only=not seal) as lg:  # only sealing writes
        res = None if parquet is None else export_parquet(
            lg, Path(parquet), seal=seal, tail=not sealed_only, max_rows=segment_rows,
            max_bytes=segment_bytes)  # fmt: skip
        traces = export_otel(lg, Path(otel)) if otel is not None else None
    return Exported(res, traces)


def export_parquet(
    lg: Any, out: Path, *, seal: bool = False, tail: bool = True,
    max_rows: int | None = None, max_bytes: int | None = None,
) -> ExportResult:  # fmt: skip
    """Copy every sealed segment (verified) and the manifest into ``out`` (empty or new),
    plus (``tail``) the unsealed events as one Parquet file; ``seal`` seals the tail first."""
    out = Path(out)
    check_output_path(out, Path(lg.path) if hasattr(lg, "path") else None, what="export directory")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ExportError(
            f"{out}: exists and is not an empty directory; export into a new or empty one "
            "(a reader globbing DIR/*.parquet must see only this ledger's segments)"
        )
    if not hasattr(lg, "seal"):
        raise ExportError(f"{lg.path}: an in-memory log has no segments to export")
    if seal:
        lg.seal(max_rows, max_bytes)
    src = segment_dir(Path(lg.path))
    manifest = load_manifest(Path(lg.path))
    out.mkdir(parents=True, exist_ok=True)
    rows = 0
    for info in manifest.segments:
        try:
            read_verified(src, info)
        except SegmentFailure as exc:
            raise ExportError(f"{exc}; nothing more was exported (run `vledger verify`)") from None
        shutil.copyfile(src / info.file, out / info.file)
        rows += info.rows
    # the manifest as the reader of this export needs it (also when nothing is sealed yet)
    (out / EXPORT_MANIFEST).write_bytes(manifest.model_dump_json(indent=2).encode())
    size = lg.size()
    tail_file = None
    if tail and size > manifest.sealed_upto:
        tail_file = tail_name(manifest.sealed_upto, size - 1)
        pq.write_table(
            lg.read_arrow(from_seq=manifest.sealed_upto, to_seq=size - 1), out / tail_file
        )
    write_views_sql(out)  # the documented views, for plain DuckDB over the export
    _fsync_dir(out)
    tail_rows = size - manifest.sealed_upto if tail_file else 0
    unsealed = size - manifest.sealed_upto - tail_rows
    return ExportResult(out, len(manifest.segments), rows + tail_rows, manifest.sealed_upto,
                        unsealed, tail_file, tail_rows)  # fmt: skip


def tail_name(first_seq: int, last_seq: int) -> str:
    """The tail's file name: the segments' pattern (``seg-*.parquet``, which ``_views.sql``
    and readers glob) marked ``-tail``, as it is not a sealed, manifest-listed segment."""
    return f"seg-{first_seq}-{last_seq}-tail.parquet"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
