"""The output rules (ledger/cli/output.py) and the commands a newcomer pipes.

Expected values here are written from the rules (README.md § CLI reference, cited by the
module docstring), not from a run.
"""

from __future__ import annotations

import contextlib
import io
import re
import shutil
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.generate_corpus import generate
from ledger.cli import main
from ledger.cli.output import (
    cut,
    error,
    fit_widths,
    fmt_number,
    render_table,
    terminal_width,
)

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT / "corpora"
RAW_FLOAT = re.compile(r"\d\.\d{4,}")  # more than three decimals: an unrounded float


# --- the rules themselves -------------------------------------------------------------


@pytest.mark.parametrize(
    "value, text",
    [
        (0.7999999999999999, "0.800"),
        (1.0, "1.000"),
        (1, "1"),
        (0, "0"),
        (2 / 3, "0.667"),
        (-0.00001, "0.000"),
        (True, "True"),
        (None, "None"),
        ("0.12345", "0.12345"),  # text is never re-rounded
        (float("nan"), "nan"),
    ],
)
def test_one_rounding_rule(value: object, text: str) -> None:
    assert fmt_number(value) == text


def test_not_a_terminal_means_no_width_limit() -> None:
    import io

    assert terminal_width(io.StringIO()) is None


def test_nothing_is_cut_without_a_terminal() -> None:
    long = "x" * 300
    text = render_table(["id", "value"], [[long, 1]], width=None)
    assert long in text
    assert "…" not in text


def test_a_terminal_table_fits_its_width_and_cuts_the_widest_column_first() -> None:
    rows = [["trial/" + "a" * 120, "short", 12345]]
    text = render_table(["trial", "class", "n"], rows, width=60)
    assert all(len(line) <= 60 for line in text.splitlines())
    body = text.splitlines()[2]
    assert "…" in body and "short" in body and "12345" in body  # only the long cell is cut


def test_widths_never_go_below_the_floor() -> None:
    # 3 columns of 50 into 20 columns cannot fit; each stops at 8 rather than vanish
    assert fit_widths([50, 50, 50], 20) == [8, 8, 8]
    assert fit_widths([3, 50], 30) == [3, 25]
    assert fit_widths([10, 10], None) == [10, 10]


def test_cut_marks_the_cut() -> None:
    assert cut("abcdef", 4) == "abc…"
    assert cut("abc", 4) == "abc"


def test_numbers_align_right_and_are_rounded_in_tables() -> None:
    text = render_table(["k", "pass_at_k"], [[1, 0.7999999999999999], [10, 1.0]], width=None)
    lines = text.splitlines()
    assert lines[2] == " 1      0.800"
    assert lines[3] == "10      1.000"


def test_a_line_break_in_a_cell_keeps_the_row_on_one_line() -> None:
    text = render_table(["a"], [["one\ntwo"]], width=None)
    assert text.splitlines()[2] == "one\\ntwo"


# --- 3, 4: reconcile's default packs and its result on stdout -------------------------


def _copy_corpora(tmp_path: Path) -> Path:
    shutil.copytree(
        CORPORA / "notes_duplicate_check", tmp_path / "corpora" / "notes_duplicate_check"
    )
    shutil.copytree(CORPORA / "packs", tmp_path / "corpora" / "packs")
    return tmp_path


