"""``ledger.sql``, ``ledger.report`` and ``ledger.view``: the API under ``vledger sql`` / ``report``.

Each result's ``to_json()`` is exactly what the command's ``--json`` prints.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

import ledger
from ledger.analytics import frames
from ledger.analytics.sql import SqlRefused
from ledger.cli import main
from ledger.errors import LedgerError
from tests.analytics_fixtures import admission, recorded_grade, trial_events, write_ledger


@pytest.fixture(scope="module")
def lg(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ev = [e for i in range(3) for e in trial_events("c", "t", i, grade=recorded_grade(0.5, i > 0))]
    return write_ledger(tmp_path_factory.mktemp("api") / "lg", [*ev, admission("u1", "proof")])


def _cli_json(*args: str) -> object:
    r = CliRunner().invoke(main, [*args, "--json"])
    assert r.exit_code == 0, r.output
    return orjson.loads(r.stdout)


# JSON payloads, timestamps, hex hashes, decimals, nulls and a nested list in one query
QUERY = (
    "SELECT seq, recorded_at, payload, leaf_hash, 1.25::DECIMAL(5, 2) AS d, NULL AS nothing, "
    "[seq, seq + 1] AS pair FROM events ORDER BY seq LIMIT 4"
)


def test_sql_to_json_is_the_cli_json(lg: Path) -> None:
    result = ledger.sql(QUERY, ledger=lg)
    assert result.table.num_rows == 4 and result.source.kind == "store"
    assert result.to_json() == _cli_json("sql", QUERY, "--ledger", str(lg))
    assert result.to_json()[0]["payload"]["task_id"] == "t"  # JSON embedded, not a string


def test_sql_schema_to_json_is_the_cli_json() -> None:
    result = ledger.sql(schema=True)
    assert result.source is None
    assert result.to_json() == _cli_json("sql", "--schema")
    assert any(r["view"] == "trials" and r["column"] == "outcome_class" for r in result.to_json())


def test_sql_refuses_a_write_with_a_ledger_error(lg: Path) -> None:
    with pytest.raises(SqlRefused) as exc:
        ledger.sql("DELETE FROM events", ledger=lg)
    assert isinstance(exc.value, LedgerError) and exc.value.statement_type == "DELETE"


def test_report_to_json_is_the_cli_json(lg: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    result = ledger.report(ledger=lg, out=out)
    page = out.read_text(encoding="utf-8")
    assert result.to_json() == _cli_json("report", "--ledger", str(lg), "--out", str(out))
    assert out.read_text(encoding="utf-8") == page  # the same log renders the same bytes
    assert (result.events, result.trials, result.units) == (
        ledger.sql("SELECT count(*) AS n FROM events", ledger=lg).to_json()[0]["n"],
        3,
        1,
    )


def test_report_refuses_to_write_inside_the_ledger(lg: Path) -> None:
    with pytest.raises(LedgerError, match="inside the ledger directory"):
        ledger.report(ledger=lg, out=lg / "r.html")
    assert not (lg / "r.html").exists()


def test_view_is_the_frames_view(lg: Path) -> None:
    assert ledger.view is frames.view
    assert ledger.view("trials", ledger=lg).num_rows == 3
