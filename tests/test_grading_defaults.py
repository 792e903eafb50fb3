"""One reader of grading documents, so one set of defaults (schemas/reading.py).

GRADING.md § Score Combination: ``pass_threshold`` defaults to 0.8; § LLM Judge: a
criterion without ``kind`` is ``binary``. ``reconcile_cmd`` once parsed rubrics and
combine blocks by hand and folded at 0.75 with criteria ``graded``; these tests pin the
spec's defaults through every command that reads a grading document.

The bundle is built so each wrong default changes the answer: criteria ``a`` (weight 3,
met) and ``b`` (weight 1, not met, but a recorded score of 0.6). Read binary, the judge
scores (3·1 + 1·0) / 4 = 0.75, which fails at 0.8 and would pass at 0.75; read graded it
would score (3·1 + 1·0.6) / 4 = 0.9.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ledger.app.reconcile_packs import read_pack
from ledger.app.validate import validate_pack
from ledger.cli import main
from reconcile.trials import recorded_grading
from replay.grading.rules import load_grading_config
from tests.grading_support import write_bundle, write_yaml

GRADING = {
    "combine": {"weights": {"llm_judge": 1.0}},  # no pass_threshold
    "llm_judge": {
        "rubric": {
            "criteria": [  # no kind
                {"id": "a", "description": "did a", "weight": 3.0},
                {"id": "b", "description": "did b", "weight": 1.0},
            ]
        }
    },
}
GRADE = {
    "score": 0.75,
    "binary_pass": False,
    "components": {
        "state_checks": None,
        "transcript_rules": None,
        "trace_checks": None,
        "llm_judge": 0.75,
        "custom_checks": None,
    },
    "reasons": "Judge: score=0.75",
    "judge_status": "completed",
    "criterion_results": [
        {"id": "a", "met": True, "score": 1.0, "justification": "yes"},
        {"id": "b", "met": False, "score": 0.6, "justification": "partly"},
    ],
}


def _bundle(root: Path) -> Path:
    messages = [
        {"role": "user", "content": "please do a and b"},
        {"role": "assistant", "content": "did a"},
    ]
    return write_bundle(root / "src" / "t_defaults_trial0", "t_defaults", GRADING, GRADE, messages)


def test_the_model_defaults_are_the_specs() -> None:
    for authored in (True, False):
        cfg = load_grading_config(GRADING, authored=authored)
        assert cfg.combine.pass_threshold == 0.8
        assert {c.kind for c in cfg.llm_judge.rubric.criteria} == {"binary"}


def test_grade_folds_at_0_8_with_binary_criteria(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    res = CliRunner().invoke(
        main, ["grade", str(bundle), "--json", "--ledger", str(tmp_path / "l")]
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    replayed = doc["replayed"]
    assert replayed["components"]["llm_judge"] == 0.75
    assert replayed["score"] == 0.75 and replayed["binary_pass"] is False


def test_retrace_agrees_with_a_grade_folded_at_0_8(tmp_path: Path) -> None:
    _bundle(tmp_path)
    ledger = str(tmp_path / "l")
    assert CliRunner().invoke(main, ["init", "--ledger", ledger]).exit_code == 0
    res = CliRunner().invoke(
        main, ["retrace", "--source", str(tmp_path / "src"), "--json", "--ledger", ledger]
    )
    assert res.exit_code == 0, res.output
    (trial,) = json.loads(res.output)["trials"]
    assert trial["status"] == "agreed", trial


def test_reconcile_and_validate_read_the_same_defaults(tmp_path: Path) -> None:
    recorded = recorded_grading(GRADING)
    assert recorded.pass_threshold == 0.8 and recorded.method == "weighted"
    assert {c.kind for c in recorded.rubric} == {"binary"}
    pack = tmp_path / "packs" / "t_defaults"
    write_yaml(pack / "task.yaml", {"task_id": "t_defaults"})
    write_yaml(pack / "grading.yaml", GRADING)
    assert {c.kind for c in read_pack(pack).view.criteria.values()} == {"binary"}
    validated, findings = validate_pack(pack, tmp_path)
    assert findings == [] and {c.kind for c in validated.view.criteria.values()} == {"binary"}
