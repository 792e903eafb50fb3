"""Receipt verification at the file/ledger seam (docs/readme/verdict.md § Receipts).

* verdict-core run directories: their files' bytes go to the pure verifier in
  ``replay.receipts.receipt`` (verdict-core FORMAT.md § 7).
* our own receipts (``replay.completed`` / ``reconcile.completed`` / ``receipt.issued``):
  the event is included in the current log (RFC 9162 § 2.1.3), its checkpoint is
  consistent with it (§ 2.1.4) and, with ``recompute``, the outputs digest recomputes.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ledger.app.context import LedgerArg, opened
from ledger.app.result import Result
from ledger.app.run_files import RUN_PREFIX, ingested_run_files, read_run_dir
from ledger.errors import LedgerError, ProofError
from ledger.log import merkle
from ledger.log.keys import load_verifier
from ledger.log.note import NoteError, Verifier, note_text, open_note, parse_checkpoint
from ledger.log.verify_report import Problem
from replay.receipts.receipt import rebuild_from_files
from replay.receipts.run import RebuildError
from replay.receipts.verify import Difference, Verification, check_run_files, verify_run_files
from schemas.envelope import StoredEvent, leaf_hash
from schemas.errors import FAILED, OK

# What a verdict-core receipt.json that verifies does and does not show (`receipt verify`
# prints it in text and JSON): it carries no signature, so it binds files, not authors.
RUN_RECEIPT_TRUST: dict[str, object] = {
    "signed": False,
    "proves": (
        "events.jsonl and graph.json are exactly the files receipt.json describes: "
        "they were not changed after the receipt was written"
    ),
    "does_not_prove": (
        "who wrote the run or the receipt: receipt.json is unsigned, so whoever edits "
        "events.jsonl and recomputes receipt.json gets a receipt that verifies"
    ),
    "detects_later_edits": (
        "once the run is ingested, `vledger verify` re-verifies it against the ledger's "
        "copy, so edits made after ingest are caught there"
    ),
}

# A ledger receipt (replay / reconcile) is an event of the log: as trustworthy as the log.
LEDGER_RECEIPT_TRUST: dict[str, object] = {
    "signed": False,
    "proves": (
        "the receipt event is in the current log and the checkpoint it read is a prefix of it"
    ),
    "does_not_prove": (
        "that the log itself is genuine: the receipt carries no signature of its own; "
        "`vledger verify --pub KEY --checkpoint FILE` ties the log to a key and an outside "
        "checkpoint"
    ),
}


def check_run_dir(run_dir: Path, strict: bool = False) -> Verification:
    """The problems, each differing leaf (path, both values) and the rebuilt receipt."""
    return check_run_files(read_run_dir(Path(run_dir)), strict=strict)


# ------------------------------------------------- ingested verdict-core runs (verify)


def verify_ingested_runs(lg: Any) -> list[Problem]:
    """``vledger verify`` hook: every ingested verdict-core run re-verifies from the log."""
    problems: list[Problem] = []
    for stream in lg.streams(prefix=RUN_PREFIX):
        files = ingested_run_files(lg, stream)
        if files is not None:
            problems.extend(Problem(stream, p) for p in verify_run_files(files))
    return problems


# ------------------------------------------------------------- our own receipts (ledger)

RECEIPT_TYPES = ("replay.completed", "reconcile.completed", "receipt.issued")

# ``fn(ledger, receipt_event) -> "sha256:…"``, the outputs digest recomputed from the log.
Recompute = Callable[[Any, StoredEvent], str]
# receipt event type -> its recomputer ("module:function"), imported only when a receipt of
# that type is checked: this module never imports the projections that write receipts.
RECOMPUTERS: dict[str, str] = {
    "replay.completed": "ledger.app.retrace:recompute_replay",
    "reconcile.completed": "ledger.app.reconcile:recompute_reconcile",
}


def _recomputer(event_type: str) -> Recompute | None:
    target = RECOMPUTERS.get(event_type)
    if target is None:
        return None
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


class ReceiptMalformed(LedgerError, ValueError):
    """A receipt event whose payload carries no readable checkpoint receipt."""


class ReceiptNotFound(LedgerError):
    def __init__(self, ident: str, message: str = "") -> None:
        self.ident = ident
        super().__init__(
            message
            or f"no receipt event with seq or event_id {ident!r}; receipts are the "
            f"{', '.join(RECEIPT_TYPES)} events (see `vledger sql 'select * from receipts'`)"
        )


@dataclass(frozen=True, slots=True)
class LedgerReceipt:
    event: StoredEvent
    size: int
    root: bytes
    config_digest: str | None
    outputs_digest: str | None


@dataclass(frozen=True)
class ReceiptCheck(Result):
    """What verifying a receipt found (``vledger receipt verify``), with its kind's trust note."""

    receipt: LedgerReceipt | None
    problems: list[str] = field(default_factory=list)
    checked: list[str] | None = field(default_factory=list)  # ledger receipts: checks passed
    trust: dict[str, object] = field(default_factory=lambda: LEDGER_RECEIPT_TRUST)
    differences: list[Difference] | None = None  # a run directory: each differing leaf
    verdict: str | None = None  # a run directory: ``OUTCOME: reason`` of its evidence

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def exit_code(self) -> int:
        return OK if self.ok else FAILED

    def to_json(self) -> dict[str, Any]:
        found = (
            {"checked": self.checked}
            if self.differences is None
            else {"differences": [d.as_json() for d in self.differences]}
        )
        return {"ok": self.ok, "problems": self.problems, **found, **self.trust}


