"""The report at scale, rendered in headless Chromium: 5,000 trials over
200 tasks. In the rendered page no two axis labels overlap, every label carries its full
name, zero bars are drawn, capped panels say how many they show, the disagreement panel
counts per component, and a trial's page opens from the trials list.

The geometry is measured by the browser: the test loads a copy of the report with a small
measuring script added (the shipped page has none; its CSP forbids scripts), which writes
its findings into the DOM that ``--dump-dom`` prints.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from ledger.analytics import report, report_panels
from tests.analytics_fixtures import (
    check,
    recorded_grade,
    replay_events,
    replayed_grade,
    trial_events,
    trial_stream,
    write_ledger,
)
from tests.test_report import _console_problems, chromium  # noqa: F401 - the fixture

TASKS, PER_TASK = 200, 25  # 5,000 trials
# A shared prefix longer than any label budget: only the tails tell the tasks apart.
PREFIX = "notes_add_note_duplicate_check_with_a_long_shared_prefix_"
MODELS = ("anthropic/claude-sonnet-4-6-20260101", "openai/gpt-4o-mini-2024-07-18")
JUDGE_ONLY = {(0, 0), (1, 0), (2, 0)}  # replayed llm_judge differs; score and verdict do not


def _task(t: int) -> str:
    return f"{PREFIX}{t:03d}_{('gated', 'policy')[t % 2]}"


def _scale_events() -> list:
    ev: list = []
    task_of, grades = {}, {}
    for t in range(TASKS):
        for i in range(PER_TASK):
            # task 7 never passes: its pass@k bars are zeros that must still be drawn
            passed = t != 7 and (i + t) % 4 != 0
            score = 0.9 if passed else 0.1
            ev += trial_events(
                "scale",
                _task(t),
                i,
                model=MODELS[i % 2],
                grade=recorded_grade(score, passed, criteria=[("checked_first", passed, score)]),
                tools=[("list_notes", "success", 0.1)],
            )
            s = trial_stream("scale", _task(t), i)
            task_of[s] = _task(t)
            judge = 0.5 if (t, i) in JUDGE_ONLY else None
            grades[s] = replayed_grade(
                score,
                passed,
                judge=judge,
                checks=[check(f"listed_first_{t % 30}", "pass" if passed else "fail")],
            )
    disagreed = {trial_stream("scale", _task(t), i) for t, i in JUDGE_ONLY}
    for stream, kind, payload in replay_events("big", grades, task_of=task_of):
        if kind == "grade.replayed":  # the per-trial status retrace writes
            payload["status"] = "disagreed" if payload["trial"] in disagreed else "agreed"
        ev.append((stream, kind, payload))
    return ev


@pytest.fixture(scope="module")
def scale_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    tmp = tmp_path_factory.mktemp("scale")
    lg = write_ledger(tmp / "lg", _scale_events(), via_store=False)
    html, summary = report.render(lg)
    assert summary["trials"] == TASKS * PER_TASK
    page = tmp / "report.html"
    page.write_text(html, encoding="utf-8")
    return page, html


MEASURE = """
<script>
// after load: :target is set once the document has loaded and scrolled to the fragment
window.addEventListener('load', () => {
  const boxes = [...document.querySelectorAll('svg')].map(svg =>
    [...svg.querySelectorAll('text.tick')].map(t => {
      const r = t.getBoundingClientRect();
      return {l: r.left, t: r.top, r: r.right, b: r.bottom, s: t.textContent};
    }));
  const overlaps = [];
  for (const labels of boxes)
    for (let i = 0; i < labels.length; i++)
      for (let j = i + 1; j < labels.length; j++) {
        const p = labels[i], q = labels[j];
        if (p.l < q.r && q.l < p.r && p.t < q.b && q.t < p.b) overlaps.push([p.s, q.s]);
      }
  const target = document.querySelector(':target');
  const shown = [...document.querySelectorAll('section.trial')]
    .filter(s => s.getBoundingClientRect().height > 0).map(s => s.id);
  document.body.setAttribute('data-measured', JSON.stringify({
    labels: boxes.reduce((n, b) => n + b.length, 0), overlaps: overlaps.slice(0, 10),
    n_overlaps: overlaps.length, target: target && target.id, shown,
    zero_stubs: document.querySelectorAll('rect.zero').length}));
});
</script>
"""


def _measure(chromium: str, page: Path, tmp: Path, fragment: str = "") -> dict:  # noqa: F811
    instrumented = tmp / "measured.html"
    html = page.read_text(encoding="utf-8").replace(
        "default-src 'none';", "default-src 'none'; script-src 'unsafe-inline';"
    )
    instrumented.write_text(html.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    cmd = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp / ('profile' + fragment.replace('#', '-'))}",
        "--window-size=1400,3000",
        "--enable-logging=stderr",
        "--v=0",
        "--dump-dom",
        instrumented.resolve().as_uri() + fragment,
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr[-2000:]
    assert _console_problems(r.stderr) == [], r.stderr[-2000:]
    m = re.search(r"data-measured=\"([^\"]*)\"", r.stdout)
    assert m, "the measuring script did not run"
    return json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))


@pytest.mark.browser
def test_no_two_axis_labels_overlap_at_5000_trials(
    chromium: str,  # noqa: F811
    scale_report: tuple[Path, str],
    tmp_path: Path,
) -> None:
    page, _ = scale_report
    got = _measure(chromium, page, tmp_path)
    assert got["labels"] > 50  # the labels were found and measured
    assert got["n_overlaps"] == 0, got["overlaps"]
    assert got["zero_stubs"] > 0  # task 7's zeros are drawn
    assert got["shown"] == [] and got["target"] is None  # no trial page open by default


@pytest.mark.browser
def test_a_trial_page_opens_from_the_trials_list(
    chromium: str,  # noqa: F811
    scale_report: tuple[Path, str],
    tmp_path: Path,
) -> None:
    page, html = scale_report
    # the first link of the Trials list: the first disagreement
    link = re.search(r'<section id="trials">.*?<a href="#([^"]+)">([^<]+)</a>', html, re.S)
    assert link, "the Trials panel links no trial"
    anchor, trial = link.groups()
    assert trial in {trial_stream("scale", _task(t), i) for t, i in JUDGE_ONLY}
    got = _measure(chromium, page, tmp_path, "#" + anchor)
    assert got["target"] == anchor and got["shown"] == [anchor]


def test_capped_panels_say_how_many_they_show(scale_report: tuple[Path, str]) -> None:
    _, html = scale_report
    assert f"showing {report_panels.MAX_ROWS} of {TASKS} tasks" in html  # pass rate and pass@k
    assert "showing 12 of 30 pairs" in html  # 30 constraint ids × one criterion
    assert f"of {TASKS * PER_TASK:,} trials" in html


def test_the_disagreement_panel_counts_per_component(scale_report: tuple[Path, str]) -> None:
    _, html = scale_report
    assert "3 disagreed; differing components: llm_judge 3" in html


def test_every_cut_label_keeps_its_full_name(scale_report: tuple[Path, str]) -> None:
    _, html = scale_report
    # the tick labels' tooltips name whole tasks and models; no model name is cut
    titles = set(re.findall(r'<text [^>]*class="tick[^"]*"[^>]*><title>([^<]+)</title>', html))
    assert {_task(0), _task(1)} <= titles
    for model in MODELS:
        assert re.search(rf'class="tick[^"]*"[^>]*>{re.escape(model)}</text>', html), model
