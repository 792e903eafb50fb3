"""Signing and reading a log's checkpoints (C2SP tlog-checkpoint in C2SP signed-note form).

The rules both stores sign by: never sign a checkpoint that some stored one is not a prefix
of (a consistency proof could not join them), and at a size already signed, add the
signer's line to the stored note rather than writing a second one.
"""

from __future__ import annotations

from pathlib import Path

from ledger.errors import CheckpointError, ProofError
from ledger.log import merkle
from ledger.log.layout import CHECKPOINT_DIR, checkpoint_file
from ledger.log.note import (
    Checkpoint,
    InvalidSignature,
    MalformedNote,
    NoVerifiableSignatures,
    Signer,
    format_checkpoint,
    note_text,
    open_note,
    parse_checkpoint,
    sign_note,
)

Stored = list[tuple[Path, str]]  # (file, note), oldest (smallest size) first


def stored_notes(ledger_dir: Path) -> Stored:
    """The checkpoint notes stored in a ledger directory, oldest first."""
    folder = ledger_dir / CHECKPOINT_DIR
    if not folder.is_dir():
        return []
    return [(p, p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.note"))]


def latest(stored: Stored) -> Checkpoint | None:
    """The body of the largest stored checkpoint (its signatures are not checked here)."""
    return parse_checkpoint(note_text(stored[-1][1])) if stored else None


def signed_checkpoint(
    cp: Checkpoint, signer: Signer, stored: Stored, tree: merkle.HashReader
) -> str:
    """The note to store for ``cp`` signed by ``signer``, given the stored notes and the
    log's hashes; raises CheckpointError when a stored checkpoint is not a prefix of it."""
    text = format_checkpoint(cp)
    for path, note in stored:
        check_joinable(path, note, cp, signer, tree)
    name = checkpoint_file(Path(), cp.size).name
    for path, existing in stored:
        if path.name == name:
            if note_text(existing) != text:
                raise CheckpointError(f"{path}: a different checkpoint of size {cp.size} exists")
            if signed_by(existing, signer):
                return existing
            return existing + sign_note(text, [signer])[len(text) + 1 :]
    return sign_note(text, [signer])


def signed_by(signed: str, signer: Signer) -> bool:
    try:
        open_note(signed, [signer.verifier()])
    except NoVerifiableSignatures:
        return False
    return True


def check_joinable(
    path: Path, stored: str, cp: Checkpoint, signer: Signer, tree: merkle.HashReader
) -> None:
    """Raise CheckpointError unless the stored checkpoint is a prefix of ``cp``'s tree."""
    try:
        old = parse_checkpoint(note_text(stored))
        signed_by(stored, signer)  # raises InvalidSignature if our key's sig is bad
    except (MalformedNote, InvalidSignature) as exc:
        raise CheckpointError(f"refusing to sign: stored checkpoint {path} is bad: {exc}") from None
    if old.origin != cp.origin:
        raise CheckpointError(
            f"refusing to sign: {path} is for origin {old.origin!r}, this log is {cp.origin!r}"
        )
    if old.size > cp.size:
        raise CheckpointError(
            f"refusing to sign: {path} covers {old.size} events but the log has {cp.size}; "
            "the log lost events (run `vledger verify`)"
        )
    try:
        if old.size == 0:
            if old.root != merkle.EMPTY_ROOT:
                raise ProofError("size-0 checkpoint with a non-empty root")
        else:
            proof = merkle.prove_consistency(old.size, cp.size, tree)
            merkle.check_consistency(old.size, cp.size, old.root, cp.root, proof)
    except ProofError as exc:
        raise CheckpointError(
            f"refusing to sign size {cp.size}: not consistent with {path} (size {old.size}): {exc}"
        ) from None
