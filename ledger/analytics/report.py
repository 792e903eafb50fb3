"""``vledger report``: one self-contained HTML page of plots over the ledger's views.

Every chart is inline SVG drawn here from query results — no script, no stylesheet or font
fetched, nothing a browser must load from elsewhere — so the file can be mailed, archived or
opened offline. A panel with nothing to show says so instead of drawing empty axes. The page
carries no wall-clock time, so the same log always renders the same bytes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

import duckdb

from ledger.analytics import report_trials
from ledger.analytics import sql as analytics
from ledger.analytics.report_template import PAGE
from ledger.log.outputs import check_output_path

PASS, FAIL, UNDECIDED, ACCENT = "#2e8b57", "#c0392b", "#d4a017", "#3b6fb6"
PALETTE = ("#3b6fb6", "#e07b39", "#2e8b57", "#8e5ea2", "#c0392b", "#17a2b8", "#b8860b", "#6c757d")
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


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict[str, Any]]:
    return analytics.run(con, sql).to_pylist()


def _t(
    x: float,
    y: float,
    s: str,
    *,
    anchor: str = "start",
    cls: str = "",
    rot: int = 0,
    full: str | None = None,
) -> str:
    """A text label; ``full`` (the uncut name) becomes its tooltip when ``s`` is shortened."""
    c = f' class="{cls}"' if cls else ""
    r = f' transform="rotate({rot} {x:.1f} {y:.1f})"' if rot else ""
    tip = f"<title>{escape(full)}</title>" if full is not None and full != s else ""
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{c}{r}>{tip}{escape(s)}</text>'


def _tick(x: float, y: float, shown: str, full: str, **kw: Any) -> str:
    """An axis label (class ``tick``: the browser test checks no two of them overlap)."""
    cls = ("tick " + kw.pop("cls", "")).strip()
    return _t(x, y, shown, cls=cls, full=full, **kw)


def _rect(x: float, y: float, w: float, h: float, fill: str, tip: str) -> str:
    return (
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0):.1f}" height="{max(h, 0):.1f}" '
        f'fill="{fill}"><title>{escape(tip)}</title></rect>'
    )


ZERO_STUB = 2.0  # px: a zero bar is drawn this tall, outlined, so 0 never reads as "no data"


def _bar(x: float, base: float, w: float, h: float, fill: str, tip: str) -> str:
    """A vertical bar standing on ``base``; a zero is a visible stub, not nothing."""
    if h > 0:
        return _rect(x, base - h, w, h, fill, tip)
    return (
        f'<rect class="zero" x="{x:.1f}" y="{base - ZERO_STUB:.1f}" width="{max(w, 0):.1f}" '
        f'height="{ZERO_STUB}" fill="#fff" stroke="{fill}" stroke-width="1">'
        f"<title>{escape(tip)}</title></rect>"
    )


# Axis-label geometry for the 11 px label font: a character is about 6.2 px wide, and two
# labels side by side need 16 px between their baselines not to touch.
CHAR_W, LABEL_PITCH = 6.2, 16.0


def thin_step(n: int, span: float, pitch: float = LABEL_PITCH) -> int:
    """Label every ``step``-th of ``n`` slots spread over ``span`` px, so labels are at least
    ``pitch`` apart (the rest are reachable through their bars' tooltips)."""
    if n <= 0:
        return 1
    return max(1, math.ceil(pitch / (span / n)))


def _svg(w: int, h: int, inner: str, label: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" '
        f'height="{h}" role="img" aria-label="{escape(label)}">{inner}</svg>'
    )


def _legend(items: Sequence[tuple[str, str]]) -> str:
    return (
        '<div class="legend">'
        + "".join(f'<span><i style="background:{c}"></i>{escape(n)}</span>' for n, c in items)
        + "</div>"
    )


def _note(text: str) -> str:
    return f'<div class="note">{escape(text)}</div>'


def _short(s: str, n: int = 34) -> str:
    """``s`` in at most ``n`` characters, cut in the middle: names that share a start
    usually differ at the end (``…_000`` / ``…_001``), so both ends are kept."""
    if len(s) <= n:
        return s
    head = (n - 1) // 2
    return s[:head] + "…" + s[len(s) - (n - 1 - head) :]


def _distinct(labels: Sequence[str]) -> list[str]:
    """Labels with their shared prefix folded to '…', so truncation keeps what differs."""
    if len(labels) < 2:
        return list(labels)
    first, last = min(labels), max(labels)
    i = 0
    while i < min(len(first), len(last)) and first[i] == last[i]:
        i += 1
    cut = max(first.rfind("_", 0, i), first.rfind(" ", 0, i), first.rfind("/", 0, i)) + 1
    return [("…" + x[cut:]) if cut > 8 else x for x in labels]


def _fmt(v: float | None, digits: int = 3) -> str:
    return "undefined" if v is None else f"{v:.{digits}f}"


# --- chart primitives --------------------------------------------------------------------


def grouped_bars(
    categories: Sequence[str],
    series: Sequence[tuple[str, Sequence[float]]],
    *,
    y_label: str,
    y_max: float | None = None,
    label: str,
) -> str:
    """Vertical grouped bars: one group per category, one bar per series.

    Few categories: labels under their group. Many: labels turned upright, every
    :func:`thin_step`-th one shown so none overlap; every bar's tooltip names its category.
    """
    shown = _distinct(categories)
    many = len(categories) > 6
    longest = max([len(_short(c, 28)) for c in shown] + [1])
    w, left, top = 540, 44, 12
    bottom = int(24 + CHAR_W * longest) if many else 30
    h = 200 + bottom
    top_v = (
        y_max if y_max is not None else _nice_max(max([0.0] + [v for _, vs in series for v in vs]))
    )
    plot_w, plot_h = w - left - 10, h - bottom - top
    parts = [f'<line class="axis" x1="{left}" y1="{h - bottom}" x2="{w - 10}" y2="{h - bottom}"/>']
    for i in range(5):
        v = top_v * i / 4
        y = h - bottom - plot_h * i / 4
        parts.append(f'<line class="grid" x1="{left}" y1="{y:.1f}" x2="{w - 10}" y2="{y:.1f}"/>')
        parts.append(
            _t(left - 4, y + 4, f"{v:g}" if top_v > 2 else f"{v:.2f}", anchor="end", cls="muted")
        )
    group_w = plot_w / max(len(categories), 1)
    bar_w = group_w * 0.8 / max(len(series), 1)
    step = thin_step(len(categories), plot_w) if many else 1
    for ci, cat in enumerate(categories):
        gx = left + ci * group_w + group_w * 0.1
        for si, (name, vs) in enumerate(series):
            v = vs[ci]
            bh = plot_h * (v / top_v if top_v else 0)
            parts.append(
                _bar(
                    gx + si * bar_w,
                    h - bottom,
                    bar_w - 1,
                    bh,
                    PALETTE[si % len(PALETTE)],
                    f"{name} · {cat}: {v:g}",
                )
            )
        if ci % step:
            continue
        cx = gx + group_w * 0.4
        parts.append(
            _tick(cx + 4, h - bottom + 8, _short(shown[ci], 28), cat, anchor="end", rot=-90)
            if many
            else _tick(cx, h - bottom + 14, _short(shown[ci], 24), cat, anchor="middle")
        )
    parts.append(_t(12, top + plot_h / 2, y_label, anchor="middle", cls="muted", rot=-90))
    svg = _svg(w, h, "".join(parts), label)
    if step > 1:
        svg += _note(f"every {step}th label shown; hover a bar for its full name")
    return svg


def line_chart(
    xs: Sequence[float],
    series: Sequence[tuple[str, Sequence[float | None]]],
    *,
    x_label: str,
    y_label: str,
    y_max: float = 1.0,
    label: str,
    x_ticks: Sequence[str] | None = None,
) -> str:
    w, h, left, bottom, top = 540, 240, 44, 40, 12
    plot_w, plot_h = w - left - 14, h - bottom - top
    n = len(xs)

    def px(i: int) -> float:
        return left + (plot_w * i / (n - 1) if n > 1 else plot_w / 2)

    def py(v: float) -> float:
        return h - bottom - plot_h * (v / y_max if y_max else 0)

    parts = [f'<line class="axis" x1="{left}" y1="{h - bottom}" x2="{w - 14}" y2="{h - bottom}"/>']
    for i in range(5):
        v = y_max * i / 4
        parts.append(
            f'<line class="grid" x1="{left}" y1="{py(v):.1f}" x2="{w - 14}" y2="{py(v):.1f}"/>'
        )
        parts.append(
            _t(
                left - 4,
                py(v) + 4,
                f"{v:.2f}" if y_max <= 2 else f"{v:g}",
                anchor="end",
                cls="muted",
            )
        )
    ticks = x_ticks or [f"{x:g}" for x in xs]
    widest = max([len(_short(t, 12)) for t in ticks] + [1])
    step = thin_step(n, plot_w, pitch=CHAR_W * widest + 8)
    for i, tick in enumerate(ticks):
        if i % step == 0:
            parts.append(
                _tick(px(i), h - bottom + 14, _short(tick, 12), tick, anchor="middle", cls="muted")
            )
    for si, (name, vs) in enumerate(series):
        color = PALETTE[si % len(PALETTE)]
        pts = [(px(i), py(v), v) for i, v in enumerate(vs) if v is not None]
        if len(pts) > 1:
            d = " ".join(f"{x:.1f},{y:.1f}" for x, y, _ in pts)
            parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{d}"/>')
        for (x, y, v), i in zip(pts, [i for i, v in enumerate(vs) if v is not None], strict=True):
            parts.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{color}">'
                f"<title>{escape(f'{name} · {ticks[i]}: {v:.3f}')}</title></circle>"
            )
    parts.append(_t(left + plot_w / 2, h - 4, x_label, anchor="middle", cls="muted"))
    parts.append(_t(12, top + plot_h / 2, y_label, anchor="middle", cls="muted", rot=-90))
    return _svg(w, h, "".join(parts), label)


