"""Sealing the log into immutable Parquet segments (docs/readme/store.md § Guarantees 9).

``<ledger>/segments/seg-<first>-<last>.parquet`` hold the rows as stored; the manifest's
fields and the trial rule (a ``trial/…`` stream never spans two segments: cuts fall only
where no trial has events on both sides, and a sealed trial stream refuses appends) are
docs/readme/ray.md, "Segment layout guarantees".

Order of writes, so a crash at any point leaves a recoverable state: (1) the new
``sealed_upto`` is committed in DuckDB, (2) each Parquet file is written to a temporary
name, fsynced, renamed, (3) the manifest is rewritten the same way. ``seal`` first
completes any range that (1) recorded but (3) did not.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel, ConfigDict

from ledger.defaults import DEFAULT_MAX_ROWS, DEFAULT_SEGMENT_BYTES
from ledger.errors import LedgerError, TamperDetected
from ledger.log import merkle
from ledger.log.fast import STORED_COLUMNS
from ledger.log.layout import write_atomic
from ledger.log.protocol import Findings, Sealable, SegmentRows
from schemas.envelope import ARROW_SCHEMA, envelope_bytes

SEGMENT_DIR = "segments"
MANIFEST = "manifest.json"
MANIFEST_FORMAT = "vledger-segments/1"


class SegmentInfo(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    file: str
    first_seq: int
    last_seq: int
    rows: int
    root: str
    log_root: str


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    format: str = MANIFEST_FORMAT
    segments: list[SegmentInfo] = []

    @property
    def sealed_upto(self) -> int:
        return self.segments[-1].last_seq + 1 if self.segments else 0


def segment_dir(ledger_dir: Path) -> Path:
    return ledger_dir / SEGMENT_DIR


def load_manifest(ledger_dir: Path) -> Manifest:
    path = segment_dir(ledger_dir) / MANIFEST
    if not path.exists():
        return Manifest()
    try:
        m = Manifest.model_validate_json(path.read_bytes())
    except ValueError as exc:
        raise LedgerError(f"{path}: not a valid segment manifest: {exc}") from None
    if m.format != MANIFEST_FORMAT:
        raise LedgerError(f"{path}: format {m.format!r}, this version reads {MANIFEST_FORMAT!r}")
    return m


def segment_root(table: pa.Table) -> bytes:
    """RFC 9162 root over the leaf hashes *recomputed* from a segment's columns."""
    tree: list[bytes] = []
    merkle.push_run(tree, 0, b"".join(recomputed_leaves(table)))
    return merkle.frontier_root(tree)


def recomputed_leaves(table: pa.Table) -> Iterator[bytes]:
    cols = [table.column(c).to_pylist() for c in STORED_COLUMNS]
    for row in zip(*cols, strict=True):
        yield merkle.leaf_hash(envelope_bytes(*row))


def cut_points(
    start: int,
    end: int,
    trial_spans: list[tuple[int, int]],
    max_rows: int,
    *,
    row_bytes: Sequence[int] | None = None,
    max_bytes: int | None = None,
) -> list[int]:
    """Segment ends (exclusive) covering ``[start, end)`` with no trial span straddling one.

    ``trial_spans``: each trial stream's ``(min_seq, max_seq)``; a cut at ``b`` needs no
    span with ``min < b <= max``. At most ``max_rows`` rows and ``max_bytes`` of
    ``row_bytes`` (one per row) a segment, one larger trial taken whole. O((spans + cuts) ·
    log spans).
    """
    if max_rows < 1:
        raise LedgerError(f"seal: max_rows must be >= 1, got {max_rows}")
    if max_bytes is not None:
        if max_bytes < 1:
            raise LedgerError(f"seal: max_bytes must be >= 1, got {max_bytes}")
        if row_bytes is None or len(row_bytes) != end - start:
            raise LedgerError("seal: max_bytes needs one row size per row of the range")
    blocked = sorted((lo + 1, hi) for lo, hi in trial_spans if hi > lo)  # b in [lo+1, hi] bad
    merged: list[tuple[int, int]] = []
    for a, b in blocked:
        if merged and a <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    starts = [a for a, _ in merged]
    prefix = list(accumulate(row_bytes, initial=0)) if max_bytes is not None else None

    def blocked_at(b: int) -> tuple[int, int] | None:
        i = bisect_right(starts, b) - 1
        return merged[i] if i >= 0 and merged[i][0] <= b <= merged[i][1] else None

    cuts = []
    pos = start
    while pos < end:
        target = min(pos + max_rows, end)
        if prefix is not None:  # the furthest end whose rows fit in max_bytes (>= one row)
            fit = bisect_right(prefix, prefix[pos - start] + max_bytes) - 1 + start
            target = max(pos + 1, min(target, fit))
        b = target
        span = blocked_at(b)
        if span is not None:  # move back out of a blocked interval
            b = span[0] - 1
        if b <= pos:  # one trial larger than the bound: take it whole
            b = span[1] + 1 if span is not None else target
        cuts.append(b)
        pos = b
    return cuts


