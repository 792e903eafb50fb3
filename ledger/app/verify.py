"""``verify``: the log's own checks, then the application's, from ONE explicit list.

What ``vledger verify`` runs is what ``ledger.verify`` runs, whatever the caller imported:
no check registers itself. Each check imports its module only when it runs, so
``import ledger`` stays light.
"""

from __future__ import annotations

import importlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ledger.app.context import LedgerArg, opened
from ledger.app.result import Result
from ledger.defaults import DEFAULT_BUSY_TIMEOUT
from ledger.errors import LedgerError
from ledger.log.keys import load_verifier
from ledger.log.note import Verifier
from ledger.log.verify import LOG_CHECKS, verify_ledger
from ledger.log.verify_report import OutsideCheckpoint, Problem, VerifyReport
from schemas.errors import FAILED, OK

# An outside checkpoint is one short note; anything much larger is not one.
MAX_NOTE_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class Check:
    """One application check, run after the log's own (:data:`LOG_CHECKS`)."""

    name: str
    target: str  # "module:function", imported only when the check runs
    deep: bool = False  # recomputes a stored projection from raw events: only with --deep

    def run(self, lg: Any) -> list[Problem]:
        module, _, attr = self.target.partition(":")
        return getattr(importlib.import_module(module), attr)(lg)


CHECKS: tuple[Check, ...] = (
    Check("runs", "ledger.app.receipts:verify_ingested_runs"),  # verdict-core runs re-verify
    Check("receipts", "ledger.app.receipts:verify_projection_receipts"),  # replay / reconcile
    Check("admissions", "ledger.app.verdicts:verify_hook"),  # recorded admissions re-derive
    Check("timelines", "ledger.app.timeline_check:check_timelines", deep=True),  # ingest's stored timelines
)


@dataclass(frozen=True)
class VerifyResult(Result):
    """The report, and the name of every check that ran (in order)."""

    report: VerifyReport
    checks: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return self.report.ok

    @property
    def exit_code(self) -> int:
        return OK if self.ok else FAILED

    @property
    def problems(self) -> list[Problem]:
        return self.report.problems

    def to_json(self) -> dict[str, Any]:
        return {**self.report.to_json(), "checks": list(self.checks)}


def verify(
    *,
    ledger: LedgerArg = None,
    pub: str | os.PathLike[str] | Verifier | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
    deep: bool = False,
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
) -> VerifyResult:
    """``vledger verify``: recompute everything the ledger claims; never writes a file.

    ``pub``: a ``.pub`` file (or a Verifier) whose signed checkpoint must cover the log;
    ``checkpoint``: a note kept outside the ledger that the log must extend; ``deep``: also
    the checks that recompute stored projections.
    """
    if pub is not None and not isinstance(pub, Verifier):
        pub = load_verifier(Path(pub))
    anchor = None if checkpoint is None else read_outside_checkpoint(Path(checkpoint))
    ran = [c for c in CHECKS if deep or not c.deep]
    # read-only: an interrupted seal is reported, not finished (that is `vledger repair`)
    with opened(ledger, read_only=True, busy_timeout=busy_timeout) as lg:
        report = verify_ledger(lg, pub, anchor=anchor, extra=[c.run for c in ran])
    return VerifyResult(report, (*LOG_CHECKS, *(c.name for c in ran)))


def read_outside_checkpoint(path: Path) -> OutsideCheckpoint:
    """The note of ``verify --checkpoint FILE``: a regular file of at most MAX_NOTE_BYTES."""
    try:
        with path.open("rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise LedgerError(f"--checkpoint {str(path)!r}: not a regular file")
            data = f.read(MAX_NOTE_BYTES + 1)
    except OSError as exc:
        raise LedgerError(f"cannot read --checkpoint {str(path)!r}: {exc.strerror}") from None
    if len(data) > MAX_NOTE_BYTES:
        raise LedgerError(
            f"--checkpoint {str(path)!r}: larger than {MAX_NOTE_BYTES} bytes, not a checkpoint note"
        )
    try:
        return OutsideCheckpoint(str(path), data.decode("utf-8"))
    except UnicodeDecodeError:
        raise LedgerError(
            f"--checkpoint {str(path)!r}: not UTF-8 text, not a checkpoint note"
        ) from None
