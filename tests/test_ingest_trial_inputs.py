"""replay.timeline.trial_inputs: a trial read back from its events, and the stored timeline recomputed."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from ledger.app.ingest import ingest_into as ingest
from ledger.log.store import open_ledger
from replay.timeline.build import build_trial_timeline, timeline_to_payloads
from replay.timeline.trial_inputs import TrialInputsError, trial_inputs
from schemas.timeline import Role
from tests.data_paths import NOTES

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def trials(tmp_path_factory) -> dict[str, list]:
    with open_ledger(tmp_path_factory.mktemp("ti") / "lg", create=True) as lg:
        ingest(lg, [NOTES])
        out: dict[str, list] = {}
        for ev in lg.read():
            out.setdefault(ev.stream, []).append(ev)
    return out


def test_inputs_match_the_bundle_files(trials) -> None:
    assert len(trials) == 17
    for stream, evs in trials.items():
        ti = trial_inputs(evs)
        part, bundle = ti.registered.payload["bundle_path"].split("/")
        folder = NOTES / part / bundle
        traj = yaml.safe_load((folder / "trajectory.yaml").read_text())
        assert ti.stream == stream
        assert ti.registered.task_id == traj["task_id"]
        assert [m.role for m in ti.messages] == [Role(m["role"]) for m in traj["messages"]]
        assert [m.content for m in ti.messages] == [m["content"] or "" for m in traj["messages"]]
        assert ti.termination_reason == traj["termination_reason"]
        assert ti.status == traj["status"]
        if (folder / "tool_log.yaml").is_file():
            log = yaml.safe_load((folder / "tool_log.yaml").read_text())
            assert ti.recorded_calls is not None
            assert [c.call_id for c in ti.recorded_calls] == [r["call_id"] for r in log]
            assert ti.registered.met is True
        else:
            assert ti.recorded_calls is None  # no record view, not an empty record
            assert ti.registered.met is False
        assert ti.recorded_grade == yaml.safe_load((folder / "grade.yaml").read_text())
        assert (
            ti.registered.grading
            == yaml.safe_load((folder / "task.yaml").read_text())["grading_config"]
        )
        assert ti.timeline_version == "timeline/1"
        assert ti.timeline_inconsistency is None


def test_stored_timeline_recomputes_from_the_raw_events(trials) -> None:
    """What `verify --deep` does: rebuild from trial_inputs, compare with timeline.event."""
    for evs in trials.values():
        ti = trial_inputs(evs)
        rebuilt = build_trial_timeline(ti.messages, ti.recorded_calls, ti.termination_reason)
        stored = [e.data() for e in evs if e.type == "timeline.event"]
        assert timeline_to_payloads(rebuilt) == stored


def test_event_order_does_not_matter(trials) -> None:
    evs = next(iter(trials.values()))
    assert trial_inputs(list(reversed(evs))) == trial_inputs(evs)


def test_two_streams_are_refused(trials) -> None:
    a, b = list(trials.values())[:2]
    with pytest.raises(TrialInputsError, match="span two streams"):
        trial_inputs([*a, *b])


def test_no_registration_is_refused(trials) -> None:
    evs = [e for e in next(iter(trials.values())) if e.type != "trial.registered"]
    with pytest.raises(TrialInputsError, match="no trial.registered"):
        trial_inputs(evs)
    with pytest.raises(TrialInputsError, match="no events"):
        trial_inputs([])


def test_records_without_a_record_view_are_refused(trials) -> None:
    with_log = next(evs for evs in trials.values() if evs[0].data()["record_view"])
    without = next(evs for evs in trials.values() if not evs[0].data()["record_view"])
    calls = [replace(e, stream=without[0].stream) for e in with_log if e.type == "trial.tool_call"]
    with pytest.raises(TrialInputsError, match="record_view: false"):
        trial_inputs([*without, *calls])
