"""The Tolokaforge 0.33.1 compatibility corpora through every command.

The compatibility corpora hold 610 bundles written and judged by the reference itself. No input
there may make ``ingest``, ``grade``, ``retrace``, ``reconcile`` or ``verify --deep`` print a
traceback; and ``retrace`` must re-derive what the reference concluded, compared by the
corpus's own tools (``compat/tools/*_compare.py``, the same comparison ``compat/check``
makes).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from ledger.cli import main

# one xdist worker builds this module's shared fixture once (make test: --dist loadgroup)
pytestmark = pytest.mark.xdist_group("compat")


COMPAT = Path(__file__).resolve().parents[1] / ".." / "shared" / "compat"
REF = COMPAT / "tolokaforge-0.33.1"
KINDS = ("trace", "grade")


def _invoke(*args: str):
    res = CliRunner().invoke(main, list(args))
    # click's runner catches what would have been a traceback: any exception but SystemExit
    assert res.exception is None or isinstance(res.exception, SystemExit), (
        args,
        res.exception,
    )
    # recorded reasons may quote a traceback the bundle's own checks.py raised: only the
    # diagnostics stream is ours
    assert "Traceback (most recent call last)" not in res.stderr, args
    return res


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("compat")
    for kind in KINDS:
        shutil.copytree(REF / f"{kind}-corpus", root / f"{kind}-corpus")
    return root


@pytest.fixture(scope="module")
def retraced(work: Path) -> dict[str, tuple[int, Path]]:
    out = {}
    for kind in KINDS:
        ledger = str(work / f"ledger-{kind}")
        _invoke("init", "--ledger", ledger)
        res = _invoke(
            "retrace", "--source", str(work / f"{kind}-corpus"), "--json", "--ledger", ledger
        )
        path = work / f"{kind}.json"
        path.write_text(res.output)
        out[kind] = (res.exit_code, path)
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_retrace_rederives_what_the_reference_concluded(kind: str, retraced) -> None:
    code, path = retraced[kind]
    compare = subprocess.run(
        [sys.executable, str(COMPAT / "tools" / f"{kind}_compare.py"),
         str(REF / f"{kind}-expected.json"), str(path), "--show", "20"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert compare.returncode == 0, compare.stdout
    if kind == "trace":
        assert code == 0  # the reference reads all 360 and exits 0


# GRADING.md wins over the reference on these flags (compat/tools/grade_compare.py skips
# them): the components a spec-following replay may then disagree on, besides the fold.
SPEC_WINS = {
    "fold_refused": set(),  # spec folds what was evaluated; the reference refuses (0.0)
    "judge_errored": set(),  # an errored judge is excluded from the combine
    "custom_nothing_decided": set(),  # nothing decided: unscored, and the fold goes on
    "custom_no_check_declared_scored_0": {"custom_checks"},  # decided nothing: unscored
    "custom_fail_on_error_false_ignored_by_core": {"custom_checks"},  # unscored
    "jsonpath_equals_bool_vs_number": {"state_checks"},  # bool never folds to int
    "hash_numeric_string_equals_number": {"state_checks"},
    "transcript_lower_not_casefold": {"transcript_rules"},  # casefold, not lower()
    "events_less_timeline": {"transcript_rules", "trace_checks"},
}


def test_flagged_trials_follow_grading_md_and_name_each_difference(retraced) -> None:
    """Where the reference departs from GRADING.md, a disagreement is expected: it must
    name the component (or the fold) and why, be confined to what the flag concerns, and
    point the way the spec reads (custom checks the spec leaves unscored are unscored)."""
    expected = {
        t["trial"]: t for t in json.loads((REF / "grade-expected.json").read_text())["trials"]
    }
    _, path = retraced["grade"]
    flagged = 0
    for trial in json.loads(path.read_text())["trials"]:
        flags = set(expected[trial["trial"].rstrip("/").rsplit("/", 1)[-1]].get("flags", []))
        spec = flags & SPEC_WINS.keys()
        if not spec:
            continue
        flagged += 1
        assert trial["status"] in ("agreed", "disagreed"), trial
        allowed = {"score", "binary_pass"}.union(*(SPEC_WINS[f] for f in spec))
        for d in trial["differences"]:
            assert d["component"] in allowed and d["reason"], (trial["trial"], d)
            if d["component"] == "custom_checks":
                assert d["replayed"] is None and d["recorded"] == 0.0
    assert flagged > 0


def test_ingest_grade_and_verify_deep_never_print_a_traceback(work: Path) -> None:
    ledger = str(work / "ledger-all")
    _invoke("init", "--ledger", ledger)
    for kind in KINDS:
        _invoke("ingest", str(work / f"{kind}-corpus"), "--ledger", ledger, "--json")
        for bundle in sorted((work / f"{kind}-corpus").iterdir()):
            _invoke("grade", str(bundle), "--json", "--ledger", ledger)
    verify = _invoke("verify", "--deep", "--ledger", ledger)
    assert verify.exit_code == 0, verify.output


def test_reconcile_over_packs_cut_from_the_corpora_never_prints_a_traceback(
    work: Path,
) -> None:
    """Each task's recorded grading_config written back as an authored pack: reconcile may
    refuse a pack the authoring rules reject (exit 3, named), never crash."""
    for kind in KINDS:
        packs = work / f"packs-{kind}"
        for task in sorted((work / f"{kind}-corpus").glob("*/task.yaml")):
            doc = yaml.safe_load(task.read_text())
            pack = packs / doc["task_id"]
            if pack.exists():
                continue
            pack.mkdir(parents=True)
            (pack / "task.yaml").write_text(yaml.safe_dump({"task_id": doc["task_id"]}))
            (pack / "grading.yaml").write_text(yaml.safe_dump(doc["grading_config"] or {}))
        res = _invoke(
            "reconcile", "--packs", str(packs), "--source", str(work / f"{kind}-corpus"),
            "--base", str(work), "--dry-run", "--json",
        )  # fmt: skip
        assert res.exit_code in (0, 1, 5), res.output
        if res.exit_code != 5:
            json.loads(res.output)


@pytest.mark.parametrize("kind", KINDS)
def test_every_replayed_trial_accounts_for_every_populated_scored_key(kind: str, retraced) -> None:
    """Key accounting over the reference's own bundles: no populated scored key is left without
    an evaluated or skipped record on any replayed grade."""
    from replay.accounting import populated_scored_keys
    from replay.grading_rules import load_grading_config

    _, path = retraced[kind]
    checked = 0
    for trial in json.loads(path.read_text())["trials"]:
        if trial["replayed"] is None:
            continue
        name = trial["trial"].rstrip("/").rsplit("/", 1)[-1]
        task = yaml.safe_load((REF / f"{kind}-corpus" / name / "task.yaml").read_text())
        config = load_grading_config(task["grading_config"], authored=False)
        accounted = {r["key"] for r in trial["replayed"]["accounting"]}
        assert set(populated_scored_keys(config)) <= accounted, name
        checked += 1
    assert checked > 0


MARKERS = {
    "state_checks": "State:",
    "transcript_rules": "Transcript:",
    "trace_checks": "Trace checks:",
    "llm_judge": "Judge:",
    "custom_checks": "Custom checks:",
}


@pytest.mark.parametrize("kind", KINDS)
def test_every_component_that_scored_names_itself_in_the_reasons(kind: str, retraced) -> None:
    """GRADING.md § The runtime ledger: "Every component ... contributes its own segment to
    Grade.reasons under the marker it emits" (the reference omits the State: segment when
    every jsonpaths assertion holds; the spec wins)."""
    _, path = retraced[kind]
    scored = 0
    for trial in json.loads(path.read_text())["trials"]:
        replayed = trial["replayed"]
        for component, score in (replayed or {}).get("components", {}).items():
            if score is not None:
                scored += 1
                assert any(r.startswith(MARKERS[component]) for r in replayed["reasons"]), (
                    trial["trial"],
                    component,
                )
    assert scored > 0
