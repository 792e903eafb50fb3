"""The measures over trials and grades: pass_at_k, agreement, key_accounting."""

from __future__ import annotations

from ledger.analytics.view_kit import View, internal, json_transform, recorded_grade_of, sql_str
from ledger.analytics.views_grades import CURRENT_ORDER, VERDICT
from replay.grading.outcomes import TrialOutcomeClass
from schemas.key_manifest import MANIFEST

# The k values the pass_at_k view reports; any other k: ``pass_at_k_value(n, c, k)``.
PASS_K_VALUES: tuple[int, ...] = (1, 2, 3, 4, 5, 8, 10, 16, 20, 32, 50, 64, 100)

# pass@k, 1 − C(n−c, k)/C(n, k) (its one declaration; GRADING.md § pass@k Metrics),
# as a product of k ratios so large n
# never overflows; a factor reaches 0 exactly when fewer than k failures exist, giving 1.0
# with no rounding. tests/test_views_parity.py holds it to the exact closed form.
PASS_AT_K_VALUE = (
    "CREATE OR REPLACE MACRO pass_at_k_value(n, c, k) AS CASE WHEN k IS NULL OR n IS NULL "
    "OR c IS NULL OR k < 1 OR n < k THEN NULL ELSE 1 - coalesce(list_product(list_transform("
    "range(k), lambda i: (n - c - i)::DOUBLE / (n - i))), 1) END"
)
ACCOUNTING_SHAPE: dict[str, str] = {"key": "VARCHAR", "outcome": "VARCHAR", "reason": "VARCHAR"}


def trial_outcomes() -> View:
    # Every registered trial's current and recorded verdicts; no grade (trial_lost) is not
    # passed, nor is an ungradeable trial whatever it carries (replay.grading.outcomes.is_counted).
    refused = f"t.outcome_class <> '{TrialOutcomeClass.UNGRADEABLE}'"
    return internal(
        "_trial_outcomes",
        "SELECT t.trial, t.task_id, coalesce(t.agent_model, '(unknown)') AS model, "
        "t.outcome_class, t.counted, "
        f"coalesce(c.cur.binary_pass, false) AND {refused} AS pass_current, "
        f"coalesce(c.rec.binary_pass, false) AND {refused} AS pass_recorded "
        "FROM _trial_core t LEFT JOIN _current c USING (trial)",
    )


