"""``vledger sql``: read-only (write statements refused, nothing changed), formats, --schema,
and reading sealed segments while a writer holds the store."""

from __future__ import annotations

import csv
import hashlib
import io
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from ledger.analytics import sql as analytics
from ledger.analytics import views
from ledger.cli import main
from tests.analytics_fixtures import envelope_table, recorded_grade, trial_events, write_ledger


def _events() -> list:
    ev = []
    for i in range(3):
        ev += trial_events(
            "c",
            "t",
            i,
            grade=recorded_grade(1.0 if i else 0.0, bool(i)),
            tools=[("list_notes", "success", 0.25 * (i + 1))],
        )
    return ev


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    return write_ledger(tmp_path / "lg", _events())


def _fingerprint(d: Path) -> dict[str, str]:
    """Every file under the ledger dir with its content hash: 'nothing changed' means equal."""
    return {
        str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(d.rglob("*"))
        if p.is_file()
    }


def _sql(ledger: Path, *args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, ["sql", "--ledger", str(ledger), *args])
    return r.exit_code, r.stdout, r.stderr


WRITES = [
    ("INSERT INTO events SELECT * FROM events", "INSERT"),
    ("INSERT INTO store.events SELECT * FROM store.events", "INSERT"),
    ("UPDATE store.events SET type = 'x'", "UPDATE"),
    ("DELETE FROM store.events", "DELETE"),
    ("CREATE TABLE t AS SELECT 1", "CREATE"),
    ("CREATE OR REPLACE VIEW trials AS SELECT 1", "CREATE"),
    ("DROP VIEW trials", "DROP"),
    ("DROP TABLE store.events", "DROP"),
    ("ATTACH '{dir}/other.duckdb' AS o", "ATTACH"),
    ("COPY (SELECT * FROM events) TO '{dir}/leak.csv'", "COPY"),
    ("EXPORT DATABASE '{dir}/exported'", "EXPORT"),
    ("SET threads = 1", "SET"),
    ("PRAGMA enable_profiling", "PRAGMA"),
    ("CHECKPOINT", "CALL"),
    ("INSTALL httpfs", "LOAD"),
    ("EXPLAIN ANALYZE DELETE FROM store.events", "EXPLAIN DELETE"),
    ("SELECT 1; DROP VIEW trials", "DROP"),  # a read first does not smuggle a write
]


@pytest.mark.parametrize(("statement", "kind"), WRITES)
def test_write_statements_are_refused_and_nothing_changes(
    ledger: Path, tmp_path: Path, statement: str, kind: str
) -> None:
    statement = statement.replace("{dir}", str(ledger))
    before = _fingerprint(ledger)
    count_before = analytics.query(ledger, "SELECT count(*) AS n FROM events").to_pylist()
    code, out, err = _sql(ledger, statement)
    assert code == 1
    assert out == ""
    assert f"refused: `vledger sql` is read-only and this is a {kind} statement" in err
    assert "nothing was changed" in err
    assert _fingerprint(ledger) == before  # no file written, none modified
    assert analytics.query(ledger, "SELECT count(*) AS n FROM events").to_pylist() == count_before


def test_refusal_happens_before_the_ledger_is_opened(tmp_path: Path) -> None:
    """No ledger at all: a write is still refused as a write, not as a missing ledger."""
    with pytest.raises(analytics.SqlRefused) as exc:
        analytics.query(tmp_path / "nowhere", "DELETE FROM events")
    assert exc.value.statement_type == "DELETE"


def test_reads_are_allowed(ledger: Path) -> None:
    for sql in (
        "SELECT 1 AS one",
        "WITH x AS (SELECT 1 AS a) SELECT * FROM x",
        "EXPLAIN SELECT * FROM trials",
        "FROM trials",
        "DESCRIBE trials",
        "SELECT count(*) FROM store.events",
    ):
        code, _out, err = _sql(ledger, sql)
        assert code == 0, (sql, err)


def test_bad_sql_names_the_problem(ledger: Path) -> None:
    code, out, err = _sql(ledger, "SELECT nope FROM trials")
    assert code == 1 and out == ""
    assert "query failed" in err and "nope" in err and "vledger sql --schema" in err


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_a_result_naming_a_column_twice_is_refused_by_name(ledger: Path, fmt: str) -> None:
    """Two columns of one name (a join's ``t.status, c.status``) reached the table printer
    as a traceback, and JSON rows would have kept one of them."""
    code, out, err = _sql(ledger, "SELECT 1 AS a, 2 AS a", "--format", fmt)
    assert code == 1 and out == "" and "Traceback" not in err
    assert "two columns named 'a'" in err and "AS a_2" in err
    code, out, err = _sql(ledger, "SELECT 1 AS a, 2 AS a_2", "--format", fmt)
    assert code == 0, err