_SEGMENT_NAME = re.compile(r"seg-(\d+)-(\d+)\.parquet")


@dataclass(frozen=True, slots=True)
class SegmentStep:
    """One segment a seal (or ``vledger repair``) would make: ``write`` a new file, ``keep``
    a file already on disk that holds exactly the store's rows, or ``conflict``: a file on
    disk that disagrees with the store, which is never overwritten (it is evidence)."""

    file: str
    first_seq: int
    last_seq: int
    action: str  # "write" | "keep" | "conflict"
    detail: str = ""


@dataclass(frozen=True, slots=True)
class SealPlan:
    """What sealing ``[start, end)`` would do; ``recorded`` is the store's sealing mark."""

    start: int
    end: int
    recorded: int
    manifest_exists: bool
    steps: tuple[SegmentStep, ...]

    @property
    def conflicts(self) -> list[SegmentStep]:
        return [st for st in self.steps if st.action == "conflict"]

    @property
    def interrupted(self) -> bool:
        """The store records more sealed than the manifest lists (a crash, or a lost manifest)."""
        return self.recorded > self.start


def segment_files(ledger_dir: Path) -> dict[str, tuple[int, int]]:
    """Segment files present on disk: name -> (first_seq, last_seq)."""
    folder = segment_dir(ledger_dir)
    if not folder.is_dir():
        return {}
    matches = (_SEGMENT_NAME.fullmatch(p.name) for p in folder.iterdir())
    return {m[0]: (int(m[1]), int(m[2])) for m in matches if m}


def plan_seal(
    lg: Sealable, max_rows: int = DEFAULT_MAX_ROWS, *, max_bytes: int | None = DEFAULT_SEGMENT_BYTES
) -> SealPlan:
    """What :func:`seal` would write, without writing anything.

    Files on disk past the manifest (an interrupted seal, a deleted manifest) are adopted
    in seq order when they hold exactly the store's rows, so the original cuts stay; any
    other is a conflict. LedgerError when the manifest lists more than the store sealed.
    """
    manifest = load_manifest(lg.path)
    manifest_exists = (segment_dir(lg.path) / MANIFEST).exists()
    start = manifest.sealed_upto
    recorded = lg.sealed_upto()
    if recorded < start:
        raise LedgerError(
            f"segment manifest covers seq < {start} but the store records {recorded}; "
            "run `vledger verify`"
        )
    end = lg.size() if recorded == start else recorded  # finish an interrupted seal first
    listed = {info.file for info in manifest.segments}
    on_disk = {n: r for n, r in segment_files(lg.path).items() if n not in listed}
    by_first = {first: (name, last) for name, (first, last) in on_disk.items()}
    steps: list[SegmentStep] = []
    pos = start
    while pos in by_first and by_first[pos][1] < end:  # adopt what an earlier seal wrote
        name, last = by_first.pop(pos)
        steps.append(_existing_step(lg, name, pos, last))
        pos = last + 1
    if pos < end:
        sizes = lg.row_sizes(pos, end) if max_bytes is not None else None
        cuts = cut_points(
            pos, end, lg.trial_spans(pos, end), max_rows, row_bytes=sizes, max_bytes=max_bytes
        )
        for hi in cuts:
            name = _segment_name(pos, hi - 1)
            if name in on_disk:
                by_first.pop(pos, None)
                steps.append(_existing_step(lg, name, pos, hi - 1))
            else:
                steps.append(SegmentStep(name, pos, hi - 1, "write"))
            pos = hi
    for first, (name, last) in sorted(by_first.items()):  # left over: never overwritten, named
        if first < end:
            steps.append(
                SegmentStep(
                    name, first, last, "conflict",
                    f"on disk but not in the manifest, and it does not fit the sealed range "
                    f"seq {start}..{end - 1}",
                )
            )
    return SealPlan(start, end, recorded, manifest_exists, tuple(steps))


