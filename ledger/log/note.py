"""C2SP signed notes (Ed25519, signed-note § "Format") and C2SP tlog-checkpoint bodies.

:func:`open_note` outcomes (C2SP signed-note § "Verifying"):

* :class:`MalformedNote` — the bytes are not a well-formed note (names why);
* :class:`InvalidSignature` — a signature whose name *and* key ID match a trusted key does
  not verify: the whole note is rejected;
* :class:`NoVerifiableSignatures` — no trusted key signed it (carries the parsed note);
* otherwise an :class:`OpenedNote` with the verified and the ignored (unknown) signatures.

Parsers are strict and bounded: at most ``MAX_NOTE_BYTES`` bytes and ``MAX_SIGNATURES``
signature lines (the spec requires accepting at least 16; like Go's x/mod we stop at 100).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

from cryptography.exceptions import InvalidSignature as _CryptoInvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ledger.errors import LedgerError

ALG_ED25519 = 0x01
MAX_NOTE_BYTES = 1_000_000
MAX_SIGNATURES = 100
SIG_PREFIX = "\u2014 "  # EM DASH, space
PRIVATE_PREFIX = "PRIVATE+KEY+"


class NoteError(LedgerError):
    """Base of signed-note and key errors."""


class BadKey(NoteError):
    """A verifier or signer key string that does not parse; names the part at fault."""


class MalformedNote(NoteError):
    """Not a well-formed signed note (or checkpoint body)."""


class InvalidSignature(NoteError):
    """A trusted key's signature does not verify."""

    def __init__(self, name: str, key_id: str) -> None:
        self.name = name
        self.key_id = key_id
        super().__init__(f"invalid signature from trusted key {name}+{key_id}")


@dataclass(frozen=True, slots=True)
class SigRef:
    name: str
    key_id: str  # 8 lowercase hex digits


@dataclass(frozen=True, slots=True)
class OpenedNote:
    text: str
    verified: tuple[SigRef, ...]
    unknown: tuple[SigRef, ...]


class NoVerifiableSignatures(NoteError):
    """No signature on the note is from a trusted key."""

    def __init__(self, note: OpenedNote) -> None:
        self.note = note
        names = ", ".join(f"{s.name}+{s.key_id}" for s in note.unknown) or "none"
        super().__init__(f"note has no signature from a trusted key (signed by: {names})")


def valid_name(name: str) -> bool:
    """C2SP signed-note: non-empty, no whitespace, no ``+``."""
    return bool(name) and "+" not in name and not any(c.isspace() for c in name)


def compute_key_id(name: str, public: bytes) -> bytes:
    """``SHA-256(name || 0x0A || 0x01 || public)[:4]``."""
    return hashlib.sha256(name.encode() + b"\n" + bytes([ALG_ED25519]) + public).digest()[:4]


@dataclass(frozen=True)
class Verifier:
    name: str
    key_id: bytes
    public: bytes = field(repr=False)

    def verify(self, text: bytes, sig: bytes) -> bool:
        try:
            Ed25519PublicKey.from_public_bytes(self.public).verify(sig, text)
        except _CryptoInvalidSignature:
            return False
        return True

    def format(self) -> str:
        """``name+hexkeyid+base64(0x01 || public)``."""
        blob = base64.b64encode(bytes([ALG_ED25519]) + self.public).decode()
        return f"{self.name}+{self.key_id.hex()}+{blob}"


@dataclass(frozen=True)
class Signer:
    name: str
    key_id: bytes
    seed: bytes = field(repr=False)

    def sign(self, text: bytes) -> bytes:
        return Ed25519PrivateKey.from_private_bytes(self.seed).sign(text)

    def verifier(self) -> Verifier:
        public = Ed25519PrivateKey.from_private_bytes(self.seed).public_key().public_bytes_raw()
        return Verifier(self.name, self.key_id, public)

    def format(self) -> str:
        """``PRIVATE+KEY+name+hexkeyid+base64(0x01 || seed)``."""
        blob = base64.b64encode(bytes([ALG_ED25519]) + self.seed).decode()
        return f"{PRIVATE_PREFIX}{self.name}+{self.key_id.hex()}+{blob}"


def generate_signer(name: str) -> Signer:
    if not valid_name(name):
        raise BadKey(f"key name {name!r} must be non-empty, without spaces or '+'")
    key = Ed25519PrivateKey.generate()
    seed = key.private_bytes_raw()
    return Signer(name, compute_key_id(name, key.public_key().public_bytes_raw()), seed)


def _split_key(kind: str, text: str) -> tuple[str, bytes, bytes]:
    parts = text.split("+", 2)  # base64 may itself contain "+"
    if len(parts) != 3:
        raise BadKey(f"{kind} key {text!r}: want name+keyid+base64key")
    name, hex_id, blob = parts
    if not valid_name(name):
        raise BadKey(f"{kind} key {text!r}: name {name!r} is empty or has spaces")
    if len(hex_id) != 8 or hex_id.lower() != hex_id:
        raise BadKey(f"{kind} key {text!r}: key ID {hex_id!r} is not 8 lowercase hex digits")
    try:
        key_id = bytes.fromhex(hex_id)
        raw = base64.b64decode(blob, validate=True)
    except (ValueError, binascii.Error):
        raise BadKey(f"{kind} key {text!r}: key ID or key is not valid hex/base64") from None
    if len(raw) != 33 or raw[0] != ALG_ED25519:
        raise BadKey(f"{kind} key {text!r}: want 0x01 followed by a 32-byte Ed25519 key")
    return name, key_id, raw[1:]


