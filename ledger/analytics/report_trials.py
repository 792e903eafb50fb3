"""The report's trial pages: a list of trials, and one anchored section per trial listed.

The page has no script (its Content-Security-Policy forbids one), so a trial "page" is a
``<section id="trial-…">`` shown only as the URL's target (CSS ``:target``); what each
holds, and which trials get one: docs/readme/analytics.md § The report, "Trial pages".
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from html import escape
from typing import Any

import duckdb
import orjson

from ledger.analytics import sql as analytics
from ledger.analytics.view_kit import sql_str

TRIAL_PAGES = 60  # sections written; each is small, but 5,000 of them would not be
EVENT_TEXT = 160  # characters of a message or result shown per timeline row

LATEST_REPLAY = (
    "SELECT trial, seq, score, binary_pass, replay_status, replay_id FROM grades "
    "WHERE source = 'replayed' QUALIFY row_number() OVER (PARTITION BY trial ORDER BY seq DESC) = 1"
)
# Disagreements first, then trials that fail either side, then the rest, by name.
TRIALS_SQL = (
    "WITH rec AS (SELECT trial, seq, score, binary_pass FROM _recorded_grade), "
    f"rep AS ({LATEST_REPLAY}) "
    "SELECT t.trial, t.task_id, coalesce(t.agent_model, '(unknown)') AS model, "
    "rec.seq AS rec_seq, rec.score AS rec_score, rec.binary_pass AS rec_pass, "
    "rep.seq AS rep_seq, rep.score AS rep_score, rep.binary_pass AS rep_pass, "
    "rep.replay_id, coalesce(rep.replay_status, CASE WHEN rep.seq IS NULL THEN 'not replayed' "
    "WHEN rec.seq IS NULL THEN 'ungraded' WHEN rep.binary_pass IS DISTINCT FROM rec.binary_pass "
    "OR abs(coalesce(rep.score, -1) - coalesce(rec.score, -1)) > 1e-9 THEN 'disagreed' "
    "ELSE 'agreed' END) AS status, count(*) OVER () AS total "
    "FROM trials t LEFT JOIN rec USING (trial) LEFT JOIN rep USING (trial) "
    "ORDER BY status <> 'disagreed', coalesce(rep.binary_pass, rec.binary_pass, false), t.trial "
    f"LIMIT {TRIAL_PAGES}"
)


def anchor(trial: str) -> str:
    """The section id of a trial: stable, HTML-safe, unique (a digest of the stream name)."""
    return "trial-" + hashlib.sha256(trial.encode()).hexdigest()[:16]


def _in(values: Sequence[Any]) -> str:
    """A SQL list literal of trial names or seqs (quotes doubled: names are data)."""
    return "(" + ", ".join(str(int(v)) if isinstance(v, int) else sql_str(v) for v in values) + ")"


def _positions(value: Any) -> list[int]:
    if isinstance(value, (str, bytes)):  # a JSON-typed column arrives as its text
        value = orjson.loads(value)
    return [int(v) for v in value or []]


def _num(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "pass" if v else "fail"
    return f"{v:.3f}" if isinstance(v, float) else str(v)


def _cut(text: str | None, n: int = EVENT_TEXT) -> str:
    text = (text or "").replace("\n", " ")
    return text if len(text) <= n else text[: n - 1] + "…"


def select_trials(con: duckdb.DuckDBPyConnection) -> tuple[list[dict[str, Any]], int]:
    rows = analytics.rows(con, TRIALS_SQL)
    return rows, (rows[0]["total"] if rows else 0)


def trials_list(rows: list[dict[str, Any]], total: int) -> str:
    """The list panel's body: one row per trial with a section, each linking to it."""
    if not rows:
        return ""
    head = "<tr><th>trial</th><th>task</th><th>model</th><th>status</th><th>recorded</th><th>replayed</th></tr>"
    body = "".join(
        f'<tr><td><a href="#{anchor(r["trial"])}">{escape(r["trial"])}</a></td>'
        f"<td>{escape(r['task_id'] or '')}</td><td>{escape(r['model'])}</td>"
        f'<td class="st-{escape(r["status"].replace(" ", "-"))}">{escape(r["status"])}</td>'
        f"<td>{_num(r['rec_score'])} / {_num(r['rec_pass'])}</td>"
        f"<td>{_num(r['rep_score'])} / {_num(r['rep_pass'])}</td></tr>"
        for r in rows
    )
    note = (
        f'<div class="note">showing {len(rows)} of {total:,} trials (disagreements, then '
        'failures); every trial: <code>vledger sql "SELECT * FROM trials"</code></div>'
        if total > len(rows)
        else ""
    )
    return f'<div class="scroll"><table class="trials">{head}{body}</table></div>{note}'


