"""Hostile inputs to the readers, in-process: every variant of each class, and hypothesis fuzzing.

The subprocess tests (test_readers_hostile.py) drive the CLI once or twice per class;
here every variant goes through the same ``ingest`` the CLI calls, asserting the typed
refusal names the file (and line), echoes nothing from outside, and appends nothing.
The fuzzers feed the JSONL, YAML and verdict-core readers arbitrary bytes: each either
reads or raises its typed error, never anything else, and the ledger is unchanged.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ledger.app.ingest import IngestError
from ledger.app.ingest import ingest_into as ingest
from ledger.log.store import open_ledger
from ledger.sources import strict_json
from ledger.sources.files import InputError, read_input
from ledger.sources.shape import BundleError
from ledger.sources.verdict_core import parse_events_file
from ledger.sources.yaml_safe import load_yaml_bytes
from tests.adversarial.readers_harness import SECRET, bundle_copy, pack_copy, run_copy


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("values") / "L"
    open_ledger(path, create=True).close()
    return path


def _refused(ledger: Path, inp: Path, *named: str, hidden: tuple[str, ...] = (SECRET,)) -> str:
    with open_ledger(ledger) as lg:
        size = lg.size()
        with pytest.raises(IngestError) as exc:
            ingest(lg, [inp])
        assert lg.size() == size
    text = str(exc.value)
    for name in named:
        assert name in text, (name, text)
    for secret in hidden:
        assert secret not in text, (secret, text)
    return text


@pytest.fixture(scope="module")
def secret_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("outside") / "secret.yaml"
    path.write_text(f"token: {SECRET}\n")
    return path


# ------------------------------------------------------------------------ 1: confinement


@pytest.mark.parametrize("name", ["trajectory.yaml", "task.yaml", "tool_log.yaml", "grade.yaml"])
def test_a_bundle_file_linked_outside_is_refused(
    ledger: Path, secret_file: Path, tmp_path: Path, name: str
) -> None:
    b = bundle_copy(tmp_path / "b")
    (b / name).unlink()
    (b / name).symlink_to(secret_file)
    _refused(ledger, b, f"b/{name}", "outside", hidden=(SECRET, str(secret_file)))


def test_a_task_snapshot_linked_to_etc_passwd_prints_nothing_of_it(
    ledger: Path, tmp_path: Path
) -> None:
    b = bundle_copy(tmp_path / "b")
    (b / "task.yaml").unlink()
    (b / "task.yaml").symlink_to("/etc/passwd")
    _refused(ledger, b, "b/task.yaml", hidden=("root:", "/etc/passwd"))


def test_a_dangling_link_is_refused_not_read_as_absent(ledger: Path, tmp_path: Path) -> None:
    b = bundle_copy(tmp_path / "b")
    (b / "metrics.yaml").unlink()
    (b / "metrics.yaml").symlink_to(tmp_path / "nowhere" / "metrics.yaml")
    _refused(ledger, b, "b/metrics.yaml", hidden=("nowhere",))


def test_a_link_inside_the_bundle_is_read(ledger: Path, tmp_path: Path) -> None:
    b = bundle_copy(tmp_path / "b")
    (b / "metrics.yaml").rename(b / "metrics.real.yaml")
    (b / "metrics.yaml").symlink_to("metrics.real.yaml")
    with open_ledger(ledger) as lg:
        assert ingest(lg, [b]).trials_new == 1


@pytest.mark.parametrize("kind", ["absolute", "dotdot", "link"])
def test_a_pack_grading_file_outside_the_pack_is_refused(
    ledger: Path, secret_file: Path, tmp_path: Path, kind: str
) -> None:
    p = pack_copy(tmp_path / "p")
    task = yaml.safe_load((p / "task.yaml").read_text())
    value = {
        "absolute": str(secret_file),
        "dotdot": os.path.relpath(secret_file, p),
        "link": "linked.yaml",
    }[kind]
    if kind == "link":
        (p / "linked.yaml").symlink_to(secret_file)
    (p / "task.yaml").write_text(yaml.safe_dump({**task, "grading": value}))
    _refused(ledger, p, "p/task.yaml", "'grading'", hidden=(SECRET, str(secret_file.parent)))


def test_a_run_file_linked_outside_is_refused(
    ledger: Path, secret_file: Path, tmp_path: Path
) -> None:
    run = run_copy(tmp_path / "run")
    (run / "graph.json").unlink()
    (run / "graph.json").symlink_to(secret_file)
    _refused(ledger, run, "run/graph.json", "outside")


# --------------------------------------------------------------------- 2: bounded reading


def test_a_fifo_is_refused_without_blocking(ledger: Path, tmp_path: Path) -> None:
    b = bundle_copy(tmp_path / "b")
    (b / "metrics.yaml").unlink()
    os.mkfifo(b / "metrics.yaml")  # no writer: a blocking open would wait forever
    _refused(ledger, b, "b/metrics.yaml", "FIFO")


def test_a_directory_where_a_file_belongs_is_refused(ledger: Path, tmp_path: Path) -> None:
    b = bundle_copy(tmp_path / "b")
    (b / "metrics.yaml").unlink()
    (b / "metrics.yaml").mkdir()
    _refused(ledger, b, "b/metrics.yaml", "directory")


def test_a_scalar_alias_bomb_is_refused_by_expanded_size(ledger: Path, tmp_path: Path) -> None:
    b = bundle_copy(tmp_path / "b")
    bomb = f"a: &s {'x' * 100_000}\nb: [" + ", ".join(["*s"] * 3000) + "]\n"
    (b / "metrics.yaml").write_text(bomb)  # 3,001 nodes; 300 M characters expanded
    _refused(ledger, b, "b/metrics.yaml", "characters")


def test_modest_reuse_through_aliases_still_loads() -> None:
    text = "base: &b {k: " + "v" * 1000 + "}\n" + "".join(f"u{i}: *b\n" for i in range(20))
    assert len(load_yaml_bytes(text.encode(), "x.yaml")) == 21


def test_the_reader_never_reads_past_its_limit(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_bytes(b"x" * 101)
    with pytest.raises(InputError, match="over the 100-byte limit"):
        read_input(f, max_bytes=100)
    assert read_input(f, max_bytes=101) == b"x" * 101
    with pytest.raises(InputError, match="character device"):
        read_input(Path("/dev/zero"), max_bytes=100)


# ----------------------------------------------------------------- 7: faithful or refused


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        ("turns: 1\nturns: 2\n", "metrics.yaml:2", "'turns' is written twice"),
        ("a: {b: 1, b: 1}\n", "metrics.yaml:1", "'b' is written twice"),
        ("base: &b {k: 1}\nm:\n  <<: *b\n  x: 1\n  x: 2\n", "metrics.yaml:5", "twice"),
        ("turns: 9223372036854775808\n", "metrics.yaml:1", "signed 64-bit"),
        ("turns: -9223372036854775809\n", "metrics.yaml:1", "signed 64-bit"),
        ("turns: 0x10000000000000000\n", "metrics.yaml:1", "signed 64-bit"),
        ("turns: 1.0e+400\n", "metrics.yaml:1", "non-finite"),
        ("turns: [1, .nan]\n", "metrics.yaml:1", "non-finite"),
        ("turns: -.inf\n", "metrics.yaml:1", "non-finite"),
    ],
)
def test_yaml_values_are_kept_exactly_or_refused_by_line(
    ledger: Path, tmp_path: Path, text: str, where: str, what: str
) -> None:
    b = bundle_copy(tmp_path / "b")
    (b / "metrics.yaml").write_text(text)
    _refused(ledger, b, where, what)


def test_the_edges_of_the_signed_64_bit_range_are_kept() -> None:
    doc = b"lo: -9223372036854775808\nhi: 9223372036854775807\n"
    assert load_yaml_bytes(doc, "x.yaml") == {"lo": -(2**63), "hi": 2**63 - 1}
    assert strict_json.loads(b"[-9223372036854775808, 9223372036854775807]", "x") == [
        -(2**63),
        2**63 - 1,
    ]


@pytest.mark.parametrize(
    ("token", "what"),
    [
        ("NaN", "NaN"),
        ("Infinity", "Infinity"),
        ("-Infinity", "-Infinity"),
        ("1e999", "infinity"),
        ("9223372036854775808", "64-bit"),
        ('{"k": 1, "k": 1}', "'k' is written twice"),
    ],
)
@pytest.mark.parametrize("file", ["events.jsonl", "graph.json", "receipt.json"])
def test_verdict_core_values_are_kept_exactly_or_refused(
    ledger: Path, tmp_path: Path, token: str, what: str, file: str
) -> None:
    run = run_copy(tmp_path / "run")
    if file == "events.jsonl":
        lines = (run / file).read_text().splitlines()
        ev = json.loads(lines[2])
        ev["data"]["x"] = "PLACEHOLDER"
        lines[2] = json.dumps(ev).replace('"PLACEHOLDER"', token)
        (run / file).write_text("\n".join(lines) + "\n")
        named: tuple[str, ...] = ("run/events.jsonl", "line 3")
    else:
        doc = json.loads((run / file).read_text())
        doc["x"] = "PLACEHOLDER"
        (run / file).write_text(json.dumps(doc).replace('"PLACEHOLDER"', token))
        named = (f"run/{file}",)
    _refused(ledger, run, *named, what)


# ----------------------------------------------------------------------- 10: deep nesting


@pytest.mark.parametrize("depth", [300, 100_000])
@pytest.mark.parametrize("file", ["metrics.yaml", "graph.json", "events.jsonl"])
def test_deep_nesting_is_a_named_refusal(
    ledger: Path, tmp_path: Path, depth: int, file: str
) -> None:
    if file == "metrics.yaml":
        inp = bundle_copy(tmp_path / "b")
        (inp / file).write_text("x: " + "[" * depth + "]" * depth + "\n")
    else:
        inp = run_copy(tmp_path / "b")
        if file == "graph.json":
            (inp / file).write_text('{"x": ' + "[" * depth + "]" * depth + "}")
        else:
            lines = (inp / file).read_text().splitlines()
            lines[0] = '{"seq": 0, "type": "t", "data": {"x": ' + "[" * depth + "]" * depth
            lines[0] += "}}"
            (inp / file).write_text("\n".join(lines) + "\n")
    _refused(ledger, inp, f"b/{file}", "nesting")


# -------------------------------------------------------------------------------- fuzzing

_FUZZ = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
_TOKENS = st.sampled_from(
    ["{", "}", "[", "]", ",", ":", '"k"', '"k"', "1", "-1", "1.5", "1e400", "NaN", "Infinity",
     "null", "true", "18446744073709551616", "9223372036854775807", '"\\u0000"', " ", "\n"]
)  # fmt: skip


def _json_ish() -> st.SearchStrategy[str]:
    return st.one_of(
        st.lists(_TOKENS, max_size=40).map("".join),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
            lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=3), c, max_size=4),
            max_leaves=20,
        ).map(lambda v: json.dumps(v, allow_nan=True)),
    )


@_FUZZ
@given(text=_json_ish())
@example(text='{"a": 1, "a": 1}')
@example(text="[" * 5000)
def test_fuzz_strict_json_reads_faithfully_or_raises_its_typed_error(text: str) -> None:
    try:
        value = strict_json.loads(text, "f.json", line=1)
    except strict_json.JsonInputError as exc:
        assert exc.path == "f.json" and exc.line == 1
        return
    # what it accepts is exactly JSON: the standard parser agrees, value for value
    assert value == json.loads(text)
    json.dumps(value, allow_nan=False)  # raises on NaN / Infinity anywhere
    assert all(-(2**63) <= n < 2**63 for n in _ints(value))


def _ints(value: object) -> list[int]:
    if isinstance(value, dict):
        return [n for v in value.values() for n in _ints(v)]
    if isinstance(value, list):
        return [n for v in value for n in _ints(v)]
    return [value] if isinstance(value, int) and not isinstance(value, bool) else []


@_FUZZ
@given(data=st.one_of(st.binary(max_size=200), _json_ish().map(str.encode),
                      st.text(alphabet="&*ab:- [\n]{},!.", max_size=60).map(str.encode)))  # fmt: skip
@example(data=b"a: &a [1, *a]\n")
@example(data=b"a: 1\na: 2\n")
def test_fuzz_yaml_reads_or_raises_its_typed_error(data: bytes) -> None:
    try:
        load_yaml_bytes(data, "f.yaml")
    except InputError as exc:
        assert exc.path == "f.yaml"


@_FUZZ
@given(lines=st.lists(_json_ish(), min_size=1, max_size=4))
def test_fuzz_events_jsonl_reads_or_raises_bundle_error(lines: list[str]) -> None:
    data = "\n".join(lines).encode()
    try:
        parse_events_file(data, "run/events.jsonl")
    except BundleError as exc:
        assert exc.file == "run/events.jsonl"


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(line=_json_ish())
def test_fuzz_verdict_core_ingest_leaves_the_ledger_unchanged_on_refusal(
    ledger: Path, tmp_path_factory: pytest.TempPathFactory, line: str
) -> None:
    run = run_copy(tmp_path_factory.mktemp("fuzz") / "run")
    lines = (run / "events.jsonl").read_text().splitlines()
    (run / "events.jsonl").write_text("\n".join([*lines[:3], line, *lines[3:]]) + "\n")
    with open_ledger(ledger) as lg:
        size = lg.size()
        try:
            ingest(lg, [run])
        except IngestError as exc:
            assert lg.size() == size
            assert "run/events.jsonl" in str(exc) or "run" in exc.source


def test_a_name_holding_control_characters_is_escaped_in_the_refusal(
    ledger: Path, tmp_path: Path
) -> None:
    b = bundle_copy(tmp_path / "b\nError: forged\x1b[2K")
    (b / "metrics.yaml").write_text("turns: 1\nturns: 2\n")
    text = _refused(ledger, b, "metrics.yaml:2")
    assert "\n" not in text and "\x1b" not in text
    assert "\\x0aError: forged\\x1b[2K" in text


# ------------------------------------------- the other readers: append, receipt verify


def test_append_and_receipt_verify_refuse_devices_links_and_deep_documents(
    secret_file: Path, tmp_path: Path
) -> None:
    from ledger.app.receipts import check_run_dir
    from ledger.app.store_ops import read_jsonl
    from ledger.errors import LedgerError

    with pytest.raises(LedgerError, match="character device"):
        read_jsonl(Path("/dev/zero"))
    run = run_copy(tmp_path / "zero")
    (run / "receipt.json").unlink()
    (run / "receipt.json").symlink_to("/dev/zero")
    assert any("receipt.json" in p and "outside" in p for p in check_run_dir(run).problems)
    run = run_copy(tmp_path / "linked")
    (run / "graph.json").unlink()
    (run / "graph.json").symlink_to(secret_file)
    problems = check_run_dir(run).problems
    assert problems and not any(SECRET in p or str(secret_file) in p for p in problems)
    run = run_copy(tmp_path / "deep")
    (run / "graph.json").write_text("[" * 100_000 + "]" * 100_000)
    assert any("graph.json" in p for p in check_run_dir(run).problems)