def stacked_hbars(
    rows: Sequence[tuple[str, Sequence[tuple[str, float, str]], str]], *, label: str
) -> str:
    """Horizontal stacked bars: (row label, [(part name, value, color)], right-hand note)."""
    bar_h, gap, left, right = 16, 6, 290, 120
    w = 540
    h = 10 + len(rows) * (bar_h + gap)
    total_max = max([1.0] + [sum(v for _, v, _ in parts) for _, parts, _ in rows])
    plot_w = w - left - right
    out = []
    labels = _distinct([name for name, _, _ in rows])
    for i, (name, parts, note) in enumerate(rows):
        y = 5 + i * (bar_h + gap)
        out.append(_tick(left - 6, y + bar_h - 4, _short(labels[i], 44), name, anchor="end"))
        x = float(left)
        for part, v, color in parts:
            bw = plot_w * v / total_max
            out.append(_rect(x, y, bw, bar_h, color, f"{name} · {part}: {v:g}"))
            x += bw
        out.append(_t(x + 6, y + bar_h - 4, note, cls="muted"))
    return _svg(w, h, "".join(out), label)


def heatmap(
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    cells: dict[tuple[str, str], tuple[float, str]],
    *,
    label: str,
) -> str:
    """Rows × columns of cells coloured by a value in [0, 1] (red → green), with tooltips."""
    cw, ch, left = 64, 18, 300
    # Column labels (model names) are never cut: upright, they need their length above
    # the grid, and one column's width apart they cannot touch.
    longest = CHAR_W * max([len(c) for c in col_labels] + [1])
    top = int(16 + longest)
    w = int(left + cw * len(col_labels) + 20)
    h = top + ch * len(row_labels) + 6
    out = []
    for j, c in enumerate(col_labels):
        out.append(
            _tick(left + j * cw + cw / 2 + 4, top - 6, c, c, anchor="start", rot=-90, cls="muted")
        )
    for i, (r, shown) in enumerate(zip(row_labels, _distinct(row_labels), strict=True)):
        y = top + i * ch
        out.append(_tick(left - 6, y + ch - 5, _short(shown, 46), r, anchor="end"))
        for j, c in enumerate(col_labels):
            if (r, c) not in cells:
                continue
            v, tip = cells[(r, c)]
            out.append(_rect(left + j * cw + 1, y + 1, cw - 2, ch - 2, _ramp(v), tip))
            out.append(_t(left + j * cw + cw / 2, y + ch - 5, f"{v:.2f}", anchor="middle"))
    return _svg(w, h, "".join(out), label)