def trial_sections(con: duckdb.DuckDBPyConnection, rows: list[dict[str, Any]]) -> str:
    """One hidden, anchored section per listed trial."""
    if not rows:
        return ""
    trials = [r["trial"] for r in rows]
    seqs = [s for r in rows for s in (r["rec_seq"], r["rep_seq"]) if s is not None]
    events = _timelines(con, trials)

    def per_grade(view: str, order: str) -> dict[Any, list[dict[str, Any]]]:
        sql = f"SELECT * FROM {view} WHERE grade_seq IN {_in(seqs)} ORDER BY {order}"
        return _by(analytics.rows(con, sql), "grade_seq") if seqs else {}

    checks, comps = per_grade("trace_checks", "ord"), per_grade("components", "component")
    return "\n".join(_section(r, events.get(r["trial"], []), checks, comps) for r in rows)


def _by(rows: list[dict[str, Any]], key: str) -> dict[Any, list[dict[str, Any]]]:
    out: dict[Any, list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(r[key], []).append(r)
    return out


def _timelines(con: duckdb.DuckDBPyConnection, trials: list[str]) -> dict[str, list[dict]]:
    """Each trial's timeline (latest projection version); where none is stored, its
    messages and tool calls in log order (positions then are not timeline positions)."""
    timeline = analytics.rows(
        con,
        "SELECT trial, position, kind, coalesce(text, '') AS text, tool_name, status, result, "
        "agent "
        f"FROM timeline WHERE trial IN {_in(trials)} QUALIFY projection_version = "
        "max(projection_version) OVER (PARTITION BY trial) ORDER BY trial, position",
    )
    out = _by(timeline, "trial")
    missing = [t for t in trials if t not in out]
    if missing:
        raw = analytics.rows(
            con,
            "SELECT trial, seq, NULL AS position, role || ' message' AS kind, content AS text, "
            f"NULL AS tool_name, NULL AS status, NULL AS result, NULL AS agent FROM messages "
            f"WHERE trial IN {_in(missing)} UNION ALL SELECT trial, seq, NULL, 'tool_call', '', "
            f"tool_name, status, output, agent FROM tool_calls WHERE trial IN {_in(missing)} "
            "ORDER BY trial, seq",
        )
        out.update(_by(raw, "trial"))
    return out


def _section(
    r: dict[str, Any],
    events: list[dict[str, Any]],
    checks: dict[Any, list[dict[str, Any]]],
    comps: dict[Any, list[dict[str, Any]]],
) -> str:
    rec, rep = r["rec_seq"], r["rep_seq"]
    rec_checks = {c["constraint_id"]: c for c in checks.get(rec, [])}
    rep_checks = {c["constraint_id"]: c for c in checks.get(rep, [])}
    # the verdicts beside each event: the replayed grade's when there is one (it is current)
    readers: dict[int, list[tuple[str, str]]] = {}
    for cid, c in (rep_checks or rec_checks).items():
        for pos in _positions(c["matched_positions"]):
            readers.setdefault(pos, []).append((cid, c["verdict"]))
    replay = f" (replay {escape(r['replay_id'])})" if r["replay_id"] else ""
    return (
        f'<section class="trial" id="{anchor(r["trial"])}"><h2>{escape(r["trial"])}</h2>'
        f'<p class="what">task {escape(r["task_id"] or "")} · model {escape(r["model"])} · '
        f'{escape(r["status"])} · <a href="#trials">all listed trials</a></p>'
        f"<h3>Recorded and replayed grade{replay}</h3>"
        + _grade_table(r, comps.get(rec, []), comps.get(rep, []))
        + "<h3>Constraints</h3>"
        + _checks_table(rec_checks, rep_checks)
        + "<h3>Timeline</h3>"
        + _timeline_table(events, readers)
        + "</section>"
    )


def _grade_table(r: dict[str, Any], rec: list[dict], rep: list[dict]) -> str:
    def comp(rows: list[dict], name: str) -> str:
        c = next((x for x in rows if x["component"] == name), None)
        if c is None:
            return "—"
        if c["score"] is not None:
            return _num(c["score"])
        return escape(c["status"] or "not configured") + (
            f" ({escape(c['reason'])})" if c.get("reason") else ""
        )

    names = sorted({c["component"] for c in rec + rep})
    lines = [
        ("score", _num(r["rec_score"]), _num(r["rep_score"])),
        ("verdict", _num(r["rec_pass"]), _num(r["rep_pass"])),
    ]
    lines += [(n, comp(rec, n), comp(rep, n)) for n in names]
    body = "".join(
        f"<tr{' class=differs' if a != b else ''}><td>{escape(n)}</td><td>{a}</td><td>{b}</td></tr>"
        for n, a, b in lines
    )
    return f"<table><tr><th></th><th>recorded</th><th>replayed</th></tr>{body}</table>"


def _checks_table(rec: dict[str, dict], rep: dict[str, dict]) -> str:
    ids = list(dict.fromkeys([*rep, *rec]))
    if not ids:
        return '<p class="note">no trace constraint in either grade</p>'

    def verdict(c: dict | None) -> str:
        if c is None:
            return "—"
        return f'<span class="v-{escape(c["verdict"])}">{escape(c["verdict"])}</span>'

    body = "".join(
        f"<tr><td>{escape(cid)}</td><td>{verdict(rec.get(cid))}</td><td>{verdict(rep.get(cid))}</td>"
        f"<td>{escape(', '.join(map(str, _positions((rep.get(cid) or rec[cid])['matched_positions']))))}</td>"
        f"<td>{escape((rep.get(cid) or rec[cid])['message'] or '')}</td></tr>"
        for cid in ids
    )
    return (
        "<table><tr><th>constraint</th><th>recorded</th><th>replayed</th>"
        f"<th>events read</th><th>message</th></tr>{body}</table>"
    )


def _timeline_table(events: list[dict], readers: dict[int, list[tuple[str, str]]]) -> str:
    if not events:
        return '<p class="note">no messages or tool calls recorded</p>'
    rows = []
    for e in events:
        what = e["text"] or ""
        if e["tool_name"]:
            what = f"{e['tool_name']} → {e['status'] or '?'}" + (
                f": {e['result']}" if e.get("result") else ""
            )
        read = readers.get(e["position"], []) if e["position"] is not None else []
        beside = " ".join(
            f'<span class="v-{escape(v)}">{escape(cid)}: {escape(v)}</span>' for cid, v in read
        )
        pos = "" if e["position"] is None else str(e["position"])
        # the agent that made it, where the recorder names one (inspect_ai agent spans)
        kind = e["kind"] + (f" · {e['agent']}" if e.get("agent") else "")
        rows.append(
            f"<tr><td>{pos}</td><td>{escape(kind)}</td><td>{escape(_cut(what))}</td>"
            f"<td>{beside}</td></tr>"
        )
    return (
        "<table><tr><th>#</th><th>event</th><th>what</th><th>constraints that read it</th></tr>"
        + "".join(rows)
        + "</table>"
    )
