"""The one root of every error vledger raises on purpose, and the exit codes it carries.

It lives at the bottom layer so that schemas/, replay/ and reconcile/ raise it too. The CLI
never maps classes to codes: it prints ``Error: <message>`` and exits with the error's own
``exit_code`` (README § Exit codes holds the table).
"""

from __future__ import annotations

from typing import ClassVar

OK = 0
FAILED = 1  # a check found a problem, or an input could not be read or used
USAGE = 2  # the command line itself is wrong (click's own code)
BUSY = 3  # another process held the ledger longer than --busy-timeout
CONFLICT = 4  # optimistic concurrency: stream version, event_id content, sealed stream
CANNOT_RUN = 5  # reconcile / validate: the invocation cannot run as declared
INTERRUPTED = 130  # stopped by Ctrl-C (SIGINT): 128 + its number, as shells report it


class LedgerError(Exception):
    """Base of every error the project raises on purpose; ``exit_code`` is the CLI's."""

    exit_code: ClassVar[int] = FAILED


class UsageError(LedgerError):
    """A request whose arguments contradict each other (``address`` without the ray
    engine, a dry run on the ray engine…): the API refuses it as the CLI refuses the flags."""

    exit_code: ClassVar[int] = USAGE


class Interrupted(LedgerError):
    """Ctrl-C (SIGINT) stopped the command: each append is one transaction, so one it had
    begun is not in the log."""

    exit_code: ClassVar[int] = INTERRUPTED

    def __init__(self) -> None:
        super().__init__(
            "interrupted (Ctrl-C): an append it had begun is not in the log (each is one "
            "transaction); what it had appended before stays"
        )
