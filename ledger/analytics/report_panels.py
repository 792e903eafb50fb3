"""The report's panels: one function per panel, each a query over the views and a chart.

A panel with nothing to show says so (``empty_reason``) instead of drawing empty axes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from html import escape
from typing import Any

import duckdb

from ledger.analytics import report_charts as charts
from ledger.analytics import report_trials
from ledger.analytics import sql as analytics
from ledger.analytics.report_charts import FAIL, PALETTE, PASS, UNDECIDED
from schemas.retrace_status import RetraceStatus

MAX_ROWS = 40  # tasks / constraints shown per chart; the note says how many were left out


@dataclass(frozen=True)
class Panel:
    title: str
    what: str
    body: str  # SVG + legend/notes HTML, or "" for "no data yet"
    empty_reason: str = "no data yet"
    anchor: str = ""  # an id, for links into the panel

    def html(self) -> str:
        cls = "" if self.body else ' class="empty"'
        ident = f' id="{escape(self.anchor)}"' if self.anchor else ""
        inner = self.body or f'<div class="nodata">{escape(self.empty_reason)}</div>'
        return (
            f"<section{ident}{cls}><h2>{escape(self.title)}</h2>"
            f'<p class="what">{escape(self.what)}</p>{inner}</section>'
        )


def _showing(shown: int, total: int, what: str) -> str:
    """The note under a chart cut to its first rows; nothing when none was cut."""
    return charts.note(f"showing {shown} of {total} {what}") if total > shown else ""


def _score_panel(con: duckdb.DuckDBPyConnection) -> Panel:
    rows = analytics.rows(
        con,
        "SELECT coalesce(t.agent_model, '(unknown)') AS model, "
        "least(floor(cg.score * 10), 9)::INTEGER AS bin, count(*) AS n "
        "FROM current_grades cg JOIN trials t USING (trial) WHERE cg.score IS NOT NULL "
        "GROUP BY ALL ORDER BY model, bin",
    )
    panel = Panel(
        "Score distribution per model",
        "Current score (latest replay, else recorded) of every graded trial, per agent model.",
        "",
    )
    if not rows:
        return panel
    models = sorted({r["model"] for r in rows})
    bins = [f"{b / 10:.1f}–{(b + 1) / 10:.1f}" for b in range(10)]
    counts = {(r["model"], r["bin"]): r["n"] for r in rows}
    series = [(m, [float(counts.get((m, b), 0)) for b in range(10)]) for m in models]
    body = charts.grouped_bars(bins, series, y_label="trials", label="score distribution")
    legend = charts.legend([(m, PALETTE[i % len(PALETTE)]) for i, m in enumerate(models)])
    return replace(panel, body=body + legend)


def _pass_panel(con: duckdb.DuckDBPyConnection) -> Panel:
    rows = analytics.rows(
        con,
        # _trial_outcomes holds the pass rule pass_at_k counts (replay.grading.outcomes.is_counted)
        "SELECT o.task_id, o.model, count(*) FILTER (WHERE o.counted) AS n, "
        "count(*) FILTER (WHERE o.counted AND o.pass_current) AS c, avg(cg.score) AS mean_score "
        "FROM _trial_outcomes o LEFT JOIN current_grades cg USING (trial) GROUP BY ALL "
        "HAVING count(*) FILTER (WHERE o.counted) > 0 ORDER BY o.task_id, o.model",
    )
    panel = Panel(
        "Pass rate per task × model",
        "Pass rate c/n per task and model over measured trials (infrastructure aborts "
        "excluded; a counted trial without a grade counts as not passed).",
        "",
    )
    if not rows:
        return panel
    tasks = sorted({r["task_id"] or "(no task)" for r in rows})
    models = sorted({r["model"] for r in rows})
    shown = tasks[:MAX_ROWS]
    cells = {
        (r["task_id"] or "(no task)", r["model"]): (
            r["c"] / r["n"],
            f"{r['task_id']} · {r['model']}: {r['c']}/{r['n']} passed, mean score "
            f"{charts.fmt(r['mean_score'], 2)}",
        )
        for r in rows
    }
    body = charts.heatmap(shown, models, cells, label="pass rate per task and model")
    return replace(panel, body=body + _showing(len(shown), len(tasks), "tasks"))


def _pass_at_k_panel(con: duckdb.DuckDBPyConnection) -> Panel:
    curve = analytics.rows(
        con,
        "SELECT level, k, CASE WHEN level = 'macro' AND tasks < (SELECT count(DISTINCT task_id) "
        "FROM trials WHERE counted) THEN NULL ELSE pass_at_k END AS pass_at_k FROM pass_at_k "
        "WHERE basis = 'current' AND model = '*' AND level IN ('macro', 'micro') ORDER BY level, k",
    )
    per_task = analytics.rows(
        con,
        "SELECT task_id, k, n, c, pass_at_k FROM pass_at_k WHERE basis = 'current' "
        "AND model = '*' AND level = 'task' AND pass_at_k IS NOT NULL ORDER BY task_id, k",
    )
    panel = Panel(
        "pass@k per task",
        "pass@k = 1 − C(n−c, k)/C(n, k) over measured trials: macro (mean over tasks, drawn "
        "only where every task has n ≥ k) and micro (all trials pooled) by k, and per task "
        "at k = 1 and the largest k every task supports.",
        "",
    )
    if not per_task:
        return panel
    ks = sorted({r["k"] for r in curve if r["pass_at_k"] is not None})
    by = {(r["level"], r["k"]): r["pass_at_k"] for r in curve}
    body = charts.line_chart(
        [float(k) for k in ks],
        [(lvl, [by.get((lvl, k)) for k in ks]) for lvl in ("macro", "micro")],
        x_label="k",
        y_label="pass@k",
        label="pass@k by k",
        x_ticks=[str(k) for k in ks],
    ) + charts.legend([("macro", PALETTE[0]), ("micro", PALETTE[1])])
    tasks = sorted({r["task_id"] or "(no task)" for r in per_task})
    k_by_task: dict[str, dict[int, float]] = {}
    for r in per_task:
        k_by_task.setdefault(r["task_id"] or "(no task)", {})[r["k"]] = r["pass_at_k"]
    common = set.intersection(*(set(v) for v in k_by_task.values()))
    k_hi = max(common) if common else 1
    shown = tasks[:MAX_ROWS]
    body += charts.grouped_bars(
        shown,
        [(f"pass@{k}", [k_by_task[t].get(k, 0.0) for t in shown]) for k in sorted({1, k_hi})],
        y_label="pass@k",
        y_max=1.0,
        label="pass@k per task",
    ) + charts.legend([(f"pass@{k}", PALETTE[i]) for i, k in enumerate(sorted({1, k_hi}))])
    return replace(panel, body=body + _showing(len(shown), len(tasks), "tasks"))


def _separation_panel(con: duckdb.DuckDBPyConnection) -> Panel:
    rows = analytics.rows(
        con, "SELECT * FROM constraint_separation ORDER BY task_id, ord, constraint_id"
    )
    panel = Panel(
        "Constraint separation (latest retrace)",
        "Per task and constraint, over the task's latest retrace: decided passes, failures and "
        "undecided trials, with the retrace class.",
        "",
        "no retrace with trace constraints yet — run `vledger retrace`",
    )
    if not rows:
        return panel
    shown = rows[:MAX_ROWS]
    parts = (("passed", PASS), ("failed", FAIL), ("undecided", UNDECIDED))
    bars = [
        (f"{r['task_id']} · {r['constraint_id']}", [(p, r[p], c) for p, c in parts], r["class"])
        for r in shown
    ]
    body = charts.stacked_hbars(bars, label="constraint separation") + charts.legend(parts)
    return replace(panel, body=body + _showing(len(shown), len(rows), "constraints"))


AGREEMENT_PAIRS = 12  # 2×2 tables shown; the note says how many pairs there are


def _agreement_panel(con: duckdb.DuckDBPyConnection) -> Panel:
    rows = analytics.rows(
        con,
        "SELECT * FROM agreement WHERE task_id = '*' ORDER BY observations DESC, criterion, "
        f"constraint_id LIMIT {AGREEMENT_PAIRS}",
    )
    (pooled,) = analytics.rows(con, "SELECT count(*) AS n FROM agreement WHERE task_id = '*'")
    total = pooled["n"]
    panel = Panel(
        "Judge vs constraint agreement",
        "Judge criterion (recorded met) against trace constraint (current verdict) over every "
        "trial carrying both decided, pooled over tasks: the 2×2 table and Cohen's κ.",
        "",
        "no trial carries both a judge criterion and a decided trace constraint yet",
    )
    if not rows:
        return panel
    keys = ("criterion", "constraint_id", "met_passed", "met_failed", "not_met_passed",
            "not_met_failed", "kappa")  # fmt: skip
    tables = "".join(charts.matrix_2x2(*(r[k] for k in keys)) for r in rows)
    body = f'<div style="display:flex;flex-wrap:wrap;gap:8px">{tables}</div>'
    return replace(panel, body=body + _showing(len(rows), total, "pairs, the most observed first"))


DISAGREEMENT_SQL = (
    # per replay: trials retrace judged disagreed, and per component the trials whose
    # replayed component score differs from the recorded one (both scored: a component
    # not measured offline is no disagreement, as in retrace)
    "WITH rg AS MATERIALIZED (SELECT seq, trial, score, binary_pass FROM _recorded_grade), "
    "rec AS (SELECT c.trial, c.component, c.score FROM components c JOIN rg "
    "ON c.grade_seq = rg.seq WHERE c.score IS NOT NULL), "
    "per_comp AS (SELECT c.replay_id, c.component, count(*) FILTER (WHERE "
    "abs(c.score - rec.score) > 1e-9) AS n FROM components c JOIN rec USING (trial, component) "
    "WHERE c.source = 'replayed' AND c.score IS NOT NULL AND coalesce(c.status, 'scored') = "
    "'scored' GROUP BY ALL), "
    # retrace's own per-trial status when the replay carries it; else verdict or score
    "per_replay AS (SELECT g.replay_id, min(g.seq) AS first_seq, count(*) AS trials, "
    f"count(*) FILTER (WHERE g.replay_status = '{RetraceStatus.DISAGREED}' OR "
    "(g.replay_status IS NULL AND "
    "rg.trial IS NOT NULL AND (g.binary_pass IS DISTINCT FROM rg.binary_pass OR "
    "abs(coalesce(g.score, -1) - coalesce(rg.score, -1)) > 1e-9))) AS disagreed "
    "FROM grades g LEFT JOIN rg USING (trial) WHERE g.source = 'replayed' GROUP BY g.replay_id) "
    "SELECT p.replay_id, p.first_seq, p.trials, p.disagreed, "
    "coalesce(map_from_entries(list({'k': pc.component, 'v': pc.n}) FILTER (WHERE pc.component "
    "IS NOT NULL)), MAP {}) AS by_component FROM per_replay p LEFT JOIN per_comp pc USING "
    "(replay_id) GROUP BY ALL ORDER BY p.first_seq"
)


def _disagreement_panel(con: duckdb.DuckDBPyConnection) -> Panel:
    rows = analytics.rows(con, DISAGREEMENT_SQL)
    for r in rows:  # Arrow hands a MAP over as (key, value) pairs
        r["by_component"] = dict(r["by_component"] or [])
    panel = Panel(
        "Replay vs recorded disagreements over time",
        "For each replay in log order: the trials retrace found disagreeing with their "
        "recorded grade, and per component how many re-derived component scores differ from "
        "the recorded ones (a component not measured offline is not counted).",
        "",
        "no replay of a recorded grade yet — run `vledger retrace`",
    )
    if not rows:
        return panel
    labels = [r["replay_id"] or f"seq {r['first_seq']}" for r in rows]
    comps = sorted({c for r in rows for c in r["by_component"]})
    series = [("trials disagreed", [float(r["disagreed"]) for r in rows])] + [
        (c, [float(r["by_component"].get(c, 0)) for r in rows]) for c in comps
    ]
    top = charts.nice_max(max(v for _, vs in series for v in vs))
    body = charts.line_chart(
        list(range(len(rows))),
        series,
        x_label="replay (log order)",
        y_label="trials",
        y_max=float(top),
        label="replay vs recorded disagreements",
        x_ticks=labels,
    ) + charts.legend([(name, PALETTE[i % len(PALETTE)]) for i, (name, _) in enumerate(series)])
    last = rows[-1]
    per = ", ".join(f"{c} {(last['by_component'] or {}).get(c, 0)}" for c in comps) or "none"
    body += charts.note(
        f"{len(rows)} replay(s); latest: {labels[-1]} re-derived {last['trials']} trial(s), "
        f"{last['disagreed']} disagreed; differing components: {per}"
    )
    return replace(panel, body=body)


def _verdict_panel(con: duckdb.DuckDBPyConnection) -> Panel:
    rows = analytics.rows(
        con,
        "SELECT effective_grade, min(grade_rank) AS rank, count(*) AS units FROM ("
        "SELECT * FROM admissions QUALIFY row_number() OVER (PARTITION BY unit ORDER BY seq DESC) = 1"
        ") GROUP BY effective_grade ORDER BY rank, effective_grade",
    )
    panel = Panel(
        "Verdict-grade distribution",
        "Latest admission per unit, by verdict grade, strongest first (the registered ladder).",
        "",
        "no admissions yet — record units with `vledger verdict`",
    )
    if not rows:
        return panel
    body = charts.grouped_bars(
        [r["effective_grade"] or "(none)" for r in rows],
        [("units", [float(r["units"]) for r in rows])],
        y_label="units",
        label="verdict grades",
    )
    return replace(panel, body=body)


NEVER_SCORED_SQL = (
    "SELECT task_id, key, skipped, reasons FROM key_accounting WHERE evaluated = 0 "
    "ORDER BY task_id, key"
)


def _never_scored_panel(con: duckdb.DuckDBPyConnection) -> Panel | None:
    """Keys a corpus declared that no replay ever evaluated (key accounting); shown only when the
    list is not empty — a panel saying "none" would be noise on every healthy ledger."""
    rows = analytics.rows(con, NEVER_SCORED_SQL)
    if not rows:
        return None
    shown = rows[:MAX_ROWS]
    body = (
        "<table><tr><th>task</th><th>key</th><th>skipped</th><th>why</th></tr>"
        + "".join(
            f"<tr><td>{escape(r['task_id'] or '')}</td><td>{escape(r['key'])}</td>"
            f"<td>{r['skipped']}</td><td>{escape('; '.join(r['reasons'] or []))}</td></tr>"
            for r in shown
        )
        + "</table>"
        + _showing(len(shown), len(rows), "keys")
    )
    return Panel(
        "Keys that never scored",
        "Populated scored keys no replayed grade evaluated: each scored nothing (GRADING.md "
        "§ The runtime ledger). From the key_accounting view.",
        body,
    )


def summary(con: duckdb.DuckDBPyConnection) -> tuple[str, dict[str, Any]]:
    (s,) = analytics.rows(
        con,
        "SELECT (SELECT count(*) FROM events) AS events, (SELECT max(seq) FROM events) AS last_seq, "
        "(SELECT max(recorded_at) FROM events) AS last_at, (SELECT count(*) FROM trials) AS trials, "
        "(SELECT count(*) FROM trials WHERE NOT counted) AS aborts, "
        "(SELECT count(*) FROM grades WHERE source = 'recorded') AS recorded, "
        "(SELECT count(*) FROM grades WHERE source = 'replayed') AS replayed, "
        "(SELECT count(DISTINCT replay_id) FROM grades WHERE source = 'replayed') AS replays, "
        "(SELECT count(DISTINCT unit) FROM admissions) AS units",
    )
    items = [
        ("events", s["events"]),
        ("trials", s["trials"]),
        ("infrastructure aborts", s["aborts"]),
        ("recorded grades", s["recorded"]),
        ("replayed grades", s["replayed"]),
        ("replays", s["replays"]),
        ("admitted units", s["units"]),
    ]
    html = "".join(
        f'<div class="stat"><b>{v:,}</b><span>{escape(k)}</span></div>' for k, v in items
    )
    return html, s


def _trials_panel(con: duckdb.DuckDBPyConnection) -> Panel:
    rows, total = report_trials.select_trials(con)
    return Panel(
        "Trials",
        "The trials most worth reading, disagreements first: each opens its page — the "
        "timeline with each constraint's verdict beside the events it read, and the recorded "
        "and replayed grade side by side.",
        report_trials.trials_list(rows, total),
        "no trials yet — run `vledger ingest`",
        anchor="trials",
    )


PANELS = (
    _score_panel,
    _pass_panel,
    _pass_at_k_panel,
    _separation_panel,
    _agreement_panel,
    _disagreement_panel,
    _verdict_panel,
    _never_scored_panel,
    _trials_panel,
)
