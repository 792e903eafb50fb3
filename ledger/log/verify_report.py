"""What ``verify`` found: the report every check adds its problems to, and the outside anchor.

A leaf module (only Merkle constants), so the checks in ledger/log, ledger/log/segments and
ledger/app can all take a report without importing one another.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ledger.log import merkle

MAX_PROBLEMS = 50


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing verify found wrong: where (``seq 17``, a file name) and what."""

    where: str
    what: str


@dataclass(frozen=True, slots=True)
class OutsideCheckpoint:
    """A checkpoint note kept outside the ledger (``verify --checkpoint FILE``): the trust
    anchor that catches a rollback or truncation, which the ledger's own checkpoints
    cannot (whoever rolls the log back rolls its checkpoints back with it)."""

    path: str
    note: str


@dataclass
class VerifyReport:
    size: int = 0
    root: bytes = merkle.EMPTY_ROOT
    events: int = 0
    bytes_hashed: int = 0
    checkpoints: int = 0
    signatures_checked: bool = False
    segments: int = 0
    # the largest size a checkpoint signed by --pub covers (None: none, or no --pub)
    signed_size: int | None = None
    anchored: bool = False  # an outside checkpoint (--checkpoint FILE) was given
    anchor_size: int | None = None  # its size, when the log extends it
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def add(self, where: str, what: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(Problem(where, what))

    def lines(self) -> list[str]:
        sig = "checked" if self.signatures_checked else "NOT checked (pass --pub)"
        out = [
            f"events: {self.events} (log size {self.size}), {self.bytes_hashed} bytes hashed",
            f"root: {self.root.hex()}",
            f"checkpoints: {self.checkpoints} (signatures {sig})",
            self._anchor_line(),
            f"segments: {self.segments}",
        ]
        if self.ok:
            out.append("OK: every leaf hash, the tree, the checkpoints and segments verify")
        else:
            out.append(f"FAILED: {len(self.problems)} problem(s); first:")
            out.extend(f"  {p.where}: {p.what}" for p in self.problems)
        return out

    def _anchor_line(self) -> str:
        if not self.anchored:
            return (
                "outside checkpoint: none (a rollback to an older copy, or a truncation with "
                "its checkpoints, is only caught with --checkpoint FILE)"
            )
        if self.anchor_size is None:
            return "outside checkpoint: does NOT hold (see the problems)"
        return f"outside checkpoint: size {self.anchor_size}, and the log extends it"

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "size": self.size,
            "root": self.root.hex(),
            "events": self.events,
            "bytes_hashed": self.bytes_hashed,
            "checkpoints": self.checkpoints,
            "signatures_checked": self.signatures_checked,
            "signed_size": self.signed_size,
            "outside_checkpoint": (
                {"size": self.anchor_size, "holds": self.anchor_size is not None}
                if self.anchored
                else None
            ),
            "segments": self.segments,
            "problems": [{"where": p.where, "what": p.what} for p in self.problems],
        }