def test_reconcile_without_packs_uses_the_shipped_packs_and_says_so(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(_copy_corpora(tmp_path))
    res = CliRunner().invoke(main, ["reconcile", "--dry-run"])
    assert res.exit_code == 0, res.output
    assert "packs: ./corpora/packs (default" in res.stderr
    assert "no_counter_evidence over 17 observations" in res.stdout  # the report: stdout


def test_reconcile_without_packs_where_there_are_none_is_a_usage_error(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["reconcile", "--dry-run"])
    assert res.exit_code == 2
    assert "pass --packs DIR" in res.stderr
    assert not (tmp_path / "examples").exists()


def test_reconcile_redirected_keeps_the_report(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(_copy_corpora(tmp_path))
    assert CliRunner().invoke(main, ["init", "--ledger", "L"]).exit_code == 0
    res = CliRunner().invoke(main, ["reconcile", "--packs", "corpora/packs", "--ledger", "L"])
    assert res.exit_code == 0, res.output
    assert "declared narrowed, no_counter_evidence over 17 observations" in res.stdout
    assert "kappa 1.000" in res.stdout
    assert "no_counter_evidence" not in res.stderr


# --- 5: retrace piped -------------------------------------------------------------------


@pytest.fixture(scope="module")
def mixed_source(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """40 generated trials, 3 of them with an altered recorded grade, plus 6 bundles whose
    trajectory cannot be read (not re-checked: the noise the disagreements must stand out of)."""
    src = tmp_path_factory.mktemp("mixed") / "src"
    altered = generate(src, trials=40, seed=11, alter=3)
    some = next(p for p in src.rglob("trajectory.yaml")).parent
    for i in range(6):
        broken = src / f"broken_{i}"
        shutil.copytree(some, broken)
        (broken / "trajectory.yaml").write_text("messages: [\n")
    return src, sorted(altered)


def test_piped_retrace_puts_each_disagreement_on_one_line_and_counts_the_rest(
    mixed_source: tuple[Path, list[str]], tmp_path: Path
) -> None:
    src, altered = mixed_source
    res = CliRunner().invoke(
        main, ["retrace", "--ledger", str(tmp_path / "L"), "--source", str(src)]
    )
    assert res.exit_code == 1, res.output  # unreadable bundles: exit 1 (README)
    out = res.stdout.splitlines()
    disagreed = [line for line in out if line.startswith("disagreed ")]
    # each altered trial is named on a line that also carries what differs
    for name in altered:
        lines = [line for line in disagreed if line.split()[1].endswith("/" + name)]
        assert lines, f"no disagreement line for {name}:\n{res.stdout}"
        assert all(re.search(r" recorded \S+, replayed \S+$", line) for line in lines)
    # the six unreadable bundles are one line, not six
    noise = [line for line in out if line.startswith("not_rechecked ")]
    assert len(noise) == 1 and noise[0].startswith("not_rechecked 6 trials: unreadable bundle")
    assert "(and 5 more; every one in --json)" in noise[0]
    # the generator leaves some bundles without grade.yaml: those are ungraded (README)
    bundles = [
        p.parent for p in src.rglob("trajectory.yaml") if not p.parent.name.startswith("broken")
    ]
    ungraded = sum(not (b / "grade.yaml").exists() for b in bundles)
    counts = f"3 disagreed, {40 - 3 - ungraded} agreed" + (
        f", {ungraded} ungraded" if ungraded else ""
    )
    assert out[0].endswith(f"— 46 trials: {counts}, 6 not_rechecked"), out[0]
    assert not RAW_FLOAT.search(res.stdout), res.stdout
    assert "ingest:" not in res.stdout  # progress and diagnostics: stderr


def test_piped_retrace_never_wraps_a_long_line(tmp_path: Path) -> None:
    res = CliRunner().invoke(
        main,
        [
            "retrace",
            "--ledger",
            str(tmp_path / "L"),
            "--source",
            str(CORPORA / "notes_duplicate_check"),
            "--constraints",
            str(CORPORA / "packs" / "notes_duplicate_check_narrowed" / "grading.yaml"),
        ],
    )
    assert res.exit_code == 0, res.output
    # a constraint row holds the task id, the constraint id and its counts on one line
    row = next(
        line for line in res.stdout.splitlines() if "notes_add_note_duplicate_check_gated" in line
    )
    assert "the_notes_were_listed_before_the_note_was_added" in row and "always_false" in row
    assert len(row) > 80


# --- 6: sql through the one renderer, sized to the terminal -----------------------------

LONG_SQL = "SELECT repeat('x', 200) AS long_text, 0.7999999999999999 AS score, 3 AS n"


def test_sql_to_a_pipe_cuts_no_cell_and_rounds_numbers(tmp_path: Path) -> None:
    assert CliRunner().invoke(main, ["init", "--ledger", str(tmp_path / "L")]).exit_code == 0
    res = CliRunner().invoke(main, ["sql", "--ledger", str(tmp_path / "L"), LONG_SQL])
    assert res.exit_code == 0, res.output
    row = res.stdout.splitlines()[2]
    assert "x" * 200 in row and "…" not in row  # the old renderer cut every cell at 60
    assert row.endswith("0.800  3")
    exact = CliRunner().invoke(main, ["sql", "--ledger", str(tmp_path / "L"), LONG_SQL, "--json"])
    assert '"score": 0.7999999999999999' in exact.stdout  # JSON is never rounded


def test_sql_on_a_terminal_fits_its_width(tmp_path: Path, monkeypatch) -> None:
    import ledger.cli.analytics as sql_cli

    monkeypatch.setattr(sql_cli, "terminal_width", lambda: 60)
    assert CliRunner().invoke(main, ["init", "--ledger", str(tmp_path / "L")]).exit_code == 0
    res = CliRunner().invoke(main, ["sql", "--ledger", str(tmp_path / "L"), LONG_SQL])
    assert res.exit_code == 0, res.output
    assert all(len(line) <= 60 for line in res.stdout.splitlines()), res.stdout
    assert "…" in res.stdout.splitlines()[2]


def test_one_table_renderer() -> None:
    """retrace and sql print tables through the same function; no rich table remains."""
    import ledger.cli.analytics as sql_cli
    import ledger.cli.output as output
    import ledger.cli.retrace as retrace_cli

    assert sql_cli.render_table is output.render_table is retrace_cli.render_table
    for module in (ROOT / "ledger" / "cli").glob("*.py"):
        assert "rich.table" not in module.read_text(), module


def test_every_error_line_goes_through_the_one_escaping_rule() -> None:
    """Rule 6: no CLI module writes its own ``Error:`` line (a message can quote a bundle's
    bytes, and only ledger.cli.output.error escapes them)."""
    import re

    own = {
        str(p.relative_to(ROOT)): n
        for p in (ROOT / "ledger" / "cli").glob("*.py")
        if p.name != "output.py"
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if re.search(r"""f?["']Error: ?\{""", line) and "escape_controls" not in line
    }
    assert own == {}


def test_grade_errors_follow_the_group_rule(tmp_path: Path) -> None:
    """``vledger grade`` leaves its LedgerErrors to the group: the Error line is escaped like
    every other (it quotes the argument) and exits with the error's own code. Wrapped in a
    click.ClickException, it would print the argument's raw bytes."""
    ledger_dir = str(tmp_path / "L")
    assert CliRunner().invoke(main, ["init", "--ledger", ledger_dir]).exit_code == 0
    res = CliRunner().invoke(main, ["grade", "trial/x\x1b[2J", "--ledger", ledger_dir])
    assert res.exit_code == 1, res.output
    assert "\x1b" not in res.output
    assert "Error: trial/x\\x1b[2J: no such trial stream" in res.output
    assert not isinstance(res.exception, click.ClickException)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(
    doc=st.dictionaries(st.text(max_size=6), _JSON | st.lists(_JSON, max_size=4), max_size=5),
    data=st.data(),
)
def test_a_streamed_document_is_json_text_byte_for_byte(doc: dict, data: st.DataObject) -> None:
    """write_json_document writes json_text's bytes, whichever lists, at any depth, are views
    that it streams item by item (retrace --json's parked trial rows, reconcile's rows)."""
    import io

    from ledger.cli.output import json_text, write_json_document
    from tests.views_strategy import with_views

    out = io.StringIO()
    write_json_document(with_views(doc, data), out)
    assert out.getvalue() == json_text(doc)


def test_a_streamed_document_with_non_string_keys_falls_back_whole() -> None:
    import io
    from pathlib import PurePosixPath

    from ledger.cli.output import json_text, write_json_document
    from schemas.views import Mapped

    # a value only json_text's default spells (a path), with and without a view beside it
    for doc in ({}, {1: [1, 2], "a": {}}, {"p": PurePosixPath("a/b")}):
        out = io.StringIO()
        write_json_document(doc, out)
        assert out.getvalue() == json_text(doc)
    out = io.StringIO()
    write_json_document({"p": PurePosixPath("a/b"), "v": Mapped([1], lambda x: x)}, out)
    assert out.getvalue() == json_text({"p": "a/b", "v": [1]})


@settings(max_examples=200)
@given(st.lists(st.text(st.characters(exclude_characters="\n"), max_size=30), min_size=1, max_size=4))
def test_an_error_keeps_its_lines_and_no_text_starts_one(parts: list[str]) -> None:
    """Rule 6 for a message that lists problems one per line: the lines stay lines, each
    escaped on its own, and every one after the ``Error:`` line is indented, so no text a
    message quotes (a line break, a CR, an escape sequence) can begin a line of its own."""
    with contextlib.redirect_stderr(io.StringIO()) as out:
        error("\n".join(parts))
    err = out.getvalue()
    head, *rest = err.removesuffix("\n").split("\n")
    assert head.startswith("Error: ") and len(rest) == len(parts) - 1
    assert all(line.startswith("  ") for line in rest)
    assert not any(c in err for c in "\r\x1b\x85\u2028\u2029")
