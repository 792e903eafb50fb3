"""Hostile inputs to the readers: one test per class, through the installed CLI.

Classes (the hostile-input suite's numbering): 1 evidence leaving its bundle, 2 unbounded readers,
3 regexes that never end, 7 input silently changed, 10 tracebacks on deep nesting. Every
refusal: exit code, file or key named, no traceback, no outside content echoed, ledger
byte-identical; each test ends with a clean ``vledger verify``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from ledger.app.ingest import ingest_into as ingest
from ledger.log.store import open_ledger
from tests.adversarial.readers_harness import (
    ROOT,
    SECRET,
    bundle_copy,
    event_count,
    no_traceback,
    pack_copy,
    refused_unchanged,
    run_copy,
    verify_clean,
    vledger,
)

# one xdist worker builds this module's shared fixture once (make test: --dist loadgroup)
pytestmark = pytest.mark.xdist_group("adversarial")


CATASTROPHIC = "(a+)+$"  # over 'a' * 5000 + '!': exponential under backtracking
SLOW_TEXT = "a" * 5000 + "!"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ledger holding the shipped notes corpus, built once through the API."""
    path = tmp_path_factory.mktemp("readers") / "L"
    with open_ledger(path, create=True) as lg:
        ingest(lg, [ROOT / "corpora" / "notes_duplicate_check"])
    return path


