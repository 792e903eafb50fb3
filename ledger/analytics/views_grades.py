"""The grade views: grades, current_grades, components, criteria, trace_checks, separation.

grade.recorded carries grade.yaml verbatim, grade.replayed the re-derived grade:
scalars from PATHS["grade.head"], nested lists through the shapes below
(FORMATS.md § 4 field names)."""

from __future__ import annotations

from ledger.analytics.view_kit import (
    View,
    fields,
    in_replay_batch,
    internal,
    json_transform,
    on_own_stream,
    recorded_grade_of,
    written_by_projection,
)

CRITERION_SHAPE: dict[str, str] = {
    "id": "VARCHAR",
    "met": "BOOLEAN",
    "score": "DOUBLE",
    "justification": "VARCHAR",
}
TRACE_RESULT_SHAPE: dict[str, object] = {
    "id": "VARCHAR",
    "kind": "VARCHAR",
    "severity": "VARCHAR",
    "weight": "DOUBLE",
    "passed": "BOOLEAN",
    "undecided": "BOOLEAN",
    "withheld": "BOOLEAN",
    "message": "VARCHAR",
    "matched_positions": ["INTEGER"],
}
CRITERIA_T = json_transform("body", {"grade": {"criterion_results": [CRITERION_SHAPE]}})
TRACE_T = json_transform(
    "body",
    {
        "grade": {
            "trace_check_results": [TRACE_RESULT_SHAPE],
            "trace_checks_summary": {"winning_path": "VARCHAR"},
        }
    },
)
VERDICT = (
    "CASE WHEN coalesce(r.withheld, false) THEN 'withheld' "
    "WHEN coalesce(r.undecided, false) THEN 'undecided' "
    "WHEN r.passed THEN 'pass' ELSE 'fail' END"
)
# a replayed grade outranks any recorded one, then the later seq wins
CURRENT_ORDER = "(source = 'replayed')::BIGINT * 4611686018427387904 + seq"

# The retrace verdict order (FORMATS.md § 9, replay.grading.retrace_report.classify): not_measured first.
# classify is code, not data, so tests/test_views_parity.py runs both over the same counts.
CONSTRAINT_CLASS = (
    "CREATE OR REPLACE MACRO constraint_class(passed, failed, undecided) AS CASE "
    "WHEN passed + failed + undecided = 0 THEN 'not_measured' "
    "WHEN passed > 0 AND failed > 0 THEN 'discriminating' "
    "WHEN passed + failed = 0 THEN 'never_decided' "
    "WHEN undecided > 0 THEN 'undecided_in_part' "
    "WHEN failed = 0 THEN 'always_true' ELSE 'always_false' END"
)

_GRADE_SEQ = ("grade_seq", "the grade (grades.seq)")
_SOURCE = ("source", "recorded or replayed")
_REPLAY_ID = ("replay_id", "replay id (replayed only)")
_TRIAL = ("trial", "trial stream")
_TASK = ("task_id", "task id")


def grade_rows() -> View:
    # The scalar fields only (one cheap pass): what grades / current_grades / pass@k need.
    # Each row depends on its own event alone, so it can be kept and extended
    # (ledger.analytics.materialise); what a later event changes is in _grade_head.
    sv, gh = fields("grade.head")
    return internal(
        "_grade_rows",
        "SELECT seq, recorded_at, type, stream, body, "
        "CASE type WHEN 'grade.recorded' THEN 'recorded' ELSE 'replayed' END AS source, "
        f"coalesce({gh['trial']}, stream) AS trial, {gh['task_id']} AS task_id, "
        f"{gh['projection_version']} AS projection_version, {gh['config_digest']} AS config_digest, "
        f"{gh['replay_id']} AS replay_id, TRY_CAST({gh['score']} AS DOUBLE) AS score, "
        f"TRY_CAST({gh['binary_pass']} AS BOOLEAN) AS binary_pass, {gh['judge_status']} AS judge_status, "
        f"CASE WHEN type = 'grade.replayed' THEN {gh['replay_status']} END AS replay_status "
        f"FROM (SELECT seq, recorded_at, type, stream, body, {sv} FROM _ev "
        f"WHERE type IN ('grade.recorded', 'grade.replayed') AND {on_own_stream()})",
    )