def _segment_name(first: int, last: int) -> str:
    return f"seg-{first}-{last}.parquet"


def _existing_step(lg: SegmentRows, name: str, first: int, last: int) -> SegmentStep:
    """``keep`` when the file on disk holds exactly the store's rows for its range."""
    try:
        on_disk = pq.read_table(segment_dir(lg.path) / name)
    except (OSError, pa.ArrowException) as exc:
        return SegmentStep(name, first, last, "conflict", f"exists but cannot be read: {exc}")
    stored = lg.raw_rows(first, last).cast(ARROW_SCHEMA)
    if stored.num_rows != last - first + 1:
        return SegmentStep(
            name, first, last, "conflict",
            f"the store holds {stored.num_rows} rows for seq {first}..{last}",
        )
    if not on_disk.schema.equals(ARROW_SCHEMA) or not on_disk.equals(stored):
        return SegmentStep(
            name, first, last, "conflict",
            f"exists and differs from the store's rows for seq {first}..{last} "
            "(the segment or the store was altered)",
        )
    return SegmentStep(name, first, last, "keep")


def seal(
    lg: Sealable, max_rows: int = DEFAULT_MAX_ROWS, *, max_bytes: int | None = DEFAULT_SEGMENT_BYTES
) -> list[SegmentInfo]:
    """Seal every unsealed event (bounds: :func:`cut_points`); return the new segments.

    A file already on disk that differs from the store is never overwritten
    (:class:`TamperDetected`, nothing written): see :func:`plan_seal`.
    """
    return apply_seal(lg, plan_seal(lg, max_rows, max_bytes=max_bytes))


def apply_seal(lg: Sealable, plan: SealPlan) -> list[SegmentInfo]:
    """Carry out a :func:`plan_seal` plan (refusing one with conflicts before any write)."""
    if plan.conflicts:
        bad = plan.conflicts[0]
        raise TamperDetected(
            str(segment_dir(lg.path) / bad.file),
            f"{bad.detail}; refusing to overwrite a sealed segment — run `vledger verify` "
            "and keep this file as evidence",
        )
    if not plan.steps:
        return []
    manifest = load_manifest(lg.path)
    lg.record_sealed_upto(plan.end)
    folder = segment_dir(lg.path)
    folder.mkdir(exist_ok=True)
    made = [_write_segment(lg, folder, st) for st in plan.steps]
    manifest.segments.extend(made)
    write_atomic(
        folder / MANIFEST, orjson.dumps(manifest.model_dump(), option=orjson.OPT_INDENT_2)
    )
    return made


def _write_segment(lg: Sealable, folder: Path, step: SegmentStep) -> SegmentInfo:
    first, last = step.first_seq, step.last_seq
    table = lg.raw_rows(first, last).cast(ARROW_SCHEMA)
    if table.num_rows != last - first + 1:
        raise LedgerError(
            f"seal: store holds {table.num_rows} rows for seq {first}..{last}; run `vledger verify`"
        )
    if step.action == "write":
        if (folder / step.file).exists():  # appeared since the plan: never overwrite
            raise TamperDetected(
                str(folder / step.file), "appeared while sealing; refusing to overwrite it"
            )
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, compression="zstd")
        write_atomic(folder / step.file, sink.getvalue().to_pybytes())
    return SegmentInfo(
        file=step.file,
        first_seq=first,
        last_seq=last,
        rows=table.num_rows,
        root=segment_root(table).hex(),
        log_root=lg.root(last + 1).hex(),
    )


