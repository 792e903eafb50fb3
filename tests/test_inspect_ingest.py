"""`vledger ingest` of inspect_ai logs: trials, timeline, scores, usage, idempotence, re-scoring.

The logs are written by inspect_ai itself (tests/inspect_support.py, mockllm, no network);
every expected value below comes from what that task and mock model were told to do.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from ledger.app.ingest import IngestError
from ledger.app.ingest import ingest_into as ingest
from ledger.cli import main
from ledger.log.store import Ledger, open_ledger
from ledger.sources.inspect_log import CORPUS, score_value
from replay.timeline.build import build_trial_timeline
from replay.timeline.trial_inputs import trial_inputs
from tests.inspect_support import (
    CALL_COST,
    CALL_INPUT,
    CALL_OUTPUT,
    EPOCHS,
    SAMPLES,
    TASK,
    TOOL_ERROR,
    InspectLogs,
)
from tests.inspect_support import inspect_logs as _session_logs

# one xdist worker builds this module's shared fixture once (make test: --dist loadgroup)
pytestmark = pytest.mark.xdist_group("inspect")


inspect_logs = _session_logs  # the session-scoped fixture, under the name the tests ask for


@pytest.fixture
def lg(tmp_path: Path) -> Iterator[Ledger]:
    with open_ledger(tmp_path / "ledger", create=True) as ledger:
        yield ledger


def _trial(lg: Ledger, stream: str):  # noqa: ANN202
    return trial_inputs(list(lg.read(stream=stream)))


def _stream_of(lg: Ledger, sample: str, epoch: int, log: Path) -> str:
    from inspect_ai.log import read_eval_log

    eval_id = read_eval_log(str(log), header_only=True).eval.eval_id
    stream = f"trial/{CORPUS}/{TASK}/{sample}_epoch{epoch}_{eval_id}"
    assert stream in lg.streams("trial/")
    return stream


def test_a_log_directory_is_one_trial_per_sample_and_epoch(
    lg: Ledger, inspect_logs: InspectLogs
) -> None:
    report = ingest(lg, [inspect_logs.logs])
    assert report.paths == [{"path": str(inspect_logs.logs), "kind": "inspect_logs"}]
    # two samples × two epochs
    assert report.trials_new == len(SAMPLES) * EPOCHS
    assert len(set(report.trial_streams)) == len(SAMPLES) * EPOCHS
    for stream in report.trial_streams:
        reg = _trial(lg, stream).registered
        assert reg.task_id == TASK
        assert reg.corpus == CORPUS  # not the folder's name
        assert reg.models["agent"] == "mockllm/model"
        sample = reg.payload["task"]["sample"]
        assert sample["id"] in SAMPLES
        assert reg.trial_index == sample["epoch"] - 1
        assert stream == f"trial/{CORPUS}/{TASK}/{reg.trial}"


@pytest.mark.parametrize("which", ["eval_log", "json_log"])
def test_timeline_joins_the_tool_call_to_its_result_and_keeps_the_error(
    lg: Ledger, inspect_logs: InspectLogs, which: str
) -> None:
    log = getattr(inspect_logs, which)
    ingest(lg, [log])
    ok = _trial(lg, _stream_of(lg, "s1", 1, log))
    failed = _trial(lg, _stream_of(lg, "s2", 2, log))
    kinds = ["user_message", "assistant_message", "tool_call", "tool_result", "assistant_message"]
    for trial in (ok, failed):
        timeline = build_trial_timeline(
            trial.messages, trial.recorded_calls, trial.termination_reason
        )
        assert [e.kind.value for e in timeline.events] == kinds
        call, result = timeline.events[2], timeline.events[3]
        assert call.call_id == result.call_id
        assert call.tool_name == result.tool_name == "lookup"
    ok_tl = build_trial_timeline(ok.messages, ok.recorded_calls, ok.termination_reason)
    bad_tl = build_trial_timeline(failed.messages, failed.recorded_calls, None)
    assert ok_tl.events[2].arguments == {"key": "alpha"}
    assert (ok_tl.events[3].status.value, ok_tl.events[3].result) == ("success", "value-of-alpha")
    assert bad_tl.events[2].arguments == {"key": "missing"}
    assert (bad_tl.events[3].status.value, bad_tl.events[3].result) == ("error", TOOL_ERROR)
    # the tool event's timing is kept: the call took a non-negative, measured time
    (record,) = failed.recorded_calls
    assert record.latency_seconds is not None and record.latency_seconds >= 0
    assert record.timestamp is not None
    assert failed.termination_reason == "completed"


def test_scores_become_the_recorded_grade_one_component_per_scorer(
    lg: Ledger, inspect_logs: InspectLogs
) -> None:
    ingest(lg, [inspect_logs.eval_log])
    passed = _trial(lg, _stream_of(lg, "s1", 1, inspect_logs.eval_log)).recorded_grade
    failed = _trial(lg, _stream_of(lg, "s2", 1, inspect_logs.eval_log)).recorded_grade
    # includes(): "answer: value-of-alpha" contains the target; "answer: " does not
    assert passed["components"] == {"includes": 1.0}
    assert (passed["binary_pass"], passed["score"]) == (True, 1.0)
    assert failed["components"] == {"includes": 0.0}
    assert (failed["binary_pass"], failed["score"]) == (False, 0.0)
    assert passed["scores"]["includes"]["value"] == "C"
    assert failed["scores"]["includes"]["value"] == "I"
    assert passed["scores"]["includes"]["answer"] == "answer: value-of-alpha"


def test_model_usage_becomes_token_and_cost_fields(lg: Ledger, inspect_logs: InspectLogs) -> None:
    ingest(lg, [inspect_logs.eval_log])
    for stream in lg.streams("trial/"):
        metrics = _trial(lg, stream).registered.payload["metrics"]
        usage = metrics["usage"]
        # two model calls per sample × epoch: the tool call, then the answer
        assert len(usage["calls"]) == 2
        assert usage["prompt_tokens"] == 2 * CALL_INPUT
        assert usage["completion_tokens"] == 2 * CALL_OUTPUT
        assert metrics["cost_usd"] == pytest.approx(2 * CALL_COST)
        assert {c["model"] for c in usage["calls"]} == {"mockllm/model"}


def test_reimport_appends_nothing(lg: Ledger, inspect_logs: InspectLogs) -> None:
    first = ingest(lg, [inspect_logs.logs])
    size = lg.size()
    again = ingest(lg, [inspect_logs.logs, inspect_logs.eval_log])
    assert (again.events_new, again.trials_new) == (0, 0)
    assert again.events_present == first.events_new
    assert lg.size() == size
    # the same log rewritten as .json by inspect's own writer is the same evidence
    as_json = ingest(lg, [inspect_logs.json_log])
    assert (as_json.events_new, as_json.trials_present) == (0, len(SAMPLES) * EPOCHS)
    assert lg.size() == size


def test_a_rescored_log_appends_its_new_scores_beside_the_old(
    lg: Ledger, inspect_logs: InspectLogs
) -> None:
    before = ingest(lg, [inspect_logs.original.parent])
    after = ingest(lg, [inspect_logs.rescored.parent])
    trials = len(SAMPLES) * EPOCHS
    assert after.trials_new == 0 and after.trials_present == trials
    assert after.events_new == trials  # one new grade.recorded per trial, nothing else
    assert set(after.trial_streams) == set(before.trial_streams)
    stream = _stream_of(lg, "s2", 1, inspect_logs.rescored)
    grades = [e.data()["grade"] for e in lg.read(stream=stream, type="grade.recorded")]
    assert [g["components"] for g in grades] == [{"includes": 0.0}, {"answered": 0.0}]
    assert _trial(lg, stream).recorded_grade["components"] == {"answered": 0.0}
    ok = _stream_of(lg, "s1", 1, inspect_logs.rescored)
    assert _trial(lg, ok).recorded_grade["components"] == {"answered": 1.0}
    # and the re-scored log, read again, appends nothing more
    assert ingest(lg, [inspect_logs.rescored.parent]).events_new == 0


def _components(lg: Ledger, stream: str) -> list[dict]:
    return [e.data()["grade"]["components"] for e in lg.read(stream=stream, type="grade.recorded")]


def test_a_copy_scored_to_a_new_file_beside_the_original_adds_scores_not_trials(
    lg: Ledger, inspect_logs: InspectLogs
) -> None:
    trials = len(SAMPLES) * EPOCHS
    both = ingest(lg, [inspect_logs.beside])  # the log and its -scored copy, one folder
    assert (both.trials_new, both.trials_present, both.inconsistent) == (trials, 0, [])
    assert len(set(both.trial_streams)) == trials
    stream = _stream_of(lg, "s1", 1, inspect_logs.eval_log)
    # the original's scores, then the copy's (includes kept, answered appended)
    assert _components(lg, stream) == [{"includes": 1.0}, {"includes": 1.0, "answered": 1.0}]
    assert _trial(lg, stream).recorded_grade["components"] == {"includes": 1.0, "answered": 1.0}


def test_a_scored_copy_in_another_folder_is_the_same_trial(
    lg: Ledger, inspect_logs: InspectLogs
) -> None:
    trials = len(SAMPLES) * EPOCHS
    first = ingest(lg, [inspect_logs.logs])
    size = lg.size()
    copy = ingest(lg, [inspect_logs.elsewhere])
    assert (copy.trials_new, copy.trials_present) == (0, trials)
    assert copy.events_new == trials == lg.size() - size  # one grade.recorded per trial
    assert set(copy.trial_streams) == set(first.trial_streams)
    # read again from anywhere, nothing more
    assert ingest(lg, [inspect_logs.beside, inspect_logs.elsewhere]).events_new == 0


def test_verify_deep_recomputes_the_imported_timelines(
    lg: Ledger, inspect_logs: InspectLogs
) -> None:
    ingest(lg, [inspect_logs.logs])
    from ledger.app.verify import verify

    report = verify(ledger=lg, deep=True)
    assert report.ok, report


def test_an_unreadable_log_is_named(lg: Ledger, tmp_path: Path) -> None:
    pytest.importorskip("inspect_ai")
    bad = tmp_path / "broken.eval"
    bad.write_bytes(b"not a zip")
    with pytest.raises(IngestError) as exc:
        ingest(lg, [bad])
    assert str(bad) in str(exc.value) and "not a .eval archive" in str(exc.value)
    assert lg.size() == 0


def test_without_the_extra_the_error_names_it(
    lg: Ledger, inspect_logs: InspectLogs, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)  # import now raises ImportError
    with pytest.raises(IngestError) as exc:
        ingest(lg, [inspect_logs.eval_log], skip_bad=True)
    assert exc.value.kind == "missing_extra"
    assert "verdict-ledger[inspect]" in str(exc.value)
    assert lg.size() == 0
    result = CliRunner().invoke(main, ["ingest", str(inspect_logs.eval_log), "--ledger",
                                       str(lg.path), "--json"])  # fmt: skip
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert "verdict-ledger[inspect]" in json.loads(result.stdout)["error"]


@pytest.mark.parametrize(
    ("value", "number"),
    [("C", 1.0), ("I", 0.0), ("P", 0.5), ("N", 0.0), (True, 1.0), (False, 0.0), (3, 3.0),
     ("0.25", 0.25), ("yes", None), ({"a": 1}, None), (float("nan"), None)],
)  # fmt: skip
def test_score_values_read_as_inspect_reads_them(value: object, number: float | None) -> None:
    assert score_value(value) == number


def test_scores_none_of_which_is_a_number_grade_zero_and_fail() -> None:
    """docs/readme/inspect.md § The mapping: every scorer returned a dict (or list) value, so
    no component is numeric: the recorded score is 0.0 and binary_pass false, the values
    kept whole under ``scores``; one numeric scorer beside them decides alone."""
    from inspect_ai.scorer import Score

    from ledger.sources.inspect_log import grade_payload

    only_dicts = {"a": Score(value={"x": 1, "y": 0}), "b": Score(value=[1, 0])}
    grade = grade_payload(only_dicts, [])["grade"]  # type: ignore[index]
    assert (grade["score"], grade["binary_pass"]) == (0.0, False)
    assert grade["components"] == {"a": None, "b": None}
    assert grade["scores"]["a"]["value"] == {"x": 1, "y": 0}
    grade = grade_payload({**only_dicts, "c": Score(value="C")}, [])["grade"]  # type: ignore[index]
    assert (grade["score"], grade["binary_pass"]) == (1.0, True)
