"""verdict-core run receipts (verdict-core FORMAT.md).

The shipped demo run verifies clean and its receipt is rebuilt byte-for-byte; each
tamper of verdict-core FORMAT.md § 9 (on a copy in tmp_path) yields exactly the problems that table
lists, in the order § 7 finds them.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.app.receipts import check_run_dir
from ledger.app.run_files import read_run_dir
from ledger.cli import main
from replay.receipts.receipt import canonical_graph, graph_digest, rebuild_from_files, receipt_bytes
from replay.receipts.run import RebuildError, events_digest, parse_events
from replay.receipts.verify import verify_run_files
from tests.data_paths import VCORE_DEMO_RUN

DEMO = VCORE_DEMO_RUN
M = "mismatch: stored receipt differs from recomputed evidence"
DIGEST = "events_digest mismatch: events.jsonl changed after receipt was written"


@pytest.fixture
def run(tmp_path: Path) -> Path:
    dst = tmp_path / "demo-run"
    shutil.copytree(DEMO, dst)
    for p in [dst, *dst.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)  # a checkout may be read-only
    return dst


def _events(run: Path) -> list[str]:
    return (run / "events.jsonl").read_text().splitlines(keepends=True)


def _write_events(run: Path, lines: list[str]) -> None:
    (run / "events.jsonl").write_text("".join(lines))


def test_demo_run_verifies_clean() -> None:
    assert check_run_dir(DEMO).problems == []


def test_demo_receipt_is_rebuilt_byte_for_byte() -> None:
    rebuilt = rebuild_from_files(read_run_dir(DEMO))
    assert receipt_bytes(rebuilt) == (DEMO / "receipt.json").read_bytes()


def test_published_digests() -> None:
    """verdict-core FORMAT.md § 3 and § 5 quote both digests of the demo run."""
    raw = (DEMO / "events.jsonl").read_bytes()
    assert len(raw) == 19242 and len(parse_events(raw)) == 83
    assert events_digest(raw) == (
        "sha256:04ca24451d0e745d874eff0b39f65ec9f72df0d795669563aa6ff68a6d2a61c2"
    )
    graph = json.loads((DEMO / "graph.json").read_text())
    assert graph_digest(canonical_graph(graph)) == (
        "sha256:e0e5f305192c8f4d59f9ca6edd2be25b1b54e6dd7c587c92b3067cc246a2b4e4"
    )


def test_one_event_byte_changed(run: Path) -> None:
    """§ 9 row 1 (one byte of the seq 21 cooldown ``until``)."""
    raw = (run / "events.jsonl").read_bytes()
    old = b'"until":"2026-09-27T08:21:32+00:00"'
    assert raw.count(old) == 1
    (run / "events.jsonl").write_bytes(raw.replace(old, old.replace(b"T08", b"T09")))
    assert check_run_dir(run).problems == [DIGEST, f"cooldowns {M}"]


def test_review_line_deleted(run: Path) -> None:
    """§ 9 row 2; the rebuilt verdict is BLOCKED: review status MISSING (PASS required)."""
    lines = _events(run)
    assert json.loads(lines[81])["type"] == "review"
    _write_events(run, lines[:81] + lines[82:])
    assert check_run_dir(run).problems == [
        DIGEST,
        f"event_count {M}",
        f"outcome {M}",
        f"reason {M}",
        f"review {M}",
    ]
    rebuilt = rebuild_from_files(read_run_dir(run))
    assert (rebuilt["outcome"], rebuilt["reason"]) == (
        "BLOCKED",
        "review status MISSING (PASS required)",
    )


def test_receipt_edited(run: Path) -> None:
    """§ 9 row 3: only the receipt changed — the digest still matches."""
    receipt = json.loads((run / "receipt.json").read_text())
    receipt["nodes"][0]["final_state"] = "TERMINAL_SUCCESS"
    (run / "receipt.json").write_text(json.dumps(receipt, indent=2, sort_keys=True) + "\n")
    assert check_run_dir(run).problems == [f"nodes {M}"]


def test_blank_line_appended(run: Path) -> None:
    """§ 9 row 4: blank lines are skipped when parsing, but the bytes changed."""
    with (run / "events.jsonl").open("a") as f:
        f.write("\n")
    assert check_run_dir(run).problems == [DIGEST]


def test_graph_reserialised_is_invisible(run: Path) -> None:
    """§ 9 row 5: only the canonical content of graph.json is bound."""
    graph = json.loads((run / "graph.json").read_text())
    (run / "graph.json").write_text(json.dumps(dict(reversed(graph.items())), indent=7))
    assert check_run_dir(run).problems == []


def test_graph_verification_command_edited(run: Path) -> None:
    """§ 9 row 6."""
    graph = json.loads((run / "graph.json").read_text())
    graph["nodes"][0]["verification_command"].append("--strict")
    (run / "graph.json").write_text(json.dumps(graph, indent=2))
    assert check_run_dir(run).problems == [f"graph_digest {M}"]


def test_graph_goal_edited(run: Path) -> None:
    """§ 9 row 7."""
    graph = json.loads((run / "graph.json").read_text())
    graph["goal"] = "Something else"
    (run / "graph.json").write_text(json.dumps(graph, indent=2))
    assert check_run_dir(run).problems == [f"goal {M}", f"graph_digest {M}"]


def test_failing_review_json_overrides(run: Path) -> None:
    """§ 9 row 8: review.json silently overrides the review event; no digest problem."""
    (run / "review.json").write_text(json.dumps({"status": "fail", "blocking": True}))
    assert check_run_dir(run).problems == [f"outcome {M}", f"reason {M}", f"review {M}"]
    rebuilt = rebuild_from_files(read_run_dir(run))
    assert rebuilt["reason"] == "review status FAIL (PASS required)"
    assert rebuilt["review"]["blocking"] == 1


def test_scratch_files_deleted_is_invisible(run: Path) -> None:
    """§ 9 row 9."""
    (run / "progress.json").unlink()
    (run / "admission.json").unlink()
    shutil.rmtree(run / "attempts")
    assert check_run_dir(run).problems == []


def test_missing_receipt(run: Path) -> None:
    (run / "receipt.json").unlink()
    assert check_run_dir(run).problems == ["missing receipt.json"]


def test_receipt_not_an_object(run: Path) -> None:
    (run / "receipt.json").write_text("[]")
    assert check_run_dir(run).problems == ["receipt.json must contain a JSON object"]


def test_missing_events(run: Path) -> None:
    (run / "events.jsonl").unlink()
    assert check_run_dir(run).problems == ["missing events.jsonl"]


def test_missing_graph_cannot_rebuild(run: Path) -> None:
    (run / "graph.json").unlink()
    problems = check_run_dir(run).problems
    assert len(problems) == 1
    assert problems[0].startswith("cannot rebuild receipt: cannot read graph.json: [Errno 2] ")


def test_corrupt_event_line_names_path_and_line(run: Path) -> None:
    lines = _events(run)
    lines[9] = lines[9][:40] + "\n"
    _write_events(run, lines)
    problems = check_run_dir(run).problems
    assert problems[0] == DIGEST
    assert problems[1].startswith(
        f"cannot rebuild receipt: {run / 'events.jsonl'}:10: corrupt event: "
    )
    assert len(problems) == 2


def test_non_increasing_seq_is_refused() -> None:
    raw = b'{"at":"t","data":{},"node_id":"","seq":2,"type":"x"}\n{"at":"t","data":{},"node_id":"","seq":2,"type":"x"}\n'
    with pytest.raises(RebuildError, match="events.jsonl:2: seq 2 not greater than 2"):
        parse_events(raw)


def test_schema_changed_is_reported_and_verification_continues(run: Path) -> None:
    receipt = json.loads((run / "receipt.json").read_text())
    receipt["schema"] = "verdict.run-receipt/v2"
    (run / "receipt.json").write_text(json.dumps(receipt))
    assert check_run_dir(run).problems == [
        "unexpected schema 'verdict.run-receipt/v2'",
        f"schema {M}",
    ]


def test_unknown_graph_node_key_cannot_rebuild(run: Path) -> None:
    graph = json.loads((run / "graph.json").read_text())
    graph["nodes"][1]["colour"] = "blue"
    (run / "graph.json").write_text(json.dumps(graph))
    problems = check_run_dir(run).problems
    assert problems == ["cannot rebuild receipt: graph node 'cli_flag': unknown key(s) ['colour']"]


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_any_changed_byte_is_reported_and_never_crashes(data) -> None:
    """Property: whatever single byte of events.jsonl changes, verification returns
    problems (never raises), and the first one is the events digest."""
    files = read_run_dir(DEMO)
    raw = bytearray(files.events)
    pos = data.draw(st.integers(0, len(raw) - 1))
    new = data.draw(st.integers(0, 255).filter(lambda b: b != raw[pos]))
    raw[pos] = new
    problems = verify_run_files(replace(files, events=bytes(raw)))
    assert problems[0] == DIGEST


@settings(max_examples=50, deadline=None)
@given(st.randoms(use_true_random=False), st.integers(0, 8))
def test_graph_digest_ignores_key_order_and_whitespace(rnd, indent) -> None:
    graph = json.loads((DEMO / "graph.json").read_text())

    def shuffle(value):
        if isinstance(value, dict):
            items = list(value.items())
            rnd.shuffle(items)
            return {k: shuffle(v) for k, v in items}
        return [shuffle(v) for v in value] if isinstance(value, list) else value

    text = json.dumps(shuffle(graph), indent=indent or None)
    assert graph_digest(canonical_graph(json.loads(text))) == graph_digest(canonical_graph(graph))


def test_strict_byte_check(run: Path) -> None:
    """§ 7's optional stricter check: the demo receipt is byte-identical; a re-indented
    copy still verifies structurally but fails the byte check (reported last)."""
    from replay.receipts.verify import STRICT_BYTES_PROBLEM

    assert check_run_dir(DEMO, strict=True).problems == []
    receipt = json.loads((run / "receipt.json").read_text())
    (run / "receipt.json").write_text(json.dumps(receipt, indent=4, sort_keys=True) + "\n")
    assert check_run_dir(run).problems == []
    assert check_run_dir(run, strict=True).problems == [STRICT_BYTES_PROBLEM]


# ------------------------------------------- where a mismatch lies (path, both values)


def _leaves(value: object, path: str = "") -> list[tuple[str, object]]:
    """Every string/number leaf of a receipt with its JSON path, written out here the
    way `receipt verify` is to name it: ``key.sub[0].leaf``."""
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in _leaves(v, f"{path}.{k}" if path else k)]
    if isinstance(value, list):
        return [leaf for i, v in enumerate(value) for leaf in _leaves(v, f"{path}[{i}]")]
    if isinstance(value, bool) or value is None:
        return []
    return [(path, value)]


def _one_byte_changed(value: str | int | float) -> str | int | float:
    if isinstance(value, str):
        return value[:-1] + ("x" if value[-1:] != "x" else "y")  # "" becomes "x"
    return value + 1  # 0 -> 1, 0.0 -> 1.0: one digit


def test_one_byte_change_to_a_receipt_field_is_reported_with_its_path_and_both_values(
    run: Path,
) -> None:
    """The problem names the top-level field (verdict-core FORMAT.md § 7) and the CLI shows
    where beneath it, with the stored and the recomputed value."""
    raw = (run / "receipt.json").read_bytes()
    old = b'"route_identity": "match"'
    assert raw.count(old) == 2
    (run / "receipt.json").write_bytes(raw.replace(old, b'"route_identity": "matcx"', 1))
    res = CliRunner().invoke(main, ["receipt", "verify", str(run)])
    assert res.exit_code == 1
    # the verdict line, the problem, the difference beneath it; then what an unsigned
    # receipt does and does not prove (README § Security)
    assert res.output.splitlines()[1:3] == [
        f"integrity: nodes {M}",
        '  nodes[0].attempts[2].route_identity: stored "matcx", rebuilt "match"',
    ]
    assert res.output.splitlines()[3].startswith("unsigned: ")
    res = CliRunner().invoke(main, ["receipt", "verify", str(run), "--json"])
    doc = json.loads(res.output)
    assert (doc["ok"], doc["problems"], doc["differences"]) == (
        False,
        [f"nodes {M}"],
        [{"path": "nodes[0].attempts[2].route_identity", "stored": "matcx", "rebuilt": "match"}],
    )


def test_a_key_the_reader_does_not_write_shows_as_absent(run: Path) -> None:
    """A reader gap (the receipt has a key the rebuild does not project) reads
    differently from a tamper: the rebuilt side is ``(absent)``, and --json leaves
    that side's value out instead of writing a null."""
    receipt = json.loads((run / "receipt.json").read_text())
    receipt["nodes"][2]["attempts"][0]["harness"] = "mech"
    (run / "receipt.json").write_text(json.dumps(receipt, indent=2, sort_keys=True) + "\n")
    res = CliRunner().invoke(main, ["receipt", "verify", str(run)])
    differences = [line for line in res.output.splitlines() if line.startswith("  nodes")]
    assert differences == ['  nodes[2].attempts[0].harness: stored "mech", rebuilt (absent)']
    res = CliRunner().invoke(main, ["receipt", "verify", str(run), "--json"])
    assert json.loads(res.output)["differences"] == [
        {"path": "nodes[2].attempts[0].harness", "stored": "mech"}
    ]