def _nice_max(v: float) -> float:
    """A count axis top that gives integer quarter ticks: 4, 8, 12, 20, 40, 80, 100, 200, …"""
    if v <= 4:
        return 4.0
    mag = 10 ** math.floor(math.log10(v))
    for step in (1, 2, 4, 5, 8, 10):
        if step * mag >= v and (step * mag) % 4 == 0:
            return float(step * mag)
    return float(math.ceil(v / 4) * 4)


def _ramp(v: float) -> str:
    """Value in [0, 1] → a red-to-green colour (light enough for dark text on top)."""
    v = min(1.0, max(0.0, v))
    r = int(235 - 110 * v)
    g = int(150 + 70 * v)
    b = int(140 - 10 * v)
    return f"rgb({r},{g},{b})"


def matrix_2x2(
    criterion: str, constraint: str, a: int, b: int, c: int, d: int, kappa: float | None
) -> str:
    """One judge × constraint contingency table as a small SVG."""
    w, h, s = 260, 168, 46
    x0, y0 = 120, 56
    total = max(a + b + c + d, 1)
    out = [_t(4, 14, _short(criterion, 44)), _t(4, 28, "× " + _short(constraint, 42), cls="muted")]
    out.append(_t(x0 + s / 2, y0 - 6, "passed", anchor="middle", cls="muted"))
    out.append(_t(x0 + s * 1.5, y0 - 6, "failed", anchor="middle", cls="muted"))
    out.append(_t(x0 - 6, y0 + s / 2 + 4, "judge met", anchor="end", cls="muted"))
    out.append(_t(x0 - 6, y0 + s * 1.5 + 4, "not met", anchor="end", cls="muted"))
    for (i, j), v, agree in (
        ((0, 0), a, True),
        ((0, 1), b, False),
        ((1, 0), c, False),
        ((1, 1), d, True),
    ):
        shade = 0.25 + 0.75 * v / total
        color = PASS if agree else FAIL
        out.append(
            f'<rect x="{x0 + j * s}" y="{y0 + i * s}" width="{s - 2}" height="{s - 2}" fill="{color}" '
            f'fill-opacity="{shade:.2f}"><title>{escape(f"{v} trials")}</title></rect>'
        )
        out.append(_t(x0 + j * s + s / 2 - 1, y0 + i * s + s / 2 + 4, str(v), anchor="middle"))
    out.append(_t(4, h - 8, f"n={a + b + c + d}  κ={_fmt(kappa)}", cls="muted"))
    return _svg(w, h, "".join(out), f"agreement {criterion} × {constraint}")


