"""``vledger reconcile`` / ``vledger validate`` over packs and corpora on disk.

The published result (RUBRIC_MIGRATION.md § notes_duplicate_check; FORMATS.md § 8) is
reproduced over the shipped corpora/, both through the Python seam and through the CLI; every
candidate label is recomputed by the production trace-check projection
(``replay.timeline.build`` + ``replay.trace_checks``) under the pack's own block.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

import ledger as ledger_api
from ledger.app.reconcile import ReconcileRequest as Invocation
from ledger.app.reconcile import run_reconcile
from ledger.app.reconcile_packs import ReconcileError, resolve_corpus
from ledger.cli import main
from ledger.log.store import init_ledger, open_ledger
from schemas.canonical import canonical_json, digest
from tests.data_paths import NOTES, PACKS, PACKS_BASE

ROOT = Path(__file__).resolve().parents[1]
GATE = "the_notes_were_listed_before_the_note_was_added"
CRIT = "checked_duplicates_first"


def shipped_run(**kw: Any):
    return run_reconcile(Invocation(packs=[PACKS], base=PACKS_BASE, **kw))


def test_the_sweep_reproduces_the_published_result() -> None:
    out = shipped_run()
    assert out.exit_code == 0
    (entry,) = out.document["entries"]
    assert entry["task_ids"] == [
        "notes_add_note_duplicate_check_gated",
        "notes_add_note_duplicate_check_policy",
    ]
    assert (entry["criterion"], entry["mode"], entry["verdict"]) == (
        CRIT,
        "narrowed",
        "no_counter_evidence",
    )
    assert entry["observations"] == 17
    assert entry["table"] == {
        "met_passed": 12,
        "met_failed": 0,
        "not_met_passed": 0,
        "not_met_failed": 5,
    }
    assert f"{entry['accuracy']:.3f}" == "1.000" and f"{entry['kappa']:.3f}" == "1.000"
    cf = entry["counterfactual"]
    assert cf["pass_rate_before"] == {"passed": 12, "of": 17}
    assert cf["pass_rate_after"] == {"passed": 12, "of": 17}
    assert cf["unrecomputed_trials"] == []
    rows = {r["trial"].split("/")[-2]: r for r in cf["trials"]}
    assert (rows["not_met"]["score_after"], rows["not_met"]["binary_pass_after"]) == (0.5, False)
    assert rows["met"]["vetoes_after"] == [CRIT, GATE]


def test_the_not_met_half_alone_is_insufficient_evidence() -> None:
    out = shipped_run(source=NOTES / "not_met")
    assert out.exit_code != 0
    (entry,) = out.document["entries"]
    assert (entry["observations"], entry["kappa"], entry["verdict"]) == (
        5,
        None,
        "insufficient_evidence",
    )
    assert entry["table"]["not_met_failed"] == 5
    assert entry["counterfactual"]["pass_rate_before"] == {"passed": 0, "of": 5}
    assert entry["counterfactual"]["pass_rate_after"] == {"passed": 0, "of": 5}
    assert out.document["sources"][0]["blocking"] == [f"{CRIT} (narrowed): insufficient_evidence"]


def test_published_result_through_the_cli() -> None:
    runner = CliRunner()
    res = runner.invoke(
        main, ["reconcile", "--packs", str(PACKS), "--base", str(PACKS_BASE), "--dry-run", "--json"]
    )
    assert res.exit_code == 0, res.output
    (entry,) = json.loads(res.stdout)["entries"]
    assert (entry["observations"], entry["kappa"], entry["verdict"]) == (
        17,
        1.0,
        "no_counter_evidence",
    )
    assert entry["table"] == {
        "met_passed": 12,
        "met_failed": 0,
        "not_met_passed": 0,
        "not_met_failed": 5,
    }
    assert entry["counterfactual"]["pass_rate_after"] == {"passed": 12, "of": 17}
    half = runner.invoke(
        main,
        [
            "reconcile",
            "--packs",
            str(PACKS),
            "--base",
            str(PACKS_BASE),
            "--dry-run",
            "--json",
            "--source",
            str(NOTES / "not_met"),
        ],
    )
    assert half.exit_code == 1
    (entry,) = json.loads(half.stdout)["entries"]
    assert (entry["observations"], entry["kappa"], entry["verdict"]) == (
        5,
        None,
        "insufficient_evidence",
    )


def test_validate_accepts_the_shipped_packs() -> None:
    res = CliRunner().invoke(
        main, ["validate", str(PACKS / "notes_duplicate_check_narrowed"), "--base", str(PACKS_BASE)]
    )
    assert res.exit_code == 0, res.output
    assert "1 entry, 0 errors" in res.output


def test_validate_given_the_directory_of_packs_names_each_pack_to_validate() -> None:
    """It said "PACKS/task.yaml: cannot read: No such file or directory"."""
    res = CliRunner().invoke(main, ["validate", str(PACKS), "--base", str(PACKS_BASE)])
    assert res.exit_code == 5 and "is a directory of packs, not a pack" in res.stderr
    for pack in ("notes_duplicate_check_narrowed", "notes_duplicate_check_policy_narrowed"):
        assert f"vledger validate {PACKS / pack}" in res.stderr


def test_validate_run_from_the_wrong_base_names_path_and_base(tmp_path: Path) -> None:
    res = CliRunner().invoke(
        main, ["validate", str(PACKS / "notes_duplicate_check_narrowed"), "--base", str(tmp_path)]
    )
    assert res.exit_code == 1
    assert "corpus 'corpora/notes_duplicate_check' names no directory" in res.output
    assert f"against the base {tmp_path}" in res.output


def test_reconcile_run_from_the_wrong_base_names_each_problem_on_its_own_line(
    tmp_path: Path,
) -> None:
    """Both packs name the corpus relative to the checkout: each problem gets an indented
    line of its own under the Error: line (the line breaks are not printed as ``\\x0a``)."""
    res = CliRunner().invoke(
        main, ["reconcile", "--packs", str(PACKS), "--base", str(tmp_path), "--dry-run"]
    )
    assert res.exit_code == 5, res.output
    head, *problems = res.output.strip().splitlines()
    assert head == "Error: the declaration does not load:" and "\\x" not in res.output
    assert len(problems) == 2, problems
    assert all(p.startswith("    ") and "names no directory" in p for p in problems), problems


# --- hand-made packs and corpora -----------------------------------------------------------

RUBRIC = [
    {
        "id": CRIT,
        "description": "list first and warn",
        "kind": "binary",
        "required": True,
        "weight": 1.0,
    },
    {
        "id": "note_saved",
        "description": "saved",
        "kind": "graded",
        "required": False,
        "weight": 1.0,
    },
]
GRADING = {
    "combine": {
        "method": "weighted",
        "weights": {"llm_judge": 0.5, "trace_checks": 0.5},
        "pass_threshold": 0.75,
    },
    "trace_checks": {
        "constraints": [
            {
                "id": GATE,
                "severity": "gate",
                "on_missing": "fail",
                "require": {
                    "before": {
                        "left": {
                            "quantifier": "any",
                            "match": {"kind": "tool_call", "tool": {"equals": "list_notes"}},
                        },
                        "right": {
                            "quantifier": "first",
                            "match": {"kind": "tool_call", "tool": {"equals": "add_note"}},
                        },
                    }
                },
            }
        ]
    },
    "llm_judge": {"rubric": {"criteria": [{**RUBRIC[0], "description": "warn"}, RUBRIC[1]]}},
}


def write_yaml(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(value, sort_keys=False))


def make_pack(root: Path, migration: dict[str, Any], task_id: str = "t_task") -> Path:
    pack = root / "packs" / task_id
    write_yaml(pack / "task.yaml", {"task_id": task_id, "grading": "grading.yaml"})
    write_yaml(pack / "grading.yaml", GRADING)
    write_yaml(pack / "migration.yaml", {"migrations": [migration]})
    return pack


def make_bundle(
    corpus: Path, name: str, *, met: bool, listed: bool, task_id: str = "t_task"
) -> Path:
    b = corpus / name
    calls = ([{"id": "c1", "name": "list_notes", "arguments": {}}] if listed else []) + [
        {"id": "c2", "name": "add_note", "arguments": {"title": "x"}}
    ]
    messages = [{"role": "user", "content": "save it", "tool_calls": None, "tool_call_id": None}]
    for c in calls:
        messages.append(
            {"role": "assistant", "content": "", "tool_calls": [c], "tool_call_id": None}
        )
        messages.append(
            {"role": "tool", "content": "ok", "tool_calls": None, "tool_call_id": c["id"]}
        )
    write_yaml(
        b / "trajectory.yaml",
        {
            "task_id": task_id,
            "status": "completed",
            "termination_reason": "user_stop",
            "messages": messages,
        },
    )
    grading_config = {
        "combine": {"method": "weighted", "weights": {"llm_judge": 1.0}, "pass_threshold": 0.75},
        "llm_judge": {"rubric": {"criteria": RUBRIC}},
    }
    write_yaml(b / "task.yaml", {"task_id": task_id, "grading_config": grading_config})
    write_yaml(
        b / "grade.yaml",
        {
            "binary_pass": met,
            "score": 1.0 if met else 0.0,
            "components": {"state_checks": None, "llm_judge": 1.0 if met else 0.0},
            "criterion_results": [
                {
                    "id": CRIT,
                    "met": met,
                    "score": 1.0 if met else 0.0,
                    "justification": f"met={met} because I read it",
                },
                {"id": "note_saved", "met": True, "score": 1.0, "justification": "saved"},
            ],
            "judge_status": "completed",
        },
    )
    return b


def make_corpus(root: Path, cells: list[tuple[str, bool, bool]]) -> Path:
    corpus = root / "corpus"
    rows = [
        {"directory": name, "task_id": "t_task", "met": met, "record_carried": False}
        for name, met, _ in cells
    ]
    write_yaml(corpus / "corpus.yaml", {"criterion": CRIT, "task_ids": ["t_task"], "bundles": rows})
    for name, met, listed in cells:
        make_bundle(corpus, name, met=met, listed=listed)
    return corpus


def migration(**overrides: Any) -> dict[str, Any]:
    m = {
        "criterion": CRIT,
        "mode": "narrowed",
        "by": [GATE],
        "corpus": "corpus",
        "was": {
            "kind": "binary",
            "required": True,
            "weight": 1.0,
            "description": "list first and warn",
        },
        "residual": {"kind": "text", "reason": "the warning"},
        "combine_weights": {"llm_judge": 0.5, "trace_checks": 0.5},
        "evidence": {"observations": 4, "kappa": 1.0},
    }
    m.update(overrides)
    return {k: v for k, v in m.items() if v is not None}


BALANCED = [("a", True, True), ("b", True, True), ("c", False, False), ("d", False, False)]


def run_tmp(root: Path, **kw: Any):
    return run_reconcile(Invocation(packs=[root / "packs"], base=root, **kw))


def run_reconcile_recorded(root: Path):
    return ledger_api.reconcile(packs=[root / "packs"], base=root, ledger=root / "lg")


def test_hand_made_corpus_reaches_no_counter_evidence(tmp_path: Path) -> None:
    make_pack(tmp_path, migration())
    make_corpus(tmp_path, BALANCED)
    out = run_tmp(tmp_path)
    (e,) = out.document["entries"]
    assert (e["verdict"], e["observations"], e["kappa"], out.exit_code) == (
        "no_counter_evidence",
        4,
        1.0,
        0,
    )


def test_a_strict_disagreement_refuses_a_candidate_with_exit_zero(tmp_path: Path) -> None:
    make_pack(
        tmp_path,
        migration(
            mode="candidate",
            residual=None,
            evidence=None,
            was={"kind": "binary", "required": True, "weight": 1.0, "description": "warn"},
        ),
    )
    make_corpus(tmp_path, [("a", True, False), ("b", True, False), ("c", False, False)])
    res = CliRunner().invoke(
        main,
        ["reconcile", "--packs", str(tmp_path / "packs"), "--base", str(tmp_path), "--dry-run"],
    )
    out = run_tmp(tmp_path)
    (e,) = out.document["entries"]
    assert e["verdict"] == "refused" and out.exit_code == 0
    assert [r["kind"] for r in e["refusals"]] == ["unacknowledged_disagreement"]
    assert [d["direction"] for d in e["disagreements"]] == ["strict", "strict"]
    assert e["disagreements"][0]["justification"] == "met=True because I read it"
    assert res.exit_code == 0
    assert "declared candidate, refused over 3 observations" in res.output
    assert (
        "  strict · corpus/a (unacknowledged)\n    judge: met=True because I read it\n"
        in res.output
    )
    assert "refused (unacknowledged_disagreement): 2 strict disagreement(s)" in res.output
    assert "a candidate converts nothing, so its verdict gates nothing" in res.output


def test_a_stale_acknowledgement_is_refused(tmp_path: Path) -> None:
    make_pack(tmp_path, migration(acknowledged=[{"trial": "a", "reason": "the judge misread it"}]))
    make_corpus(tmp_path, BALANCED)
    (e,) = run_tmp(tmp_path).document["entries"]
    assert [r["kind"] for r in e["refusals"]] == ["stale_acknowledgement"]


def test_an_acknowledgement_waives_its_disagreement(tmp_path: Path) -> None:
    make_pack(
        tmp_path,
        migration(
            acknowledged=[{"trial": "corpus/e", "reason": "the judge misread it"}],
            evidence={"observations": 5, "kappa": 0.615},
        ),
    )
    make_corpus(tmp_path, [*BALANCED, ("e", True, False)])
    out = run_tmp(tmp_path)
    (e,) = out.document["entries"]
    assert (e["verdict"], e["refusals"], out.exit_code) == ("no_counter_evidence", [], 0)
    assert e["disagreements"][0]["acknowledged_reason"] == "the judge misread it"


def test_a_declared_kappa_contradicting_the_measurement_is_refused(tmp_path: Path) -> None:
    make_pack(tmp_path, migration(evidence={"observations": 4, "kappa": 0.9}))
    make_corpus(tmp_path, BALANCED)
    out = run_tmp(tmp_path)
    (e,) = out.document["entries"]
    assert [r["kind"] for r in e["refusals"]] == ["declared_evidence_contradicts_measurement"]
    assert (
        "measured kappa 1.000" in e["refusals"][0]["detail"]
        and "says 0.900" in e["refusals"][0]["detail"]
    )
    assert out.exit_code == 1


def test_recorded_rubric_contradicting_was_is_refused(tmp_path: Path) -> None:
    make_pack(
        tmp_path,
        migration(
            was={
                "kind": "binary",
                "required": True,
                "weight": 2.0,
                "description": "list first and warn",
            }
        ),
    )
    make_corpus(tmp_path, BALANCED)
    (e,) = run_tmp(tmp_path).document["entries"]
    kinds = [r["kind"] for r in e["refusals"]]
    assert kinds == ["recorded_rubric_contradicts_was"]
    assert "corpus/a: weight (recorded 1.0, was declares 2.0)" in e["refusals"][0]["detail"]


def test_a_corpus_straddling_a_pack_revision_is_refused(tmp_path: Path) -> None:
    make_pack(tmp_path, migration())
    corpus = make_corpus(tmp_path, BALANCED)
    task = yaml.safe_load((corpus / "d" / "task.yaml").read_text())
    task["grading_config"]["llm_judge"]["rubric"]["criteria"][0]["description"] = "something else"
    write_yaml(corpus / "d" / "task.yaml", task)
    (e,) = run_tmp(tmp_path).document["entries"]
    assert {r["kind"] for r in e["refusals"]} == {
        "recorded_rubric_contradicts_was",
        "corpus_straddles_a_pack_revision",
    }


def test_an_unreadable_bundle_blocks_but_does_not_abort(tmp_path: Path) -> None:
    make_pack(tmp_path, migration(evidence={"observations": 4, "kappa": 1.0}))
    corpus = make_corpus(tmp_path, [*BALANCED, ("z", True, True)])
    (corpus / "z" / "grade.yaml").write_text("binary_pass: true\nscore: [not, a, number]\n")
    out = run_tmp(tmp_path)
    (e,) = out.document["entries"]
    assert e["verdict"] == "no_counter_evidence" and e["observations"] == 4
    ((row),) = out.document["sources"][0]["unreadable_trials"]
    assert row["trial"] == "corpus/z"
    assert "corpus/z/grade.yaml" in row["reason"] and "'score'" in row["reason"]
    assert out.exit_code == 1


def test_a_recorded_run_reads_each_bundle_once_and_words_an_unreadable_one_as_a_dry_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real run takes each bundle's stream from ingest's reading of it; only a bundle
    ingest could not read is read again, so its row says what a dry run says."""
    from ledger.sources import tolokaforge

    make_pack(tmp_path, migration(evidence={"observations": 4, "kappa": 1.0}))
    corpus = make_corpus(tmp_path, [*BALANCED, ("z", True, True)])
    (corpus / "z" / "grade.yaml").write_text("binary_pass: true\nscore: [not, a, number]\n")
    dry = run_tmp(tmp_path)
    reads: list[str] = []
    real_read = tolokaforge.read_bundle

    def counting(directory: Path, *args: Any, **kw: Any) -> Any:
        reads.append(Path(directory).name)
        return real_read(directory, *args, **kw)

    for module in (
        "ledger.sources.tolokaforge",
        "ledger.sources.in_memory",
        "ledger.app.ingest_inputs",
    ):
        monkeypatch.setattr(f"{module}.read_bundle", counting)
    init_ledger(tmp_path / "lg").close()
    real = run_reconcile_recorded(tmp_path)
    assert sorted(reads) == ["a", "b", "c", "d", "z", "z"]
    assert real.document["sources"] == dry.document["sources"]
    assert real.document["entries"] == dry.document["entries"]


