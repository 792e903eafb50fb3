"""Checks 1 and 2 of ``verify`` (see :mod:`ledger.log.verify`): the events, scanned in seq
order, and the Merkle tree rebuilt from their recomputed leaves against the stored one."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from ledger.errors import LedgerError, ProofError
from ledger.log import fast as hashing
from ledger.log import merkle
from ledger.log.layout import NODE_MIN_LEVEL
from ledger.log.raw import verify_windows
from ledger.log.verify_report import Problem, VerifyReport
from schemas.envelope import envelope_bytes

if TYPE_CHECKING:
    from ledger.log.store import Ledger

WINDOW = 32_768  # rows per read while scanning
# windows in flight: each worker fetches and hashes one (measured on 2 cores, 200k events:
# depth 2 at 65,536 rows 516 MB/s, depth 4 at 32,768 rows 682 MB/s, same memory)
DEPTH = 4


class _Scan:
    """Rebuilds the tree from recomputed leaves while walking the stored rows: each window
    takes a fast path first, and only one where something differs is re-walked row by row
    (which names the first bad seq)."""

    def __init__(self, report: VerifyReport, sizes: set[int]) -> None:
        self.report = report
        self.sizes = sorted(sizes)
        self.next_seq = 0
        self.frontier: list[bytes] = []
        self.nodes: list[tuple[int, int, bytes]] = []
        self.roots: dict[int, bytes] = {0: merkle.EMPTY_ROOT} if 0 in sizes else {}
        self.gap_reported = False

    def window_fast(self, t: pa.Table, stored_nodes: Callable[[int, int], pa.Table]) -> bool:
        """Verify a clean window quickly; return False (state untouched) if anything differs."""
        n0 = self.next_seq
        k = t.num_rows
        seqs = range(n0, n0 + k)
        if not k or not _seqs_from(t, n0):
            return False
        cols = [t.column(c).to_pylist() for c in COLUMNS[1:-1]]
        entries = [envelope_bytes(*row) for row in zip(seqs, *cols, strict=True)]
        leaves = b"".join(merkle.leaf_hash(entry) for entry in entries)
        if not self._extend(leaves, t.column("leaf_hash"), stored_nodes(n0, n0 + k - 1)):
            return False  # the slow path re-walks this window
        self.report.bytes_hashed += sum(map(len, entries))
        return True

    def window_columns(
        self, lo: int, t: pa.Table, hashed: tuple[bytes, int] | None, nodes: pa.Table
    ) -> bool:
        """Like :meth:`window_fast`, for leaves the native accelerator hashed from the stored
        columns of the window starting at seq ``lo`` (``hashing.stored_leaf_hashes(t, lo)``);
        False (state untouched) when anything differs or a row needs the Python encoder."""
        if hashed is None or lo != self.next_seq or not t.num_rows:
            return False
        leaves, nbytes = hashed
        if not self._extend(leaves, t.column("leaf_hash"), nodes):
            return False
        self.report.bytes_hashed += nbytes
        return True

    def _extend(self, leaves: bytes, stored_leaves: pa.ChunkedArray, nodes: pa.Table) -> bool:
        """Grow the tree by ``leaves`` if they and the nodes they complete equal the stored
        ones; otherwise leave the state untouched and return False."""
        if not _same_hashes(stored_leaves, leaves):
            return False
        before = list(self.frontier)
        runs = merkle.push_run(self.frontier, self.next_seq, leaves)
        if not _same_nodes(runs, nodes):
            self.frontier = before
            return False
        self.next_seq += len(leaves) // merkle.HASH_SIZE
        return True

    def window_sql(self, t: pa.Table, nodes: pa.Table) -> bool:
        """Like :meth:`window_fast`, from entries DuckDB assembled (``raw.verify_windows``);
        False also when an entry is NULL (a string that needs JSON escaping)."""
        k = t.num_rows
        entry_col = t.column("entry")
        if not k or entry_col.null_count or not _seqs_from(t, self.next_seq):
            return False
        offsets, data = _binary_parts(entry_col)
        leaves = hashing.py_hash_slices(data, offsets.tolist())
        if not self._extend(leaves, t.column("leaf_hash"), nodes):
            return False
        # each entry carries the 0x00 leaf prefix, which is not part of the canonical bytes
        self.report.bytes_hashed += offsets[k] - offsets[0] - k
        return True

    def row(
        self,
        seq: int,
        stream: str,
        version: int,
        event_id: str,
        type_: str,
        sv: int,
        payload: bytes,
        stored_leaf: bytes,
    ) -> None:
        rep = self.report
        if seq != self.next_seq:
            if seq < self.next_seq:
                rep.add(f"seq {seq}", "appears more than once (a duplicated or reordered row)")
                return
            if not self.gap_reported:
                rep.add(
                    f"seq {self.next_seq}",
                    f"missing: the next stored event is seq {seq} (deleted?)",
                )
                self.gap_reported = True
        entry = envelope_bytes(seq, stream, version, event_id, type_, sv, payload)
        leaf = merkle.leaf_hash(entry)
        rep.bytes_hashed += len(entry)
        if leaf != stored_leaf:
            rep.add(
                f"seq {seq}",
                f"stored bytes do not match the stored leaf hash (recomputed {leaf.hex()[:16]}…, "
                f"stored {bytes(stored_leaf).hex()[:16]}…): the event was altered",
            )
        # Build the tree from what the bytes say, at position self.next_seq.
        merkle.frontier_push(self.frontier, self.next_seq, leaf, self.nodes)
        self.next_seq += 1
        if self.next_seq in self.sizes:
            self.roots[self.next_seq] = merkle.frontier_root(self.frontier)


def _seqs_from(t: pa.Table, first: int) -> bool:
    """Is the window's seq column exactly ``first, first + 1, …``?"""
    seqs = pa.array(range(first, first + t.num_rows), pa.uint64())
    return t.column("seq").equals(pa.chunked_array([seqs]))