def test_every_leaf_changed_by_one_byte_is_named(run: Path) -> None:
    """Every string/number leaf of the demo receipt (except ``events_digest``, checked
    against the log's bytes instead), changed by one byte, is reported at exactly its
    path with both values; and the demo run itself has no difference."""
    from replay.receipts.verify import check_run_files

    files = read_run_dir(DEMO)
    assert check_run_files(files).differences == []
    receipt = json.loads(files.receipt)
    leaves = [(p, v) for p, v in _leaves(receipt) if p != "events_digest"]
    assert len(leaves) > 150
    for path, value in leaves:
        changed = _one_byte_changed(value)
        tampered = _set(receipt, path, changed)
        result = check_run_files(replace(files, receipt=json.dumps(tampered).encode()))
        top = path.split(".")[0].split("[")[0]
        assert f"{top} {M}" in result.problems, path
        assert [(d.path, d.stored, d.rebuilt) for d in result.differences] == [
            (path, changed, value)
        ], path


def _set(receipt: dict, path: str, value: object) -> dict:
    """A deep copy of ``receipt`` with the leaf at ``path`` replaced."""
    import re

    copy = json.loads(json.dumps(receipt))
    steps = [int(i) if i else k for k, i in re.findall(r"([^.\[\]]+)|\[(\d+)\]", path)]
    target = copy
    for step in steps[:-1]:
        target = target[step]
    target[steps[-1]] = value
    return copy


