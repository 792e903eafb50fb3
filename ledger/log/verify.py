"""``verify``: recompute everything the ledger claims and name the first thing that is wrong.

The core checks, in order — events, tree, checkpoints, segments — are those of
docs/readme/store.md (``vledger verify``); each problem names a seq, a checkpoint file or a
segment file. Events and tree (every leaf hash recomputed, the RFC 9162 tree rebuilt) live
in :mod:`ledger.log.verify_scan`, segments in :func:`ledger.log.segments.check_segments`. A
re-hashed forgery (internally consistent, different content) passes the first two and fails
at the checkpoints, naming the checkpoint. Then the caller's ``extra`` checks run: the
application's are listed in :data:`ledger.app.verify.CHECKS`; this package never imports them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import duckdb

from ledger.errors import LedgerError, ProofError
from ledger.log import merkle
from ledger.log.note import (
    Checkpoint,
    InvalidSignature,
    MalformedNote,
    NoVerifiableSignatures,
    Verifier,
    note_text,
    open_note,
    parse_checkpoint,
)
from ledger.log.segments import check_segments
from ledger.log.verify_report import OutsideCheckpoint, Problem, VerifyReport
from ledger.log.verify_scan import scan_events

if TYPE_CHECKING:
    from ledger.log.store import Ledger

ExtraCheck = Callable[[Any], list[Problem]]

# the core checks, in the order verify_ledger runs them
LOG_CHECKS = ("events", "tree", "checkpoints", "segments")


def verify_ledger(
    lg: Ledger,
    pub: Verifier | None = None,
    *,
    anchor: OutsideCheckpoint | None = None,
    extra: Sequence[ExtraCheck] = (),
    deep: bool = False,
) -> VerifyReport:
    """Run every core check, then each of ``extra`` in order; never raises for bad data.

    With ``pub``, some checkpoint signed by it must cover the whole log. With ``anchor``,
    the log at the anchor's size must have its root, and today's log must extend it.
    ``deep`` checks recompute the application's projections: they are ``ledger.verify``'s
    (ledger/app/verify.py), so asking for them here is refused, never silently skipped.
    """
    if deep:
        raise LedgerError("deep checks recompute application projections: use ledger.verify(...)")
    report = VerifyReport(signatures_checked=pub is not None, anchored=anchor is not None)
    notes = [stored for _, stored in lg.checkpoints()]
    sizes = _checkpoint_sizes([*notes, anchor.note] if anchor is not None else notes)
    try:
        roots = scan_events(lg, report, sizes)
        _check_checkpoints(lg, report, pub, roots, anchor)
        report.segments = check_segments(lg, report)
        for check in extra:
            for p in check(lg):
                report.add(p.where, p.what)
    except duckdb.Error as exc:  # damaged storage (checksums, unreadable blocks), wherever
        report.add("events.duckdb", f"cannot be read: {exc}")
    return report


def _checkpoint_sizes(notes: list[str]) -> set[int]:
    sizes = set()
    for note in notes:
        with contextlib.suppress(MalformedNote):  # reported by _check_checkpoints
            sizes.add(parse_checkpoint(note_text(note)).size)
    return sizes


def _check_checkpoints(
    lg: Ledger,
    report: VerifyReport,
    pub: Verifier | None,
    roots: dict[int, bytes],
    anchor: OutsideCheckpoint | None = None,
) -> None:
    signed_sizes = []
    before = len(report.problems)
    for path, stored in lg.checkpoints():
        report.checkpoints += 1
        cp = _check_note(lg, report, f"checkpoint {path.name}", stored, pub, roots)
        if cp is not None and pub is not None:
            signed_sizes.append(cp.size)
    if pub is not None:
        report.signed_size = max(signed_sizes, default=None)
        # a bad stored checkpoint is already the finding; this one is for a log that is
        # sound but not (wholly) tied to the key
        if report.signed_size != report.size and len(report.problems) == before:
            report.add("checkpoints", _uncovered(pub, report.size, report.signed_size))
    if anchor is not None:
        where = f"outside checkpoint {anchor.path}"
        cp = _check_note(lg, report, where, anchor.note, pub, roots, outside=True)
        if cp is not None:
            report.anchor_size = cp.size


def _uncovered(pub: Verifier, size: int, signed: int | None) -> str:
    """Why ``--pub`` fails when the key's signatures do not reach the whole log."""
    key = f"{pub.name}+{pub.key_id.hex()}"
    if signed is None:
        head = f"no checkpoint signed by {key} is stored, so nothing ties the {size} events to that key"
    else:
        head = (
            f"the checkpoints signed by {key} cover seq < {signed}; seq {signed}..{size - 1} "
            "are signed by no one"
        )
    return (
        f"{head} (checkpoints deleted, or events appended since the last signature): sign the "
        "current tree with `vledger checkpoint --key FILE`, and keep a copy outside the ledger "
        "(`--out FILE`) to verify against with `--checkpoint FILE`"
    )


def _check_note(
    lg: Ledger,
    report: VerifyReport,
    where: str,
    stored: str,
    pub: Verifier | None,
    roots: dict[int, bytes],
    *,
    outside: bool = False,
) -> Checkpoint | None:
    """Check one checkpoint note against the rebuilt tree; the checkpoint when it holds."""
    try:
        cp = parse_checkpoint(note_text(stored))
    except MalformedNote as exc:
        report.add(where, f"malformed: {exc}")
        return None
    if pub is not None:
        key = f"{pub.name}+{pub.key_id.hex()}"
        try:
            open_note(stored, [pub])
        except InvalidSignature:
            report.add(where, f"signature by {key} does not verify: the note was altered")
            return None
        except NoVerifiableSignatures:
            report.add(where, f"not signed by the given key {key}")
            return None
        except MalformedNote as exc:
            report.add(where, f"malformed note: {exc}")
            return None
    if cp.origin != lg.origin:
        report.add(where, f"origin {cp.origin!r} is not this log's {lg.origin!r}")
        return None
    if cp.size > report.events:
        lost = (
            "the log was rolled back to an older copy or truncated" if outside else "events removed"
        )
        report.add(where, f"covers {cp.size} events but only {report.events} are stored ({lost})")
        return None
    if roots.get(cp.size) != cp.root:
        rebuilt = roots.get(cp.size, b"").hex()
        report.add(
            where,
            f"signed root {cp.root.hex()} at size {cp.size}, but the events rebuild root {rebuilt}: "
            "the log was rewritten",
        )
        return None
    if report.ok and cp.size > 0:  # proofs read stored nodes: meaningful only over a sound tree
        try:
            proof = lg.prove_consistency(cp.size, report.size)
            merkle.check_consistency(cp.size, report.size, cp.root, report.root, proof)
        except (ProofError, LedgerError) as exc:
            report.add(where, f"no consistency proof to the current tree: {exc}")
            return None
    return cp
