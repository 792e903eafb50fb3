"""The Tolokaforge 0.33.1 compatibility corpora through every command.

tests/data/tolokaforge/compat-0.33.1.tar.gz holds 610 bundles written and judged by the
reference itself, with what it concluded. No input there may make ``ingest``, ``grade``,
``retrace``, ``reconcile`` or ``verify --deep`` print a traceback; and ``retrace`` must
re-derive what the reference concluded (tests/compat_compare.py states the comparison).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from ledger.cli import main
from tests.compat_compare import SPEC_WINS, bundle_name, grade_mismatches, trace_mismatches
from tests.data_paths import COMPAT_KINDS, unpack_compat

# one xdist worker builds this module's shared fixture once (make test: --dist loadgroup)
pytestmark = pytest.mark.xdist_group("compat")

KINDS = COMPAT_KINDS
MISMATCHES = {"trace": trace_mismatches, "grade": grade_mismatches}


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
    """The corpora and the reference's conclusions, unpacked into a fresh directory."""
    return unpack_compat(tmp_path_factory.mktemp("compat"))


def _expected(work: Path, kind: str) -> dict:
    return json.loads((work / f"{kind}-expected.json").read_text())


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
def test_retrace_rederives_what_the_reference_concluded(kind: str, work: Path, retraced) -> None:
    code, path = retraced[kind]
    actual = json.loads(path.read_text())
    mismatches = MISMATCHES[kind](_expected(work, kind), actual)
    assert mismatches == [], "\n".join(mismatches[:20])
    if kind == "trace":
        assert code == 0  # the reference reads all 360 and exits 0
        assert len(actual["constraints"]) == 242 and len(actual["trials"]) == 360


def _first(trials: list[dict], pred) -> dict:
    return next(t for t in trials if pred(t))


def test_the_trace_comparison_catches_each_kind_of_disagreement(work: Path, retraced) -> None:
    """One count, one per-trial verdict, one winning path, one score, one row dropped:
    each alone is reported, naming what differs."""
    expected = _expected(work, "trace")
    base = json.loads(retraced["trace"][1].read_text())

    def caught(mutate) -> list[str]:
        doc = copy.deepcopy(base)
        mutate(doc)
        return trace_mismatches(expected, doc)

    def bump(doc):
        _first(doc["constraints"], lambda r: r["evaluated"] > 0)["passed"] += 1

    def flip(doc):
        replayed = _first(doc["trials"], lambda t: (t["replayed"] or {}).get("trace_check_results"))
        verdict = replayed["replayed"]["trace_check_results"][0]
        verdict["passed"] = not verdict["passed"]

    def path(doc):
        doc["trials"][0]["winning_path"] = "elsewhere"

    def score(doc):
        scored = _first(doc["trials"], lambda t: (t["replayed"] or {}).get("score"))
        scored["replayed"]["score"] += 0.01

    def drop(doc):
        doc["constraints"].pop()

    for mutate, word in [(bump, "passed"), (flip, "verdict"), (path, "winning_path"),
                         (score, "score"), (drop, "missing")]:  # fmt: skip
        found = caught(mutate)
        assert len(found) == 1 and word in found[0], (mutate.__name__, found)


def test_the_grade_comparison_catches_each_kind_of_disagreement(work: Path, retraced) -> None:
    """A component, a status, a binary_pass, a missing trial: each alone is reported; a
    component may be unscored only where the replay names it not measured."""
    expected = _expected(work, "grade")
    base = json.loads(retraced["grade"][1].read_text())
    unflagged = {t["trial"] for t in expected["trials"] if not t["flags"]}

    def measured(t: dict) -> bool:
        return bundle_name(t["trial"]) in unflagged and not t["replayed"]["not_measured"]

    def caught(mutate) -> list[str]:
        doc = copy.deepcopy(base)
        mutate(doc["trials"])
        return grade_mismatches(expected, doc)

    def component(trials):
        def has_transcript(t: dict) -> bool:
            return t["replayed"]["components"]["transcript_rules"] is not None

        parts = _first(trials, lambda t: measured(t) and has_transcript(t))["replayed"]["components"]
        parts["transcript_rules"] = None  # unscored, yet not named not measured

    def status(trials):
        _first(trials, measured)["status"] = "disagreed"

    def binary(trials):
        t = _first(trials, measured)
        t["replayed"]["binary_pass"] = not t["replayed"]["binary_pass"]

    def missing(trials):
        trials.remove(_first(trials, measured))

    for mutate, word in [(component, "transcript_rules"), (status, "disagreed"),
                         (binary, "binary_pass"), (missing, "missing")]:  # fmt: skip
        found = caught(mutate)
        assert len(found) == 1 and word in found[0], (mutate.__name__, found)


def test_flagged_trials_follow_grading_md_and_name_each_difference(work: Path, retraced) -> None:
    """Where the reference departs from GRADING.md, a disagreement is expected: it must
    name the component (or the fold) and why, be confined to what the flag concerns, and
    point the way the spec reads (custom checks the spec leaves unscored are unscored)."""
    expected = {t["trial"]: t for t in _expected(work, "grade")["trials"]}
    _, path = retraced["grade"]
    flagged = 0
    for trial in json.loads(path.read_text())["trials"]:
        flags = set(expected[bundle_name(trial["trial"])].get("flags", []))
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
def test_every_replayed_trial_accounts_for_every_populated_scored_key(
    kind: str, work: Path, retraced
) -> None:
    """Over the reference's own bundles: no populated scored key is left without an
    evaluated or skipped record on any replayed grade."""
    from replay.grading.accounting import populated_scored_keys
    from replay.grading.rules import load_grading_config

    _, path = retraced[kind]
    checked = 0
    for trial in json.loads(path.read_text())["trials"]:
        if trial["replayed"] is None:
            continue
        name = bundle_name(trial["trial"])
        task = yaml.safe_load((work / f"{kind}-corpus" / name / "task.yaml").read_text())
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
