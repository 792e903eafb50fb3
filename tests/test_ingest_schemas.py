"""The trial payload models: closed at every level except the recorded evidence inside."""

from __future__ import annotations

import pytest

from schemas.events import PayloadError, validate_payload

VALID = {
    "trial.registered": {"task_id": "t", "trial": "r_trial0", "corpus": "c", "record_view": False,
                         "models": {"agent": "a", "user": None, "judge": None}},
    "trial.message": {"index": 0, "role": "assistant", "content": "",
                      "tool_calls": [{"id": "x", "name": "list_notes", "arguments": {}}]},
    "trial.tool_call": {"index": 0, "call_id": "x", "sequence": 0, "tool_name": "list_notes",
                        "arguments": {}, "executor": "user", "status": "tool_not_found"},
    "trial.ended": {"status": "completed", "termination_reason": None, "grading_error": None},
    "state.recorded": {"which": "final", "source": "env.yaml", "state": {"db": {}}},
    "grade.recorded": {"source": "grade.yaml", "grade": {"binary_pass": True, "score": 1.0,
                                                         "judge_usage": {"calls": 1}}},
    "timeline.event": {"timeline_version": "timeline/1", "message_view_present": True,
                       "records_present": False, "position": 0, "turn_index": 0,
                       "kind": "user_message", "text": "hi"},
    "migration.declared": {"pack": "p", "file": "migration.yaml", "declaration": {"migrations": []}},
    "pack.registered": {"pack": "p", "pack_path": "p", "files": ["task.yaml"]},
    "ingest.skipped": {"source": "x", "kind": "bundle", "reason": "bad"},
}  # fmt: skip


@pytest.mark.parametrize("type_", sorted(VALID))
def test_valid_payload_passes_and_an_unknown_key_is_named(type_: str) -> None:
    validate_payload(type_, VALID[type_])
    with pytest.raises(PayloadError, match="'surprise'"):
        validate_payload(type_, {**VALID[type_], "surprise": 1})


def test_grade_is_open_inside_and_typed_at_its_head() -> None:
    validate_payload("grade.recorded", VALID["grade.recorded"])  # judge_usage: extra, allowed
    with pytest.raises(PayloadError, match="grade.score"):
        validate_payload("grade.recorded", {"source": "grade.yaml", "grade": {"binary_pass": True}})
    with pytest.raises(PayloadError, match="grade.components"):
        validate_payload(
            "grade.recorded",
            {
                "source": "grade.yaml",
                "grade": {"binary_pass": True, "score": 1.0, "components": {"x": "high"}},
            },
        )


@pytest.mark.parametrize(
    ("type_", "change", "field"),
    [
        ("trial.message", {"role": "bot"}, "role"),
        ("trial.tool_call", {"executor": "robot"}, "executor"),
        ("trial.tool_call", {"status": "exploded"}, "status"),
        ("timeline.event", {"kind": "message"}, "kind"),
        ("state.recorded", {"which": "middle"}, "which"),
        (
            "trial.message",
            {"tool_calls": [{"id": "x", "name": "n", "arguments": {}, "extra": 1}]},
            "tool_calls.0.extra",
        ),
    ],
)
def test_enumerations_and_nested_shapes_are_closed(type_: str, change: dict, field: str) -> None:
    with pytest.raises(PayloadError, match=field.replace(".", r"\.")):
        validate_payload(type_, {**VALID[type_], **change})


def test_reingest_compares_every_type_ingest_writes() -> None:
    from ledger.app.ingest_existing import INGEST_TYPES
    from schemas.events import MODEL_NAMES

    trial_events = {t for t, (module, _) in MODEL_NAMES.items() if module == "trial_events"}
    written = (trial_events - {"ingest.skipped"}) | {"run.event", "receipt.issued"}
    assert set(INGEST_TYPES) == written
