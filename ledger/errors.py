"""The store's error vocabulary: typed, with fields, each message naming the key and the way out.

No duckdb exception leaves ``ledger/``: the store translates driver errors here, at the seam
(as the eventsourcing library does). Each class carries its exit code (``exit_code``, from the one
table in schemas/errors.py).
"""

from __future__ import annotations

from pathlib import Path

from schemas.errors import BUSY, CONFLICT, LedgerError

__all__ = ["LedgerError"]  # the one root lives in schemas/errors.py, below every layer


class LedgerNotFound(LedgerError):
    """Opening a directory that holds no ledger (never silently create one)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        super().__init__(
            f"no ledger at {str(path)!r}; create one with `vledger init --ledger {path}` "
            "or pass the right --ledger / VLEDGER_HOME"
        )


class LedgerExists(LedgerError):
    """``init`` on a directory that already holds a ledger."""

    def __init__(self, path: Path) -> None:
        self.path = path
        super().__init__(f"a ledger already exists at {str(path)!r}; open it instead of init")


class LedgerBusy(LedgerError):
    """Another process holds the ledger's single writer lock for longer than the retry bound."""

    exit_code = BUSY

    def __init__(self, path: Path, waited: float, detail: str = "") -> None:
        self.path = path
        self.waited = waited
        self.detail = detail
        super().__init__(
            f"ledger busy: {str(path)!r} is held by another process; gave up after "
            f"{waited:.1f}s; retry when it is done (ingest and the store commands wait "
            "longer with --busy-timeout S, open_ledger and ingest with busy_timeout=S)"
            + (f" [{detail}]" if detail else "")
        )


class StreamVersionConflict(LedgerError):
    """Optimistic concurrency: the stream is not at the version the caller expected."""

    exit_code = CONFLICT

    def __init__(self, stream: str, expected: int | str, actual: int | None) -> None:
        self.stream = stream
        self.expected = expected
        self.actual = actual
        shown = "no stream (no events yet)" if actual is None else f"version {actual}"
        super().__init__(
            f"stream {stream!r}: expected version {expected!r}, but the stream is at {shown}"
        )


class EventIdConflict(LedgerError):
    """The same ``event_id`` offered with content different from what is stored under it."""

    exit_code = CONFLICT

    def __init__(self, event_id: str, seq: int | None, differs: list[str]) -> None:
        self.event_id = event_id
        self.seq = seq
        self.differs = differs
        where = f"stored at seq {seq}" if seq is not None else "earlier in the same batch"
        super().__init__(
            f"event_id {event_id!r} is already {where} with different "
            f"{', '.join(differs)}; use a new event_id for new content"
        )


class StreamSealed(LedgerError):
    """An append to a trial stream already sealed into a segment (trials never split)."""

    exit_code = CONFLICT

    def __init__(self, stream: str, sealed_upto: int) -> None:
        self.stream = stream
        self.sealed_upto = sealed_upto
        super().__init__(
            f"stream {stream!r} is sealed (segments hold seq < {sealed_upto}); a trial's events "
            "are never split across segments, so append a trial's events before `vledger seal`"
        )


class InvalidEvent(LedgerError):
    """An event refused at the append seam (bad type, payload or field); names its batch index."""

    def __init__(self, index: int, detail: str) -> None:
        self.index = index
        self.detail = detail
        super().__init__(f"event #{index} of the batch: {detail}")


class ProofError(LedgerError):
    """A Merkle proof request or check that fails; names the function and its arguments."""


class CheckpointError(LedgerError):
    """A checkpoint that cannot be signed, parsed or verified; says which and why."""


class TamperDetected(LedgerError):
    """``verify`` found stored data that does not match what was committed."""

    def __init__(self, where: str, what: str) -> None:
        self.where = where
        self.what = what
        super().__init__(f"{where}: {what}")


class OutputInLedger(LedgerError):
    """A command asked to write one of its outputs inside a ledger directory."""

    def __init__(self, path: Path, ledger_dir: Path, what: str = "output") -> None:
        self.path = path
        self.ledger_dir = ledger_dir
        super().__init__(
            f"refusing to write the {what} {str(path)!r}: it is inside the ledger directory "
            f"{str(ledger_dir)!r}, whose files only the store writes (an output there could "
            f"overwrite the store, a sealed segment or a checkpoint); write it outside, "
            f"e.g. ./{path.name}; nothing was written"
        )
