"""The custody views: admissions (verdict grades) and receipts."""

from __future__ import annotations

from collections.abc import Sequence

from ledger.analytics.view_kit import View, fields, sql_str, typed_view, written_by_projection
from ledger.app.verdicts import load_ladder


def grade_rank(col: str, ladder: Sequence[str]) -> str:
    """0 for the strongest registered grade, one more per tier down; a grade outside the
    ladder ranks below its floor (the spec's out-of-vocabulary rule, GVC § 2)."""
    whens = " ".join(f"WHEN {sql_str(g)} THEN {i}" for i, g in enumerate(ladder))
    return f"CASE {col} {whens} ELSE {len(ladder)} END"


def admissions() -> View:
    ladder = load_ladder().grades  # the registration file, strongest first
    cols = [
        "seq",
        "unit",
        "effective_grade",
        f"{grade_rank('effective_grade', ladder)} AS grade_rank",
    ]
    cols += ["evidence_kind", "TRY_CAST(conflicting_evidence AS BOOLEAN) AS conflicting_evidence"]
    cols += ["TRY_CAST(failed_declared_evidence AS BOOLEAN) AS failed_declared_evidence"]
    cols += ["applied_rank_ops", "counters", "recorded_at"]
    ranks = f"0 = {ladder[0]} … {len(ladder) - 1} = {ladder[-1]}"
    return View(
        "admissions",
        typed_view("verdict.admitted", cols, where=written_by_projection(), extra_json=True),
        "one row per recorded verdict admission (verdict.admitted)",
        (
            ("seq", "log position of the admission"),
            ("unit", "the unit admitted"),
            ("effective_grade", "the derived verdict grade"),
            ("grade_rank", f"{ranks}; {len(ladder)} = outside the registered ladder"),
            ("evidence_kind", "kind of evidence the grade rests on"),
            ("conflicting_evidence", "computed conflict flag"),
            ("failed_declared_evidence", "a declared oracle failed"),
            ("applied_rank_ops", "rank operations that lowered the grade (JSON)"),
            ("counters", "the nine counters (JSON)"),
            ("recorded_at", "when it was appended"),
        ),
    )


def receipts() -> View:
    sv, rc = fields("receipt")
    return View(
        "receipts",
        "SELECT seq, CASE type WHEN 'replay.completed' THEN 'replay' "
        "WHEN 'reconcile.completed' THEN 'reconcile' ELSE 'verdict-core' END AS kind, "
        f"stream, {rc['replay_id']} AS replay_id, "
        f"TRY_CAST({rc['checkpoint_size']} AS BIGINT) AS checkpoint_size, "
        f"{rc['checkpoint_root']} AS checkpoint_root, {rc['config_digest']} AS config_digest, "
        f"{rc['outputs_digest']} AS outputs_digest, "
        "coalesce(json_extract(body, '$.receipt'), body::JSON) AS receipt, recorded_at "
        f"FROM (SELECT *, {sv} FROM _ev WHERE type IN "
        "('replay.completed', 'reconcile.completed', 'receipt.issued') "
        f"AND {written_by_projection()})",
        "receipts: replays, reconciliations and imported verdict-core runs",
        (
            ("seq", "log position of the receipt event"),
            ("kind", "replay / reconcile / verdict-core"),
            ("stream", "stream the receipt lives in"),
            ("replay_id", "replay / reconcile / run id"),
            ("checkpoint_size", "tree size of the checkpoint it read"),
            ("checkpoint_root", "root hash of that checkpoint"),
            ("config_digest", "digest of its configuration (a reconcile's inputs digest)"),
            ("outputs_digest", "digest of its outputs"),
            ("receipt", "the whole receipt (JSON)"),
            ("recorded_at", "when it was appended"),
        ),
    )


VIEWS: tuple[View, ...] = (admissions(), receipts())
