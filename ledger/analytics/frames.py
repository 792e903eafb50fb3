"""Views as dataframes for notebooks: any documented view as a pyarrow Table or pandas, over
the read-only connection ``vledger sql`` uses (docs/readme/analytics.md § Dataframes and plain
DuckDB); pandas is optional and only imported when asked for.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ledger.analytics import sql as analytics
from ledger.analytics import views
from ledger.app.context import LedgerArg, ledger_path
from ledger.errors import LedgerError


class UnknownView(LedgerError, ValueError):
    """A name that is not a documented view; lists the ones there are."""

    def __init__(self, name: str) -> None:
        self.name = name
        known = ", ".join(v.name for v in views.PUBLIC_VIEWS)
        super().__init__(f"no view {name!r}; the documented views are: {known}")


def view(name: str, *, ledger: LedgerArg = None) -> pa.Table:
    """Every row of the documented view ``name`` as a pyarrow Table."""
    if name not in {v.name for v in views.PUBLIC_VIEWS}:
        raise UnknownView(name)
    return analytics.query(ledger_path(ledger), f"SELECT * FROM {name}")


def view_pandas(name: str, *, ledger: LedgerArg = None) -> Any:
    """The same as :func:`view`, as a pandas DataFrame; needs pandas installed."""
    try:
        import pandas  # noqa: F401 - pyarrow's to_pandas needs it
    except ImportError:
        raise ImportError(
            "view_pandas needs pandas (pip install pandas); view() returns a pyarrow Table"
        ) from None
    return view(name, ledger=ledger).to_pandas()