def parse_verifier_key(vkey: str) -> Verifier:
    """Parse ``name+hexkeyid+base64(0x01 || public)``, checking the key ID."""
    name, key_id, public = _split_key("verifier", vkey.strip())
    if compute_key_id(name, public) != key_id:
        raise BadKey(f"verifier key {vkey!r}: key ID does not match the name and key")
    try:
        Ed25519PublicKey.from_public_bytes(public)
    except ValueError:
        raise BadKey(f"verifier key {vkey!r}: not an Ed25519 public key") from None
    return Verifier(name, key_id, public)


def parse_signer_key(skey: str) -> Signer:
    """Parse ``PRIVATE+KEY+name+hexkeyid+base64(0x01 || seed)``, checking the key ID."""
    skey = skey.strip()
    if not skey.startswith(PRIVATE_PREFIX):
        raise BadKey(f"signer key must start with {PRIVATE_PREFIX!r} (is this the .pub file?)")
    name, key_id, seed = _split_key("signer", skey[len(PRIVATE_PREFIX) :])
    signer = Signer(name, key_id, seed)
    if compute_key_id(name, signer.verifier().public) != key_id:
        raise BadKey(f"signer key for {name!r}: key ID does not match the name and key")
    return signer


def _b64(text: str, problem: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except binascii.Error:
        raise MalformedNote(problem) from None


def _canonical_decimal(text: str) -> bool:
    return text.isascii() and text.isdigit() and (text == "0" or text[0] != "0")


def _check_text(where: str, text: str) -> None:
    for pos, ch in enumerate(text):
        if ch != "\n" and unicodedata.category(ch) == "Cc":
            raise MalformedNote(f"{where}: control character U+{ord(ch):04X} at offset {pos}")


def sign_note(text: str, signers: Sequence[Signer]) -> str:
    """The signed note: ``text``, a blank line, one signature line per signer."""
    if not text.endswith("\n"):
        raise MalformedNote("sign_note: text must end with a newline")
    _check_text("sign_note", text)
    if not signers:
        raise MalformedNote("sign_note: need at least one signer")
    lines = []
    for s in signers:
        sig = base64.b64encode(s.key_id + s.sign(text.encode())).decode()
        lines.append(f"{SIG_PREFIX}{s.name} {sig}\n")
    return text + "\n" + "".join(lines)


def _parse(msg: bytes | str) -> tuple[str, list[tuple[str, bytes, bytes, str]]]:
    """Split a note into text and ``(name, key_id, signature, line)`` tuples."""
    raw = msg.encode() if isinstance(msg, str) else msg
    if len(raw) > MAX_NOTE_BYTES:
        raise MalformedNote(f"note is {len(raw)} bytes, over the {MAX_NOTE_BYTES} limit")
    try:
        note = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedNote(f"note is not UTF-8 (byte offset {exc.start})") from None
    _check_text("note", note)
    split = note.rfind("\n\n")
    if split < 0:
        raise MalformedNote("note has no blank line before its signatures")
    text, block = note[: split + 1], note[split + 2 :]
    if not block:
        raise MalformedNote("note has no signature lines")
    if not block.endswith("\n"):
        raise MalformedNote("the last signature line does not end with a newline")
    lines = block[:-1].split("\n")
    if len(lines) > MAX_SIGNATURES:
        raise MalformedNote(f"note has {len(lines)} signatures, over the {MAX_SIGNATURES} limit")
    sigs = []
    for n, line in enumerate(lines, 1):
        if not line.startswith(SIG_PREFIX):
            raise MalformedNote(f"signature line {n} does not start with '— ': {line[:40]!r}")
        name, _, b64 = line[len(SIG_PREFIX) :].partition(" ")
        if not valid_name(name) or not b64 or " " in b64:
            raise MalformedNote(f"signature line {n}: want '— <name> <base64>'")
        blob = _b64(b64, f"signature line {n}: signature is not base64")
        if len(blob) < 5:
            raise MalformedNote(f"signature line {n}: signature too short")
        sigs.append((name, blob[:4], blob[4:], line))
    return text, sigs


def open_note(msg: bytes | str, verifiers: Sequence[Verifier]) -> OpenedNote:
    """Parse and verify a signed note against the trusted ``verifiers`` (see module doc)."""
    text, sigs = _parse(msg)
    trusted = {(v.name, v.key_id): v for v in verifiers}
    verified: list[SigRef] = []
    unknown: list[SigRef] = []
    seen_known: set[tuple[str, bytes]] = set()
    seen_lines: set[str] = set()
    for name, key_id, sig, line in sigs:
        v = trusted.get((name, key_id))
        ref = SigRef(name, key_id.hex())
        if v is None:
            if line not in seen_lines:  # identical unknown lines count once
                seen_lines.add(line)
                unknown.append(ref)
            continue
        if (name, key_id) in seen_known:
            continue
        seen_known.add((name, key_id))
        if not v.verify(text.encode(), sig):
            raise InvalidSignature(name, key_id.hex())
        verified.append(ref)
    opened = OpenedNote(text, tuple(verified), tuple(unknown))
    if not verified:
        raise NoVerifiableSignatures(opened)
    return opened


def note_text(msg: bytes | str) -> str:
    """The text of a note without verifying it (for inspection and listing only)."""
    return _parse(msg)[0]


# --- checkpoints (C2SP tlog-checkpoint) -------------------------------------------------


@dataclass(frozen=True, slots=True)
class Checkpoint:
    origin: str
    size: int
    root: bytes
    extensions: tuple[str, ...] = ()


def format_checkpoint(cp: Checkpoint) -> str:
    """Checkpoint body: origin, decimal size, base64 root, extension lines, each + ``\\n``."""
    if not cp.origin or "\n" in cp.origin:
        raise MalformedNote(f"format_checkpoint: origin {cp.origin!r} must be one non-empty line")
    if cp.size < 0 or len(cp.root) != 32:
        raise MalformedNote(f"format_checkpoint: size {cp.size} / root of {len(cp.root)} bytes")
    for ext in cp.extensions:
        if not ext or "\n" in ext:
            raise MalformedNote(f"format_checkpoint: extension line {ext!r} must be non-empty")
    lines = [cp.origin, str(cp.size), base64.b64encode(cp.root).decode(), *cp.extensions]
    return "".join(line + "\n" for line in lines)


def parse_checkpoint(text: str) -> Checkpoint:
    """Strict inverse of :func:`format_checkpoint` (no leading zeros, exact base64, 32 bytes)."""
    if not text.endswith("\n"):
        raise MalformedNote("checkpoint: text must end with a newline")
    lines = text[:-1].split("\n")
    if len(lines) < 3:
        raise MalformedNote(f"checkpoint: want origin, size and root lines, got {len(lines)}")
    origin, size_s, root_s, *ext = lines
    if not origin:
        raise MalformedNote("checkpoint: empty origin line")
    if not _canonical_decimal(size_s):
        raise MalformedNote(f"checkpoint: tree size {size_s!r} is not a canonical decimal")
    size = int(size_s)
    if size >= 2**63:
        raise MalformedNote(f"checkpoint: tree size {size_s} is too large")
    root = _b64(root_s, f"checkpoint: root {root_s!r} is not base64")
    if len(root) != 32 or base64.b64encode(root).decode() != root_s:
        raise MalformedNote(f"checkpoint: root {root_s!r} is not the base64 of 32 bytes")
    if any(not e for e in ext):
        raise MalformedNote("checkpoint: empty extension line")
    return Checkpoint(origin, size, root, tuple(ext))


# --- inclusion proofs as text (C2SP tlog-proof) -----------------------------------------

TLOG_PROOF_HEADER = "c2sp.org/tlog-proof@v1"


@dataclass(frozen=True, slots=True)
class TlogProof:
    index: int
    path: tuple[bytes, ...]
    checkpoint_note: str
    extra: bytes | None = None


def format_tlog_proof(p: TlogProof) -> str:
    """Header, optional ``extra``, ``index N``, one base64 hash per line, blank, checkpoint."""
    lines = [TLOG_PROOF_HEADER]
    if p.extra is not None:
        lines.append("extra " + base64.b64encode(p.extra).decode())
    lines.append(f"index {p.index}")
    lines.extend(base64.b64encode(h).decode() for h in p.path)
    return "\n".join(lines) + "\n\n" + p.checkpoint_note


def parse_tlog_proof(text: str) -> TlogProof:
    """Strict inverse of :func:`format_tlog_proof`; the checkpoint note is not verified here."""
    head, sep, cp_note = text.partition("\n\n")
    if not sep:
        raise MalformedNote("tlog-proof: no blank line before the checkpoint")
    lines = head.split("\n")
    if lines[0] != TLOG_PROOF_HEADER:
        raise MalformedNote(f"tlog-proof: first line must be {TLOG_PROOF_HEADER!r}")
    pos = 1
    extra = None
    if pos < len(lines) and lines[pos].startswith("extra "):
        extra = _b64(lines[pos][6:], "tlog-proof: extra data is not base64")
        pos += 1
    if pos >= len(lines) or not lines[pos].startswith("index "):
        raise MalformedNote("tlog-proof: missing 'index N' line")
    idx = lines[pos][6:]
    if not _canonical_decimal(idx):
        raise MalformedNote(f"tlog-proof: index {idx!r} is not a canonical decimal")
    path = []
    for n, line in enumerate(lines[pos + 1 :], pos + 2):
        h = _b64(line, f"tlog-proof: line {n} is not base64")
        if len(h) != 32:
            raise MalformedNote(f"tlog-proof: line {n} is not a 32-byte hash")
        path.append(h)
    return TlogProof(int(idx), tuple(path), cp_note, extra)