# --- panels -------------------------------------------------------------------------------


def _score_panel(con: duckdb.DuckDBPyConnection) -> Panel:
    rows = _rows(
        con,
        "SELECT coalesce(t.agent_model, '(unknown)') AS model, "
        "least(floor(cg.score * 10), 9)::INTEGER AS bin, count(*) AS n "
        "FROM current_grades cg JOIN trials t USING (trial) WHERE cg.score IS NOT NULL "
        "GROUP BY ALL ORDER BY model, bin",
    )
    what = "Current score (latest replay, else recorded) of every graded trial, per agent model."
    if not rows:
        return Panel("Score distribution per model", what, "")
    models = sorted({r["model"] for r in rows})
    bins = [f"{b / 10:.1f}–{(b + 1) / 10:.1f}" for b in range(10)]
    counts = {(r["model"], r["bin"]): r["n"] for r in rows}
    series = [(m, [float(counts.get((m, b), 0)) for b in range(10)]) for m in models]
    body = grouped_bars(bins, series, y_label="trials", label="score distribution")
    return Panel(
        "Score distribution per model",
        what,
        body + _legend([(m, PALETTE[i % len(PALETTE)]) for i, m in enumerate(models)]),
    )


def _pass_panel(con: duckdb.DuckDBPyConnection) -> Panel:
    rows = _rows(
        con,
        "SELECT t.task_id, coalesce(t.agent_model, '(unknown)') AS model, "
        "count(*) FILTER (WHERE t.counted) AS n, "
        "count(*) FILTER (WHERE t.counted AND coalesce(cg.binary_pass, false) "
        "AND t.outcome_class <> 'ungradeable') AS c, avg(cg.score) AS mean_score "
        "FROM trials t LEFT JOIN current_grades cg USING (trial) GROUP BY ALL "
        "HAVING count(*) FILTER (WHERE t.counted) > 0 ORDER BY t.task_id, model",
    )
    what = (
        "Pass rate c/n per task and model over measured trials (infrastructure aborts "
        "excluded; a counted trial without a grade counts as not passed)."
    )
    if not rows:
        return Panel("Pass rate per task × model", what, "")
    tasks = sorted({r["task_id"] or "(no task)" for r in rows})
    models = sorted({r["model"] for r in rows})
    shown = tasks[:MAX_ROWS]
    cells = {
        (r["task_id"] or "(no task)", r["model"]): (
            r["c"] / r["n"],
            f"{r['task_id']} · {r['model']}: {r['c']}/{r['n']} passed, mean score "
            f"{_fmt(r['mean_score'], 2)}",
        )
        for r in rows
    }
    body = heatmap(shown, models, cells, label="pass rate per task and model")
    if len(tasks) > len(shown):
        body += _note(f"showing {len(shown)} of {len(tasks)} tasks")
    return Panel("Pass rate per task × model", what, body)


