"""The verify check that recomputes stored timelines from the raw trial events."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ledger.app.ingest import ingest_into as ingest
from ledger.app.timeline_check import check_timelines
from ledger.app.verify import CHECKS
from ledger.app.verify import verify as verify_ledger
from ledger.log.store import open_ledger
from ledger.sources.tolokaforge import BundleContext, bundle_events, read_bundle
from tests.data_paths import NOTES

ROOT = Path(__file__).resolve().parents[1]
M0 = NOTES / "met" / "native_shared_domain_policy_demo_20260803_063010_trial0"


def _plan():
    ctx = BundleContext(corpus="c", trial="t0", bundle_path="t0")
    return bundle_events(read_bundle(M0, "M0"), ctx)


def test_ingested_corpus_verifies_clean(tmp_path: Path) -> None:
    # listed as a --deep check (it re-runs the projection)
    assert [c.deep for c in CHECKS if c.name == "timelines"] == [True]
    with open_ledger(tmp_path / "lg", create=True) as lg:
        ingest(lg, [NOTES])
        assert check_timelines(lg) == []
        assert verify_ledger(ledger=lg, deep=True).ok


def test_a_stored_timeline_that_differs_is_named(tmp_path: Path) -> None:
    plan = _plan()
    events = plan.new_events()
    i = next(
        k
        for k, e in enumerate(events)
        if e.type == "timeline.event" and e.payload["kind"] == "tool_call"
    )
    forged = dict(events[i].payload, tool_name="delete_note")
    events[i] = replace(events[i], payload=forged, event_id=None)
    with open_ledger(tmp_path / "lg", create=True) as lg:
        lg.append(events)
        problems = check_timelines(lg)
        shallow, deep = verify_ledger(ledger=lg), verify_ledger(ledger=lg, deep=True)
    # the forged event hashes fine (the log is intact); only --deep recomputes the projection
    assert shallow.ok and not deep.ok
    assert deep.problems[0].where == f"seq {i}"
    assert len(problems) == 1
    assert problems[0].where == f"seq {i}"
    assert "position 2 differs" in problems[0].what and "tool_name" in problems[0].what
    assert plan.stream in problems[0].what


def test_a_missing_timeline_tail_is_named(tmp_path: Path) -> None:
    events = _plan().new_events()[:-1]
    with open_ledger(tmp_path / "lg", create=True) as lg:
        lg.append(events)
        problems = check_timelines(lg)
    # M0: 6 user/assistant messages + 2 calls + 2 results = 10 events; one withheld
    assert len(problems) == 1 and "9 timeline.event(s) stored, 10 recomputed" in problems[0].what


def test_a_foreign_projection_version_is_named(tmp_path: Path) -> None:
    events = [
        replace(e, payload=dict(e.payload, timeline_version="timeline/0"), event_id=None)
        if e.type == "timeline.event"
        else e
        for e in _plan().new_events()
    ]
    with open_ledger(tmp_path / "lg", create=True) as lg:
        lg.append(events)
        problems = check_timelines(lg)
    assert len(problems) == 1 and "timeline/0" in problems[0].what


def test_a_kept_inconsistency_verifies_when_recomputation_raises_the_same(tmp_path: Path) -> None:
    import shutil

    import yaml

    bundle = tmp_path / "coll" / M0.name
    shutil.copytree(M0, bundle)
    log = yaml.safe_load((bundle / "tool_log.yaml").read_text())
    log[0]["tool_name"] = "delete_note"
    (bundle / "tool_log.yaml").write_text(yaml.safe_dump(log))
    with open_ledger(tmp_path / "lg", create=True) as lg:
        ingest(lg, [tmp_path / "coll"], keep_inconsistent=True)
        assert check_timelines(lg) == []