def trace_rows() -> View:
    # Each grade's trace check results, one row per result (kept, as _grade_rows)
    return internal(
        "_trace_rows",
        "SELECT seq, x.grade.trace_checks_summary.winning_path AS winning_path, "
        "unnest(x.grade.trace_check_results) AS r, "
        "unnest(range(len(x.grade.trace_check_results))) AS ord "
        f"FROM (SELECT seq, {TRACE_T} AS x FROM _grade_rows)",
    )


def criteria_rows() -> View:
    # Each grade's judge criterion results, one row per result (kept, as _grade_rows)
    return internal(
        "_criteria_rows",
        f"SELECT seq, unnest(({CRITERIA_T}).grade.criterion_results) AS c FROM _grade_rows",
    )


def grade_head() -> View:
    # A trial's task comes from its latest registration; a replayed grade counts once its
    # replay.completed is in the log (view_kit.written_by_projection).
    return internal(
        "_grade_head",
        "SELECT u.seq, u.recorded_at, u.type, u.source, u.trial, coalesce(u.task_id, k.task_id) AS task_id, "
        "u.projection_version, u.config_digest, u.replay_id, u.score, u.binary_pass, "
        "u.judge_status, u.replay_status, u.body FROM (SELECT * FROM _grade_rows "
        f"WHERE {in_replay_batch()}) u "
        "LEFT JOIN _trial_keys k ON k.trial = u.trial",
    )


def grades() -> View:
    return View(
        "grades",
        "SELECT seq, trial, task_id, source, projection_version, config_digest, replay_id, "
        "score, binary_pass, judge_status, replay_status, "
        "CASE WHEN json_type(body, '$.grade.reasons') = 'ARRAY' THEN array_to_string("
        "json_transform(json_extract(body, '$.grade.reasons'), '[\"VARCHAR\"]'), ' | ') "
        "ELSE json_extract_string(body, '$.grade.reasons') END AS reasons, recorded_at, "
        "json_extract(body, '$.grade') AS grade FROM _grade_head",
        "every grade ever recorded or replayed; replays never replace a recorded grade",
        (
            ("seq", "log position of the grade event (the grade's id)"),
            ("trial", "trial stream the grade is about"),
            _TASK,
            ("source", "recorded (grade.recorded) or replayed (grade.replayed)"),
            ("projection_version", "grading projection version (replayed only)"),
            ("config_digest", "digest of the grading config a replay used"),
            ("replay_id", "the retrace run that produced it (replayed only)"),
            ("score", "trial score in [0, 1]"),
            ("binary_pass", "trial verdict"),
            ("judge_status", "unspecified / completed / errored (recorded grades)"),
            (
                "replay_status",
                "replayed only: agreed / disagreed with the recorded grade, as the retrace "
                "compared them component by component",
            ),
            ("reasons", "reason segments joined with ' | '"),
            ("recorded_at", "when the grade was appended"),
            ("grade", "the whole grade object (JSON)"),
        ),
    )


REC_FIELDS = "{'seq': seq, 'score': score, 'binary_pass': binary_pass}"


def current() -> View:
    # One pass over the grades: the pick is the latest replay, else the latest
    # recorded grade (a replay never shadows history; it is just preferred here).
    return internal(
        "_current",
        "SELECT trial, any_value(task_id) AS task_id, "
        "arg_max({'seq': seq, 'source': source, 'replay_id': replay_id, "
        "'projection_version': projection_version, 'score': score, "
        "'binary_pass': binary_pass, 'recorded_at': recorded_at}, "
        f"{CURRENT_ORDER}) AS cur, "
        f"{recorded_grade_of(REC_FIELDS)} AS rec, "
        "count(*) FILTER (WHERE source = 'replayed') AS replays FROM _grade_head GROUP BY trial",
    )


def recorded_grade() -> View:
    # Each trial's recorded grade that counts (view_kit.recorded_grade_of), over the
    # recorded grades only: what the report reads to compare a replay with it.
    return internal(
        "_recorded_grade",
        "SELECT trial, rec.seq AS seq, rec.score AS score, rec.binary_pass AS binary_pass "
        f"FROM (SELECT trial, {recorded_grade_of(REC_FIELDS)} AS rec FROM _grade_head "
        "WHERE type = 'grade.recorded' GROUP BY trial)",
    )


