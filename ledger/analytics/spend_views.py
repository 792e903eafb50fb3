"""Token and cost views: ``usage`` (one row per trial) and ``spend`` (per task and model).

Wherever the evidence carries usage: a Tolokaforge bundle's ``metrics.yaml`` (``usage`` and
``cost_usd``) and its grade.yaml's ``judge_usage``; an inspect_ai sample's model events,
which ledger.sources.inspect_log writes under the same metrics.yaml key names, and its
scorers' calls as the grade's ``judge_usage``. So one JSON path per column reads both.

Kept apart from the other view groups (``ledger.analytics.views`` lists them all) so each
changes on its own.
"""

from __future__ import annotations

from ledger.analytics.view_kit import View, internal, recorded_grade_of


def _num(body: str, path: str, kind: str = "BIGINT") -> str:
    return f"TRY_CAST(json_extract_string({body}, '{path}') AS {kind})"


# Each trial.registered's usage fields, one row per event: a row depends on its own event
# alone, so it can be kept and extended (ledger.analytics.materialise).
USAGE_REGISTERED_SQL = (
    "SELECT seq, stream, json_extract_string(body, '$.task_id') AS task_id, "
    "json_extract_string(body, '$.corpus') AS corpus, "
    "json_extract_string(body, '$.models.agent') AS agent_model, "
    "json_extract_string(body, '$.models.judge') AS judge_model, "
    "coalesce(json_extract_string(body, '$.metrics.recorder'), "
    "CASE WHEN json_extract(body, '$.metrics') IS NOT NULL "
    "AND json_type(json_extract(body, '$.metrics')) = 'OBJECT' THEN 'metrics.yaml' END) "
    "AS usage_source, "
    f"{_num('body', '$.metrics.usage.prompt_tokens')} AS prompt_tokens, "
    f"{_num('body', '$.metrics.usage.completion_tokens')} AS completion_tokens, "
    f"{_num('body', '$.metrics.usage.reasoning_tokens')} AS reasoning_tokens, "
    f"{_num('body', '$.metrics.usage.cached_tokens')} AS cached_tokens, "
    f"{_num('body', '$.metrics.cost_usd', 'DOUBLE')} AS cost_usd "
    "FROM _ev WHERE type = 'trial.registered'"
)
# Each grade's judge usage, one row per grade.recorded (kept and extended likewise)
USAGE_JUDGE_SQL = (
    "SELECT seq, stream, type, "
    f"{_num('body', '$.grade.judge_usage.prompt_tokens')} AS judge_prompt_tokens, "
    f"{_num('body', '$.grade.judge_usage.completion_tokens')} AS judge_completion_tokens, "
    f"{_num('body', '$.grade.judge_usage.cost_usd', 'DOUBLE')} AS judge_cost_usd "
    "FROM _ev WHERE type = 'grade.recorded'"
)
_JUDGE = (
    "{'judge_prompt_tokens': judge_prompt_tokens, "
    "'judge_completion_tokens': judge_completion_tokens, 'judge_cost_usd': judge_cost_usd}"
)

# The latest registration per trial, and the recorded grade that counts per trial (a
# re-scored inspect log appends a newer one)
USAGE_SQL = (
    "SELECT r.stream AS trial, r.task_id, r.corpus, r.agent_model, r.judge_model, "
    "r.usage_source, r.prompt_tokens, r.completion_tokens, r.reasoning_tokens, "
    "r.cached_tokens, r.cost_usd, g.j.judge_prompt_tokens AS judge_prompt_tokens, "
    "g.j.judge_completion_tokens AS judge_completion_tokens, "
    "g.j.judge_cost_usd AS judge_cost_usd "
    "FROM (SELECT * FROM _usage_registered QUALIFY row_number() OVER "
    "(PARTITION BY stream ORDER BY seq DESC) = 1) r LEFT JOIN "
    f"(SELECT stream, {recorded_grade_of(_JUDGE)} AS j FROM _usage_judge GROUP BY stream) g "
    "USING (stream)"
)

SPEND_SQL = (
    "SELECT task_id, agent_model, count(*)::BIGINT AS trials, "
    "count(cost_usd)::BIGINT AS trials_with_cost, "
    "sum(prompt_tokens)::BIGINT AS prompt_tokens, "
    "sum(completion_tokens)::BIGINT AS completion_tokens, "
    "sum(cost_usd) AS agent_cost_usd, sum(judge_cost_usd) AS judge_cost_usd, "
    "CASE WHEN count(cost_usd) + count(judge_cost_usd) = 0 THEN NULL "
    "ELSE coalesce(sum(cost_usd), 0) + coalesce(sum(judge_cost_usd), 0) END AS total_cost_usd, "
    "sum(cost_usd) / nullif(count(cost_usd), 0) AS cost_per_trial "
    "FROM usage GROUP BY task_id, agent_model"
)

SPEND_VIEWS: tuple[View, ...] = (
    internal("_usage_registered", USAGE_REGISTERED_SQL),
    internal("_usage_judge", USAGE_JUDGE_SQL),
    View(
        "usage",
        USAGE_SQL,
        "one row per trial: the agent's and the judge's tokens and cost, where recorded",
        (
            ("trial", "trial stream"),
            ("task_id", "task"),
            ("corpus", "corpus name"),
            ("agent_model", "agent model"),
            ("judge_model", "judge model (inspect: the grader model role)"),
            ("usage_source", "inspect_ai, metrics.yaml, or null when nothing was recorded"),
            ("prompt_tokens", "agent input tokens, cached included (metrics usage.prompt_tokens)"),
            ("completion_tokens", "agent output tokens (usage.completion_tokens)"),
            ("reasoning_tokens", "agent reasoning tokens, where reported"),
            ("cached_tokens", "agent input tokens read from a cache"),
            ("cost_usd", "agent cost in USD (metrics cost_usd)"),
            ("judge_prompt_tokens", "judge input tokens (latest grade's judge_usage)"),
            ("judge_completion_tokens", "judge output tokens"),
            ("judge_cost_usd", "judge cost in USD"),
        ),
    ),
    View(
        "spend",
        SPEND_SQL,
        "spend per task and agent model, over the usage view",
        (
            ("task_id", "task"),
            ("agent_model", "agent model"),
            ("trials", "trials of this task and model"),
            ("trials_with_cost", "of them, trials that recorded an agent cost"),
            ("prompt_tokens", "sum of agent input tokens"),
            ("completion_tokens", "sum of agent output tokens"),
            ("agent_cost_usd", "sum of agent cost (null: none recorded)"),
            ("judge_cost_usd", "sum of judge cost (null: none recorded)"),
            ("total_cost_usd", "agent + judge cost (null when neither was recorded)"),
            ("cost_per_trial", "agent cost per trial that recorded one"),
        ),
    ),
)
