"""Signing keys for checkpoints, kept outside the ledger directory.

``vledger keygen --out FILE`` writes the private key in the C2SP/x-mod signer format
(``PRIVATE+KEY+name+keyid+base64``, mode 0600) to FILE and the verifier key
(``name+keyid+base64``) to ``FILE.pub``. Whoever holds the ledger directory must not hold
the key: a key inside the ledger would let anyone who can rewrite the log re-sign it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ledger.defaults import DEFAULT_KEY_NAME
from ledger.errors import LedgerError
from ledger.log.note import (
    BadKey,
    Signer,
    Verifier,
    generate_signer,
    parse_signer_key,
    parse_verifier_key,
)
from ledger.log.outputs import check_output_path

MAX_KEY_BYTES = 4096  # a key is one line of under 200 bytes


class KeyFileError(LedgerError):
    """A key file that cannot be written or read; names the file."""


def pub_path(key_file: Path) -> Path:
    return key_file.with_name(key_file.name + ".pub")


def keygen(out: Path, name: str = DEFAULT_KEY_NAME, *, ledger_dir: Path | None = None) -> Verifier:
    """Write a new Ed25519 signer to ``out`` and its verifier to ``out.pub``; never overwrite,
    never inside a ledger directory (``ledger_dir`` or any other)."""
    pub = pub_path(out)
    check_output_path(out, ledger_dir, what="private key")
    check_output_path(pub, ledger_dir, what="public key")
    for p in (out, pub):
        if p.exists():
            raise KeyFileError(
                f"{str(p)!r} exists; refusing to overwrite a key (choose another --out)"
            )
    signer = generate_signer(name)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(signer.format() + "\n")
    verifier = signer.verifier()
    pub.write_text(verifier.format() + "\n")
    return verifier


def load_signer(path: Path) -> Signer:
    text = _key_text(path, "key file")
    try:
        return parse_signer_key(text)
    except BadKey as exc:
        raise KeyFileError(
            f"{str(path)!r}: {exc}; pass the file `vledger keygen --out FILE` wrote"
        ) from None


def load_verifier(path: Path) -> Verifier:
    """A verifier key from ``path`` (a ``.pub`` file; a private key file also works)."""
    text = _key_text(path, "public key file").strip()
    try:
        if text.startswith("PRIVATE+KEY+"):
            return parse_signer_key(text).verifier()
        return parse_verifier_key(text)
    except BadKey as exc:
        raise KeyFileError(
            f"{str(path)!r}: {exc}; pass the FILE.pub `vledger keygen --out FILE` wrote"
        ) from None


def _key_text(path: Path, what: str) -> str:
    """A key file's text: one ASCII line, so a file that cannot be read, is not a regular
    file (``/dev/zero`` was read for ever), is larger than :data:`MAX_KEY_BYTES` or is not
    text is refused naming the file."""
    not_a_key = f"{what} {str(path)!r} is not a key; pass the file `vledger keygen` wrote"
    try:
        with path.open("rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise KeyFileError(f"{not_a_key} (not a regular file)")
            data = f.read(MAX_KEY_BYTES + 1)
    except OSError as exc:
        raise KeyFileError(f"cannot read {what} {str(path)!r}: {exc.strerror}") from None
    if len(data) > MAX_KEY_BYTES:
        raise KeyFileError(f"{not_a_key} (larger than {MAX_KEY_BYTES} bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise KeyFileError(f"{not_a_key} (not text)") from None
