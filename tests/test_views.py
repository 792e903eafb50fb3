"""The SQL views: documented columns, projections of the log, and the numbers they compute."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.analytics import sql as analytics
from ledger.analytics import views
from tests.analytics_fixtures import (
    admission,
    check,
    envelope_table,
    recorded_grade,
    replay_events,
    replayed_grade,
    trial_events,
    trial_stream,
    write_ledger,
)


def _rows(ledger: Path, sql: str) -> list[dict]:
    return analytics.query(ledger, sql).to_pylist()


def _mixed_events() -> list:
    """A small history touching every view: two tasks, two models, aborts, two replays."""
    ev: list = []
    task_of: dict[str, str] = {}
    for task in ("gated", "policy"):
        for i in range(4):
            passed = i % 2 == 0
            g = recorded_grade(
                1.0 if passed else 0.0,
                passed,
                criteria=[
                    ("checked_first", passed, 1.0 if passed else 0.0),
                    ("clarity", None, None),
                ],
            )
            ev += trial_events(
                "notes",
                task,
                i,
                model=("m-a", "m-b")[i % 2],
                grade=g,
                tools=[("list_notes", "success", 0.5 + i), ("add_note", "error", 0.1)],
            )
            task_of[trial_stream("notes", task, i)] = task
        ev += trial_events("notes", task, 9, termination="provision_error")
    for rid in ("r1", "r2"):
        ev += replay_events(
            rid,
            {
                t: replayed_grade(
                    1.0,
                    True,
                    checks=[
                        check("listed", "pass" if t.endswith(("0", "2")) else "fail"),
                        check("quiet", "undecided"),
                    ],
                    not_measured={"state_checks": "no final state recorded"},
                )
                for t in task_of
            },
            task_of=task_of,
        )
    ev += [admission("u1", "proof"), admission("u2", "review_only"), admission("u3", "made_up")]
    return ev


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_ledger(tmp_path_factory.mktemp("mixed") / "lg", _mixed_events())


def test_every_public_view_has_exactly_its_documented_columns(mixed: Path) -> None:
    for view in views.PUBLIC_VIEWS:
        table = analytics.query(mixed, f"SELECT * FROM {view.name} LIMIT 0")
        assert table.column_names == [c for c, _ in view.columns], view.name
        assert all(desc for _, desc in view.columns), view.name


def test_schema_rows_cover_every_public_view_and_no_internal_one() -> None:
    names = {r["view"] for r in views.schema_rows()}
    assert names == {v.name for v in views.PUBLIC_VIEWS}
    assert not any(n.startswith("_") for n in names)
    assert {
        "events",
        "trials",
        "messages",
        "tool_calls",
        "timeline",
        "grades",
        "current_grades",
        "components",
        "criteria",
        "trace_checks",
        "admissions",
        "receipts",
        "pass_at_k",
        "agreement",
    } <= names


_WALL_CLOCK = {"recorded_at", "registered_at"}


def _snapshot(con: duckdb.DuckDBPyConnection, *, clock: bool = True) -> dict[str, list[tuple]]:
    out = {}
    for view in views.PUBLIC_VIEWS:
        names = [c for c, _ in view.columns if clock or c not in _WALL_CLOCK]
        cols = ", ".join(f"{c}::VARCHAR" for c in names)
        out[view.name] = con.execute(f"SELECT {cols} FROM {view.name} ORDER BY ALL").fetchall()
    return out


def test_views_are_projections_of_the_log_rebuilt_from_nothing(mixed: Path, tmp_path: Path) -> None:
    """Dropping every view and creating it again over the same log gives identical rows; so do
    the same events read from a sealed Parquet segment instead of the store."""
    with analytics.connect(mixed) as (con, source):
        first = _snapshot(con)
        views.drop_views(con)
        assert con.execute(
            "SELECT count(*) FROM duckdb_views() WHERE NOT internal AND database_name = 'memory'"
        ).fetchone() == (0,)
        views.create_views(con, source.relation)
        rebuilt = _snapshot(con)
        first_no_clock = _snapshot(con, clock=False)
    assert rebuilt == first
    assert all(first[name] for name in ("events", "trials", "grades", "pass_at_k", "agreement"))

    seg_ledger = tmp_path / "segonly"
    (seg_ledger / "segments").mkdir(parents=True)
    table = analytics.query(
        mixed,
        "SELECT seq, stream, stream_version, event_id, type, "
        "schema_version, recorded_at, payload::VARCHAR AS p FROM events",
    )
    assert table.num_rows == len(_mixed_events())
    pq.write_table(envelope_table(_mixed_events()), seg_ledger / "segments" / "seg-0-999.parquet")
    with analytics.connect(seg_ledger) as (con, source):
        assert source.kind == "segments"
        from_segments = _snapshot(con, clock=False)
    # append times differ between the two writers (the store's wall clock); all else is equal
    assert from_segments == first_no_clock


def test_pass_at_k_reproduces_the_spec_example_and_excludes_the_abort(tmp_path: Path) -> None:
    """GRADING.md § pass@k: 8 trials, 5 passed → pass@1 0.625, pass@4 1.0, pass@8 1.0; an
    infrastructure abort (rate_limit) neither counts as a failure nor props up n."""
    ev = []
    for i in range(8):
        ev += trial_events("c", "t", i, grade=recorded_grade(1.0 if i < 5 else 0.0, i < 5))
    ev += trial_events("c", "t", 8, termination="rate_limit")
    lg = write_ledger(tmp_path / "lg", ev)
    rows = _rows(
        lg,
        "SELECT k, n, c, aborts, pass_at_k, reduced_by_aborts FROM pass_at_k "
        "WHERE level = 'task' AND model = '*' AND basis = 'current' ORDER BY k",
    )
    by_k = {r["k"]: r for r in rows}
    assert {r["n"] for r in rows} == {8} and {r["c"] for r in rows} == {5}
    assert {r["aborts"] for r in rows} == {1}
    assert by_k[1]["pass_at_k"] == pytest.approx(0.625)
    assert by_k[4]["pass_at_k"] == 1.0
    assert by_k[8]["pass_at_k"] == 1.0
    assert by_k[10]["pass_at_k"] is None  # n < k: no estimate
    assert by_k[8]["reduced_by_aborts"] is False
    micro = _rows(
        lg,
        "SELECT pass_at_k FROM pass_at_k WHERE level = 'micro' AND model = '*' "
        "AND basis = 'recorded' AND k = 1",
    )
    assert micro == [{"pass_at_k": pytest.approx(0.625)}]


def test_one_abort_can_turn_pass_at_k_into_null(tmp_path: Path) -> None:
    """'one lost trial can therefore turn pass@5 into null': 5 trials, one rate-limited."""
    ev = []
    for i in range(4):
        ev += trial_events("c", "t", i, grade=recorded_grade(1.0, True))
    ev += trial_events("c", "t", 4, termination="api_timeout")
    lg = write_ledger(tmp_path / "lg", ev)
    (row,) = _rows(
        lg,
        "SELECT n, pass_at_k, reduced_by_aborts FROM pass_at_k WHERE level = 'task' "
        "AND model = '*' AND basis = 'current' AND k = 5",
    )
    assert row == {"n": 4, "pass_at_k": None, "reduced_by_aborts": True}


@pytest.mark.parametrize(
    ("reason", "grading_error", "outcome", "counted"),
    [
        ("user_stop", None, "measured", True),
        ("timeout", None, "measured", True),
        ("api_error", None, "measured", True),
        ("stuck_detected", None, "measured", True),
        ("something_new", None, "measured", True),  # unrecognised reasons are counted
        (None, None, "measured", True),
        ("error", None, "harness_error", True),
        ("trial_lost", None, "harness_error", True),
        ("rate_limit", None, "infrastructure_abort", False),
        ("api_timeout", None, "infrastructure_abort", False),
        ("provision_error", None, "infrastructure_abort", False),
        ("agent_done", "judge refused", "ungradeable", True),
        ("rate_limit", "judge refused", "ungradeable", True),  # read before the reason
    ],
)
def test_outcome_class_follows_the_infrastructure_abort_table(
    tmp_path: Path, reason: str | None, grading_error: str | None, outcome: str, counted: bool
) -> None:
    lg = write_ledger(
        tmp_path / "lg", trial_events("c", "t", 0, termination=reason, grading_error=grading_error)
    )
    (row,) = _rows(lg, "SELECT outcome_class, counted FROM trials")
    assert row == {"outcome_class": outcome, "counted": counted}
    (pk,) = _rows(
        lg,
        "SELECT n, c, aborts FROM pass_at_k WHERE level = 'task' AND model = '*' "
        "AND basis = 'current' AND k = 1",
    )
    # a counted trial without a grade (trial_lost, ungradeable) is in n and not in c
    assert pk == {"n": int(counted), "c": 0, "aborts": int(not counted)}


@settings(max_examples=150, deadline=None)
@given(st.integers(min_value=0, max_value=80), st.data())
def test_pass_at_k_value_is_the_closed_form(n: int, data: st.DataObject) -> None:
    c = data.draw(st.integers(min_value=0, max_value=n))
    k = data.draw(st.integers(min_value=1, max_value=n + 3))
    con = duckdb.connect()
    for macro in views.MACROS:
        con.execute(macro)
    (got,) = con.execute(
        "SELECT pass_at_k_value(?::BIGINT, ?::BIGINT, ?::BIGINT)", [n, c, k]
    ).fetchone()
    if n < k:
        assert got is None
    else:
        want = 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
        assert got == pytest.approx(float(want), abs=1e-12)
        if n - c < k:
            assert got == 1.0  # exactly: fewer failures than draws


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 5), st.integers(0, 5), st.integers(0, 5))
def test_constraint_class_matches_the_retrace_projection(
    passed: int, failed: int, undecided: int
) -> None:
    """The SQL classification and replay.grading.retrace_report.classify are one rule, written twice."""
    from replay.grading.retrace_report import classify  # noqa: PLC0415

    con = duckdb.connect()
    for macro in views.MACROS:
        con.execute(macro)
    (got,) = con.execute("SELECT constraint_class(?, ?, ?)", [passed, failed, undecided]).fetchone()
    assert got == classify(passed, failed, undecided)[0]


_REASONS = [
    None,
    "user_stop",
    "max_turns",
    "timeout",
    "error",
    "trial_lost",
    "rate_limit",
    "api_timeout",
    "provision_error",
    "stuck_detected",
]


def _memory_views(events: list) -> duckdb.DuckDBPyConnection:
    """The views over an in-memory envelope table (no store): fast enough for hypothesis."""
    con = duckdb.connect()
    con.register("raw_rows", envelope_table(events))
    views.create_views(con, "SELECT * FROM raw_rows")
    return con


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c"]),
            st.sampled_from(_REASONS),
            st.sampled_from([None, "", "judge refused"]),
            st.sampled_from([None, True, False]),
        ),
        max_size=14,
    )
)
def test_pass_at_k_view_matches_the_grading_projection(trials: list) -> None:
    """Per task, macro and micro pass@k (and each trial's outcome class) agree with
    replay.grading.outcomes — the same rule computed by the projection, over generated trials."""
    from replay.grading.outcomes import classify_trial_outcome  # noqa: PLC0415
    from tests.pass_at_k_oracle import TrialVerdict, pass_at_k_report  # noqa: PLC0415

    ev, verdicts = [], []
    for i, (task, reason, gerr, passed) in enumerate(trials):
        grade = None if passed is None else recorded_grade(1.0 if passed else 0.0, passed)
        ev += trial_events("c", task, i, termination=reason, grading_error=gerr, grade=grade)
        verdicts.append(TrialVerdict(task, reason, gerr, passed))
    con = _memory_views(ev)
    got_classes = con.execute(
        "SELECT trial_index, outcome_class FROM trials ORDER BY trial_index"
    ).fetchall()
    assert got_classes == [
        (i, str(classify_trial_outcome(r, g))) for i, (_t, r, g, _p) in enumerate(trials)
    ]
    for k in (1, 2, 3, 5):
        want = pass_at_k_report(verdicts, k)
        rows = con.execute(
            "SELECT level, task_id, pass_at_k FROM pass_at_k WHERE basis = 'recorded' AND model = '*' "
            "AND k = ?",
            [k],
        ).fetchall()
        per_task = {t: v for lvl, t, v in rows if lvl == "task"}
        assert per_task.keys() == want.per_task.keys()
        for task, v in want.per_task.items():
            assert per_task[task] == (None if v is None else pytest.approx(v, abs=1e-12))
        levels = {lvl: v for lvl, _t, v in rows if lvl != "task"}
        if trials:
            assert levels["macro"] == (None if want.macro is None else pytest.approx(want.macro))
            assert levels["micro"] == (None if want.micro is None else pytest.approx(want.micro))


def test_current_grade_prefers_the_latest_replay_and_history_keeps_all(tmp_path: Path) -> None:
    s = trial_stream("c", "t", 0)
    ev = trial_events("c", "t", 0, grade=recorded_grade(1.0, True))
    ev += replay_events("r1", {s: replayed_grade(0.0, False)}, task_of={s: "t"})
    ev += replay_events("r2", {s: replayed_grade(0.5, False)}, task_of={s: "t"})
    # a re-ingested recorded grade after the replays does not displace them
    ev.append((s, "grade.recorded", {"source": "grade.yaml", "grade": recorded_grade(0.9, True)}))
    lg = write_ledger(tmp_path / "lg", ev)
    (cur,) = _rows(
        lg,
        "SELECT source, replay_id, score, binary_pass, recorded_score, "
        "recorded_binary_pass, replays FROM current_grades",
    )
    assert cur == {
        "source": "replayed",
        "replay_id": "r2",
        "score": 0.5,
        "binary_pass": False,
        "recorded_score": 0.9,
        "recorded_binary_pass": True,
        "replays": 2,
    }
    hist = _rows(lg, "SELECT source, replay_id, score FROM grades ORDER BY seq")
    assert hist == [
        {"source": "recorded", "replay_id": None, "score": 1.0},
        {"source": "replayed", "replay_id": "r1", "score": 0.0},
        {"source": "replayed", "replay_id": "r2", "score": 0.5},
        {"source": "recorded", "replay_id": None, "score": 0.9},
    ]
    (pk,) = _rows(
        lg,
        "SELECT basis, c FROM pass_at_k WHERE level = 'task' AND model = '*' "
        "AND k = 1 AND basis = 'current'",
    )
    assert pk["c"] == 0


def test_agreement_two_by_two_and_kappa(tmp_path: Path) -> None:
    """a=4 (met, passed), b=1 (met, failed), c=2 (not met, passed), d=3: po 0.7, pe 0.5, κ 0.4.
    Undecided and withheld constraint results are not observations."""
    cells = [(True, "pass")] * 4 + [(True, "fail")] + [(False, "pass")] * 2 + [(False, "fail")] * 3
    cells += [(True, "undecided"), (False, "withheld")]
    ev, grades, task_of = [], {}, {}
    for i, (met, verdict) in enumerate(cells):
        ev += trial_events(
            "c", "t", i, grade=recorded_grade(1.0, met, criteria=[("crit", met, 1.0)])
        )
        s = trial_stream("c", "t", i)
        grades[s] = replayed_grade(1.0, True, checks=[check("k", verdict)])
        task_of[s] = "t"
    ev += replay_events("r1", grades, task_of=task_of)
    lg = write_ledger(tmp_path / "lg", ev)
    rows = _rows(lg, "SELECT * FROM agreement ORDER BY task_id")
    assert [r["task_id"] for r in rows] == ["*", "t"]
    for r in rows:
        assert (r["met_passed"], r["met_failed"], r["not_met_passed"], r["not_met_failed"]) == (
            4,
            1,
            2,
            3,
        )
        assert r["observations"] == 10
        assert r["accuracy"] == pytest.approx(0.7)
        assert r["kappa"] == pytest.approx(0.4)


def test_kappa_is_undefined_when_chance_agreement_is_one(tmp_path: Path) -> None:
    ev, grades, task_of = [], {}, {}
    for i in range(3):
        ev += trial_events(
            "c", "t", i, grade=recorded_grade(1.0, True, criteria=[("crit", True, 1.0)])
        )
        s = trial_stream("c", "t", i)
        grades[s], task_of[s] = replayed_grade(1.0, True, checks=[check("k", "pass")]), "t"
    ev += replay_events("r1", grades, task_of=task_of)
    lg = write_ledger(tmp_path / "lg", ev)
    rows = _rows(lg, "SELECT accuracy, kappa FROM agreement")
    assert rows == [{"accuracy": 1.0, "kappa": None}] * 2


def test_constraint_separation_classes_over_the_latest_replay(tmp_path: Path) -> None:
    plan = {  # constraint → verdict per trial 0..3 in the LATEST replay
        "disc": ["pass", "fail", "undecided", "pass"],
        "true": ["pass"] * 4,
        "false": ["fail"] * 4,
        "part": ["pass", "undecided", "pass", "pass"],
        "never": ["undecided"] * 4,
        "gone": ["withheld"] * 4,
    }
    ev, task_of = [], {}
    for i in range(4):
        ev += trial_events("c", "t", i, grade=recorded_grade(1.0, True))
        task_of[trial_stream("c", "t", i)] = "t"
    old = {s: replayed_grade(1.0, True, checks=[check(c, "fail") for c in plan]) for s in task_of}
    ev += replay_events("old", old, task_of=task_of)
    new = {
        s: replayed_grade(1.0, True, checks=[check(c, v[i]) for c, v in plan.items()])
        for i, s in enumerate(task_of)
    }
    ev += replay_events("new", new, task_of=task_of)
    lg = write_ledger(tmp_path / "lg", ev)
    rows = {r["constraint_id"]: r for r in _rows(lg, "SELECT * FROM constraint_separation")}
    assert {c: r["class"] for c, r in rows.items()} == {
        "disc": "discriminating",
        "true": "always_true",
        "false": "always_false",
        "part": "undecided_in_part",
        "never": "never_decided",
        "gone": "not_measured",
    }
    assert {r["replay_id"] for r in rows.values()} == {"new"}
    assert (rows["disc"]["passed"], rows["disc"]["failed"], rows["disc"]["undecided"]) == (2, 1, 1)
    assert [r["constraint_id"] for r in sorted(rows.values(), key=lambda r: r["ord"])] == list(plan)


def test_components_criteria_trace_checks_rows(mixed: Path) -> None:
    comp = _rows(
        mixed,
        "SELECT component, score, status, reason FROM components "
        "WHERE source = 'replayed' AND trial = 'trial/notes/gated/0' "
        "AND replay_id = 'r1' ORDER BY component",
    )
    assert comp == [
        {"component": "llm_judge", "score": 1.0, "status": "scored", "reason": None},
        {
            "component": "state_checks",
            "score": None,
            "status": "not_measured",
            "reason": "no final state recorded",
        },
        {"component": "trace_checks", "score": None, "status": "not_evaluated", "reason": None},
    ]
    crit = _rows(
        mixed,
        "SELECT criterion, met, score FROM criteria WHERE trial = "
        "'trial/notes/gated/1' ORDER BY criterion",
    )
    assert crit == [
        {"criterion": "checked_first", "met": False, "score": 0.0},
        {"criterion": "clarity", "met": None, "score": None},
    ]
    tc = _rows(
        mixed,
        "SELECT ord, constraint_id, verdict, passed, matched_positions FROM trace_checks "
        "WHERE trial = 'trial/notes/policy/1' AND replay_id = 'r2' ORDER BY ord",
    )
    assert tc == [
        {
            "ord": 0,
            "constraint_id": "listed",
            "verdict": "fail",
            "passed": False,
            "matched_positions": [],
        },
        {
            "ord": 1,
            "constraint_id": "quiet",
            "verdict": "undecided",
            "passed": False,
            "matched_positions": [],
        },
    ]


def test_trials_messages_tool_calls_timeline(mixed: Path) -> None:
    (t,) = _rows(
        mixed,
        "SELECT corpus, task_id, trial_index, agent_model, records_present, "
        "n_messages, n_tool_calls, termination_reason FROM trials "
        "WHERE trial = 'trial/notes/gated/1'",
    )
    assert t == {
        "corpus": "notes",
        "task_id": "gated",
        "trial_index": 1,
        "agent_model": "m-b",
        "records_present": True,
        "n_messages": 2,
        "n_tool_calls": 2,
        "termination_reason": "user_stop",
    }
    (m,) = _rows(
        mixed,
        "SELECT position, role, content FROM messages WHERE trial = "
        "'trial/notes/gated/1' AND role = 'user'",
    )
    assert m == {"position": 0, "role": "user", "content": "please add a note é"}  # UTF-8 intact
    slow = _rows(
        mixed,
        "SELECT tool_name, max(latency_seconds) AS worst FROM tool_calls "
        "GROUP BY ALL ORDER BY worst DESC",
    )
    assert slow == [
        {"tool_name": "list_notes", "worst": 3.5},
        {"tool_name": "add_note", "worst": 0.1},
    ]
    tl = _rows(mixed, "SELECT DISTINCT projection_version FROM timeline")
    assert tl == [{"projection_version": "timeline/1"}]


def test_admissions_rank_and_receipts(mixed: Path) -> None:
    adm = _rows(
        mixed, "SELECT unit, effective_grade, grade_rank FROM admissions ORDER BY grade_rank"
    )
    assert adm == [
        {"unit": "u1", "effective_grade": "proof", "grade_rank": 0},
        {"unit": "u2", "effective_grade": "review_only", "grade_rank": 4},
        {"unit": "u3", "effective_grade": "made_up", "grade_rank": 6},  # below unverified
    ]
    rec = _rows(
        mixed, "SELECT kind, replay_id, checkpoint_size, outputs_digest FROM receipts ORDER BY seq"
    )
    assert rec == [
        {"kind": "replay", "replay_id": "r1", "checkpoint_size": 10, "outputs_digest": "sha256:r1"},
        {"kind": "replay", "replay_id": "r2", "checkpoint_size": 10, "outputs_digest": "sha256:r2"},
    ]


def test_an_empty_ledger_answers_every_view_with_no_rows(tmp_path: Path) -> None:
    lg = write_ledger(tmp_path / "lg", [])
    for view in views.PUBLIC_VIEWS:
        assert analytics.query(lg, f"SELECT * FROM {view.name}").num_rows == 0, view.name
