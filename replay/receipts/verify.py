"""Verifying a run's ``receipt.json`` against the rebuilt one: § 7's problem strings, in
the order found, and where each mismatching field differs."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from replay.receipts.receipt import RECEIPT_SCHEMA, load_json, rebuild_from_files, receipt_bytes
from replay.receipts.run import RebuildError, RunFiles, events_digest

STRICT_BYTES_PROBLEM = (
    "receipt.json bytes differ from the canonical serialisation of the rebuilt receipt"
)


@dataclass(frozen=True, slots=True)
class Difference:
    """One leaf where the stored receipt and the rebuilt one differ, at a short JSON
    ``path`` (``nodes[0].attempts[1].outcome``); a side with no value there is ``ABSENT``."""

    path: str
    stored: Any
    rebuilt: Any

    def as_json(self) -> dict[str, Any]:
        """Both values as JSON; a side with nothing at ``path`` is left out (not ``null``,
        which would read as a stored null)."""
        out: dict[str, Any] = {"path": self.path}
        for side in ("stored", "rebuilt"):
            value = getattr(self, side)
            if value is not ABSENT:
                out[side] = value
        return out


class _Absent:
    def __repr__(self) -> str:
        return "(absent)"


ABSENT: Any = _Absent()


@dataclass(frozen=True, slots=True)
class Verification:
    """§ 7's problem strings, plus where each field mismatch lies and the rebuilt receipt
    (``None`` when verification stopped before rebuilding, or the rebuild failed)."""

    problems: list[str]
    differences: list[Difference]
    rebuilt: dict[str, Any] | None = None


def verify_run_files(files: RunFiles, strict: bool = False) -> list[str]:
    """§ 7: the problems with a run directory's receipt, in the order found."""
    return check_run_files(files, strict).problems


def check_run_files(files: RunFiles, strict: bool = False) -> Verification:
    """§ 7, with the differing leaves of every mismatching field; ``strict`` adds § 7's
    optional byte check (reported last)."""

    def stop(*problems: str) -> Verification:
        return Verification(list(problems), [])

    if files.receipt_error is not None:
        return stop(f"cannot read receipt.json: {files.receipt_error}")
    if files.receipt is None:
        return stop("missing receipt.json")
    try:
        stored = load_json(files.receipt, "receipt.json")
    except RebuildError as exc:
        return stop(str(exc))
    if not isinstance(stored, dict):
        return stop("receipt.json must contain a JSON object")
    problems: list[str] = []
    if stored.get("schema") != RECEIPT_SCHEMA:
        problems.append(f"unexpected schema {stored.get('schema')!r}")
    if files.events is None:
        return stop(*problems, "missing events.jsonl")
    if stored.get("events_digest") != events_digest(files.events):
        problems.append("events_digest mismatch: events.jsonl changed after receipt was written")
    try:
        rebuilt = rebuild_from_files(files)
    except RebuildError as exc:
        return stop(*problems, f"cannot rebuild receipt: {exc}")
    problems.extend(compare_receipts(stored, rebuilt))
    if strict and files.receipt != receipt_bytes(rebuilt):
        problems.append(STRICT_BYTES_PROBLEM)
    return Verification(problems, receipt_differences(stored, rebuilt), rebuilt)


def compare_receipts(stored: Mapping[str, Any], rebuilt: Mapping[str, Any]) -> list[str]:
    """§ 7 step 7: top-level keys only, Python structural equality, missing reads as null."""
    return [
        f"{key} mismatch: stored receipt differs from recomputed evidence"
        for key in _compared_keys(stored, rebuilt)
    ]


def _compared_keys(stored: Mapping[str, Any], rebuilt: Mapping[str, Any]) -> list[str]:
    return [
        key
        for key in sorted(set(stored) | set(rebuilt))
        if key != "events_digest" and stored.get(key) != rebuilt.get(key)
    ]


def receipt_differences(stored: Mapping[str, Any], rebuilt: Mapping[str, Any]) -> list[Difference]:
    """The differing leaves under each mismatching top-level field (§ 7 step 7, Python's
    equality); a missing top-level key reads as null (§ 7), a nested one as absent."""
    return [
        d
        for key in _compared_keys(stored, rebuilt)
        for d in _leaf_differences(_key_path("", key), stored.get(key), rebuilt.get(key))
    ]


def _leaf_differences(path: str, a: Any, b: Any) -> list[Difference]:
    if a == b:
        return []
    if isinstance(a, dict) and isinstance(b, dict):
        return [
            d
            for k in sorted(set(a) | set(b), key=str)
            for d in _leaf_differences(_key_path(path, k), a.get(k, ABSENT), b.get(k, ABSENT))
        ]
    if isinstance(a, list) and isinstance(b, list):
        # pairwise by index: a changed item is named at its own index, an extra one absent
        return [
            d
            for i in range(max(len(a), len(b)))
            for d in _leaf_differences(
                f"{path}[{i}]",
                a[i] if i < len(a) else ABSENT,
                b[i] if i < len(b) else ABSENT,
            )
        ]
    return [Difference(path, a, b)]


def _key_path(path: str, key: Any) -> str:
    text = str(key)
    if text.isidentifier():
        return f"{path}.{text}" if path else text
    return f"{path}[{json.dumps(text)}]"
