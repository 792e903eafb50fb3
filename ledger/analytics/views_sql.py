"""``_views.sql``: the documented views as plain DuckDB SQL over an exported Parquet directory
(docs/readme/analytics.md § Dataframes and plain DuckDB). The segments are read by absolute
path: moving the directory means editing the first statement.
"""

from __future__ import annotations

from pathlib import Path

from ledger.analytics import views
from ledger.analytics.sql import ENVELOPE_COLUMNS

VIEWS_SQL = "_views.sql"


def views_sql(export_dir: Path) -> str:
    """The script: one statement per line group, each ending in ``;``."""
    glob = str(Path(export_dir).resolve() / "seg-*.parquet").replace("'", "''")
    relation = f"SELECT {ENVELOPE_COLUMNS} FROM read_parquet('{glob}')"
    statements = views.statements(relation)
    head = "-- verdict-ledger views over this export (ledger/analytics/views_sql.py); DuckDB SQL\n"
    return head + "".join(f"{s};\n" for s in statements)


def write_views_sql(export_dir: Path) -> Path:
    # leading "_", as _manifest.json: dataset readers skip it, so DIR still reads as Parquet
    path = Path(export_dir) / VIEWS_SQL
    path.write_text(views_sql(export_dir), encoding="utf-8")
    return path