@pytest.fixture(scope="module")
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory no input names: every file in it holds SECRET."""
    d = tmp_path_factory.mktemp("outside")
    (d / "secret.yaml").write_text(f"token: {SECRET}\n")
    real = ROOT / "corpora" / "packs" / "notes_duplicate_check_narrowed" / "grading.yaml"
    (d / "grading.yaml").write_text(f"# {SECRET}\n" + real.read_text())
    return d


# ------------------------------------------------------------- 1: evidence stays confined


def test_files_resolving_outside_their_root_are_refused_unread(
    base: Path, outside: Path, tmp_path: Path
) -> None:
    b = bundle_copy(tmp_path / "via_metrics")
    (b / "metrics.yaml").unlink()
    (b / "metrics.yaml").symlink_to(outside / "secret.yaml")
    refused_unchanged(
        base, "ingest", "--ledger", base, b, named=(f"{b.name}/metrics.yaml", "outside"),
        hidden=(SECRET, str(outside)),
    )  # fmt: skip
    # a pack's grading file named by its own content (absolute paths: in-process tests)
    p = pack_copy(tmp_path / "pack")
    task = yaml.safe_load((p / "task.yaml").read_text())
    escape = os.path.relpath(outside / "grading.yaml", p)
    (p / "task.yaml").write_text(yaml.safe_dump({**task, "grading": escape}))
    refused_unchanged(
        base, "ingest", "--ledger", base, p, named=("task.yaml", "'grading'"),
        hidden=(SECRET, str(outside)),
    )  # fmt: skip
    refused_unchanged(
        base, "validate", p, "--base", ROOT, code=5, named=("task.yaml", "--allow-outside"),
        hidden=(SECRET, str(outside)),
    )  # fmt: skip
    # only the command line widens the root
    res = vledger("validate", p, "--base", ROOT, "--allow-outside", outside / "grading.yaml")
    no_traceback(res)
    assert res.returncode == 0, res.stdout + res.stderr
    verify_clean(base)


# ------------------------------------------------------------------- 2: bounded readers


def test_devices_fifos_and_expanding_yaml_are_refused_fast(base: Path, tmp_path: Path) -> None:
    refused_unchanged(
        base, "retrace", "--ledger", base, "--constraints", "/dev/zero", "--dry-run",
        named=("/dev/zero", "character device"), timeout=60,
    )  # fmt: skip
    run = run_copy(tmp_path / "run_zero")
    (run / "receipt.json").unlink()
    (run / "receipt.json").symlink_to("/dev/zero")
    refused_unchanged(base, "ingest", "--ledger", base, run, named=("receipt.json",), timeout=60)
    # one 100 kB scalar aliased 3,000 times through trajectory message content: 300 MB of
    # text once expanded, far under the node limit (FIFOs, metrics.yaml: in-process tests)
    scalar = "x" * 100_000
    bundle = bundle_copy(tmp_path / "bomb_messages")
    traj = yaml.safe_load((bundle / "trajectory.yaml").read_text())
    traj["messages"][0]["content"] = "ANCHOR"
    for m in traj["messages"][1:]:
        if m.get("role") == "assistant":
            m["content"] = "ALIAS"
    text = yaml.safe_dump(traj, sort_keys=False)
    text = text.replace("content: ANCHOR", f"content: &big {scalar}")
    text = text.replace("content: ALIAS", "content: *big")
    text += "metadata_pad: [" + ", ".join(["*big"] * 3000) + "]\n"
    (bundle / "trajectory.yaml").write_text(text)
    refused_unchanged(
        base, "ingest", "--ledger", base, bundle, named=("trajectory.yaml", "aliases expand"),
        timeout=60,
    )  # fmt: skip
    verify_clean(base)


# --------------------------------------------------------------- 3: regexes that never end


def _planted(dst: Path) -> Path:
    """A bundle whose recorded snapshot carries catastrophic backtracking patterns in
    transcript_rules and trace_checks, and whose assistant text triggers them."""
    b = bundle_copy(dst)
    task = yaml.safe_load((b / "task.yaml").read_text())
    g = task["grading_config"]
    g["combine"]["weights"] = {"llm_judge": 1.0, "transcript_rules": 1.0, "trace_checks": 1.0}
    g["transcript_rules"] = {"regex_engine": "backtracking", "disallow_regex": [CATASTROPHIC]}
    text_re = {"kind": "assistant_message", "text": {"regex": CATASTROPHIC}}
    listed = {"kind": "tool_call", "tool": {"equals": "list_notes"}}
    g["trace_checks"] = {
        "regex_engine": "backtracking",
        "constraints": [
            {"id": "slow", "description": "hangs", "require": {"present": {"match": text_re}}},
            {"id": "fine", "description": "ok", "require": {"present": {"match": listed}}},
        ],
    }
    (b / "task.yaml").write_text(yaml.safe_dump(task, sort_keys=False))
    traj = yaml.safe_load((b / "trajectory.yaml").read_text())
    for m in traj["messages"]:
        if m.get("role") == "assistant" and m.get("content"):
            m["content"] = SLOW_TEXT
    (b / "trajectory.yaml").write_text(yaml.safe_dump(traj, sort_keys=False))
    return b


def test_a_catastrophic_backtracking_pattern_is_not_measured_never_a_hang(
    tmp_path: Path,
) -> None:
    ledger = tmp_path / "L"
    planted = _planted(tmp_path / "planted")
    with open_ledger(ledger, create=True) as lg:
        ingest(lg, [planted])
    # plain retrace over the bundle's own recorded snapshot: must finish, naming the pattern
    res = vledger("retrace", "--ledger", ledger, "--json", timeout=90)
    no_traceback(res)
    assert res.returncode == 0, res.stderr[-2000:]
    report = json.loads(res.stdout)
    classes = {c["id"]: c["class"] for c in report["constraints"]}
    assert classes == {"slow": "not_measured", "fine": "always_true"}
    not_measured = report["trials"][0]["replayed"]["not_measured"]
    assert CATASTROPHIC in not_measured["trace_checks"]
    assert "trace_checks.slow" in not_measured["trace_checks"]
    assert CATASTROPHIC in not_measured["transcript_rules"]
    # an authored replacement with the same pattern: a dry run, refused nothing, finishes
    constraints = tmp_path / "constraints.yaml"
    block = yaml.safe_load((planted / "task.yaml").read_text())["grading_config"]
    constraints.write_text(yaml.safe_dump({"trace_checks": block["trace_checks"]}))
    count = event_count(ledger)
    res = vledger(
        "retrace", "--ledger", ledger, "--constraints", constraints, "--dry-run", "--json",
        timeout=90,
    )  # fmt: skip
    no_traceback(res)
    assert res.returncode == 0, res.stderr[-2000:]
    assert {c["id"]: c["class"] for c in json.loads(res.stdout)["constraints"]}["slow"] == (
        "not_measured"
    )
    assert event_count(ledger) == count
    verify_clean(ledger)


# ------------------------------------------------------------ 7: faithful or refused


def test_values_that_would_be_stored_as_something_else_are_refused_by_line(
    base: Path, tmp_path: Path
) -> None:
    # one case per reader here; every value kind, in-process (test_readers_values.py)
    b = bundle_copy(tmp_path / "dup")
    (b / "metrics.yaml").write_text("turns: 1\nturns: 2\n")
    refused_unchanged(base, "ingest", "--ledger", base, b, named=("metrics.yaml:2", "'turns'"))
    f = tmp_path / "big.jsonl"
    big = '{"stream": "ext/a", "type": "ext.a", "payload": {"n": 18446744073709551616}}'
    f.write_text('{"stream": "ext/a", "type": "ext.a", "payload": {}}\n' + big + "\n")
    refused_unchanged(base, "append", "--ledger", base, f, named=(f"{f}:2", "64-bit"))
    run = run_copy(tmp_path / "run_nan")
    lines = (run / "events.jsonl").read_text().splitlines()
    ev = json.loads(lines[1])
    ev["data"]["x"] = "PLACEHOLDER"
    lines[1] = json.dumps(ev).replace('"PLACEHOLDER"', "NaN")
    (run / "events.jsonl").write_text("\n".join(lines) + "\n")
    refused_unchanged(
        base, "ingest", "--ledger", base, run, named=("events.jsonl", "line 2", "NaN")
    )
    verify_clean(base)


# ------------------------------------------------------ 10: no traceback on deep nesting


def test_nesting_100k_deep_is_a_named_refusal_in_every_reader(base: Path, tmp_path: Path) -> None:
    deep = 100_000
    run = run_copy(tmp_path / "deep_line")
    lines = (run / "events.jsonl").read_text().splitlines()
    lines[1] = '{"seq": 2, "type": "x", "at": "", "data": ' + '{"a":' * deep + "1" + "}" * deep
    lines[1] += "}"
    (run / "events.jsonl").write_text("\n".join(lines) + "\n")
    graph_run = run_copy(tmp_path / "deep_graph")
    (graph_run / "graph.json").write_text("[" * deep + "]" * deep)
    # graph.json and YAML, and 300 deep (readable, but canonical JSON stops at 254): in-process
    refused_unchanged(base, "ingest", "--ledger", base, run, named=("events.jsonl", "line 2"))
    # under --skip-bad: typed skips, the rest ingested, no traceback
    count = event_count(base)
    res = vledger("ingest", "--ledger", base, "--skip-bad", run, graph_run, "--json")
    no_traceback(res)
    assert res.returncode == 0, res.stderr[-2000:]
    skipped = json.loads(res.stdout)["skipped"]
    assert sorted(s["source"] for s in skipped) == sorted([str(run), str(graph_run)])
    assert event_count(base) == count + 2  # the two ingest.skipped records, nothing else
    verify_clean(base)
