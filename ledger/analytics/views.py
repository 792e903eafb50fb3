"""The documented SQL views over the log: every view is a projection of the ``events`` table.

The views read one relation, the raw envelope rows (``seq, stream, stream_version, event_id,
type, schema_version, recorded_at, payload, leaf_hash``) — whether that is the store's
DuckDB table or sealed Parquet segments is decided by the caller (``ledger.analytics.sql``).
Nothing here stores state: dropping every view and creating them again over the same
log gives the same rows (``tests/test_views.py``); the rows some of them map events to are
kept beside the log by ``ledger.analytics.materialise``, which reads them back the same. Each group of views has its module; this
one lists them in creation order (a view reads only views before it).
"""

from __future__ import annotations

from collections.abc import Mapping

import duckdb

from ledger.analytics import views_grades, views_metrics, views_trials, views_verdicts
from ledger.analytics.spend_views import SPEND_VIEWS
from ledger.analytics.view_kit import View

VIEWS: tuple[View, ...] = (
    *views_trials.VIEWS,
    *views_grades.VIEWS,
    *views_verdicts.VIEWS,
    *views_metrics.VIEWS,
    *SPEND_VIEWS,
)
PUBLIC_VIEWS: tuple[View, ...] = tuple(v for v in VIEWS if v.public)
BY_NAME: dict[str, View] = {v.name: v for v in VIEWS}
MACROS: tuple[str, ...] = (views_grades.CONSTRAINT_CLASS, views_metrics.PASS_AT_K_VALUE)


def statements(raw_relation_sql: str, kept: Mapping[str, str] | None = None) -> list[str]:
    """Every statement creating the views over ``raw_relation_sql``, in order (``_views.sql``).
    ``kept``: the SQL some views read instead of their own (their rows kept up to date
    elsewhere, ``ledger.analytics.materialise``)."""
    kept = kept or {}
    return [
        f"CREATE OR REPLACE VIEW _raw_events AS {raw_relation_sql}",
        *MACROS,
        *(f"CREATE OR REPLACE VIEW {v.name} AS {kept.get(v.name, v.sql)}" for v in VIEWS),
    ]


def create_views(
    con: duckdb.DuckDBPyConnection, raw_relation_sql: str, kept: Mapping[str, str] | None = None
) -> None:
    """Create every view on ``con`` over ``raw_relation_sql`` (the envelope rows)."""
    for statement in statements(raw_relation_sql, kept):
        con.execute(statement)


def drop_views(con: duckdb.DuckDBPyConnection) -> None:
    for view in reversed(VIEWS):
        con.execute(f"DROP VIEW IF EXISTS {view.name}")
    con.execute("DROP VIEW IF EXISTS _raw_events")


def schema_rows() -> list[dict[str, str]]:
    """The column docs ``vledger sql --schema`` prints: one row per public view column."""
    return [
        {"view": v.name, "column": col, "description": desc, "view_doc": v.doc}
        for v in PUBLIC_VIEWS
        for col, desc in v.columns
    ]