def current_grades() -> View:
    return View(
        "current_grades",
        "SELECT trial, task_id, cur.seq AS seq, cur.source AS source, cur.replay_id AS replay_id, "
        "cur.projection_version AS projection_version, cur.score AS score, "
        "cur.binary_pass AS binary_pass, rec.score AS recorded_score, "
        "rec.binary_pass AS recorded_binary_pass, replays, cur.recorded_at AS recorded_at "
        "FROM _current",
        "the current grade of each trial: its latest replay, else its latest recorded grade",
        (
            _TRIAL,
            _TASK,
            ("seq", "log position of the chosen grade event"),
            ("source", "replayed when any replay exists, else recorded"),
            ("replay_id", "replay that produced it (null for recorded)"),
            ("projection_version", "grading projection version (replayed only)"),
            ("score", "current score"),
            ("binary_pass", "current verdict"),
            ("recorded_score", "the latest recorded score, for comparison"),
            ("recorded_binary_pass", "the latest recorded verdict, for comparison"),
            ("replays", "how many replays of this trial the log holds"),
            ("recorded_at", "when the chosen grade was appended"),
        ),
    )


def components() -> View:
    return View(
        "components",
        "WITH g AS MATERIALIZED (SELECT seq, trial, task_id, source, replay_id, "
        "json_extract(body, ['$.grade.components', '$.grade.not_measured']) AS j "
        "FROM _grade_head), "
        "k AS (SELECT g.seq, e.key AS component, e.value AS v FROM g, json_each(g.j[1]) e), "
        "nm AS (SELECT g.seq, e.key AS component, e.value ->> '$' AS reason "
        "FROM g, json_each(g.j[2]) e), "
        "kn AS (SELECT coalesce(k.seq, nm.seq) AS seq, coalesce(k.component, nm.component) "
        "AS component, TRY_CAST(k.v ->> '$' AS DOUBLE) AS score, nm.reason "
        "FROM k FULL OUTER JOIN nm ON k.seq = nm.seq AND k.component = nm.component) "
        "SELECT g.seq AS grade_seq, g.trial, g.task_id, g.source, g.replay_id, kn.component, "
        "kn.score, CASE WHEN kn.reason IS NOT NULL THEN 'not_measured' "
        "WHEN kn.score IS NULL THEN 'not_evaluated' ELSE 'scored' END AS status, kn.reason "
        "FROM kn JOIN g ON g.seq = kn.seq",
        "per grade, per component: its score, or not-evaluated / not-measured with the reason",
        (
            _GRADE_SEQ,
            _TRIAL,
            _TASK,
            _SOURCE,
            _REPLAY_ID,
            (
                "component",
                "state_checks / transcript_rules / trace_checks / llm_judge / custom_checks",
            ),
            ("score", "component score, null when not scored"),
            (
                "status",
                "scored / not_evaluated (null: not configured or unscored) / "
                "not_measured (the recorded evidence cannot decide it)",
            ),
            ("reason", "why it is not measured (replayed grades)"),
        ),
    )


def criteria() -> View:
    return View(
        "criteria",
        "SELECT seq AS grade_seq, trial, task_id, source, replay_id, c.id AS criterion, c.met, "
        "c.score, c.justification, judge_status FROM (SELECT h.seq, h.trial, h.task_id, "
        "h.source, h.replay_id, h.judge_status, k.c FROM _grade_head h "
        "JOIN _criteria_rows k ON k.seq = h.seq)",
        "judge criterion results carried by a grade (criterion_results)",
        (
            _GRADE_SEQ,
            _TRIAL,
            _TASK,
            _SOURCE,
            _REPLAY_ID,
            ("criterion", "rubric criterion id"),
            ("met", "the judge's verdict on it"),
            ("score", "criterion score"),
            ("justification", "the judge's justification"),
            ("judge_status", "unspecified / completed / errored"),
        ),
    )


