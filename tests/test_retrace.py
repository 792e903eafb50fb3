"""Retrace over the log: the published corpus results, history, invariance, exits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchmarks.generate_corpus import generate
from ledger.app.ingest import ingest_into as ingest
from ledger.app.retrace import RetraceError, retrace
from ledger.cli import main
from ledger.log.store import open_ledger
from tests.data_paths import NARROWED, NOTES

ROOT = Path(__file__).resolve().parents[1]
GATE = "the_notes_were_listed_before_the_note_was_added"


@pytest.fixture()
def notes_ledger(tmp_path: Path):
    with open_ledger(tmp_path / "L", create=True) as lg:
        ingest(lg, [str(NOTES)])
        yield lg


def test_notes_corpus_with_the_narrowed_block_matches_the_reference(notes_ledger) -> None:
    result = retrace(ledger=notes_ledger, constraints_file=NARROWED)
    report = result.report
    assert result.exit_code == 0
    assert len(report["trials"]) == 17
    assert all(t["status"] != "not_rechecked" for t in report["trials"])
    ev = report["evidence"]
    assert (ev["bundles_read"], ev["with_tool_call_record"], ev["messages_only"]) == (17, 12, 5)
    rows = {r["task_id"]: r for r in report["constraints"] if r["id"] == GATE}
    gated = rows["notes_add_note_duplicate_check_gated"]
    policy = rows["notes_add_note_duplicate_check_policy"]
    assert (gated["class"], gated["evaluated"], gated["decided"], gated["passed"]) == (
        "always_false", 5, 5, 0)
    assert (policy["class"], policy["evaluated"], policy["passed"]) == ("always_true", 12, 12)
    # no recorded verdicts exist for a constraint the packs never had
    assert gated["labelled"] == 0 and gated["agrees_with_recorded"] is None
    # each trial's gate verdict: the gate shut exactly on the not_met half
    by_task = {}
    for t in report["trials"]:
        by_task.setdefault(t["task_id"], set()).add(t["gate_failed"])
    assert by_task == {
        "notes_add_note_duplicate_check_gated": {True},
        "notes_add_note_duplicate_check_policy": {False},
    }


def test_recorded_blocks_alone_rederive_the_recorded_grades(notes_ledger) -> None:
    report = retrace(ledger=notes_ledger).report
    assert {t["status"] for t in report["trials"]} == {"agreed"}
    assert report["constraints"] == []  # the notes packs recorded no trace_checks block


def test_exactly_the_altered_trials_disagree(tmp_path: Path) -> None:
    corpus = tmp_path / "gen"
    altered = generate(corpus, trials=40, seed=11, alter=3)
    with open_ledger(tmp_path / "L", create=True) as lg:
        ingest(lg, [str(corpus)])
        report = retrace(ledger=lg).report
    disagreed = sorted(t["trial"].rsplit("/", 1)[-1] for t in report["trials"] if t["status"] == "disagreed")
    assert disagreed == sorted(altered)
    assert all(t["differences"] for t in report["trials"] if t["status"] == "disagreed")


def test_replays_are_appended_history_and_never_touch_the_record(notes_ledger) -> None:
    recorded_before = [e.payload for e in notes_ledger.read(type="grade.recorded")]
    first = retrace(ledger=notes_ledger)
    second = retrace(ledger=notes_ledger, full=True)  # re-derived, not extended
    assert first.report["replay_id"] != second.report["replay_id"]
    completed = list(notes_ledger.read(type="replay.completed"))
    assert [e.data()["replay_id"] for e in completed] == [
        first.report["replay_id"], second.report["replay_id"]]
    assert len(list(notes_ledger.read(type="grade.replayed"))) == 34
    assert [e.payload for e in notes_ledger.read(type="grade.recorded")] == recorded_before
    # both receipts bind the same outputs: the second replay read the first's events too,
    # but only trial events feed the projection
    assert first.report["receipt"]["outputs_digest"] == second.report["receipt"]["outputs_digest"]


def test_results_are_identical_for_any_worker_count(tmp_path: Path) -> None:
    corpus = tmp_path / "gen"
    generate(corpus, trials=30, seed=5)
    with open_ledger(tmp_path / "L", create=True) as lg:
        ingest(lg, [str(corpus)])
        one = retrace(ledger=lg, workers=1, dry_run=True).report
        two = retrace(ledger=lg, workers=2, dry_run=True).report
    assert one["receipt"] == two["receipt"]
    assert json.dumps(one, sort_keys=True, default=str) == json.dumps(two, sort_keys=True, default=str)


def test_dry_run_appends_nothing(notes_ledger) -> None:
    size = notes_ledger.size()
    result = retrace(ledger=notes_ledger, dry_run=True)
    assert result.appended == 0 and notes_ledger.size() == size


def test_a_replacement_block_failing_the_load_rules_stops_before_anything(notes_ledger, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("constraints:\n  - id: x\n    require: {present: {match: {kind: tool_call, tool: {regex: '(?=x)'}}}}\n")
    size = notes_ledger.size()
    with pytest.raises(RetraceError, match="fails the load-time rules"):
        retrace(ledger=notes_ledger, constraints_file=bad)
    assert notes_ledger.size() == size


def test_an_empty_replacement_file_is_read_never_taken_as_no_file(notes_ledger, tmp_path: Path) -> None:
    """An empty --constraints file (or an empty trace_checks: key) declares no constraint
    and is refused by the load-time rules; an empty --grading file is the config that
    declares nothing, as `vledger grade --grading` reads it. Either once replaced nothing:
    the run was the recorded-snapshot replay, every trial agreed, and nothing said so."""
    empty, blank_key = tmp_path / "empty.yaml", tmp_path / "key.yaml"
    empty.write_text("")
    blank_key.write_text("trace_checks:\n")
    for f in (empty, blank_key):
        with pytest.raises(RetraceError, match="declares neither constraints nor alternatives"):
            retrace(ledger=notes_ledger, constraints_file=f, dry_run=True)
    recorded = retrace(ledger=notes_ledger, dry_run=True).report
    emptied = retrace(ledger=notes_ledger, grading_file=empty, dry_run=True).report
    assert emptied["replay_id"] != recorded["replay_id"]
    # nothing declared, nothing scored: no judge component where the recorded config had one
    assert {t["replayed"]["components"]["llm_judge"] for t in emptied["trials"]} == {None}
    assert {t["replayed"]["components"]["llm_judge"] for t in recorded["trials"]} != {None}


def test_no_trial_is_an_error_naming_the_filter(notes_ledger) -> None:
    with pytest.raises(RetraceError, match="--task nope"):
        retrace(ledger=notes_ledger, task="nope")
    with pytest.raises(RetraceError, match="no trial in the ledger matches --corpus ''"):
        retrace(ledger=notes_ledger, corpus="")  # an empty filter is named, not "no trial"


def test_an_unrecheckable_trial_exits_non_zero(tmp_path: Path) -> None:
    # A bundle whose task.yaml recorded no grading_config cannot be re-derived: named, exit 1.
    import shutil

    src = NOTES / "met" / "native_shared_domain_policy_demo_20260803_063010_trial0"
    bundle = tmp_path / "b" / src.name
    shutil.copytree(src, bundle)
    task = bundle / "task.yaml"
    import yaml

    data = yaml.safe_load((src / "task.yaml").read_text())
    data.pop("grading_config")
    task.write_text(yaml.safe_dump(data))
    with open_ledger(tmp_path / "L", create=True) as lg:
        ingest(lg, [str(bundle)])
        result = retrace(ledger=lg)
    (trial,) = result.report["trials"]
    assert trial["status"] == "not_rechecked" and "no grading snapshot" in trial["reason"]
    assert result.exit_code == 1


def test_cli_json_contract_and_receipt_verifies(tmp_path: Path) -> None:
    runner = CliRunner()
    led = str(tmp_path / "L")
    res = runner.invoke(main, ["retrace", "--ledger", led, "--source", str(NOTES), "--json",
                               "--constraints", str(NARROWED)])
    assert res.exit_code == 0, res.output
    report = json.loads(res.output[res.output.index("{"):])
    assert set(report) >= {"trials", "constraints", "paths", "evidence", "replay_id", "receipt"}
    assert set(report["trials"][0]) >= {"trial", "task_id", "status", "differences", "reason"}
    assert set(report["constraints"][0]) >= {
        "task_id", "id", "class", "evaluated", "passed", "failed", "undecided", "agrees_with_recorded"}
    ver = runner.invoke(main, ["receipt", "verify", "--ledger", led, "--recompute",
                               f"{report['replay_id']}:completed"])
    assert ver.exit_code == 0, ver.output
    assert "outputs_digest recomputed" in ver.output


def test_verify_rechecks_replay_receipts_and_names_a_forged_one(notes_ledger) -> None:
    from ledger.app.receipts import verify_projection_receipts
    from schemas.envelope import NewEvent

    result = retrace(ledger=notes_ledger)
    assert verify_projection_receipts(notes_ledger) == []
    forged = dict(result.report["receipt"])
    forged["checkpoint"] = {"size": forged["checkpoint"]["size"], "root": "00" * 32}
    completed = next(iter(notes_ledger.read(type="replay.completed"))).data()
    notes_ledger.append([NewEvent("replay/forged", "replay.completed",
                                  {**completed, "replay_id": "forged", "receipt": forged})])
    problems = verify_projection_receipts(notes_ledger)
    assert len(problems) >= 1
    assert all(p.where.startswith("replay.completed at seq") for p in problems)
    assert any("root" in p.what or "consisten" in p.what for p in problems)


def test_source_scopes_the_retrace_to_what_the_source_holds(tmp_path: Path) -> None:
    runner = CliRunner()
    led = str(tmp_path / "L")
    first = runner.invoke(main, ["retrace", "--ledger", led, "--source", str(NOTES / "met"), "--json"])
    assert first.exit_code == 0, first.output
    second = runner.invoke(main, ["retrace", "--ledger", led, "--source", str(NOTES / "not_met"), "--json"])
    report = json.loads(second.output[second.output.index("{"):])
    assert len(report["trials"]) == 5  # not the 12 `met` trials already in the ledger


def test_replay_payloads_are_closed_to_misspelt_keys(notes_ledger) -> None:
    from ledger.errors import InvalidEvent
    from schemas.envelope import NewEvent

    with pytest.raises(InvalidEvent, match="gradee"):
        notes_ledger.append([NewEvent("replay/x", "grade.replayed",
                                      {"trial": "t", "replay_id": "r", "grade": None, "gradee": 1})])


def test_an_unreadable_bundle_in_the_source_is_named_counted_and_fails_the_batch(tmp_path: Path) -> None:
    """TRACE_REPLAY.md: a failure never aborts the batch, but it exits non-zero; a bundle
    predating call ids is counted apart from other unreadable inputs."""
    import shutil

    src = tmp_path / "src"
    good = NOTES / "not_met" / "native_shared_domain_example_20260629_133126_trial0"
    shutil.copytree(good, src / "good")
    old = src / "old"
    shutil.copytree(good, old)
    traj = old / "trajectory.yaml"
    # the provider id line of the first declared call goes: the bundle predates call ids
    lines = traj.read_text().splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith("  - id: toolu_"))
    assert lines[i + 1] == "    name: add_note"
    lines[i : i + 2] = ["  - name: add_note"]  # the same call, declared without an id
    traj.write_text("\n".join(lines) + "\n")
    broken = src / "broken"
    shutil.copytree(good, broken)
    (broken / "trajectory.yaml").write_text("messages: [\n")
    res = CliRunner().invoke(main, ["retrace", "--ledger", str(tmp_path / "L"), "--source", str(src), "--json"])
    assert res.exit_code == 1, res.output
    report = json.loads(res.output[res.output.index("{"):])
    by_status = {t["trial"]: t["status"] for t in report["trials"]}
    assert sum(s == "not_rechecked" for s in by_status.values()) == 2
    assert any(s != "not_rechecked" for s in by_status.values())  # the good one was measured
    ev = report["evidence"]
    assert (ev["bundles_read"], ev["failed"], ev["predating_call_ids"]) == (3, 2, 1)
    assert ev["messages_only"] + ev["with_tool_call_record"] == 1