def test_several_statements_run_and_the_last_one_is_the_result(ledger: Path) -> None:
    """A read before the last statement runs and its rows are dropped (it failed with
    DuckDB's "connection has an unfinished result from execute()"); a failing one is named."""
    code, out, err = _sql(ledger, "SELECT 1 AS a; SELECT count(*) AS n FROM trials", "--json")
    assert code == 0 and orjson.loads(out) == [{"n": 3}], err
    code, out, err = _sql(ledger, "SELECT CAST('x' AS INT); SELECT 1 AS b", "--json")
    assert code == 1 and out == "" and "Could not convert string 'x'" in err


def test_formats_agree_with_the_query(ledger: Path, tmp_path: Path) -> None:
    q = "SELECT trial, task_id, n_tool_calls, counted FROM trials ORDER BY trial"
    want = analytics.query(ledger, q).to_pylist()
    assert [r["trial"] for r in want] == ["trial/c/t/0", "trial/c/t/1", "trial/c/t/2"]

    code, out, _ = _sql(ledger, q, "--format", "json")
    assert code == 0 and orjson.loads(out) == want

    code, out, _ = _sql(ledger, q, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["trial"] for r in rows] == [r["trial"] for r in want]
    assert rows[0]["n_tool_calls"] == "1" and rows[0]["counted"] == "True"

    code, out, _ = _sql(ledger, q)
    lines = out.splitlines()
    assert lines[0].split() == ["trial", "task_id", "n_tool_calls", "counted"]
    assert lines[-1] == "(3 rows)"

    target = tmp_path / "out.parquet"
    code, out, _ = _sql(ledger, q, "--format", "parquet", "--out", str(target))
    assert code == 0 and out == ""
    assert pq.read_table(target).to_pylist() == want


def test_out_in_a_new_folder_is_written_and_an_unwritable_one_is_named(
    ledger: Path, tmp_path: Path
) -> None:
    """--out makes its folder, as keygen and checkpoint --out do; a path that cannot be
    written is `Error:` naming it, exit 1 (both once reached the user as a traceback)."""
    q = "SELECT trial FROM trials ORDER BY trial"
    for fmt, name in (("csv", "a/b/out.csv"), ("parquet", "c/out.parquet")):
        code, _, err = _sql(ledger, q, "--format", fmt, "--out", str(tmp_path / name))
        assert code == 0 and (tmp_path / name).stat().st_size > 0, err
    (tmp_path / "plain").write_text("")
    bad = tmp_path / "plain" / "out.csv"  # its folder is a file
    r = CliRunner().invoke(main, ["sql", "--ledger", str(ledger), q, "--out", str(bad)])
    assert isinstance(r.exception, SystemExit) and r.exit_code == 1
    assert r.stderr.startswith("Error: cannot write the output") and str(bad) in r.stderr


def test_json_columns_are_embedded_as_json(ledger: Path) -> None:
    code, out, _ = _sql(
        ledger,
        "SELECT payload FROM events WHERE type = 'trial.registered' ORDER BY seq LIMIT 1",
        "--format",
        "json",
    )
    assert code == 0
    (row,) = orjson.loads(out)
    assert row["payload"]["task_id"] == "t" and row["payload"]["models"]["agent"]


def test_schema_lists_every_view_and_column() -> None:
    r = CliRunner().invoke(main, ["sql", "--schema"])
    assert r.exit_code == 0
    for v in views.PUBLIC_VIEWS:
        assert f"{v.name} — " in r.stdout
        for col, _ in v.columns:
            assert f"  {col}" in r.stdout
    r = CliRunner().invoke(main, ["sql", "--schema", "--format", "json"])
    rows = orjson.loads(r.stdout)
    assert {(x["view"], x["column"]) for x in rows} == {
        (v.name, c) for v in views.PUBLIC_VIEWS for c, _ in v.columns
    }


def test_no_query_is_a_usage_error(ledger: Path) -> None:
    code, _out, err = _sql(ledger)
    assert code == 2 and "--schema" in err


_HOLDER = """
import sys, duckdb
con = duckdb.connect(sys.argv[1])  # read-write: takes DuckDB's exclusive file lock
con.execute("SELECT count(*) FROM events").fetchall()
print("holding", flush=True)
sys.stdin.readline()
"""