def test_receipt_differences_paths_and_equality() -> None:
    """Paths are ``key.sub[i]`` (a key that is not an identifier is quoted in brackets);
    equality is § 7's (``1 == 1.0``); a top-level key missing on one side reads as null
    (§ 7 step 7), a nested one is absent; extra list items are absent on the other side."""
    from replay.receipts.verify import ABSENT, receipt_differences

    stored = {
        "a": {"x-y": 1, "n": 1.0, "gone": None},
        "b": [1, 2, 3],
        "c": None,
    }
    rebuilt = {"a": {"x-y": 2, "n": 1}, "b": [1, 5]}
    got = [(d.path, d.stored, d.rebuilt) for d in receipt_differences(stored, rebuilt)]
    assert got == [
        ("a.gone", None, ABSENT),
        ('a["x-y"]', 1, 2),
        ("b[1]", 2, 5),
        ("b[2]", 3, ABSENT),
    ]


def test_text_output_shows_the_first_20_differences_and_counts_the_rest() -> None:
    from ledger.cli.verdict import difference_lines
    from replay.receipts.verify import Difference

    lines = difference_lines([Difference(f"cooldowns[{i}].until", "a" * 200, i) for i in range(23)])
    assert len(lines) == 21
    assert lines[0] == f'  cooldowns[0].until: stored "{"a" * 118}…, rebuilt 0'
    assert lines[-1] == "  … and 3 more difference(s) (--json lists all)"


def test_a_run_file_given_instead_of_its_directory_names_the_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`receipt verify RUN/receipt.json` says to pass RUN; it was looked up as a ledger
    event id and refused as "no receipt event with seq or event_id" (or "no ledger")."""
    monkeypatch.chdir(tmp_path)  # no ledger here
    target = VCORE_DEMO_RUN / "receipt.json"
    res = CliRunner().invoke(main, ["receipt", "verify", str(target)])
    assert res.exit_code == 1 and isinstance(res.exception, SystemExit)
    assert "is a file" in res.stderr and repr(str(VCORE_DEMO_RUN)) in res.stderr