def _pass_at_k_panel(con: duckdb.DuckDBPyConnection) -> Panel:
    curve = _rows(
        con,
        "SELECT level, k, CASE WHEN level = 'macro' AND tasks < (SELECT count(DISTINCT task_id) "
        "FROM trials WHERE counted) THEN NULL ELSE pass_at_k END AS pass_at_k FROM pass_at_k "
        "WHERE basis = 'current' AND model = '*' AND level IN ('macro', 'micro') ORDER BY level, k",
    )
    per_task = _rows(
        con,
        "SELECT task_id, k, n, c, pass_at_k FROM pass_at_k WHERE basis = 'current' "
        "AND model = '*' AND level = 'task' AND pass_at_k IS NOT NULL ORDER BY task_id, k",
    )
    what = (
        "pass@k = 1 − C(n−c, k)/C(n, k) over measured trials: macro (mean over tasks, drawn "
        "only where every task has n ≥ k) and micro (all trials pooled) by k, and per task "
        "at k = 1 and the largest k every task supports."
    )
    if not per_task:
        return Panel("pass@k per task", what, "")
    ks = sorted({r["k"] for r in curve if r["pass_at_k"] is not None})
    by = {(r["level"], r["k"]): r["pass_at_k"] for r in curve}
    body = line_chart(
        [float(k) for k in ks],
        [(lvl, [by.get((lvl, k)) for k in ks]) for lvl in ("macro", "micro")],
        x_label="k",
        y_label="pass@k",
        label="pass@k by k",
        x_ticks=[str(k) for k in ks],
    ) + _legend([("macro", PALETTE[0]), ("micro", PALETTE[1])])
    tasks = sorted({r["task_id"] or "(no task)" for r in per_task})
    k_by_task: dict[str, dict[int, float]] = {}
    for r in per_task:
        k_by_task.setdefault(r["task_id"] or "(no task)", {})[r["k"]] = r["pass_at_k"]
    common = set.intersection(*(set(v) for v in k_by_task.values()))
    k_hi = max(common) if common else 1
    shown = tasks[:MAX_ROWS]
    body += grouped_bars(
        shown,
        [(f"pass@{k}", [k_by_task[t].get(k, 0.0) for t in shown]) for k in sorted({1, k_hi})],
        y_label="pass@k",
        y_max=1.0,
        label="pass@k per task",
    ) + _legend([(f"pass@{k}", PALETTE[i]) for i, k in enumerate(sorted({1, k_hi}))])
    if len(tasks) > len(shown):
        body += _note(f"showing {len(shown)} of {len(tasks)} tasks")
    return Panel("pass@k per task", what, body)


def _separation_panel(con: duckdb.DuckDBPyConnection) -> Panel:
    rows = _rows(con, "SELECT * FROM constraint_separation ORDER BY task_id, ord, constraint_id")
    what = (
        "Per task and constraint, over the task's latest retrace: decided passes, failures and "
        "undecided trials, with the retrace class."
    )
    if not rows:
        return Panel(
            "Constraint separation (latest retrace)",
            what,
            "",
            "no retrace with trace constraints yet — run `vledger retrace`",
        )
    shown = rows[:MAX_ROWS]
    bars = [
        (
            f"{r['task_id']} · {r['constraint_id']}",
            [
                ("passed", r["passed"], PASS),
                ("failed", r["failed"], FAIL),
                ("undecided", r["undecided"], UNDECIDED),
            ],
            r["class"],
        )
        for r in shown
    ]
    body = stacked_hbars(bars, label="constraint separation") + _legend(
        [("passed", PASS), ("failed", FAIL), ("undecided", UNDECIDED)]
    )
    if len(rows) > len(shown):
        body += _note(f"showing {len(shown)} of {len(rows)} constraints")
    return Panel("Constraint separation (latest retrace)", what, body)