def find_receipt_event(lg: Any, ident: str) -> StoredEvent:
    """The receipt event named by its seq (decimal) or its event_id."""
    if ident.isdigit():
        seq = int(ident)
        found = list(lg.read(from_seq=seq, to_seq=seq)) if seq < lg.size() else []
    else:
        found = [ev for ev in lg.read(types=list(RECEIPT_TYPES)) if ev.event_id == ident]
    if not found or found[0].type not in RECEIPT_TYPES:
        raise ReceiptNotFound(ident)
    return found[0]


def parse_ledger_receipt(ev: StoredEvent) -> LedgerReceipt:
    """Read ``{checkpoint: {size, root}, …}`` from a receipt event's payload."""
    data = ev.data()
    body = data.get("receipt") if isinstance(data.get("receipt"), dict) else data
    cp = body.get("checkpoint") if isinstance(body, dict) else None
    where = f"{ev.type} at seq {ev.seq}"
    if not (isinstance(cp, dict) and isinstance(cp.get("size"), int)
            and isinstance(cp.get("root"), str)):  # fmt: skip
        raise ReceiptMalformed(
            f"{where} carries no checkpoint receipt: want "
            "{'checkpoint': {'size': int, 'root': hex}, 'config_digest', 'outputs_digest'}"
        )
    try:
        root = bytes.fromhex(cp["root"])
    except ValueError:
        raise ReceiptMalformed(f"{where}: checkpoint.root {cp['root']!r} is not hex") from None
    config = body.get("config_digest") or body.get("inputs_digest")
    return LedgerReceipt(ev, cp["size"], root, config, body.get("outputs_digest"))


def verify_ledger_receipt(
    lg: Any, ident: str, recompute: bool = False, pub: Verifier | None = None
) -> ReceiptCheck:
    """Inclusion of the receipt event, consistency of its checkpoint, the signed notes and an
    optional recompute (docs/readme/verdict.md § Receipts)."""
    ev = find_receipt_event(lg, ident)
    size = lg.size()
    if ev.type == "receipt.issued" and isinstance(ev.data().get("events_file"), dict):
        return _check_ingested_run(lg, ev, size)
    try:
        rc = parse_ledger_receipt(ev)
    except ValueError as exc:
        return ReceiptCheck(None, [str(exc)])
    check = ReceiptCheck(rc)
    _check_inclusion(lg, ev, size, check)
    _check_checkpoint(lg, rc, size, check)
    _check_signed_notes(lg, rc, check, pub)
    _check_extension(lg, rc, check)
    if recompute:
        _check_recompute(lg, rc, check)
    return check


def _check_ingested_run(lg: Any, ev: StoredEvent, size: int) -> ReceiptCheck:
    """An imported verdict-core receipt: its event is in the log, and the run it
    describes re-verifies from the log alone (verdict-core FORMAT.md § 7)."""
    check = ReceiptCheck(None)
    _check_inclusion(lg, ev, size, check)
    files = ingested_run_files(lg, ev.stream)
    problems = verify_run_files(files) if files is not None else ["missing receipt.json"]
    check.problems.extend(problems)
    if not problems:
        check.checked.append(f"verdict-core run {ev.stream} rebuilds to its stored receipt")
    return check


def _check_inclusion(lg: Any, ev: StoredEvent, size: int, check: ReceiptCheck) -> None:
    if leaf_hash(ev.entry()) != ev.leaf_hash:
        check.problems.append(
            f"receipt event seq {ev.seq}: stored leaf hash does not match its content"
        )
    elif _included(lg, ev, size, lg.root(size), where := f"the log of {size} events", check):
        check.checked.append(f"receipt event seq {ev.seq} is included in {where}")


def _included(lg: Any, ev: StoredEvent, size: int, root: bytes, where: str, check: Any) -> bool:
    """``ev`` is a leaf of the tree of ``size`` with ``root`` (RFC 9162 § 2.1.3), or a problem."""
    try:
        proof = lg.prove_inclusion(ev.seq, size)
        merkle.check_inclusion(ev.seq, size, leaf_hash(ev.entry()), proof, root)
    except ProofError as exc:
        check.problems.append(f"receipt event seq {ev.seq} is not included in {where}: {exc}")
        return False
    return True