def _binary_parts(col: pa.ChunkedArray) -> tuple[memoryview, memoryview]:
    """Offsets (k + 1 integers) and data of a binary column without NULLs (nothing copied)."""
    offsets, data, width = hashing.string_column(col)
    # cast: Arrow exports bytes as signed chars, which compare unequal to bytes above 0x7f
    return offsets.cast("q" if width == 8 else "i"), data.cast("B")


def _same_nodes(runs: list[tuple[int, int, bytes]], stored: pa.Table) -> bool:
    """Do the stored (level, idx, hash) rows equal the recomputed runs that are stored (from
    ``NODE_MIN_LEVEL`` up) exactly?"""
    runs = [run for run in runs if run[0] >= NODE_MIN_LEVEL]
    counts = [len(hs) // merkle.HASH_SIZE for _, _, hs in runs]
    if stored.num_rows != sum(counts):
        return False
    if not runs:
        return True
    levels = pa.chunked_array(
        [pa.repeat(pa.scalar(lv, pa.uint8()), c) for (lv, _, _), c in zip(runs, counts)]  # noqa: B905
    )
    if not stored.column("level").equals(levels):
        return False
    idx = stored.column("idx")
    at = 0
    for (_, first, _), c in zip(runs, counts):  # noqa: B905
        if not _is_range(idx.slice(at, c), first):
            return False
        at += c
    return _same_hashes(stored.column("hash"), b"".join(hs for _, _, hs in runs))


def _is_range(col: pa.ChunkedArray, first: int) -> bool:
    """Is the integer column exactly ``first, first + 1, …`` (no NULLs)?"""
    arr = col.combine_chunks()
    if not len(arr):
        return True
    if arr.null_count or arr[0].as_py() != first:
        return False
    return len(arr) == 1 or pc.all(pc.equal(pc.pairwise_diff(arr), 1)).as_py()


def _same_hashes(col: pa.ChunkedArray, hashes: bytes) -> bool:
    """Is the binary column exactly these concatenated 32-byte hashes, in order? (one
    buffer compare)"""
    if len(col) * merkle.HASH_SIZE != len(hashes):
        return False
    if not pc.all(pc.equal(pc.binary_length(col), merkle.HASH_SIZE)).as_py():
        return False
    offsets, data = _binary_parts(col)
    return data[offsets[0] : offsets[len(col)]] == hashes


COLUMNS = (*hashing.STORED_COLUMNS, "leaf_hash")


def scan_events(lg: Ledger, report: VerifyReport, sizes: set[int]) -> dict[int, bytes]:
    """Checks 1 and 2; returns the rebuilt root at every checkpoint size reached."""
    size, stored_frontier = lg.tree_state()
    report.size = size
    top = lg.max_stored_seq()
    scan = _Scan(report, sizes)
    # Three paths per window, each falling back to the next: the stored columns hashed by
    # the native accelerator (or, without it, entries assembled by DuckDB), prefetched while
    # this window is hashed; entries encoded in Python; and the row by row walk that names
    # the first bad seq.
    native = hashing.NATIVE
    # the per-stream version check is one DuckDB query: it runs while the windows are hashed
    side = ThreadPoolExecutor(1, thread_name_prefix="vledger-versions")
    versions = side.submit(lg.first_version_break)
    side.shutdown(wait=False)
    windows = verify_windows(
        lg,
        -1 if top is None else top,
        WINDOW,
        columns=native,
        prepare=_hash_ahead if native else None,
        depth=DEPTH,
    )
    try:
        for lo, hi, entries, nodes, hashed in windows:
            if (
                scan.window_columns(lo, entries, hashed, nodes)
                if native
                else scan.window_sql(entries, nodes)
            ):
                continue
            t = lg.raw_rows(lo, hi, ordered=False)
            if not scan.window_fast(t, lg.stored_node_table):
                cols = [t.sort_by("seq").column(c).to_pylist() for c in COLUMNS]
                first_leaf = scan.next_seq
                for r in zip(*cols, strict=True):
                    scan.row(*r)
                _compare_nodes(lg, report, scan, first_leaf)
    finally:  # however the scan ends, no worker still reads when the caller closes the ledger
        windows.close()
        versions.exception()
    report.events = scan.next_seq
    report.root = merkle.frontier_root(scan.frontier)
    _check_versions(report, versions.result())
    if scan.next_seq < size and not scan.gap_reported:
        report.add(
            f"seq {scan.next_seq}",
            f"missing: tree_state records {size} events but only {scan.next_seq} are stored (truncated tail)",
        )
    elif scan.next_seq > size:
        report.add(
            f"seq {size}", f"tree_state records {size} events but {scan.next_seq} are stored"
        )
    elif scan.frontier != stored_frontier:
        report.add(
            "tree_state",
            "the stored Merkle frontier does not match the tree rebuilt from the events",
        )
    extra = lg.count_nodes_from(scan.next_seq)
    if extra:
        report.add("nodes", f"{extra} stored interior node(s) cover leaves beyond the last event")
    report.problems.sort(key=_seq_order)  # stable: the first bad seq comes first
    # Fast windows compared every stored node with the rebuilt tree, so roots at sizes
    # inside them can be read from the stored nodes (O(log n) each).
    for s in scan.sizes:
        if s not in scan.roots and 0 < s <= scan.next_seq:
            try:
                scan.roots[s] = lg.root(s)
            except (ProofError, LedgerError) as exc:
                report.add("nodes", f"cannot rebuild the root at size {s}: {exc}")
    return scan.roots


def _hash_ahead(lo: int, t: pa.Table) -> tuple[bytes, int] | None:
    """Leaf hashes of a window, computed in verify_windows' worker (the GIL is released
    while hashing, so this overlaps the checks of the window before)."""
    return hashing.stored_leaf_hashes(t, lo) if t.num_rows else None


def _seq_order(p: Problem) -> tuple[int, int]:
    head, _, num = p.where.partition(" ")
    return (0, int(num)) if head == "seq" and num.isdigit() else (1, 0)


def _check_versions(report: VerifyReport, bad: tuple[int, str, int, int] | None) -> None:
    """Each stream's versions are 0, 1, 2… in seq order (``Ledger.first_version_break``)."""
    if bad is not None:
        seq, stream, version, want = bad
        report.add(
            f"seq {seq}",
            f"stream {stream!r} is at version {version} here, expected {want} "
            "(events reordered or removed)",
        )


def _compare_nodes(lg: Ledger, report: VerifyReport, scan: _Scan, first_leaf: int) -> None:
    """Stored interior nodes completed by leaves [first_leaf, scan.next_seq) must match."""
    want = [node for node in scan.nodes if node[0] >= NODE_MIN_LEVEL]
    scan.nodes = []
    got = lg.stored_nodes(first_leaf, scan.next_seq - 1) if scan.next_seq > first_leaf else []
    if got == want:
        return
    stored = {(lv, idx): h for lv, idx, h in got}
    rebuilt = {(lv, idx): h for lv, idx, h in want}
    bad = []
    for key in stored.keys() | rebuilt.keys():
        if key not in stored:
            what = "is missing"
        elif key not in rebuilt:
            what = f"is not in the tree (nodes below level {NODE_MIN_LEVEL} are never stored)"
        elif stored[key] != rebuilt[key]:
            what = "does not match the rebuilt tree"
        else:
            continue
        lv, idx = key
        bad.append((((idx + 1) << lv) - 1, lv, idx, what))
    if len(stored) < len(got):
        seen: set[tuple[int, int]] = set()
        for lv, idx, _ in got:
            if (lv, idx) in seen:
                bad.append((((idx + 1) << lv) - 1, lv, idx, "is stored more than once"))
            seen.add((lv, idx))
    if bad:  # the first by the leaf that completes it
        last, lv, idx, what = min(bad)
        report.add(f"seq {last}", f"stored Merkle node (level {lv}, index {idx}) {what}")