def pass_at_k() -> View:
    ks = ", ".join(str(k) for k in PASS_K_VALUES)
    return View(
        "pass_at_k",
        "WITH o AS MATERIALIZED (SELECT * FROM _trial_outcomes), "
        "b AS (SELECT 'current' AS basis, task_id, model, counted, pass_current AS p, "
        "outcome_class FROM o UNION ALL SELECT 'recorded', task_id, model, "
        "counted, pass_recorded, outcome_class FROM o), "
        "per_task AS (SELECT basis, task_id, CASE WHEN grouping(model) = 1 THEN '*' ELSE model END AS model, "
        "count(*) FILTER (WHERE counted) AS n, count(*) FILTER (WHERE counted AND p) AS c, "
        "count(*) FILTER (WHERE NOT counted) AS aborts "
        "FROM b GROUP BY GROUPING SETS ((basis, task_id, model), (basis, task_id))), "
        f"ks AS (SELECT unnest([{ks}]) AS k), "
        "task_rows AS (SELECT 'task' AS level, basis, task_id, model, k, n, c, aborts, "
        "pass_at_k_value(n, c, k) AS pass_at_k, 1 AS tasks FROM per_task, ks), "
        "macro AS (SELECT 'macro' AS level, basis, NULL::VARCHAR AS task_id, model, k, "
        "sum(n)::BIGINT AS n, sum(c)::BIGINT AS c, sum(aborts)::BIGINT AS aborts, "
        "avg(pass_at_k) AS pass_at_k, count(pass_at_k) AS tasks "
        "FROM task_rows GROUP BY basis, model, k), "
        "micro AS (SELECT 'micro' AS level, basis, NULL::VARCHAR AS task_id, model, k, "
        "sum(n)::BIGINT AS n, sum(c)::BIGINT AS c, sum(aborts)::BIGINT AS aborts, "
        "pass_at_k_value(sum(n)::BIGINT, sum(c)::BIGINT, k) AS pass_at_k, "
        "count(DISTINCT task_id) AS tasks FROM per_task, ks GROUP BY basis, model, k) "
        "SELECT level, basis, task_id, model, k, n::BIGINT AS n, c::BIGINT AS c, "
        "aborts::BIGINT AS aborts, pass_at_k, tasks::BIGINT AS tasks, "
        "(n < k AND n + aborts >= k) AS reduced_by_aborts "
        "FROM (SELECT * FROM task_rows UNION ALL SELECT * FROM macro UNION ALL SELECT * FROM micro)",
        "pass@k = 1 − C(n−c, k)/C(n, k) over measured trials (GRADING.md § pass@k), per task "
        "and per model ('*' = all models), with macro (mean over tasks) and micro (all trials "
        f"pooled) rows, for k in {list(PASS_K_VALUES)}; any k: pass_at_k_value(n, c, k)",
        (
            ("level", "task / macro (mean of per-task pass@k) / micro (all trials pooled)"),
            ("basis", "current (latest replay, else recorded) or recorded verdicts"),
            ("task_id", "task id (null on macro and micro rows)"),
            ("model", "agent model, or '*' for all models together"),
            ("k", "attempts"),
            ("n", "measured trials: every registered trial except infrastructure aborts"),
            ("c", "measured trials whose verdict passed (no grade counts as not passed)"),
            ("aborts", "infrastructure aborts left out of n"),
            ("pass_at_k", "the estimate; null where n < k (macro: mean over tasks with a value)"),
            ("tasks", "tasks contributing (macro: tasks with a value)"),
            ("reduced_by_aborts", "n < k only because aborts were excluded"),
        ),
    )


def agreement() -> View:
    # One parse of the grades: criterion verdicts from each trial's latest recorded
    # grade, constraint verdicts from its current grade (latest replay, else
    # recorded); a trial counts for a pair when both are decided.
    return View(
        "agreement",
        "WITH h AS (SELECT seq, trial, task_id, type, source FROM _grade_head), "
        "pick AS (SELECT trial, any_value(task_id) AS task_id, "
        f"{recorded_grade_of('seq')} AS rec_seq, "
        f"arg_max(seq, {CURRENT_ORDER}) AS cur_seq "
        "FROM h GROUP BY trial), "
        "cr AS (SELECT trial, task_id, c.id AS criterion, c.met FROM (SELECT p.trial, p.task_id, "
        "k.c FROM pick p JOIN _criteria_rows k ON k.seq = p.rec_seq) WHERE c.met IS NOT NULL), "
        "tc AS (SELECT trial, r.id AS constraint_id, r.passed FROM (SELECT p.trial, t.r "
        f"FROM pick p JOIN _trace_rows t ON t.seq = p.cur_seq) WHERE {VERDICT} IN ('pass', 'fail')), "
        "pairs AS (SELECT cr.task_id, cr.criterion, tc.constraint_id, cr.met, tc.passed "
        "FROM cr JOIN tc USING (trial)), "
        "cnt AS (SELECT CASE WHEN grouping(task_id) = 1 THEN '*' ELSE task_id END AS task_id, "
        "criterion, constraint_id, "
        "count(*) FILTER (WHERE met AND passed) AS met_passed, "
        "count(*) FILTER (WHERE met AND NOT passed) AS met_failed, "
        "count(*) FILTER (WHERE NOT met AND passed) AS not_met_passed, "
        "count(*) FILTER (WHERE NOT met AND NOT passed) AS not_met_failed, "
        "count(*) AS observations FROM pairs "
        "GROUP BY GROUPING SETS ((task_id, criterion, constraint_id), (criterion, constraint_id))), "
        "p AS (SELECT *, (met_passed + not_met_failed)::DOUBLE / observations AS accuracy, "
        "((met_passed + met_failed)::DOUBLE * (met_passed + not_met_passed) "
        "+ (not_met_passed + not_met_failed)::DOUBLE * (met_failed + not_met_failed)) "
        "/ (observations::DOUBLE * observations) AS pe FROM cnt) "
        "SELECT task_id, criterion, constraint_id, observations, met_passed, met_failed, "
        "not_met_passed, not_met_failed, accuracy, "
        "CASE WHEN pe >= 1 THEN NULL ELSE (accuracy - pe) / (1 - pe) END AS kappa FROM p",
        "judge criterion × trace constraint: the 2×2 table and Cohen's κ over every trial "
        "carrying both decided (task_id '*' = pooled over tasks)",
        (
            ("task_id", "task id, or '*' for every task pooled"),
            ("criterion", "judge criterion id (latest recorded grade)"),
            ("constraint_id", "trace constraint id (current grade: latest replay)"),
            ("observations", "trials with both a met verdict and a decided constraint"),
            ("met_passed", "judge met, constraint passed"),
            ("met_failed", "judge met, constraint failed"),
            ("not_met_passed", "judge not met, constraint passed"),
            ("not_met_failed", "judge not met, constraint failed"),
            ("accuracy", "observed agreement"),
            ("kappa", "Cohen's κ; null (undefined) when chance agreement is 1"),
        ),
    )


