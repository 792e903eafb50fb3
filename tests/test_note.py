"""C2SP signed-note and tlog-checkpoint against the interop vectors (tests/data/merkle).

The 100-signature cap is implementation-defined (the spec requires accepting >= 16); we
follow golang.org/x/mod and reject 101 signature lines, as the vector expects.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.log import note
from ledger.log.note import (
    BadKey,
    Checkpoint,
    InvalidSignature,
    MalformedNote,
    NoVerifiableSignatures,
)
from tests.data_paths import MERKLE_VECTORS

V: dict[str, Any] = json.loads(MERKLE_VECTORS.read_text())

ERRORS = {
    "malformed": MalformedNote,
    "invalid_signature": InvalidSignature,
    "no_verifiable_signatures": NoVerifiableSignatures,
}


@pytest.mark.parametrize("key", V["note_keys"], ids=lambda k: k["id"])
def test_note_keys_parse_and_format(key: dict[str, Any]) -> None:
    v = note.parse_verifier_key(key["vkey"])
    assert (v.name, v.key_id.hex(), v.public.hex()) == (
        key["name"],
        key["key_id"],
        key["public_key"],
    )
    assert v.format() == key["vkey"]
    if "skey" in key:
        s = note.parse_signer_key(key["skey"])
        assert s.seed.hex() == key["seed"]
        assert s.format() == key["skey"]
        assert s.verifier() == v


@pytest.mark.parametrize("bad", V["bad_verifier_keys"], ids=lambda k: k["reason"])
def test_bad_verifier_keys_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(BadKey):
        note.parse_verifier_key(bad["vkey"])


@pytest.mark.parametrize("vec", V["note_signing"], ids=lambda v: v["text"][:12])
def test_signing_is_byte_exact(vec: dict[str, Any]) -> None:
    signer = note.parse_signer_key(vec["skey"])
    assert note.sign_note(vec["text"], [signer]) == vec["expected_note"]


def _refs(refs: Any) -> list[dict[str, str]]:
    return [{"name": r.name, "key_id": r.key_id} for r in refs]


@pytest.mark.parametrize("vec", V["signed_notes"], ids=lambda v: v["id"])
def test_signed_note_vectors(vec: dict[str, Any]) -> None:
    msg = bytes.fromhex(vec["note_hex"]) if "note_hex" in vec else vec["note"]
    verifiers = [note.parse_verifier_key(k) for k in vec["verifier_keys"]]
    if vec["expect"] == "accept":
        opened = note.open_note(msg, verifiers)
        assert opened.text == vec["text"]
        assert _refs(opened.verified) == vec["verified_signatures"]
        assert _refs(opened.unknown) == vec["unknown_signatures"]
    else:
        with pytest.raises(ERRORS[vec["error"]]) as info:
            note.open_note(msg, verifiers)
        if vec["error"] == "no_verifiable_signatures":
            assert info.value.note.text == vec["text"]
            assert _refs(info.value.note.unknown) == vec["unknown_signatures"]
    if "checkpoint" in vec:
        cp = note.parse_checkpoint(vec["text"])
        want = vec["checkpoint"]
        assert (cp.origin, cp.size, cp.root.hex(), list(cp.extensions)) == (
            want["origin"],
            want["tree_size"],
            want["root_hash_hex"],
            want["extension_lines"],
        )


@pytest.mark.parametrize("vec", V["checkpoint_parsing"], ids=lambda v: v["desc"])
def test_checkpoint_parsing_vectors(vec: dict[str, Any]) -> None:
    if not vec["valid"]:
        with pytest.raises(MalformedNote):
            note.parse_checkpoint(vec["text"])
        return
    cp = note.parse_checkpoint(vec["text"])
    assert (cp.origin, cp.size, cp.root.hex()) == (
        vec["origin"],
        vec["tree_size"],
        vec["root_hash_hex"],
    )
    assert list(cp.extensions) == vec.get("extension_lines", [])
    assert note.format_checkpoint(cp) == vec["text"]


line = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=30
).filter(lambda s: "\n" not in s)


@settings(max_examples=100, deadline=None)
@given(
    origin=line,
    size=st.integers(0, 2**63 - 1),
    root=st.binary(min_size=32, max_size=32),
    ext=st.lists(line, max_size=3),
)
def test_checkpoint_round_trip(origin: str, size: int, root: bytes, ext: list[str]) -> None:
    cp = Checkpoint(origin, size, root, tuple(ext))
    text = note.format_checkpoint(cp)
    assert note.parse_checkpoint(text) == cp
    assert note.format_checkpoint(note.parse_checkpoint(text)) == text


SIGNER = note.generate_signer("test.example/log")
OTHER = note.generate_signer("test.example/log")  # same name, different key


@settings(max_examples=60, deadline=None)
@given(body=st.lists(line, min_size=1, max_size=4), bit=st.integers(0, 511))
def test_sign_open_round_trip_and_tamper(body: list[str], bit: int) -> None:
    text = "".join(x + "\n" for x in body)
    signed = note.sign_note(text, [SIGNER])
    opened = note.open_note(signed, [SIGNER.verifier()])
    assert opened.text == text and len(opened.verified) == 1
    # a different key of the same name is a different key ID: unknown, not invalid
    with pytest.raises(NoVerifiableSignatures):
        note.open_note(signed, [OTHER.verifier()])
    # flip one bit of the signature (after the 4-byte key ID): invalid
    head, _, b64 = signed.rpartition(" ")
    blob = bytearray(base64.b64decode(b64))
    blob[4 + (bit % 64) // 8] ^= 1 << (bit % 8)
    forged = head + " " + base64.b64encode(bytes(blob)).decode() + "\n"
    with pytest.raises(InvalidSignature):
        note.open_note(forged, [SIGNER.verifier()])
    # change the text: the signature no longer covers it
    with pytest.raises(InvalidSignature):
        note.open_note("x" + signed, [SIGNER.verifier()])
