"""Ingest prepares each event by the store's rule where it is read, and the writer appends
the prepared bytes as they are: the log must be byte for byte what appending the planned
events themselves stores, an event the store would refuse must be refused as a bad input,
and the writer's cheap check must refuse exactly what a full preparation refuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ledger
from benchmarks.generate_corpus import generate
from ledger.app import ingest_read
from ledger.app.ingest import IngestError
from ledger.app.ingest_inputs import Unit, read_units, tasks_for
from ledger.app.ingest_read import Refusal, read_task
from ledger.errors import InvalidEvent
from ledger.log.batch import Batch, checked_batch, prepare_batch, prepare_decoded
from ledger.log.store import open_ledger
from ledger.sources.plan import PlannedEvent
from ledger.sources.yaml_safe import DEFAULT_LIMITS
from schemas.canonical import canonical_json, parse_json
from schemas.envelope import NewEvent
from tests.store_helpers import stored_log

ROOT = Path(__file__).resolve().parents[1]
NOTES = ROOT / "corpora" / "notes_duplicate_check"
PACKS = ROOT / "corpora" / "packs"
VCORE = ROOT / "corpora" / "verdict-core"



def test_the_log_is_what_appending_the_planned_events_stores(tmp_path: Path) -> None:
    """The reference: every input's planned events offered to ``append`` as events (the
    store decodes, checks and encodes each payload itself), in ingest's order."""
    gen = tmp_path / "gen"
    generate(gen, trials=24, seed=7)
    paths = [str(gen), str(NOTES), str(PACKS), str(VCORE)]
    ledger.ingest(*paths, ledger=tmp_path / "ingested", workers=1)
    with open_ledger(tmp_path / "appended", create=True) as lg:
        for given in paths:
            for task in tasks_for(given, None, DEFAULT_LIMITS)[1]:
                for unit in read_units(task, DEFAULT_LIMITS):
                    lg.append([e.new_event() for e in (*unit.events, *unit.additive)])
    ingested, appended = stored_log(tmp_path / "ingested"), stored_log(tmp_path / "appended")
    assert len(ingested[0]) > 1000
    assert ingested == appended


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=8)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=6), kids, max_size=4),
    max_leaves=12,
)  # fmt: skip


def _columns(b: Batch) -> tuple[Any, ...]:
    return (b.streams, b.types, b.schema_versions, b.event_ids, b.payloads, b.expected)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.dictionaries(st.text(max_size=6), _json, max_size=4), min_size=1, max_size=6))
def test_a_checked_batch_of_prepared_payloads_is_the_prepared_batch(
    payloads: list[dict[str, Any]],
) -> None:
    events = [NewEvent(f"s/{i % 2}", "ext.t", p) for i, p in enumerate(payloads)]
    full = prepare_batch(events)
    again = checked_batch(
        full.streams, full.types, full.schema_versions, full.event_ids,
        full.payloads.to_list(), full.expected,
    )  # fmt: skip
    assert _columns(again) == _columns(full)
    decoded = prepare_decoded(
        [e.stream for e in events], [e.type for e in events], [1] * len(events),
        [None] * len(events), [parse_json(canonical_json(p)) for p in payloads],
        ["any"] * len(events),
    )  # fmt: skip
    assert _columns(decoded) == _columns(full)


@pytest.mark.parametrize(
    ("column", "value"),
    [("streams", ""), ("types", 7), ("schema_versions", 70000), ("expected", "sometimes"),
     ("event_ids", "")],
)  # fmt: skip
def test_a_checked_batch_refuses_a_bad_envelope_as_append_does(column: str, value: Any) -> None:
    events = [
        NewEvent("s/a", "ext.t", {"a": 1}, "id-0"),
        NewEvent("s/a", "ext.t", {"b": 2}, "id-1"),
    ]
    b = prepare_batch(events)
    cols: dict[str, list[Any]] = {
        "streams": b.streams, "types": b.types, "schema_versions": b.schema_versions,
        "event_ids": b.event_ids, "payloads": b.payloads.to_list(), "expected": b.expected,
    }  # fmt: skip
    cols[column][1] = value
    bad = NewEvent(cols["streams"][1], cols["types"][1], {"b": 2}, cols["event_ids"][1] or None,
                   cols["schema_versions"][1], cols["expected"][1])  # fmt: skip
    if column == "event_ids":  # an empty id is refused; None would be derived instead
        bad = NewEvent("s/a", "ext.t", {"b": 2}, "")
    with pytest.raises(InvalidEvent) as direct:
        prepare_batch([events[0], bad])
    with pytest.raises(InvalidEvent) as checked:
        checked_batch(**cols)  # type: ignore[arg-type]
    assert str(checked.value) == str(direct.value)


def _corrupt(monkeypatch: pytest.MonkeyPatch, victim: str) -> None:
    """``read_units`` with one bundle's trial.registered payload made one the store refuses."""
    real = ingest_read.read_units

    def patched(task: Any, limits: Any) -> list[Unit]:
        units = real(task, limits)
        if task.path.name != victim:
            return units
        u = units[0]
        first = u.events[0]
        bad = PlannedEvent(first.stream, first.type, first.event_id, b'{"unexpected":1}',
                           first.expected_version, first.schema_version)  # fmt: skip
        return [Unit(u.kind, u.source, u.stream, (bad, *u.events[1:]), u.inconsistent, u.trial)]

    monkeypatch.setattr(ingest_read, "read_units", patched)


def test_an_event_the_store_would_refuse_is_a_bad_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    victim = sorted(p.name for p in (NOTES / "met").iterdir() if p.is_dir())[3]
    _corrupt(monkeypatch, victim)
    task = next(t for t in tasks_for(str(NOTES), None, DEFAULT_LIMITS)[1] if t.path.name == victim)
    read = read_task(task, DEFAULT_LIMITS)
    assert isinstance(read, Refusal)
    assert victim in read.text and "<trial.registered payload>" in read.text
    assert "Field required" in read.text  # the store's own wording of what is wrong
    with pytest.raises(IngestError, match=victim) as info:
        ledger.ingest(NOTES, ledger=tmp_path / "lg", workers=1)
    assert info.value.kind == "bad_input" and not (tmp_path / "lg").exists()
    skipped = ledger.ingest(NOTES, ledger=tmp_path / "lg2", workers=1, skip_bad=True)
    assert [s["source"] for s in skipped.skipped] == [task.source]
    assert skipped.trials_new == 16


@pytest.mark.parametrize("text", [b"NaN", b"Infinity", b"-Infinity", b"1e999", b'{"a": [-1e400]}'])
def test_decoded_payloads_hold_no_nan_or_infinity(text: bytes) -> None:
    """What ``prepare_decoded`` relies on to skip its NaN/Infinity walk."""
    with pytest.raises(ValueError):
        parse_json(text)
