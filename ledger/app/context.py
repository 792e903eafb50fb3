"""Which ledger a use case works on: one rule for the API and the CLI alike.

Every API function takes ``ledger=`` as the CLI takes ``--ledger``: an open store (the
caller keeps ownership), a path, or ``None`` for ``$VLEDGER_HOME`` / ``./.vledger``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ledger.defaults import default_ledger_path

LedgerArg = Any  # str | os.PathLike | an open store (ledger.log.store.Ledger or the in-memory one)


def ledger_path(ledger: LedgerArg) -> Path:
    """The directory ``ledger`` names (an open store reports its own root)."""
    if ledger is None:
        return default_ledger_path()
    if isinstance(ledger, (str, os.PathLike)):
        return Path(ledger)
    return Path(ledger.path)


@contextmanager
def opened(ledger: LedgerArg, **open_kw: Any) -> Iterator[Any]:
    """The store to use: an open one as given (not closed here), else opened for the
    duration with ``open_kw`` (``read_only``, ``busy_timeout``, ``create``…) and closed."""
    if ledger is not None and not isinstance(ledger, (str, os.PathLike)):
        yield ledger
        return
    from ledger.log.store import open_ledger  # noqa: PLC0415 - `import ledger` stays light

    lg = open_ledger(ledger_path(ledger), **open_kw)
    try:
        yield lg
    finally:
        lg.close()