def accounting_rows() -> View:
    # Each replayed grade's accounting rows, one per key (kept, as _grade_rows)
    rows = json_transform("body", {"grade": {"accounting": [ACCOUNTING_SHAPE]}})
    return internal(
        "_accounting_rows",
        f"SELECT seq, unnest(({rows}).grade.accounting) AS r FROM _grade_rows "
        "WHERE type = 'grade.replayed'",
    )


def key_accounting() -> View:
    # Every replayed grade's accounting rows (GRADING.md § The runtime
    # ledger), per task, corpus and key, over the whole history of replays
    manifest = ", ".join(f"({sql_str(k.key)}, {sql_str(k.kind.value)})" for k in MANIFEST)
    return View(
        "key_accounting",
        f"WITH m(key, kind) AS (VALUES {manifest}), "
        "h AS MATERIALIZED (SELECT seq, trial, task_id, replay_id FROM _grade_head "
        "WHERE source = 'replayed'), "
        "a AS (SELECT h.task_id, split_part(h.trial, '/', 2) AS corpus, h.replay_id, h.seq, "
        "r.key, r.outcome, r.reason FROM _accounting_rows x JOIN h USING (seq)) "
        "SELECT a.task_id, a.corpus, a.key, m.kind, "
        "count(*) FILTER (WHERE a.outcome = 'evaluated') AS evaluated, "
        "count(*) FILTER (WHERE a.outcome = 'skipped') AS skipped, "
        "list_sort(list_distinct(list(a.reason) FILTER (WHERE a.reason <> ''))) AS reasons, "
        "arg_max(a.replay_id, a.seq) AS last_replay "
        "FROM a LEFT JOIN m USING (key) GROUP BY a.task_id, a.corpus, a.key, m.kind",
        "per populated scored key: how often a replay evaluated or skipped it, and why "
        "(a key with evaluated = 0 never scored anything)",
        (
            ("task_id", "task id"),
            ("corpus", "the corpus component of the trial stream"),
            ("key", "author-facing grading key (schemas/key_manifest.py)"),
            ("kind", "scored_check (only scored keys are accounted)"),
            ("evaluated", "replayed grades whose evaluator read the key"),
            ("skipped", "replayed grades that skipped it, each with its reason"),
            ("reasons", "the distinct skip reasons"),
            ("last_replay", "the latest replay that accounted for it"),
        ),
    )


VIEWS: tuple[View, ...] = (
    trial_outcomes(),
    pass_at_k(),
    agreement(),
    accounting_rows(),
    key_accounting(),
)
