"""``vledger curate``: each admission and refusal rule of RUBRIC_MIGRATION.md, "Building a
corpus", on small bundles written for the test; the shipped trials' published composition;
and the round trip runs → ingest → ``--from-ledger``.

Expected values come from the reference document (reasons, observations, the write set)
or from the manifests the reference wrote for the shipped corpus, never from a run of
the code under test.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import orjson
import pytest
import yaml
from click.testing import CliRunner

from ledger.app.curate import CurationError, curate, render_manifest
from ledger.app.ingest import ingest_into as ingest
from ledger.cli import main
from ledger.log.store import open_ledger
from tests.curate_support import (
    AGENT,
    CRITERION,
    JUDGE,
    NOTES,
    OMIT,
    shipped_rows,
    shipped_runs,
    write_trial,
)


def _curate(tmp: Path, *sources: Path, **kw):
    kw.setdefault("into", tmp / "corpus")
    kw.setdefault("ledger", tmp / "ledger")
    return curate(sources=list(sources), criterion=CRITERION, **kw)


def _from_ledger(tmp: Path, **kw):
    return curate(from_ledger=True, ledger=tmp / "lg", criterion=CRITERION, **kw)


def _rejections(result) -> list[tuple[str, str, str, str]]:
    return [
        (r.source, r.reason.value, r.by.value, r.observation)
        for r in result.curation.manifest.excluded
    ]


# --------------------------------------------------------------------------- admission


def test_an_admissible_trial_is_written_with_its_manifest_row(tmp_path: Path) -> None:
    write_trial(tmp_path / "runs", calls=["error", "success"])
    result = _curate(tmp_path, tmp_path / "runs" / "run_a")
    manifest = yaml.safe_load((tmp_path / "corpus" / "corpus.yaml").read_text())
    assert manifest["bundles"] == [
        {"directory": "run_a_trial0", "source_run": "run_a", "task_id": "notes_task",
         "agent_model": AGENT, "judge_model": JUDGE, "met": True, "record_carried": True}
    ]  # fmt: skip
    assert manifest["criterion"] == CRITERION
    assert manifest["task_ids"] == ["notes_task"] and manifest["curated_from"] == ["run_a"]
    assert manifest["excluded"] == []
    assert manifest["curated_at"].endswith("Z")
    # the write set: the five files a differential reads, plus tool_log.yaml where carried
    assert sorted(p.name for p in (tmp_path / "corpus" / "run_a_trial0").iterdir()) == [
        "grade.yaml", "metrics.yaml", "task.yaml", "tool_log.yaml", "tools_schemas.yaml",
        "trajectory.yaml",
    ]  # fmt: skip
    assert result.written


@pytest.mark.parametrize(
    ("kwargs", "reason", "observation"),
    [
        ({"task_yaml": OMIT}, "missing_task_snapshot", "no task.yaml"),
        ({"grade": OMIT}, "missing_grade", "no grade.yaml"),
        ({"judge_status": "errored"}, "judge_incomplete", "judge_status: 'errored'"),
        ({"judge_status": "unspecified"}, "judge_incomplete", "judge_status: 'unspecified'"),
        ({"judge_status": OMIT}, "judge_incomplete", "judge_status: None"),
        (
            {"results": [{"id": "note_saved", "met": True}, {"id": "clarity", "met": False}]},
            "criterion_not_judged",
            "criteria judged: note_saved, clarity",
        ),
        ({"results": []}, "criterion_not_judged", "criteria judged: none"),
        (
            {"met": None},
            "criterion_not_judged",
            f"{CRITERION} recorded met: None, which is not a verdict",
        ),
        ({"calls": ["error", "error"]}, "environment_dead", "tool_calls: 2, succeeded: 0"),
    ],
)
def test_each_rule_rejection_names_its_reason_and_observation(
    tmp_path: Path, kwargs: dict, reason: str, observation: str
) -> None:
    write_trial(tmp_path / "runs", index=0)  # one admissible trial, so a corpus is written
    write_trial(tmp_path / "runs", index=1, **kwargs)
    result = _curate(tmp_path, tmp_path / "runs" / "run_a")
    assert _rejections(result) == [("run_a/trials/notes_task/1", reason, "rule", observation)]
    assert [b.directory for b in result.curation.manifest.bundles] == ["run_a_trial0"]
    assert not (tmp_path / "corpus" / "run_a_trial1").exists()


@pytest.mark.parametrize(
    ("calls", "carried"),
    [
        (None, False),  # record-less: the rule has no record to read and does not reject
        ([], True),  # an empty record: the trial called nothing, which is not dead
        (["error", "error", "success"], True),  # one success is enough
    ],
)
def test_environment_dead_needs_a_record_with_calls_and_no_success(
    tmp_path: Path, calls: list[str] | None, carried: bool
) -> None:
    write_trial(tmp_path / "runs", calls=calls)
    result = _curate(tmp_path, tmp_path / "runs" / "run_a")
    (entry,) = result.curation.manifest.bundles
    assert entry.record_carried is carried
    assert (tmp_path / "corpus" / "run_a_trial0" / "tool_log.yaml").exists() is carried


def test_a_judge_model_the_snapshot_does_not_name_is_null(tmp_path: Path) -> None:
    write_trial(tmp_path / "runs", judge=OMIT)
    (entry,) = _curate(tmp_path, tmp_path / "runs" / "run_a").curation.manifest.bundles
    assert entry.judge_model is None


def test_a_not_met_verdict_is_admitted_as_met_false(tmp_path: Path) -> None:
    write_trial(tmp_path / "runs", met=False)
    (entry,) = _curate(tmp_path, tmp_path / "runs" / "run_a").curation.manifest.bundles
    assert entry.met is False


# --------------------------------------------------------------------------- exclusions


def test_an_author_exclusion_is_recorded_by_author_with_the_reason(tmp_path: Path) -> None:
    write_trial(tmp_path / "runs", index=0)
    b1 = write_trial(tmp_path / "runs", index=1)
    result = _curate(tmp_path, tmp_path / "runs" / "run_a", exclusions={str(b1): "agent looped"})
    assert _rejections(result) == [
        ("run_a/trials/notes_task/1", "author_excluded", "author", "agent looped")
    ]


def test_an_exclusion_the_rule_already_covers_is_refused(tmp_path: Path) -> None:
    write_trial(tmp_path / "runs", index=0)
    b1 = write_trial(tmp_path / "runs", index=1, judge_status="errored")
    with pytest.raises(CurationError, match="already rejects it as judge_incomplete"):
        _curate(tmp_path, tmp_path / "runs" / "run_a", exclusions={str(b1): "mine"})
    assert not (tmp_path / "corpus").exists()


def test_an_exclusion_naming_no_discovered_bundle_is_refused(tmp_path: Path) -> None:
    write_trial(tmp_path / "runs")
    with pytest.raises(CurationError, match="which no source discovered"):
        _curate(tmp_path, tmp_path / "runs" / "run_a", exclusions={str(tmp_path / "x"): "r"})


# --------------------------------------------------------------------------- refusals


def test_an_admitted_bundle_outside_the_run_layout_is_refused(tmp_path: Path) -> None:
    flat = write_trial(tmp_path / "flat", layout=False)
    with pytest.raises(CurationError, match=r"does not sit at <run-id>/trials/<task-id>/<index>"):
        _curate(tmp_path, flat)


def test_a_rejected_bundle_outside_the_run_layout_is_only_rejected(tmp_path: Path) -> None:
    # the layout names an *admitted* bundle's directory; a rejection needs no name
    write_trial(tmp_path / "runs")
    write_trial(tmp_path / "flat", layout=False, grade=OMIT)
    result = _curate(tmp_path, tmp_path / "runs" / "run_a", tmp_path / "flat")
    assert [r[1] for r in _rejections(result)] == ["missing_grade"]


def test_two_tasks_of_one_run_curating_to_one_name_are_refused(tmp_path: Path) -> None:
    write_trial(tmp_path / "runs", task="task_one")
    write_trial(tmp_path / "runs", task="task_two")
    with pytest.raises(CurationError, match="both curate to run_a_trial0"):
        _curate(tmp_path, tmp_path / "runs" / "run_a")
    assert not (tmp_path / "corpus").exists()


def test_a_destination_holding_a_corpus_needs_replace(tmp_path: Path) -> None:
    write_trial(tmp_path / "runs", index=0)
    _curate(tmp_path, tmp_path / "runs" / "run_a")
    write_trial(tmp_path / "other", run="run_b")
    with pytest.raises(CurationError, match="already holds corpus.yaml; pass --replace"):
        _curate(tmp_path, tmp_path / "other" / "run_b")
    _curate(tmp_path, tmp_path / "other" / "run_b", replace=True)
    # rewritten whole: the old bundle is gone, never a half-refresh
    assert sorted(p.name for p in (tmp_path / "corpus").iterdir()) == [
        "corpus.yaml",
        "run_b_trial0",
    ]


def test_a_non_empty_destination_without_a_manifest_is_refused(tmp_path: Path) -> None:
    write_trial(tmp_path / "runs")
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "notes.txt").write_text("mine")
    with pytest.raises(CurationError, match="is not empty and holds no corpus.yaml"):
        _curate(tmp_path, tmp_path / "runs" / "run_a", replace=True)
    assert (tmp_path / "corpus" / "notes.txt").read_text() == "mine"


def test_a_destination_nesting_with_a_source_is_refused(tmp_path: Path) -> None:
    write_trial(tmp_path / "runs")
    with pytest.raises(CurationError, match="nest"):
        _curate(tmp_path, tmp_path / "runs", into=tmp_path / "runs" / "corpus")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"agent": OMIT}, "model_config.agent.name is missing"),
        ({"metrics": {"schema_version": 4, "redaction": {"policy": "pii"}}}, "redaction stamp"),
    ],
)
def test_an_admitted_trial_that_cannot_be_stated_is_refused(
    tmp_path: Path, kwargs: dict, match: str
) -> None:
    write_trial(tmp_path / "runs", **kwargs)
    with pytest.raises(CurationError, match=match):
        _curate(tmp_path, tmp_path / "runs" / "run_a")


def test_nothing_admitted_writes_nothing_and_exits_1(tmp_path: Path) -> None:
    write_trial(tmp_path / "runs", judge_status="errored")
    out = CliRunner().invoke(main, ["curate", "--criterion", CRITERION, "--source",
                                    str(tmp_path / "runs"), "--into", str(tmp_path / "corpus"),
                                    "--ledger", str(tmp_path / "ledger")])  # fmt: skip
    assert out.exit_code == 1, out.output
    assert "judge_incomplete by rule (judge_status: 'errored')" in out.output
    assert "is admissible evidence for" in out.output and "Traceback" not in out.output
    assert not (tmp_path / "corpus").exists() and not (tmp_path / "ledger").exists()


def test_an_unreadable_bundle_names_its_file(tmp_path: Path) -> None:
    b = write_trial(tmp_path / "runs")
    (b / "tool_log.yaml").write_text("- call_id: [unclosed\n")
    with pytest.raises(CurationError, match=r"tool_log\.yaml"):
        _curate(tmp_path, tmp_path / "runs" / "run_a")


# --------------------------------------------------------------------------- dry run, event


def test_dry_run_writes_and_appends_nothing(tmp_path: Path) -> None:
    write_trial(tmp_path / "runs")
    result = _curate(tmp_path, tmp_path / "runs" / "run_a", dry_run=True)
    assert [b.directory for b in result.curation.manifest.bundles] == ["run_a_trial0"]
    assert not (tmp_path / "corpus").exists() and not (tmp_path / "ledger").exists()


def test_a_curation_appends_corpus_curated_with_the_manifest_digest(tmp_path: Path) -> None:
    write_trial(tmp_path / "runs", index=0)
    write_trial(tmp_path / "runs", index=1, calls=["error"])
    _curate(tmp_path, tmp_path / "runs" / "run_a")
    with open_ledger(tmp_path / "ledger") as lg:
        (ev,) = list(lg.read(type="corpus.curated"))
    payload = ev.data()
    written = (tmp_path / "corpus" / "corpus.yaml").read_bytes()
    assert payload["manifest_digest"] == hashlib.sha256(written).hexdigest()
    assert ev.stream == f"curation/{CRITERION}"
    assert [a["directory"] for a in payload["admitted"]] == ["run_a_trial0"]
    assert [(r["source"], r["reason"], r["observation"]) for r in payload["rejected"]] == [
        ("run_a/trials/notes_task/1", "environment_dead", "tool_calls: 1, succeeded: 0")
    ]
    assert payload["criterion"] == CRITERION and payload["origin"] == "runs"


# --------------------------------------------------------------------------- the shipped trials


def test_the_17_shipped_trials_curate_to_the_published_composition(tmp_path: Path) -> None:
    runs = shipped_runs(tmp_path / "runs")
    result = _curate(tmp_path, *runs)
    rows = [b.model_dump(mode="json") for b in result.curation.manifest.bundles]
    by_dir = {r["directory"]: r for r in shipped_rows()}
    assert rows == [by_dir[r["directory"]] for r in rows] and len(rows) == len(by_dir) == 17
    assert sum(r["met"] for r in rows) == 12 and sum(not r["met"] for r in rows) == 5
    assert result.curation.manifest.excluded == []


def test_the_manifest_is_written_as_the_reference_writes_it(tmp_path: Path) -> None:
    # a manifest the reference wrote, re-rendered, is byte-for-byte the reference's file
    for half in ("met", "not_met"):
        written = (NOTES / half / "corpus.yaml").read_bytes()
        assert render_manifest(yaml.safe_load(written)) == written


def test_the_curated_corpus_is_read_by_ingest_with_its_rows(tmp_path: Path) -> None:
    runs = shipped_runs(tmp_path / "runs")
    _curate(tmp_path, *runs[-2:])  # the two met runs (sorted names: policy_demo last)
    with open_ledger(tmp_path / "read", create=True) as lg:
        report = ingest(lg, [str(tmp_path / "corpus")])
        assert len(report.trial_streams) == 12
        mets = {e.data()["met"] for e in lg.read(type="trial.registered")}
    assert mets == {True}


def test_round_trip_runs_ingest_from_ledger_is_byte_identical(tmp_path: Path) -> None:
    runs = shipped_runs(tmp_path / "runs")
    write_trial(tmp_path / "runs", run="run_dead", calls=["error", "error"])  # rejected
    write_trial(tmp_path / "runs", run="run_open", judge_status="errored")  # rejected
    sources = sorted(p for p in (tmp_path / "runs").iterdir())
    first = _curate(tmp_path, *sources, into=tmp_path / "a")
    assert len(first.curation.manifest.bundles) == 17 and len(runs) == 7
    with open_ledger(tmp_path / "lg", create=True) as lg:
        ingest(lg, [str(s) for s in sources])
    second = _from_ledger(tmp_path, into=tmp_path / "b")
    files_a = {
        p.relative_to(tmp_path / "a"): p.read_bytes() for p in (tmp_path / "a").rglob("*.yaml")
    }
    files_b = {
        p.relative_to(tmp_path / "b"): p.read_bytes() for p in (tmp_path / "b").rglob("*.yaml")
    }
    manifest = Path("corpus.yaml")
    ma, mb = yaml.safe_load(files_a.pop(manifest)), yaml.safe_load(files_b.pop(manifest))
    assert files_a == files_b and len(files_a) == 17 * 5 + 12  # 12 bundles carry tool_log.yaml
    assert ma.pop("curated_at") != "" and mb.pop("curated_at") != ""
    assert ma == mb
    assert [e["reason"] for e in ma["excluded"]] == ["environment_dead", "judge_incomplete"]
    assert second.origin == "ledger"


def _docs(bundle: Path) -> dict[str, object]:
    return {p.name: yaml.safe_load(p.read_text()) for p in sorted(bundle.glob("*.yaml"))}


def test_a_written_bundle_holds_the_documents_of_its_source(tmp_path: Path) -> None:
    # the oracle is the source bundle's own files, parsed: rendering changes bytes, not content
    shipped_runs(tmp_path / "runs")
    newer = write_trial(tmp_path / "runs", run="run_new", calls=["success"])
    traj = yaml.safe_load((newer / "trajectory.yaml").read_text())
    traj["messages"][1]["future_message_key"] = {"kept": True}
    traj["future_top_key"] = [1, 2]
    (newer / "trajectory.yaml").write_text(yaml.safe_dump(traj))
    log = yaml.safe_load((newer / "tool_log.yaml").read_text())
    log[0]["future_record_key"] = "x"
    (newer / "tool_log.yaml").write_text(yaml.safe_dump(log))
    _curate(tmp_path, *sorted((tmp_path / "runs").iterdir()))
    rows = [*shipped_rows(), {"directory": "run_new_trial0", "source_run": "run_new",
                              "task_id": "notes_task"}]  # fmt: skip
    for row in rows:
        index = row["directory"].rsplit("_trial", 1)[1]
        src = tmp_path / "runs" / row["source_run"] / "trials" / row["task_id"] / index
        assert _docs(tmp_path / "corpus" / row["directory"]) == _docs(src), row["directory"]


# --------------------------------------------------------------------------- from the log


def test_from_ledger_where_selects_over_the_trials_view(tmp_path: Path) -> None:
    write_trial(tmp_path / "runs", run="run_a")
    write_trial(tmp_path / "runs", run="run_b", met=False)
    with open_ledger(tmp_path / "lg", create=True) as lg:
        ingest(lg, [str(tmp_path / "runs" / "run_a"), str(tmp_path / "runs" / "run_b")])
    result = _from_ledger(tmp_path, into=tmp_path / "c", where="corpus = 'run_b'")
    assert [(b.directory, b.met) for b in result.curation.manifest.bundles] == [
        ("run_b_trial0", False)
    ]
    with open_ledger(tmp_path / "lg") as lg:
        (ev,) = list(lg.read(type="corpus.curated"))
    assert ev.data()["where"] == "corpus = 'run_b'" and ev.data()["origin"] == "ledger"


def test_from_ledger_refuses_a_where_that_is_not_a_predicate(tmp_path: Path) -> None:
    write_trial(tmp_path / "runs")
    with open_ledger(tmp_path / "lg", create=True) as lg:
        ingest(lg, [str(tmp_path / "runs")])
    with pytest.raises(CurationError, match="is not a predicate over the trials view"):
        _from_ledger(tmp_path, into=tmp_path / "c", where="no_such_column = 1")
    with pytest.raises(CurationError, match="no trial in the ledger"):
        _from_ledger(tmp_path, into=tmp_path / "c", where="corpus = 'absent'")


def test_from_ledger_excludes_by_recorded_source(tmp_path: Path) -> None:
    write_trial(tmp_path / "runs", index=0)
    write_trial(tmp_path / "runs", index=1)
    with open_ledger(tmp_path / "lg", create=True) as lg:
        ingest(lg, [str(tmp_path / "runs" / "run_a")])
    exclusions = {"run_a/trials/notes_task/1": "duplicate"}
    result = _from_ledger(tmp_path, into=tmp_path / "c", exclusions=exclusions)
    assert _rejections(result) == [
        ("run_a/trials/notes_task/1", "author_excluded", "author", "duplicate")
    ]


# --------------------------------------------------------------------------- the shell


def test_cli_json_is_the_report(tmp_path: Path) -> None:
    write_trial(tmp_path / "runs")
    out = CliRunner().invoke(main, ["curate", "--criterion", CRITERION, "--source",
                                    str(tmp_path / "runs" / "run_a"), "--into",
                                    str(tmp_path / "c"), "--ledger", str(tmp_path / "l"),
                                    "--json"])  # fmt: skip
    assert out.exit_code == 0, out.output
    report = orjson.loads(out.stdout)
    assert [a["directory"] for a in report["admitted"]] == ["run_a_trial0"]
    written = (tmp_path / "c" / "corpus.yaml").read_bytes()
    assert report["manifest_digest"] == hashlib.sha256(written).hexdigest()
    assert report["written"] is True and report["exit_code"] == 0 and report["event"]["seq"] == 0


@pytest.mark.parametrize(
    "args",
    [
        ["--into", "c"],  # neither door
        ["--into", "c", "--from-ledger", "--source", "runs"],  # both doors
        ["--into", "c", "--source", "runs", "--where", "true"],  # --where without the log
        ["--into", "c", "--source", "runs", "--exclude", "no-reason"],
    ],
)
def test_cli_usage_errors_exit_2(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "runs").mkdir()
    out = CliRunner().invoke(main, ["curate", "--criterion", CRITERION, *args],
                             catch_exceptions=False)  # fmt: skip
    assert out.exit_code == 2, out.output


def test_cli_refusal_is_one_error_line(tmp_path: Path) -> None:
    write_trial(tmp_path / "runs", task="one")
    write_trial(tmp_path / "runs", task="two")
    out = CliRunner().invoke(main, ["curate", "--criterion", CRITERION, "--source",
                                    str(tmp_path / "runs"), "--into", str(tmp_path / "c"),
                                    "--ledger", str(tmp_path / "l")])  # fmt: skip
    assert out.exit_code == 1
    assert out.output.startswith("Error: ") and "both curate to run_a_trial0" in out.output
    assert "Traceback" not in out.output
