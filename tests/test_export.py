"""``vledger export --parquet DIR``: the segments read back by DuckDB and pyarrow.dataset
give exactly ``ledger.read()``; a corrupted segment is never exported."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from ledger.app.export import ExportError, export_parquet
from ledger.app.ingest import ingest_into as ingest
from ledger.cli import main
from ledger.errors import StreamSealed
from ledger.log.segments import load_manifest, segment_dir
from ledger.log.store import open_ledger
from schemas.envelope import ARROW_SCHEMA, NewEvent
from tests.data_paths import NOTES

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = ARROW_SCHEMA.names


@pytest.fixture()
def ledger_dir(tmp_path: Path) -> Path:
    with open_ledger(tmp_path / "L", create=True) as lg:
        ingest(lg, [str(NOTES)])
        lg.append([NewEvent("run/extra", "ext.note", {"n": i}) for i in range(5)])
    return tmp_path / "L"


def _rows(table: pa.Table) -> list[tuple]:
    return [tuple(r[c] for c in COLUMNS) for r in table.to_pylist()]


def test_export_reads_back_the_same_events_with_duckdb_and_pyarrow(ledger_dir, tmp_path):
    with open_ledger(ledger_dir) as lg:
        res = export_parquet(lg, tmp_path / "out", seal=True, max_rows=97)
        expected = [tuple(getattr(e, c) for c in COLUMNS) for e in lg.read()]
    assert res.segments > 3 and res.rows == len(expected) and res.unsealed == 0
    con = duckdb.connect()
    via_duckdb = con.sql(
        f"SELECT * FROM read_parquet('{tmp_path / 'out'}/*.parquet') ORDER BY seq"
    ).to_arrow_table()
    assert _rows(via_duckdb.cast(ARROW_SCHEMA)) == expected
    via_dataset = ds.dataset(tmp_path / "out", format="parquet").to_table().sort_by("seq")
    assert via_dataset.schema.equals(ARROW_SCHEMA)
    assert _rows(via_dataset) == expected
    manifest = json.loads((tmp_path / "out" / "_manifest.json").read_text())
    files = sorted(p.name for p in (tmp_path / "out").glob("*.parquet"))
    assert sorted(s["file"] for s in manifest["segments"]) == files
    for s in manifest["segments"]:  # the manifest's ranges describe the exported files
        seqs = pq.read_table(tmp_path / "out" / s["file"]).column("seq").to_pylist()
        assert (seqs[0], seqs[-1], len(seqs)) == (s["first_seq"], s["last_seq"], s["rows"])


def test_no_seal_exports_only_the_sealed_prefix(ledger_dir, tmp_path):
    with open_ledger(ledger_dir) as lg:
        lg.seal(max_rows=200)
        lg.append([NewEvent("run/late", "ext.note", {"late": True})])
        res = export_parquet(lg, tmp_path / "out", seal=False, tail=False)
        assert res.unsealed == 1 and res.sealed_upto == lg.size() - 1
        assert load_manifest(lg.path).sealed_upto == lg.size() - 1  # nothing sealed by export


def test_a_corrupted_segment_is_not_exported(ledger_dir, tmp_path):
    with open_ledger(ledger_dir) as lg:
        made = lg.seal(max_rows=100)
    path = segment_dir(ledger_dir) / made[1].file
    t = pq.read_table(path)
    i = t.schema.get_field_index("event_id")
    ids = t.column("event_id").to_pylist()
    ids[0] = ids[0] + "x"
    pq.write_table(t.set_column(i, t.schema.field(i), pa.array(ids, pa.string())), path)
    with open_ledger(ledger_dir) as lg, pytest.raises(ExportError) as info:
        export_parquet(lg, tmp_path / "out")
    assert made[1].file in str(info.value)


def test_refuses_a_non_empty_target(ledger_dir, tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "other.parquet").write_bytes(b"x")
    with open_ledger(ledger_dir) as lg, pytest.raises(ExportError, match="not an empty directory"):
        export_parquet(lg, tmp_path / "out")


def test_cli_export(ledger_dir, tmp_path):
    r = CliRunner().invoke(
        main,
        [
            "export",
            "--ledger",
            str(ledger_dir),
            "--parquet",
            str(tmp_path / "out"),
            "--seal",
            "--segment-rows",
            "150",
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["segments"] == len(list((tmp_path / "out").glob("*.parquet"))) > 1
    assert out["unsealed_not_exported"] == 0


def _export(ledger_dir: Path, out: Path, *extra: str) -> dict:
    r = CliRunner().invoke(
        main, ["export", "--ledger", str(ledger_dir), "--parquet", str(out), "--json", *extra]
    )
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _note_on_a_trial(ledger_dir: Path) -> None:
    with open_ledger(ledger_dir) as lg:
        trial = next(e.stream for e in lg.read() if e.stream.startswith("trial/"))
        lg.append([NewEvent(trial, "ext.note", {"after": "export"})])


def test_export_leaves_the_ledger_unsealed_and_writes_the_tail(ledger_dir, tmp_path):
    """Exporting is reading. The default export seals nothing, so the
    trial streams still take events afterwards, and DIR still holds every event."""
    with open_ledger(ledger_dir) as lg:
        expected = [tuple(getattr(e, c) for c in COLUMNS) for e in lg.read()]
    out = _export(ledger_dir, tmp_path / "out")
    n = len(expected)
    assert out["tail"] == {"file": f"seg-0-{n - 1}-tail.parquet", "rows": n}
    assert (out["segments"], out["rows"], out["unsealed_not_exported"]) == (0, n, 0)
    with open_ledger(ledger_dir) as lg:
        assert load_manifest(lg.path).sealed_upto == 0  # nothing sealed
    _note_on_a_trial(ledger_dir)  # the trial streams are still open
    via_dataset = ds.dataset(tmp_path / "out", format="parquet").to_table().sort_by("seq")
    assert _rows(via_dataset) == expected


def test_export_seal_is_the_explicit_choice_and_closes_trial_streams(ledger_dir, tmp_path):
    out = _export(ledger_dir, tmp_path / "out", "--seal")
    assert out["tail"] is None and out["segments"] >= 1
    with pytest.raises(StreamSealed):
        _note_on_a_trial(ledger_dir)
