"""``vledger report``: one self-contained HTML page of plots over the ledger's views, so the
file can be mailed, archived or opened offline (docs/readme/analytics.md § The report).
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from ledger.analytics import report_trials
from ledger.analytics import sql as analytics
from ledger.analytics.report_panels import PANELS, summary
from ledger.analytics.report_template import PAGE
from ledger.app.context import LedgerArg, ledger_path
from ledger.app.result import Result
from ledger.defaults import DEFAULT_REPORT
from ledger.log.outputs import check_output_path, write_output


@dataclass(frozen=True)
class ReportResult(Result):
    """What a written report shows; ``to_json()`` is ``vledger report --json``."""

    out: Path
    panels: int
    panels_with_data: int
    events: int
    trials: int
    replays: int
    units: int

    def summary_line(self) -> str:
        return (
            f"{self.panels_with_data} of {self.panels} panels with data; {self.events:,} "
            f"events, {self.trials:,} trials"
        )


def render(ledger_dir: Path | str, *, full: bool = False) -> tuple[str, dict[str, Any]]:
    """The report page for a ledger, and the summary numbers it shows (``full``: the kept
    view rows built again from the whole log first)."""
    with analytics.connect(ledger_dir, full=full) as (con, source):
        summary_html, s = summary(con)
        panels = [panel for p in PANELS if (panel := p(con)) is not None]
        trial_pages = report_trials.trial_sections(con, report_trials.select_trials(con)[0])
    at = s["last_at"].isoformat() if s["last_at"] is not None else "—"
    subtitle = (
        f"ledger {escape(str(ledger_dir))} · {s['events']:,} events"
        + (
            f" through seq {s['last_seq']} (last appended {escape(at)})"
            if s["last_seq"] is not None
            else ""
        )
        + (f" · read from {escape(source.detail)}" if source.kind == "segments" else "")
    )
    page = PAGE.substitute(
        title="verdict-ledger report",
        subtitle=subtitle,
        summary=summary_html,
        panels="\n".join(p.html() for p in panels),
        trials=trial_pages,
    )
    s["panels_with_data"] = sum(1 for p in panels if p.body)
    s["panels"] = len(panels)
    return page, s


def report(
    *, ledger: LedgerArg = None, out: Path | str = DEFAULT_REPORT, full: bool = False
) -> ReportResult:
    """Write the HTML report of ``ledger`` to ``out`` (never inside a ledger directory).
    ``full``: build the kept view rows again from the whole log first."""
    ledger_dir = ledger_path(ledger)
    check_output_path(Path(out), ledger_dir, what="report")  # before any work
    page, s = render(ledger_dir, full=full)
    write_output(Path(out), page.encode("utf-8"), what="report")
    keys = ("panels", "panels_with_data", "events", "trials", "replays", "units")
    return ReportResult(Path(out), **{k: s[k] for k in keys})