def test_while_a_writer_holds_the_store_sealed_segments_are_read(tmp_path: Path) -> None:
    ev = _events()
    lg = write_ledger(tmp_path / "lg", ev, via_store=False)
    sealed = ev[: len(ev) // 2]
    # a segment holds whole trials: cut at a trial boundary
    cut = max(i for i, (s, _t, _p) in enumerate(sealed) if s != sealed[-1][0]) + 1
    (lg / "segments").mkdir()
    pq.write_table(envelope_table(ev[:cut]), lg / "segments" / f"seg-0-{cut - 1}.parquet")
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(lg / analytics.DB_FILE)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        code, out, err = _sql(
            lg, "SELECT count(*) AS n, max(seq) AS last FROM events", "--format", "json"
        )
        assert code == 0, err
        assert orjson.loads(out) == [{"n": cut, "last": cut - 1}]
        assert "sealed segment" in err and "after the last seal are not shown" in err
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.flush()
        holder.wait(timeout=30)
    # writer gone: the store is read again, every event visible
    code, out, _ = _sql(lg, "SELECT count(*) AS n FROM events", "--format", "json")
    assert orjson.loads(out) == [{"n": len(ev)}]


def test_a_held_store_without_segments_is_busy(tmp_path: Path) -> None:
    """No sealed segment to read instead: exit 3 (busy), the code every command gives a
    ledger another process holds, for sql and report alike (it was exit 1, "query failed")."""
    lg = write_ledger(tmp_path / "lg", _events(), via_store=False)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(lg / analytics.DB_FILE)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        code, out, err = _sql(lg, "SELECT count(*) FROM events")
        assert code == 3 and out == "" and err.startswith("Error: ledger busy: "), err
        r = CliRunner().invoke(main, ["report", "--ledger", str(lg), "--out", str(tmp_path / "r")])
        assert r.exit_code == 3 and "ledger busy" in r.stderr, r.output
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.flush()
        holder.wait(timeout=30)


def test_missing_ledger_is_named(tmp_path: Path) -> None:
    code, _out, err = _sql(tmp_path / "absent", "SELECT 1")
    assert code == 1 and "no ledger at" in err
    # a folder that is no ledger (a corpus, an empty one) is not an empty ledger: it was
    # read as one, `SELECT count(*) FROM events` answering 0 where every other command says
    # "no ledger"
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "notes.txt").write_text("x")
    code, out, err = _sql(tmp_path / "folder", "SELECT count(*) AS n FROM events")
    assert code == 1 and out == "" and "no ledger at" in err


def test_readme_section_documents_every_view_and_column() -> None:
    """docs/readme/analytics.md is what the README says: every view and column, in order."""
    doc = (Path(__file__).resolve().parents[1] / "docs" / "readme" / "analytics.md").read_text(
        encoding="utf-8"
    )
    for v in views.PUBLIC_VIEWS:
        start = doc.index(f"#### `{v.name}`")
        end = doc.find("#### ", start + 1)
        block = doc[start : end if end != -1 else len(doc)]
        documented = [line.split("`")[1] for line in block.splitlines() if line.startswith("| `")]
        assert documented == [c for c, _ in v.columns], v.name
    for cmd in ('vledger sql "QUERY"', "vledger sql --schema", "vledger report"):
        assert cmd in doc


def test_shared_json_flag_means_format_json_and_clashes_are_named(ledger: Path) -> None:
    code, out, _ = _sql(ledger, "SELECT 1 AS one", "--json")
    assert code == 0 and orjson.loads(out) == [{"one": 1}]
    code, _out, err = _sql(ledger, "SELECT 1 AS one", "--json", "--format", "csv")
    assert code == 2 and "--json and --format csv clash" in err


def test_parquet_to_stdout(ledger: Path) -> None:
    r = CliRunner().invoke(
        main, ["sql", "--ledger", str(ledger), "SELECT 2 AS two", "--format", "parquet"]
    )
    assert r.exit_code == 0
    assert pq.read_table(io.BytesIO(r.stdout_bytes)).to_pylist() == [{"two": 2}]


def test_segments_sealed_by_the_store_are_read_while_it_is_held(tmp_path: Path) -> None:
    """Same as above, with the store's own ``seal`` writing the segments."""
    from ledger.log.store import open_ledger  # noqa: PLC0415

    lg_dir = write_ledger(tmp_path / "lg", _events())
    with open_ledger(lg_dir) as lg:
        sealed = lg.seal()
        size = lg.size()
    assert sealed
    with analytics.connect(lg_dir) as (con, _):
        want = analytics.run(con, "SELECT * FROM pass_at_k ORDER BY ALL").to_pylist()
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(lg_dir / analytics.DB_FILE)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        table, source = analytics.query_with_source(lg_dir, "SELECT count(*) AS n FROM events")
        assert source.kind == "segments" and table.to_pylist() == [{"n": size}]
        got = analytics.query(lg_dir, "SELECT * FROM pass_at_k ORDER BY ALL")
        assert got.to_pylist() == want
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.flush()
        holder.wait(timeout=30)