AGREEMENT_PAIRS = 12  # 2×2 tables shown; the note says how many pairs there are


def _agreement_panel(con: duckdb.DuckDBPyConnection) -> Panel:
    rows = _rows(
        con,
        "SELECT * FROM agreement WHERE task_id = '*' ORDER BY observations DESC, criterion, "
        f"constraint_id LIMIT {AGREEMENT_PAIRS}",
    )
    ((total,),) = [
        tuple(r.values())
        for r in _rows(con, "SELECT count(*) AS n FROM agreement WHERE task_id = '*'")
    ]
    what = (
        "Judge criterion (recorded met) against trace constraint (current verdict) over every "
        "trial carrying both decided, pooled over tasks: the 2×2 table and Cohen's κ."
    )
    if not rows:
        return Panel(
            "Judge vs constraint agreement",
            what,
            "",
            "no trial carries both a judge criterion and a decided trace constraint yet",
        )
    body = (
        '<div style="display:flex;flex-wrap:wrap;gap:8px">'
        + "".join(
            matrix_2x2(
                r["criterion"],
                r["constraint_id"],
                r["met_passed"],
                r["met_failed"],
                r["not_met_passed"],
                r["not_met_failed"],
                r["kappa"],
            )
            for r in rows
        )
        + "</div>"
    )
    if total > len(rows):
        body += _note(f"showing {len(rows)} of {total} pairs, the most observed first")
    return Panel("Judge vs constraint agreement", what, body)


DISAGREEMENT_SQL = (
    # per replay: trials retrace judged disagreed, and per component the trials whose
    # replayed component score differs from the recorded one (both scored: a component
    # not measured offline is no disagreement, as in retrace)
    "WITH rec AS (SELECT trial, component, score FROM components WHERE source = 'recorded' "
    "AND score IS NOT NULL QUALIFY row_number() OVER (PARTITION BY trial, component "
    "ORDER BY grade_seq DESC) = 1), "
    "per_comp AS (SELECT c.replay_id, c.component, count(*) FILTER (WHERE "
    "abs(c.score - rec.score) > 1e-9) AS n FROM components c JOIN rec USING (trial, component) "
    "WHERE c.source = 'replayed' AND c.score IS NOT NULL AND coalesce(c.status, 'scored') = "
    "'scored' GROUP BY ALL), "
    # retrace's own per-trial status when the replay carries it; else verdict or score
    "rg AS (SELECT trial, score, binary_pass FROM grades WHERE source = 'recorded' "
    "QUALIFY row_number() OVER (PARTITION BY trial ORDER BY seq DESC) = 1), "
    "per_replay AS (SELECT g.replay_id, min(g.seq) AS first_seq, count(*) AS trials, "
    "count(*) FILTER (WHERE g.replay_status = 'disagreed' OR (g.replay_status IS NULL AND "
    "rg.trial IS NOT NULL AND (g.binary_pass IS DISTINCT FROM rg.binary_pass OR "
    "abs(coalesce(g.score, -1) - coalesce(rg.score, -1)) > 1e-9))) AS disagreed "
    "FROM grades g LEFT JOIN rg USING (trial) WHERE g.source = 'replayed' GROUP BY g.replay_id) "
    "SELECT p.replay_id, p.first_seq, p.trials, p.disagreed, "
    "coalesce(map_from_entries(list({'k': pc.component, 'v': pc.n}) FILTER (WHERE pc.component "
    "IS NOT NULL)), MAP {}) AS by_component FROM per_replay p LEFT JOIN per_comp pc USING "
    "(replay_id) GROUP BY ALL ORDER BY p.first_seq"
)


