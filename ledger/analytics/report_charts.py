"""The report's charts: inline SVG drawn from rows, no script and nothing fetched.

Every label is escaped; axis labels thin out rather than overlap (the browser test in
tests/test_report.py checks no two ``tick`` labels touch).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape
from typing import Any

PASS, FAIL, UNDECIDED = "#2e8b57", "#c0392b", "#d4a017"
PALETTE = ("#3b6fb6", "#e07b39", "#2e8b57", "#8e5ea2", "#c0392b", "#17a2b8", "#b8860b", "#6c757d")


def _t(
    x: float, y: float, s: str, *, anchor: str = "start", cls: str = "", rot: int = 0,
    full: str | None = None,
) -> str:  # fmt: skip
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


def legend(items: Sequence[tuple[str, str]]) -> str:
    return (
        '<div class="legend">'
        + "".join(f'<span><i style="background:{c}"></i>{escape(n)}</span>' for n, c in items)
        + "</div>"
    )


def note(text: str) -> str:
    return f'<div class="note">{escape(text)}</div>'


def _short(s: str, n: int = 34) -> str:
    """``s`` in at most ``n`` characters, cut in the middle: names that share a start
    usually differ at the end (``…_000`` / ``…_001``), so both ends are kept."""
    if len(s) <= n:
        return s
    head = (n - 1) // 2
    return s[:head] + "…" + s[len(s) - (n - 1 - head) :]


def distinct(labels: Sequence[str]) -> list[str]:
    """Labels with their shared prefix folded to '…', so truncation keeps what differs."""
    if len(labels) < 2:
        return list(labels)
    first, last = min(labels), max(labels)
    i = 0
    while i < min(len(first), len(last)) and first[i] == last[i]:
        i += 1
    cut = max(first.rfind("_", 0, i), first.rfind(" ", 0, i), first.rfind("/", 0, i)) + 1
    return [("…" + x[cut:]) if cut > 8 else x for x in labels]


def fmt(v: float | None, digits: int = 3) -> str:
    return "undefined" if v is None else f"{v:.{digits}f}"


# --- chart primitives --------------------------------------------------------------------


def _y_axis(left: int, right: int, base: int, plot_h: float, top_v: float) -> list[str]:
    """The baseline and four grid lines with their values (two decimals up to a top of 2)."""
    parts = [f'<line class="axis" x1="{left}" y1="{base}" x2="{right}" y2="{base}"/>']
    for i in range(5):
        v, y = top_v * i / 4, base - plot_h * i / 4
        parts.append(f'<line class="grid" x1="{left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}"/>')
        label = f"{v:g}" if top_v > 2 else f"{v:.2f}"
        parts.append(_t(left - 4, y + 4, label, anchor="end", cls="muted"))
    return parts


def grouped_bars(
    categories: Sequence[str], series: Sequence[tuple[str, Sequence[float]]], *, y_label: str,
    y_max: float | None = None, label: str,
) -> str:  # fmt: skip
    """Vertical grouped bars: one group per category, one bar per series.

    Few categories: labels under their group. Many: labels turned upright, every
    :func:`thin_step`-th one shown so none overlap; every bar's tooltip names its category.
    """
    shown = distinct(categories)
    many = len(categories) > 6
    longest = max([len(_short(c, 28)) for c in shown] + [1])
    w, left, top = 540, 44, 12
    bottom = int(24 + CHAR_W * longest) if many else 30
    h = 200 + bottom
    top_v = nice_max(max([0.0, *(v for _, vs in series for v in vs)])) if y_max is None else y_max
    plot_w, plot_h = w - left - 10, h - bottom - top
    parts = _y_axis(left, w - 10, h - bottom, plot_h, top_v)
    group_w = plot_w / max(len(categories), 1)
    bar_w = group_w * 0.8 / max(len(series), 1)
    step = thin_step(len(categories), plot_w) if many else 1
    for ci, cat in enumerate(categories):
        gx = left + ci * group_w + group_w * 0.1
        for si, (name, vs) in enumerate(series):
            v = vs[ci]
            bh = plot_h * (v / top_v if top_v else 0)
            color, tip = PALETTE[si % len(PALETTE)], f"{name} · {cat}: {v:g}"
            parts.append(_bar(gx + si * bar_w, h - bottom, bar_w - 1, bh, color, tip))
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
        svg += note(f"every {step}th label shown; hover a bar for its full name")
    return svg


def line_chart(
    xs: Sequence[float], series: Sequence[tuple[str, Sequence[float | None]]], *, x_label: str,
    y_label: str, y_max: float = 1.0, label: str, x_ticks: Sequence[str] | None = None,
) -> str:  # fmt: skip
    w, h, left, bottom, top = 540, 240, 44, 40, 12
    plot_w, plot_h = w - left - 14, h - bottom - top
    n = len(xs)

    def px(i: int) -> float:
        return left + (plot_w * i / (n - 1) if n > 1 else plot_w / 2)

    def py(v: float) -> float:
        return h - bottom - plot_h * (v / y_max if y_max else 0)

    parts = _y_axis(left, w - 14, h - bottom, plot_h, y_max)
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
    labels = distinct([name for name, _, _ in rows])
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
    row_labels: Sequence[str], col_labels: Sequence[str],
    cells: dict[tuple[str, str], tuple[float, str]], *, label: str,
) -> str:  # fmt: skip
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
    for i, (r, shown) in enumerate(zip(row_labels, distinct(row_labels), strict=True)):
        y = top + i * ch
        out.append(_tick(left - 6, y + ch - 5, _short(shown, 46), r, anchor="end"))
        for j, c in enumerate(col_labels):
            if (r, c) not in cells:
                continue
            v, tip = cells[(r, c)]
            out.append(_rect(left + j * cw + 1, y + 1, cw - 2, ch - 2, _ramp(v), tip))
            out.append(_t(left + j * cw + cw / 2, y + ch - 5, f"{v:.2f}", anchor="middle"))
    return _svg(w, h, "".join(out), label)


def nice_max(v: float) -> float:
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
    return f"rgb({int(235 - 110 * v)},{int(150 + 70 * v)},{int(140 - 10 * v)})"


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
    for (i, j), v, agree in (((0, 0), a, True), ((0, 1), b, False), ((1, 0), c, False),
                             ((1, 1), d, True)):  # fmt: skip
        shade = 0.25 + 0.75 * v / total
        color = PASS if agree else FAIL
        out.append(
            f'<rect x="{x0 + j * s}" y="{y0 + i * s}" width="{s - 2}" height="{s - 2}" fill="{color}" '
            f'fill-opacity="{shade:.2f}"><title>{escape(f"{v} trials")}</title></rect>'
        )
        out.append(_t(x0 + j * s + s / 2 - 1, y0 + i * s + s / 2 + 4, str(v), anchor="middle"))
    out.append(_t(4, h - 8, f"n={a + b + c + d}  κ={fmt(kappa)}", cls="muted"))
    return _svg(w, h, "".join(out), f"agreement {criterion} × {constraint}")