def read_sealed(ledger_dir: Path) -> Iterator[pa.Table]:
    """Each sealed segment's rows, in seq order, without opening DuckDB (never blocks)."""
    for info in load_manifest(Path(ledger_dir)).segments:
        yield pq.read_table(segment_dir(Path(ledger_dir)) / info.file, schema=ARROW_SCHEMA)


def check_segments(lg: SegmentRows, report: Findings) -> int:
    """Verify every sealed segment against the manifest and the store; return how many."""
    try:
        manifest = load_manifest(lg.path)
    except LedgerError as exc:
        report.add("segments/manifest.json", str(exc))
        return 0
    recorded = lg.sealed_upto()
    has_manifest = (segment_dir(lg.path) / MANIFEST).exists()
    if recorded and not has_manifest:
        report.add(
            f"{SEGMENT_DIR}/{MANIFEST}",
            f"missing: the store records sealing up to seq {recorded} and "
            f"{len(segment_files(lg.path))} segment file(s) are on disk "
            "(deleted, or a seal interrupted before it was written); nothing was re-sealed — "
            "`vledger repair` shows what it would restore",
        )
    listed = {info.file for info in manifest.segments}
    on_disk = segment_files(lg.path)
    for name in sorted(set(on_disk) - listed):
        # compared with the store too, so a rewritten segment is named even when the
        # manifest that listed it is gone
        step = _existing_step(lg, name, *on_disk[name])
        what = "" if step.action == "keep" else f"; it {step.detail}"
        report.add(f"segment {name}", f"is on disk but not listed in segments/manifest.json{what}")
    expect_first = 0
    for info in manifest.segments:
        where = f"segment {info.file}"
        if info.first_seq != expect_first or info.last_seq < info.first_seq:
            report.add(
                where,
                f"covers seq {info.first_seq}..{info.last_seq}, expected to start at {expect_first}",
            )
        expect_first = info.last_seq + 1
        _check_one(lg, report, info, where)
    if recorded != manifest.sealed_upto and has_manifest:
        report.add(
            f"{SEGMENT_DIR}/{MANIFEST}",
            f"covers seq < {manifest.sealed_upto} but the store records sealing up to {recorded} "
            "(an interrupted seal, or an edited manifest: `vledger repair` shows what it would do)",
        )
    return len(manifest.segments)


def _check_one(lg: SegmentRows, report: Findings, info: SegmentInfo, where: str) -> None:
    path = segment_dir(lg.path) / info.file
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        report.add(where, f"cannot be read: {exc}")
        return
    if not table.schema.equals(ARROW_SCHEMA):
        report.add(where, "schema differs from the envelope's ARROW_SCHEMA")
        return
    if table.num_rows != info.rows or info.rows != info.last_seq - info.first_seq + 1:
        report.add(
            where,
            f"holds {table.num_rows} rows, manifest says {info.rows} for seq {info.first_seq}..{info.last_seq}",
        )
        return
    seqs = table.column("seq").to_pylist()
    leaves = table.column("leaf_hash").to_pylist()
    for seq, want, got in zip(seqs, recomputed_leaves(table), leaves, strict=True):
        if want != got:
            report.add(
                where, f"seq {seq}: bytes do not match the leaf hash (the segment was altered)"
            )
            return
    if segment_root(table).hex() != info.root:
        report.add(where, f"root of its leaves differs from the manifest root {info.root[:16]}…")
        return
    stored = lg.raw_rows(info.first_seq, info.last_seq).cast(ARROW_SCHEMA)
    if not stored.equals(table):
        for col in ARROW_SCHEMA.names:
            a, b = stored.column(col).to_pylist(), table.column(col).to_pylist()
            for i, (x, y) in enumerate(zip(a, b, strict=False)):
                if x != y:
                    report.add(where, f"seq {seqs[i]}: column {col!r} differs from the store")
                    return
        report.add(
            where, f"has {table.num_rows} rows, the store {stored.num_rows} for the same range"
        )
        return
    if lg.size() > info.last_seq and lg.root(info.last_seq + 1).hex() != info.log_root:
        report.add(where, "log_root in the manifest is not the log's root at the segment's end")