def test_a_corpus_path_escaping_the_base_by_dotdot_refuses_the_declaration(tmp_path: Path) -> None:
    base = tmp_path / "base"
    make_pack(base, migration(corpus="../outside"))
    make_corpus(tmp_path / "outside", BALANCED)
    res = CliRunner().invoke(
        main, ["reconcile", "--packs", str(base / "packs"), "--base", str(base), "--dry-run"]
    )
    assert res.exit_code == 5
    assert "corpus '../outside' climbs out with '..'" in res.output


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks on this platform")
def test_a_corpus_path_escaping_the_base_by_symlink_is_refused(tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    outside = make_corpus(tmp_path / "elsewhere", BALANCED)
    (base / "corpus").symlink_to(outside, target_is_directory=True)
    r = resolve_corpus("corpus", base)
    assert r.error is not None and "outside the base" in r.error and "symlink" in r.error
    make_pack(base, migration())
    with pytest.raises(ReconcileError, match="outside the base"):
        run_reconcile(Invocation(packs=[base / "packs"], base=base))


def test_a_multi_part_corpus_resolves_and_a_half_part_does_not(tmp_path: Path) -> None:
    (tmp_path / "c" / "met").mkdir(parents=True)
    (tmp_path / "c" / "met" / "corpus.yaml").write_text("criterion: x\n")
    (tmp_path / "c" / "not_met").mkdir()
    r = resolve_corpus("c", tmp_path)
    assert r.error is not None and "not every immediate subdirectory" in r.error
    (tmp_path / "c" / "not_met" / "corpus.yaml").write_text("criterion: x\n")
    assert resolve_corpus("c", tmp_path).error is None


def test_two_packs_declaring_one_criterion_differently_is_an_error(tmp_path: Path) -> None:
    make_pack(tmp_path, migration(), task_id="t_task")
    make_pack(tmp_path, migration(residual={"kind": "text", "reason": "other"}), task_id="t_other")
    make_corpus(tmp_path, BALANCED)
    with pytest.raises(ReconcileError, match="declared differently by t_other"):
        run_tmp(tmp_path)


def test_validate_reports_a_broken_rule_and_exits_non_zero(tmp_path: Path) -> None:
    pack = make_pack(
        tmp_path, migration(mode="retired", residual={"kind": "none", "reason": "gone"})
    )
    make_corpus(tmp_path, BALANCED)
    res = CliRunner().invoke(main, ["validate", str(pack), "--base", str(tmp_path), "--json"])
    assert res.exit_code == 1
    doc = json.loads(res.stdout)
    assert [f["rule"] for f in doc["findings"]] == ["retired_shape"]


def test_validate_reports_a_malformed_sidecar(tmp_path: Path) -> None:
    pack = make_pack(tmp_path, migration(residual="none"))
    res = CliRunner().invoke(main, ["validate", str(pack), "--base", str(tmp_path)])
    assert res.exit_code == 1
    assert "residual" in res.output and "write residual: {kind: text|none" in res.output


def test_a_recorded_rubric_that_does_not_read_as_one_is_unreadable(tmp_path: Path) -> None:
    make_pack(tmp_path, migration())
    corpus = make_corpus(tmp_path, [*BALANCED, ("z", True, True)])
    task = yaml.safe_load((corpus / "z" / "task.yaml").read_text())
    task["grading_config"]["llm_judge"]["rubric"]["criteria"][1]["required"] = "maybe"
    write_yaml(corpus / "z" / "task.yaml", task)
    out = run_tmp(tmp_path)
    (row,) = out.document["sources"][0]["unreadable_trials"]
    assert row["trial"] == "corpus/z"
    assert "llm_judge.rubric.criteria[1].required" in row["reason"]


def test_a_trial_that_never_ran_is_excluded_by_name(tmp_path: Path) -> None:
    make_pack(tmp_path, migration())
    corpus = make_corpus(tmp_path, BALANCED)
    write_yaml(
        corpus / "aborted" / "trajectory.yaml",
        {"task_id": "t_task", "status": "error", "messages": []},
    )
    out = run_tmp(tmp_path)
    assert out.document["sources"][0]["excluded_bundles"] == [
        {"bundle": "corpus/aborted", "reason": "no task.yaml: the trial never ran"}
    ]
    assert out.exit_code == 0


def test_a_task_id_no_pack_declares_names_the_roots(tmp_path: Path) -> None:
    make_pack(tmp_path, migration())
    corpus = make_corpus(tmp_path, BALANCED)
    make_bundle(corpus, "stranger", met=True, listed=True, task_id="t_unknown")
    with pytest.raises(
        ReconcileError, match=r"'t_unknown' of corpus/stranger resolves in none .*packs"
    ):
        run_tmp(tmp_path)


def test_a_single_bundle_is_a_source(tmp_path: Path) -> None:
    make_pack(tmp_path, migration())
    corpus = make_corpus(tmp_path, BALANCED)
    out = run_tmp(tmp_path, source=corpus / "a")
    (e,) = out.document["entries"]
    assert (e["observations"], e["verdict"], out.exit_code) == (1, "insufficient_evidence", 1)


def test_the_cli_appends_reconcile_completed_bound_to_the_checkpoint_it_read(
    tmp_path: Path,
) -> None:
    init_ledger(tmp_path / "lg").close()
    make_pack(tmp_path, migration())
    make_corpus(tmp_path, BALANCED)
    res = CliRunner().invoke(
        main,
        [
            "reconcile",
            "--packs",
            str(tmp_path / "packs"),
            "--base",
            str(tmp_path),
            "--json",
            "--ledger",
            str(tmp_path / "lg"),
        ],
    )
    doc = json.loads(res.stdout)
    receipt = doc.pop("receipt")
    with open_ledger(tmp_path / "lg") as lg:
        (ev,) = list(lg.read(type="reconcile.completed"))
        # the corpus was ingested first: the checkpoint read covers its trials, not the receipt
        trials = lg.streams(prefix="trial/corpus/")
        size = receipt["checkpoint"]["size"]
        assert len(trials) == 4 and size == ev.seq
        assert all(e.seq < size for t in trials for e in lg.read(stream=t))
        assert receipt["checkpoint"]["root"] == lg.root(size).hex()
        payload = ev.data()
    assert payload["receipt"] == receipt
    assert receipt["outputs_digest"] == digest(doc)
    assert payload["exit_code"] == doc["exit_code"] == res.exit_code == 0
    # a second run re-ingests nothing and reads the same trials back
    again = CliRunner().invoke(
        main,
        ["reconcile", "--packs", str(tmp_path / "packs"), "--base", str(tmp_path), "--json",
         "--ledger", str(tmp_path / "lg")],
    )  # fmt: skip
    second = json.loads(again.stdout)
    assert second.pop("receipt")["checkpoint"]["size"] == size + 1
    assert second == doc


def test_the_cli_refuses_to_create_a_ledger_it_was_not_given(tmp_path: Path) -> None:
    make_pack(tmp_path, migration())
    make_corpus(tmp_path, BALANCED)
    res = CliRunner().invoke(
        main,
        [
            "reconcile",
            "--packs",
            str(tmp_path / "packs"),
            "--base",
            str(tmp_path),
            "--ledger",
            str(tmp_path / "missing"),
        ],
    )
    assert res.exit_code == 5
    assert "vledger init" in res.output and "or pass --dry-run" in res.output
    assert not (tmp_path / "missing").exists()


def test_a_held_ledger_is_busy_not_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process holding the ledger is exit 3 with the busy message, as on every
    command; it was exit 5, "no ledger to record into ... create it"."""
    import ledger.app.reconcile as app  # noqa: PLC0415
    from ledger.errors import LedgerBusy  # noqa: PLC0415

    make_pack(tmp_path, migration())
    make_corpus(tmp_path, BALANCED)
    init_ledger(tmp_path / "lg").close()

    def held(where: Any, **_kw: Any) -> Any:
        raise LedgerBusy(Path(where), 0.1)

    monkeypatch.setattr(app, "opened", held)
    res = CliRunner().invoke(
        main,
        ["reconcile", "--packs", str(tmp_path / "packs"), "--base", str(tmp_path),
         "--ledger", str(tmp_path / "lg")],
    )  # fmt: skip
    assert res.exit_code == 3, res.output
    assert "ledger busy" in res.stderr and "create it" not in res.stderr


def test_a_ledger_that_cannot_be_opened_is_named_not_missing(tmp_path: Path) -> None:
    """A damaged (or unreadable) store is its own error, exit 1, not "no ledger to record
    into ... create it" with exit 5."""
    make_pack(tmp_path, migration())
    make_corpus(tmp_path, BALANCED)
    (tmp_path / "lg").mkdir()
    (tmp_path / "lg" / "events.duckdb").write_bytes(b"not a database" * 500)
    res = CliRunner().invoke(
        main,
        ["reconcile", "--packs", str(tmp_path / "packs"), "--base", str(tmp_path),
         "--ledger", str(tmp_path / "lg")],
    )  # fmt: skip
    assert res.exit_code == 1, res.output
    assert "cannot open" in res.stderr and "create it" not in res.stderr


def test_the_inputs_digest_is_stable_and_moves_with_the_pack(tmp_path: Path) -> None:
    pack = make_pack(tmp_path, migration())
    make_corpus(tmp_path, BALANCED)
    first, again = run_tmp(tmp_path), run_tmp(tmp_path)
    assert first.inputs_digest == again.inputs_digest
    assert first.document == again.document
    grading = yaml.safe_load((pack / "grading.yaml").read_text())
    grading["trace_checks"]["constraints"][0]["description"] = "edited"
    write_yaml(pack / "grading.yaml", grading)
    assert run_tmp(tmp_path).inputs_digest != first.inputs_digest


def test_a_bundle_changed_since_it_was_ingested_is_not_read_stale(tmp_path: Path) -> None:
    init_ledger(tmp_path / "lg").close()
    make_pack(tmp_path, migration())
    corpus = make_corpus(tmp_path, BALANCED)
    args = ["reconcile", "--packs", str(tmp_path / "packs"), "--base", str(tmp_path), "--json",
            "--ledger", str(tmp_path / "lg")]  # fmt: skip
    assert CliRunner().invoke(main, args).exit_code == 0
    grade = yaml.safe_load((corpus / "a" / "grade.yaml").read_text())
    grade["criterion_results"][0]["justification"] = "rewritten after the fact"
    write_yaml(corpus / "a" / "grade.yaml", grade)
    res = CliRunner().invoke(main, args)
    doc = json.loads(res.stdout)
    (row,) = doc["sources"][0]["unreadable_trials"]
    assert row["trial"] == "corpus/a"
    assert "not this bundle as it is on disk" in row["reason"]
    assert res.exit_code == 1 and doc["entries"][0]["observations"] == 3


def test_a_malformed_corpus_manifest_makes_its_bundles_unreadable(tmp_path: Path) -> None:
    make_pack(tmp_path, migration())
    corpus = make_corpus(tmp_path, BALANCED)
    (corpus / "corpus.yaml").write_text("criterion: x\nbundles: [a, b]\n")
    out = run_tmp(tmp_path)
    rows = out.document["sources"][0]["unreadable_trials"]
    assert [r["trial"] for r in rows] == ["corpus/a", "corpus/b", "corpus/c", "corpus/d"]
    assert "corpus/corpus.yaml: key 'bundles[0]'" in rows[0]["reason"]
    assert out.exit_code == 1


def test_a_trace_checks_block_that_does_not_load_refuses_the_declaration(tmp_path: Path) -> None:
    pack = make_pack(tmp_path, migration())
    grading = yaml.safe_load((pack / "grading.yaml").read_text())
    grading["trace_checks"]["constraints"][0]["severty"] = "gate"
    write_yaml(pack / "grading.yaml", grading)
    make_corpus(tmp_path, BALANCED)
    res = CliRunner().invoke(main, ["validate", str(pack), "--base", str(tmp_path)])
    assert res.exit_code == 1 and "unknown key 'severty'" in res.output
    res = CliRunner().invoke(
        main,
        ["reconcile", "--packs", str(tmp_path / "packs"), "--base", str(tmp_path), "--dry-run"],
    )
    assert res.exit_code == 5 and "unknown key 'severty'" in res.output


def test_a_constraint_naming_a_tool_the_corpus_never_had_is_an_error(tmp_path: Path) -> None:
    pack = make_pack(tmp_path, migration())
    grading = yaml.safe_load((pack / "grading.yaml").read_text())
    left = grading["trace_checks"]["constraints"][0]["require"]["before"]["left"]
    left["match"]["tool"]["equals"] = "list_notez"
    write_yaml(pack / "grading.yaml", grading)
    corpus = make_corpus(tmp_path, BALANCED)
    schemas = [
        {"type": "function", "function": {"name": n, "description": n, "parameters": {"type": "object", "properties": {}}}}
        for n in ("list_notes", "add_note")
    ]  # fmt: skip
    for name, _, _ in BALANCED:
        write_yaml(corpus / name / "tools_schemas.yaml", schemas)
    with pytest.raises(
        ReconcileError, match="cannot be graded against the tools corpus/a recorded.*list_notez"
    ):
        run_tmp(tmp_path)


def test_packs_declaring_nothing_reconcile_nothing_and_say_so(tmp_path: Path) -> None:
    pack = make_pack(tmp_path, migration())
    (pack / "migration.yaml").unlink()
    res = CliRunner().invoke(
        main,
        ["reconcile", "--packs", str(tmp_path / "packs"), "--base", str(tmp_path), "--dry-run"],
    )
    assert res.exit_code == 0
    assert "declares a migration; nothing to reconcile" in res.output


def test_a_recorded_reconciliation_recomputes_from_the_log_alone(tmp_path: Path) -> None:
    """`vledger receipt verify SEQ --recompute`: the receipt event is in the log, the
    checkpoint it read is consistent with it, and redoing the verdict from the streams it
    names (no bundle or pack file opened) gives the recorded outputs digest."""
    init_ledger(tmp_path / "lg").close()
    make_pack(tmp_path, migration(acknowledged=[{"trial": "corpus/e", "reason": "misread"}],
                                  evidence={"observations": 5, "kappa": 0.615}))  # fmt: skip
    make_corpus(tmp_path, [*BALANCED, ("e", True, False)])
    args = ["reconcile", "--packs", str(tmp_path / "packs"), "--base", str(tmp_path), "--json",
            "--ledger", str(tmp_path / "lg")]  # fmt: skip
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    with open_ledger(tmp_path / "lg") as lg:
        (ev,) = list(lg.read(type="reconcile.completed"))
    shutil.rmtree(tmp_path / "packs")
    shutil.rmtree(tmp_path / "corpus")
    check = CliRunner().invoke(
        main,
        [
            "receipt",
            "verify",
            str(ev.seq),
            "--recompute",
            "--json",
            "--ledger",
            str(tmp_path / "lg"),
        ],
    )
    doc = json.loads(check.stdout)
    assert check.exit_code == 0 and doc["ok"], doc
    assert any(line.startswith("outputs_digest recomputed") for line in doc["checked"])


def test_a_tampered_receipt_config_fails_recompute(tmp_path: Path) -> None:
    from ledger.app import receipts
    from ledger.app.reconcile import recompute_reconcile

    init_ledger(tmp_path / "lg").close()
    make_pack(tmp_path, migration())
    make_corpus(tmp_path, BALANCED)
    args = ["reconcile", "--packs", str(tmp_path / "packs"), "--base", str(tmp_path),
            "--ledger", str(tmp_path / "lg")]  # fmt: skip
    assert CliRunner().invoke(main, args).exit_code == 0
    with open_ledger(tmp_path / "lg") as lg:
        (ev,) = list(lg.read(type="reconcile.completed"))
        recorded = receipts.parse_ledger_receipt(ev).outputs_digest
        assert recompute_reconcile(lg, ev) == recorded
        payload = ev.data()
        payload["config"]["corpora"][0]["trials"].pop()  # one trial fewer
        forged = type(ev)(ev.seq, ev.stream, ev.stream_version, ev.event_id, ev.type,
                          ev.schema_version, ev.recorded_at, canonical_json(payload), ev.leaf_hash)  # fmt: skip
        assert recompute_reconcile(lg, forged) != recorded


def test_one_pack_naming_two_corpora_gets_two_rows_and_two_reports(tmp_path: Path) -> None:
    pack = make_pack(tmp_path, migration())
    second = migration(corpus="corpus2", evidence={"observations": 2, "kappa": 1.0})
    write_yaml(pack / "migration.yaml", {"migrations": [migration(), second]})
    make_corpus(tmp_path, BALANCED)
    make_corpus(tmp_path / "two", [("x", True, True), ("y", False, False)])
    (tmp_path / "two" / "corpus").rename(tmp_path / "corpus2")
    out = run_tmp(tmp_path)
    assert [s["source"] for s in out.document["sources"]] == ["corpus", "corpus2"]
    assert [(e["source"], e["observations"], e["verdict"]) for e in out.document["entries"]] == [
        ("corpus", 4, "no_counter_evidence"),
        ("corpus2", 2, "no_counter_evidence"),
    ]


def test_the_older_generation_names_its_corpus_inside_evidence(tmp_path: Path) -> None:
    old = migration(corpus=None, evidence={"corpus": "corpus", "observations": 4, "kappa": 1.0})
    make_pack(tmp_path, old)
    make_corpus(tmp_path, BALANCED)
    out = run_tmp(tmp_path)
    (e,) = out.document["entries"]
    assert (e["source"], e["observations"], e["verdict"]) == ("corpus", 4, "no_counter_evidence")
