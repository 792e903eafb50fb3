"""`_views.sql` of `vledger export --parquet` in plain DuckDB, and views as dataframes.

The oracle for both is `vledger sql` itself over the same ledger: the exported script run
in a bare DuckDB connection (no verdict-ledger code) must give the same `pass_at_k` rows.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from ledger.analytics.frames import UnknownView, view, view_pandas
from ledger.app.ingest import ingest_into as ingest
from ledger.cli import main
from ledger.log.store import open_ledger

NOTES = Path(__file__).resolve().parents[1] / "corpora" / "notes_duplicate_check"
PASS_AT_K = "SELECT * FROM pass_at_k ORDER BY ALL"


@pytest.fixture(scope="module")
def ledger_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("views_sql") / "L"
    with open_ledger(path, create=True) as lg:
        ingest(lg, [NOTES])
    return path


def test_views_sql_recreates_pass_at_k_in_plain_duckdb(ledger_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["export", "--parquet", str(out), "--ledger", str(ledger_dir)])
    assert res.exit_code == 0, res.output
    sql = CliRunner().invoke(main, ["sql", PASS_AT_K, "--format", "json", "--ledger",
                                    str(ledger_dir)])  # fmt: skip
    assert sql.exit_code == 0, sql.output
    want = json.loads(sql.stdout)
    con = duckdb.connect(":memory:")
    con.execute((out / "_views.sql").read_text())
    rel = con.sql(PASS_AT_K)
    got = [dict(zip(rel.columns, row, strict=True)) for row in rel.fetchall()]
    assert want and len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.keys() == w.keys()
        for k, v in w.items():
            assert g[k] == pytest.approx(v) if isinstance(v, float) else g[k] == v


def test_any_view_as_an_arrow_table(ledger_dir: Path) -> None:
    table = view("trials", ledger=ledger_dir)
    assert table.num_rows == 17  # the 17 shipped notes trials
    with pytest.raises(UnknownView, match="the documented views are: .*pass_at_k"):
        view("no_such_view", ledger=ledger_dir)


def test_pandas_when_installed(ledger_dir: Path) -> None:
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pip install pandas"):
            view_pandas("trials", ledger=ledger_dir)
        return
    assert len(view_pandas("trials", ledger=ledger_dir)) == 17
