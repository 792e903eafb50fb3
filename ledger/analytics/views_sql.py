"""``_views.sql``: the documented views as plain DuckDB SQL over an exported Parquet directory.

``vledger export --parquet DIR`` writes it beside the segments, so a plain DuckDB session —
no verdict-ledger installed — gets the same views ``vledger sql`` has::

    duckdb -c ".read DIR/_views.sql" -c "SELECT * FROM pass_at_k WHERE level = 'task'"

The statements are exactly those ``ledger.analytics.views.create_views`` runs (the one relation of
envelope rows, the macros, every view in order), over ``read_parquet`` of the export's
segment files by absolute path; moving the directory means editing that first statement.
The name starts with ``_`` for the reason ``_manifest.json`` does: pyarrow.dataset, Spark
and Hive skip such files, so the directory still reads as one Parquet dataset.
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