def trace_checks() -> View:
    return View(
        "trace_checks",
        "SELECT seq AS grade_seq, trial, task_id, source, replay_id, recorded_at, "
        "ord::INTEGER AS ord, r.id AS constraint_id, r.kind, r.severity, r.weight, r.passed, "
        "coalesce(r.undecided, false) AS undecided, coalesce(r.withheld, false) AS withheld, "
        f"{VERDICT} AS verdict, r.message, r.matched_positions, winning_path "
        "FROM (SELECT h.seq, h.trial, h.task_id, h.source, h.replay_id, h.recorded_at, "
        "t.winning_path, t.r, t.ord FROM _grade_head h JOIN _trace_rows t ON t.seq = h.seq)",
        "per grade, per trace constraint: pass / fail / undecided / withheld",
        (
            _GRADE_SEQ,
            _TRIAL,
            _TASK,
            _SOURCE,
            _REPLAY_ID,
            ("recorded_at", "when the grade was appended"),
            ("ord", "0-based declaration order in the scoring decision set"),
            ("constraint_id", "constraint id"),
            ("kind", "constraint kind"),
            ("severity", "scored or gate"),
            ("weight", "constraint weight"),
            ("passed", "recorded passed flag (an undecided result scores as a failure)"),
            ("undecided", "the evidence could not decide it"),
            ("withheld", "dropped from numerator and denominator"),
            ("verdict", "withheld / undecided / pass / fail, in that precedence"),
            ("message", "failure message (empty on pass)"),
            ("matched_positions", "timeline positions the constraint matched"),
            ("winning_path", "the grade's winning alternative path ('' without alternatives)"),
        ),
    )


def constraint_separation() -> View:
    return View(
        "constraint_separation",
        # A replay that extended another appended only the trials it evaluated; the rest
        # it carried forward are the earlier replays' grades under the same config. So the
        # task's latest config (digest) picks each trial's latest grade under it, and the
        # replay named is the latest receipt with that config.
        "WITH tc AS (SELECT t.*, g.config_digest FROM trace_checks t JOIN _grade_head g "
        "ON g.seq = t.grade_seq WHERE t.source = 'replayed'), "
        "lr AS (SELECT task_id, arg_max(config_digest, grade_seq) AS config_digest "
        "FROM tc GROUP BY task_id), "
        "pick AS (SELECT tc.trial, tc.config_digest, max(tc.grade_seq) AS grade_seq FROM tc "
        "JOIN lr ON tc.task_id IS NOT DISTINCT FROM lr.task_id "
        "AND tc.config_digest = lr.config_digest GROUP BY tc.trial, tc.config_digest), "
        "rows_ AS (SELECT tc.* FROM tc JOIN pick USING (trial, config_digest, grade_seq)), "
        "rid AS (SELECT json_extract_string(body, '$.receipt.config_digest') AS config_digest, "
        "arg_max(json_extract_string(body, '$.replay_id'), seq) AS replay_id FROM _ev "
        f"WHERE type = 'replay.completed' AND {written_by_projection()} GROUP BY 1), "
        "agg AS (SELECT task_id, config_digest, constraint_id, min(ord) AS ord, "
        "count(*) FILTER (WHERE verdict <> 'withheld') AS evaluated, "
        "count(*) FILTER (WHERE verdict = 'pass') AS passed, "
        "count(*) FILTER (WHERE verdict = 'fail') AS failed, "
        "count(*) FILTER (WHERE verdict = 'undecided') AS undecided FROM rows_ "
        "GROUP BY task_id, config_digest, constraint_id) "
        "SELECT task_id, rid.replay_id, constraint_id, ord, evaluated, passed, failed, "
        "undecided, constraint_class(passed, failed, undecided) AS class "
        "FROM agg LEFT JOIN rid USING (config_digest)",
        "per task, per constraint, over the task's latest replay (with what it carried "
        "forward): how it separates trials "
        "(FORMATS.md § 9 verdict order)",
        (
            _TASK,
            ("replay_id", "the latest replay with the config that last evaluated this task"),
            ("constraint_id", "constraint id"),
            ("ord", "first declaration position seen"),
            ("evaluated", "trials it was evaluated on (withheld excluded)"),
            ("passed", "decided passes"),
            ("failed", "decided failures"),
            ("undecided", "undecided trials"),
            (
                "class",
                "not_measured / discriminating / never_decided / undecided_in_part / "
                "always_true / always_false",
            ),
        ),
    )


VIEWS: tuple[View, ...] = (
    grade_rows(),
    trace_rows(),
    criteria_rows(),
    grade_head(),
    grades(),
    current(),
    recorded_grade(),
    current_grades(),
    components(),
    criteria(),
    trace_checks(),
    constraint_separation(),
)
