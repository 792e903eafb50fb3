"""Where each field the views read lives in its payload (a renamed key: one line here).

The payload models (schemas/trial_events.py, replay_events.py, verdict_events.py) are
closed and checked at append, so a field has the one path its model gives it. A field has
a second candidate, tried after the first, only where a recorded event can carry it twice:

* ``trial.registered`` ``trial_index``: ``$.task`` is task.yaml verbatim, and a
  Tolokaforge 0.33.1 task.yaml carries ``trial_index`` (its compatibility corpora) where the
  trajectory may not;
* the receipt fields: ``ReplayCompleted`` / ``ReconcileCompleted`` accept them under
  ``receipt`` or at the top level (``_ReceiptFields``; ledger/app/receipts.py reads both),
  and a reconcile receipt names its configuration ``inputs_digest``.
"""

from __future__ import annotations


def top(*names: str) -> dict[str, list[str]]:
    """Fields stored under their own name at the payload's top level."""
    return {n: [f"$.{n}"] for n in names}


PATHS: dict[str, dict[str, list[str]]] = {
    "trial.registered": {
        **top("task_id"),
        "trial_index": ["$.trial_index", "$.task.trial_index"],
        **top("corpus"),
        "agent_model": ["$.models.agent"],
        "user_model": ["$.models.user"],
        "judge_model": ["$.models.judge"],
        **top("met", "record_view"),
    },
    "trial.ended": top("status", "termination_reason", "grading_error", "start_ts", "end_ts"),
    "trial.message": {"position": ["$.index"], **top("role", "content", "tool_call_id", "ts")},
    "trial.message/json": top("tool_calls"),
    "trial.tool_call": top(
        "call_id",
        "sequence",
        "tool_name",
        "executor",
        "status",
        "output",
        "latency_seconds",
        "timestamp",
        "agent",
    ),
    "trial.tool_call/json": top("arguments"),
    "timeline.event": {
        "projection_version": ["$.timeline_version"],
        "inconsistency": ["$.inconsistency.message"],
        **top("position", "turn_index", "kind", "text", "call_id", "tool_name", "executor"),
        **top("status", "result", "latency_seconds", "agent"),
    },
    "timeline.event/json": top("arguments"),
    # the scalar head of grade.recorded / grade.replayed, read without parsing nested lists
    "grade.head": {
        **top("trial", "task_id", "projection_version", "config_digest", "replay_id"),
        "score": ["$.grade.score"],
        "binary_pass": ["$.grade.binary_pass"],
        "judge_status": ["$.grade.judge_status"],
        "replay_status": ["$.status"],
    },
    # replay.completed names its run replay_id; reconcile.completed and receipt.issued run_id
    "receipt": {
        "replay_id": ["$.replay_id", "$.run_id"],
        "checkpoint_size": ["$.receipt.checkpoint.size", "$.checkpoint.size"],
        "checkpoint_root": ["$.receipt.checkpoint.root", "$.checkpoint.root"],
        "config_digest": ["$.receipt.config_digest", "$.config_digest", "$.receipt.inputs_digest"],
        "outputs_digest": ["$.receipt.outputs_digest", "$.outputs_digest"],
    },
    "verdict.admitted": top(
        "unit",
        "effective_grade",
        "evidence_kind",
        "conflicting_evidence",
        "failed_declared_evidence",
    ),
    "verdict.admitted/json": top("applied_rank_ops", "counters"),
}
