"""``vledger report``: one self-contained HTML page whose plots draw in a real browser."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from ledger.analytics import report, report_charts
from ledger.cli import main
from tests.analytics_fixtures import (
    admission,
    check,
    recorded_grade,
    replay_events,
    replayed_grade,
    trial_events,
    trial_stream,
    write_ledger,
)

PANEL_TITLES = [
    "Score distribution per model",
    "Pass rate per task × model",
    "pass@k per task",
    "Constraint separation (latest retrace)",
    "Judge vs constraint agreement",
    "Replay vs recorded disagreements over time",
    "Verdict-grade distribution",
    "Trials",
]


def _history() -> list:
    ev, task_of, verdict = [], {}, {}
    for task in ("notes_gated", "notes_policy", "refund"):
        for i in range(6):
            passed = (i + len(task)) % 3 != 0
            g = recorded_grade(
                0.9 if passed else 0.1,
                passed,
                criteria=[("checked_first", passed, 1.0 if passed else 0.0)],
            )
            ev += trial_events(
                "c",
                task,
                i,
                model=("m-a", "m-b")[i % 2],
                grade=g,
                tools=[("list_notes", "success", 0.1 * i)],
                termination="rate_limit" if i == 5 else "user_stop",
            )
            s = trial_stream("c", task, i)
            task_of[s], verdict[s] = task, passed
    for r, flip in (("r1", set()), ("r2", {"trial/c/refund/0", "trial/c/notes_gated/1"})):
        ev += replay_events(
            r,
            {
                s: replayed_grade(
                    0.9 if (p ^ (s in flip)) else 0.1,
                    p ^ (s in flip),
                    checks=[
                        check("listed_first", "pass" if p else "fail"),
                        check("quiet", "undecided" if s.endswith("2") else "pass"),
                    ],
                )
                for s, p in verdict.items()
            },
            task_of=task_of,
        )
    ev += [admission("u1", "proof"), admission("u2", "known_answer"), admission("u3", "unverified")]
    return ev


@pytest.fixture(scope="module")
def full_ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_ledger(tmp_path_factory.mktemp("rep") / "lg", _history())


@pytest.fixture(scope="module")
def empty_ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_ledger(tmp_path_factory.mktemp("rep-empty") / "lg", [])


class _Sections(HTMLParser):
    """Per <section>: its title, and how many drawn SVG shapes / 'no data' notes it holds."""

    SHAPES = frozenset({"rect", "circle", "polyline", "line", "path"})

    def __init__(self) -> None:
        super().__init__()
        self.sections: list[dict] = []
        self._in_h2 = False
        self._svg_depth = 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if tag == "section":
            self.sections.append(
                {
                    "title": "",
                    "svgs": 0,
                    "shapes": 0,
                    "nodata": 0,
                    "page": a.get("class") == "trial",
                }
            )
        elif not self.sections:
            return
        elif tag == "h2":
            self._in_h2 = True
        elif tag == "svg":
            self.sections[-1]["svgs"] += 1
            self._svg_depth += 1
        elif tag in self.SHAPES and self._svg_depth:
            self.sections[-1]["shapes"] += 1
        elif tag == "div" and a.get("class") == "nodata":
            self.sections[-1]["nodata"] += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "h2":
            self._in_h2 = False
        elif tag == "svg":
            self._svg_depth -= 1

    def handle_data(self, data: str) -> None:
        if self._in_h2 and self.sections:
            self.sections[-1]["title"] += data


def _sections(html: str) -> list[dict]:
    """The panels (a trial's own page is a section too, but not a panel)."""
    p = _Sections()
    p.feed(html)
    return [s for s in p.sections if not s["page"]]


TABLE_PANELS = {"Trials"}  # panels that are a table, not a plot


def test_report_has_every_panel_drawn(full_ledger: Path) -> None:
    html, summary = report.render(full_ledger)
    secs = _sections(html)
    assert [s["title"] for s in secs] == PANEL_TITLES
    for s in secs:
        if s["title"] not in TABLE_PANELS:
            assert s["svgs"] >= 1 and s["shapes"] >= 3 and s["nodata"] == 0, s
    assert summary["panels_with_data"] == 8
    assert summary["trials"] == 18 and summary["aborts"] == 3 and summary["replays"] == 2


def test_report_is_self_contained(full_ledger: Path) -> None:
    html, _ = report.render(full_ledger)
    assert "<script" not in html.lower()
    assert not re.search(r"\bsrc\s*=", html, re.IGNORECASE)
    # links only within the page (a trial's section): nothing to fetch
    hrefs = re.findall(r"\bhref\s*=\s*\"([^\"]*)\"", html, re.IGNORECASE)
    assert hrefs and all(h.startswith("#") for h in hrefs)
    assert len(re.findall(r"\bhref\s*=", html, re.IGNORECASE)) == len(hrefs)
    assert "url(" not in html and "@import" not in html
    # the only URL is the SVG namespace, which is a name, not a fetch
    assert set(re.findall(r"https?://[^\s\"'<>]+", html)) == {"http://www.w3.org/2000/svg"}
    assert "default-src 'none'" in html  # and the page forbids loading anything anyway


def test_report_is_a_function_of_the_log(full_ledger: Path) -> None:
    assert report.render(full_ledger)[0] == report.render(full_ledger)[0]


def test_report_numbers_come_from_the_views(full_ledger: Path) -> None:
    html, _ = report.render(full_ledger)
    # replay r2 flipped exactly two verdicts (and so the judge score: 0.9 ↔ 0.1) relative
    # to the recorded grades
    assert (
        "latest: r2 re-derived 18 trial(s), 2 disagreed; differing components: llm_judge 2" in html
    )
    # notes_gated, model m-a: trials 0, 2, 4 measured (5 aborted); (i + 11) % 3 != 0 passes 0, 2
    assert "notes_gated · m-a: 2/3 passed, mean score 0.63" in html
    assert "checked_first × listed_first" in html and "κ=1.000" in html


def test_empty_ledger_gives_no_data_panels(empty_ledger: Path) -> None:
    html, summary = report.render(empty_ledger)
    secs = _sections(html)
    assert [s["title"] for s in secs] == PANEL_TITLES
    assert all(s["nodata"] == 1 and s["svgs"] == 0 for s in secs)
    assert summary["panels_with_data"] == 0
    assert "run `vledger retrace`" in html


def test_report_command_writes_the_file(full_ledger: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    r = CliRunner().invoke(main, ["report", "--ledger", str(full_ledger), "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "8 of 8 panels with data" in r.stdout
    assert out.read_text(encoding="utf-8") == report.render(full_ledger)[0]


def test_report_out_in_a_new_folder_is_written_and_an_unwritable_one_is_named(
    empty_ledger: Path, tmp_path: Path
) -> None:
    """--out makes its folder; an unwritable path is `Error:` naming it, exit 1 (a folder
    that did not exist once reached the user as a traceback)."""
    out = tmp_path / "new" / "r.html"
    r = CliRunner().invoke(main, ["report", "--ledger", str(empty_ledger), "--out", str(out)])
    assert r.exit_code == 0 and out.is_file(), r.output
    (tmp_path / "plain").write_text("")
    bad = tmp_path / "plain" / "r.html"
    r = CliRunner().invoke(main, ["report", "--ledger", str(empty_ledger), "--out", str(bad)])
    assert isinstance(r.exception, SystemExit) and r.exit_code == 1
    assert "Error: cannot write the report" in r.stderr and str(bad) in r.stderr


# --- in a real browser ---------------------------------------------------------------------

_BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def _find_browser() -> str | None:
    return next((p for b in _BROWSERS if (p := shutil.which(b))), None)


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's chromium; installed with apt-get when missing and we may (best effort)."""
    found = _find_browser()
    if found:
        return found
    why = "chromium is not installed"
    if shutil.which("apt-get") and os.geteuid() == 0:
        try:
            subprocess.run(["apt-get", "update"], check=True, capture_output=True, timeout=600)
            subprocess.run(
                ["apt-get", "install", "-y", "chromium"],
                check=True,
                capture_output=True,
                timeout=900,
                env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
            )
        except (subprocess.SubprocessError, OSError) as exc:
            why = f"chromium could not be installed with apt-get: {exc}"
        found = _find_browser()
        if found:
            return found
    else:
        why += " and apt-get is unavailable or we are not root"
    pytest.skip(why)


def _run_browser(chromium: str, page: Path, tmp: Path, *extra: str) -> subprocess.CompletedProcess:
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    cmd = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
        *extra,
        page.resolve().as_uri(),
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


_CONSOLE = re.compile(r"CONSOLE|Uncaught|Refused to|Failed to load resource", re.IGNORECASE)


def _console_problems(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if _CONSOLE.search(line)]


@pytest.mark.browser
def test_console_capture_sees_errors(chromium: str, tmp_path: Path) -> None:
    """The console check below can fail: a page that logs an error is caught by it."""
    bad = tmp_path / "bad.html"
    bad.write_text(
        "<!DOCTYPE html><html><body><script>console.error('boom from page')</script></body></html>",
        encoding="utf-8",
    )
    r = _run_browser(chromium, bad, tmp_path, "--dump-dom")
    assert any("boom from page" in line for line in _console_problems(r.stderr)), r.stderr[-2000:]


@pytest.mark.browser
def test_report_renders_in_headless_chromium(
    chromium: str, full_ledger: Path, tmp_path: Path
) -> None:
    page = tmp_path / "report.html"
    report.report(ledger=full_ledger, out=page)
    dom = _run_browser(chromium, page, tmp_path, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert _console_problems(dom.stderr) == []
    secs = _sections(dom.stdout)  # the DOM as the browser built it
    assert [s["title"] for s in secs] == PANEL_TITLES
    for s in secs:
        if s["title"] not in TABLE_PANELS:
            assert s["svgs"] >= 1 and s["shapes"] >= 3, s

    shot = tmp_path / "report.png"
    r = _run_browser(
        chromium,
        page,
        tmp_path,
        f"--screenshot={shot}",
        "--window-size=1300,2400",
        "--hide-scrollbars",
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert _console_problems(r.stderr) == []
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 30_000  # a blank 1300×2400 page compresses to a few KB
    print(f"report screenshot: {shot}")


@pytest.mark.browser
def test_empty_report_renders_in_headless_chromium(
    chromium: str, empty_ledger: Path, tmp_path: Path
) -> None:
    page = tmp_path / "empty.html"
    report.report(ledger=empty_ledger, out=page)
    dom = _run_browser(chromium, page, tmp_path, "--dump-dom")
    assert dom.returncode == 0 and _console_problems(dom.stderr) == []
    assert [s["nodata"] for s in _sections(dom.stdout)] == [1] * len(PANEL_TITLES)


def test_long_shared_prefixes_fold_so_labels_stay_distinct() -> None:
    assert report_charts.distinct(
        ["notes_add_note_duplicate_check_gated", "notes_add_note_duplicate_check_policy"]
    ) == ["…gated", "…policy"]
    assert report_charts.distinct(["task_000", "task_001"]) == [
        "task_000",
        "task_001",
    ]  # short prefix kept
    assert report_charts.distinct(["only_one_label_here"]) == ["only_one_label_here"]