def _disagreement_panel(con: duckdb.DuckDBPyConnection) -> Panel:
    rows = _rows(con, DISAGREEMENT_SQL)
    for r in rows:  # Arrow hands a MAP over as (key, value) pairs
        r["by_component"] = dict(r["by_component"] or [])
    what = (
        "For each replay in log order: the trials retrace found disagreeing with their "
        "recorded grade, and per component how many re-derived component scores differ from "
        "the recorded ones (a component not measured offline is not counted)."
    )
    if not rows:
        return Panel(
            "Replay vs recorded disagreements over time",
            what,
            "",
            "no replay of a recorded grade yet — run `vledger retrace`",
        )
    labels = [r["replay_id"] or f"seq {r['first_seq']}" for r in rows]
    comps = sorted({c for r in rows for c in r["by_component"]})
    series = [("trials disagreed", [float(r["disagreed"]) for r in rows])] + [
        (c, [float(r["by_component"].get(c, 0)) for r in rows]) for c in comps
    ]
    top = _nice_max(max(v for _, vs in series for v in vs))
    body = line_chart(
        list(range(len(rows))),
        series,
        x_label="replay (log order)",
        y_label="trials",
        y_max=float(top),
        label="replay vs recorded disagreements",
        x_ticks=labels,
    ) + _legend([(name, PALETTE[i % len(PALETTE)]) for i, (name, _) in enumerate(series)])
    last = rows[-1]
    per = ", ".join(f"{c} {(last['by_component'] or {}).get(c, 0)}" for c in comps) or "none"
    body += _note(
        f"{len(rows)} replay(s); latest: {labels[-1]} re-derived {last['trials']} trial(s), "
        f"{last['disagreed']} disagreed; differing components: {per}"
    )
    return Panel("Replay vs recorded disagreements over time", what, body)


def _verdict_panel(con: duckdb.DuckDBPyConnection) -> Panel:
    rows = _rows(
        con,
        "SELECT effective_grade, min(grade_rank) AS rank, count(*) AS units FROM ("
        "SELECT * FROM admissions QUALIFY row_number() OVER (PARTITION BY unit ORDER BY seq DESC) = 1"
        ") GROUP BY effective_grade ORDER BY rank, effective_grade",
    )
    what = "Latest admission per unit, by verdict grade, strongest first (the registered ladder)."
    if not rows:
        return Panel(
            "Verdict-grade distribution",
            what,
            "",
            "no admissions yet — record units with `vledger verdict`",
        )
    body = grouped_bars(
        [r["effective_grade"] or "(none)" for r in rows],
        [("units", [float(r["units"]) for r in rows])],
        y_label="units",
        label="verdict grades",
    )
    return Panel("Verdict-grade distribution", what, body)


NEVER_SCORED_SQL = (
    "SELECT task_id, key, skipped, reasons FROM key_accounting WHERE evaluated = 0 "
    "ORDER BY task_id, key"
)


def _never_scored_panel(con: duckdb.DuckDBPyConnection) -> Panel | None:
    """Keys a corpus declared that no replay ever evaluated (issue 22); shown only when the
    list is not empty — a panel saying "none" would be noise on every healthy ledger."""
    rows = _rows(con, NEVER_SCORED_SQL)
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
        + (_note(f"showing {len(shown)} of {len(rows)} keys") if len(rows) > len(shown) else "")
    )
    return Panel(
        "Keys that never scored",
        "Populated scored keys no replayed grade evaluated: each scored nothing (GRADING.md "
        "§ The runtime ledger). From the key_accounting view.",
        body,
    )


def _summary(con: duckdb.DuckDBPyConnection) -> tuple[str, dict[str, Any]]:
    (s,) = _rows(
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


def render(ledger_dir: Path | str) -> tuple[str, dict[str, Any]]:
    """The report page for a ledger, and the summary numbers it shows."""
    with analytics.connect(ledger_dir) as (con, source):
        summary_html, s = _summary(con)
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


def write_report(ledger_dir: Path | str, out: Path | str) -> str:
    """Write the report to ``out``; return a one-line summary for the CLI."""
    return summary_line(write_report_counts(ledger_dir, out))


def write_report_counts(ledger_dir: Path | str, out: Path | str) -> dict[str, Any]:
    """Write the report to ``out``; return what it shows (``vledger report --json``)."""
    check_output_path(Path(out), Path(ledger_dir), what="report")  # before any work
    page, s = render(ledger_dir)
    Path(out).write_text(page, encoding="utf-8")
    keys = ("panels", "panels_with_data", "events", "trials", "replays", "units")
    return {"out": str(out), **{k: s[k] for k in keys}}


def summary_line(s: dict[str, Any]) -> str:
    return (
        f"{s['panels_with_data']} of {s['panels']} panels with data; {s['events']:,} events, "
        f"{s['trials']:,} trials"
    )