def _check_checkpoint(lg: Any, rc: LedgerReceipt, size: int, check: ReceiptCheck) -> None:
    seq = rc.event.seq
    if rc.size > seq:
        check.problems.append(
            f"checkpoint size {rc.size} includes the receipt event itself (seq {seq}); "
            "a receipt binds the log as it stood before it was written"
        )
        return
    try:
        if rc.size == 0:
            if rc.root != merkle.EMPTY_ROOT:
                raise ProofError("a size-0 checkpoint must carry the empty-tree root")
        else:
            proof = lg.prove_consistency(rc.size, size)
            merkle.check_consistency(rc.size, size, rc.root, lg.root(size), proof)
    except ProofError as exc:
        check.problems.append(
            f"checkpoint (size {rc.size}, root {rc.root.hex()}) is not consistent with the "
            f"current log ({size} events): {exc}"
        )
        return
    check.checked.append(
        f"checkpoint size {rc.size} is consistent with the current log ({size} events)"
    )


def _check_extension(lg: Any, rc: LedgerReceipt, check: ReceiptCheck) -> None:
    """A replay that extended another names it (``receipt.extends``): that receipt is in
    the log the extension read, with the same config digest and the tree head named, and
    the two tree heads are consistent (RFC 9162 § 2.1.4) — the log the carried results were
    derived from is a prefix of the one this replay read. (``--recompute`` re-derives both.)"""
    link = rc.event.data().get("receipt", {}).get("extends")
    if link is None:
        return
    kind = rc.event.type.split(".")[0]  # replay | reconcile
    named = (link.get("replay_id") or link.get("run_id")) if isinstance(link, dict) else link
    where = f"the {kind} it extends ({named})"
    try:
        seq, cp = int(link["seq"]), link["checkpoint"]
        size, root = int(cp["size"]), bytes.fromhex(cp["root"])
    except (KeyError, TypeError, ValueError, AttributeError):
        check.problems.append(f"{where}: receipt.extends is malformed: want seq and checkpoint")
        return
    found = list(lg.read(from_seq=seq, to_seq=seq)) if 0 <= seq < rc.size else []
    try:
        base = parse_ledger_receipt(found[0]) if found else None
    except ValueError:
        base = None
    if base is None or base.event.type != rc.event.type:
        check.problems.append(f"{where}: no {kind} receipt at seq {seq} of the log it read")
        return
    if (base.size, base.root, base.config_digest) != (size, root, rc.config_digest):
        check.problems.append(
            f"{where}: the receipt at seq {seq} binds another tree head or config digest"
        )
        return
    try:
        proof = lg.prove_consistency(size, rc.size)
        merkle.check_consistency(size, rc.size, root, rc.root, proof)
    except ProofError as exc:
        check.problems.append(
            f"{where}: its tree head (size {size}) is not consistent with this receipt's "
            f"(size {rc.size}): {exc}"
        )
        return
    check.checked.append(
        f"extends the {kind} receipt at seq {seq}: same config digest, and its tree head "
        f"(size {size}) is consistent with this receipt's (size {rc.size})"
    )


def _signed_notes(lg: Any, pub: Verifier | None) -> list[tuple[Path, Any, str]]:
    """(file, checkpoint body, how it was checked) for each stored note that parses and,
    with ``pub``, carries a valid signature by it; bad notes are left to ``verify``."""
    out = []
    for path, note in lg.checkpoints():
        try:
            if pub is not None:
                open_note(note, [pub])
            cp = parse_checkpoint(note_text(note))
        except NoteError:
            continue
        out.append((path, cp, "signature checked" if pub is not None else "signature not checked"))
    return out


def _check_signed_notes(
    lg: Any, rc: LedgerReceipt, check: ReceiptCheck, pub: Verifier | None
) -> None:
    notes = _signed_notes(lg, pub)
    for path, cp, how in notes:
        if cp.size == rc.size:
            if cp.root != rc.root:
                check.problems.append(
                    f"checkpoint size {rc.size}: root {rc.root.hex()} differs from the signed "
                    f"note {path.name} ({cp.root.hex()})"
                )
            else:
                check.checked.append(f"checkpoint matches the signed note {path.name} ({how})")
    covering = [n for n in notes if n[1].size > rc.event.seq]
    if not covering:
        return
    path, cp, how = covering[-1]
    if _included(lg, rc.event, cp.size, cp.root, path.name, check):
        check.checked.append(
            f"receipt event seq {rc.event.seq} is included in the signed note {path.name} ({how})"
        )


def _check_recompute(lg: Any, rc: LedgerReceipt, check: ReceiptCheck) -> None:
    fn = _recomputer(rc.event.type)
    if fn is None:
        check.problems.append(
            f"cannot recompute: no projection registered for {rc.event.type} "
            f"(registered: {sorted(RECOMPUTERS) or 'none'})"
        )
        return
    try:
        got = fn(lg, rc.event)
    except LedgerError as exc:  # e.g. the replay an extension names does not recompute
        check.problems.append(f"cannot recompute: {exc}")
        return
    if got != rc.outputs_digest:
        check.problems.append(
            f"outputs_digest mismatch: recorded {rc.outputs_digest}, recomputed {got}"
        )
    else:
        check.checked.append(f"outputs_digest recomputed: {got}")


def receipt_verify(
    target: str, *, recompute: bool = False, strict: bool = False,
    pub: str | Path | None = None, ledger: LedgerArg = None,
) -> ReceiptCheck:  # fmt: skip
    """A verdict-core run directory (``strict``: receipt.json byte-identical to the rebuilt
    one), else a ledger receipt by seq / event_id (``pub``: a .pub key for signed notes)."""
    if Path(target).is_file() and not target.isdigit():  # e.g. the run's receipt.json
        raise ReceiptNotFound(
            target,
            f"{target!r} is a file: a verdict-core run is verified as its directory (pass "
            f"{str(Path(target).parent)!r}), a ledger receipt by its seq or event_id",
        )
    if Path(target).is_dir():
        run = check_run_dir(Path(target), strict=strict)
        verdict = run_verdict(Path(target), run.rebuilt)
        return ReceiptCheck(None, run.problems, None, RUN_RECEIPT_TRUST, run.differences, verdict)
    with opened(ledger, read_only=True) as lg:  # verifying only reads
        verifier = load_verifier(Path(pub)) if pub is not None else None
        return verify_ledger_receipt(lg, target, recompute=recompute, pub=verifier)


def run_verdict(run_dir: Path, rebuilt: dict[str, Any] | None) -> str:
    """``OUTCOME: reason`` of the evidence (verdict-core FORMAT.md § 7's CLI), even when verification
    stopped before rebuilding (e.g. no receipt.json to compare with)."""
    try:
        if rebuilt is None:
            rebuilt = rebuild_from_files(read_run_dir(run_dir))
    except RebuildError as exc:
        return f"UNKNOWN: cannot rebuild receipt: {exc}"
    return f"{rebuilt['outcome']}: {rebuilt['reason']}"


@dataclass(frozen=True)
class ReceiptShown(Result):
    """A receipt event and what it carries (``vledger receipt show --json``)."""

    seq: int
    event_id: str
    stream: str
    type: str
    receipt: dict[str, Any]  # a verdict-core run's summary, or our checkpoint receipt

    def to_json(self) -> dict[str, Any]:
        head = {"seq": self.seq, "event_id": self.event_id, "stream": self.stream}
        return {**head, "type": self.type, **self.receipt}


def receipt_show(ident: str, *, ledger: LedgerArg = None) -> ReceiptShown:
    """The receipt carried by the event with seq or event_id ``ident``."""
    with opened(ledger, read_only=True) as lg:
        ev = find_receipt_event(lg, ident)
        return ReceiptShown(ev.seq, ev.event_id, ev.stream, ev.type, _receipt_fields(ev))


def _receipt_fields(ev: StoredEvent) -> dict[str, Any]:
    data = ev.data()
    stored = data.get("receipt")
    if ev.type == "receipt.issued" and isinstance(data.get("events_file"), dict):
        # an imported verdict-core run receipt (verify it with `receipt verify SEQ`)
        stored = stored if isinstance(stored, dict) else {}
        keys = ("run_id", "outcome", "reason", "events_digest", "graph_digest", "event_count")
        return {"verdict_core_receipt": {k: stored.get(k) for k in keys}}
    rc = parse_ledger_receipt(ev)
    extends = stored.get("extends") if isinstance(stored, dict) else None
    return {
        "checkpoint": {"size": rc.size, "root": rc.root.hex()},
        "config_digest": rc.config_digest,
        "outputs_digest": rc.outputs_digest,
        **({"extends": extends} if extends is not None else {}),
    }


# ------------------------------------------------------- verify hook: projection receipts

PROJECTION_RECEIPTS = ("replay.completed", "reconcile.completed")


def verify_projection_receipts(lg: Any) -> list[Problem]:
    """``vledger verify`` hook: every replay / reconcile receipt is included in the log and
    its checkpoint is consistent with the current tree (recomputing the outputs is
    ``vledger receipt verify ID --recompute``: it re-runs the projection)."""
    problems: list[Problem] = []
    for ev in lg.read(types=list(PROJECTION_RECEIPTS)):
        check = verify_ledger_receipt(lg, str(ev.seq))
        problems.extend(Problem(f"{ev.type} at seq {ev.seq}", p) for p in check.problems)
    return problems
