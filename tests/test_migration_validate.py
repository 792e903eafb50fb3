"""migration.yaml: its shape (both generations) and every load-time rule of GRADING.md
§ Declaring a migration, each on a hand-made pack, each error naming what to write.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reconcile.inputs import ConstraintDecl, CorpusResolution, CriterionShape
from reconcile.validate import RULES, validate_migration
from schemas.migration import MigrationFile, MigrationSchemaError, parse_migration
from tests.test_reconcile_helpers import (
    CRIT,
    GATE,
    NARROWED_TEXT,
    NOTES_RUBRIC,
    WAS_TEXT,
    entry,
    pack,
)

OK_CORPUS = {
    "corpora/notes": CorpusResolution(
        "corpora/notes", "/base", "/base/corpora/notes", None, frozenset({"met/b0", "not_met/b1"})
    )
}


def findings(e, p=None, corpora=None):
    return validate_migration(MigrationFile(migrations=(e,)), p or pack(), corpora or OK_CORPUS)


def rules(e, p=None, corpora=None) -> list[str]:
    return [f.rule for f in findings(e, p, corpora)]


def test_the_shipped_shape_of_narrow_validates() -> None:
    assert findings(entry()) == []


# --- shape -------------------------------------------------------------------------------------


def test_older_generation_names_the_corpus_inside_evidence() -> None:
    e = entry(corpus=None, evidence={"corpus": "corpora/notes", "observations": 17, "kappa": 1.0})
    assert e.corpus is None and e.corpus_value == "corpora/notes"
    assert findings(e) == []


def test_current_generation_prefers_the_entry_corpus() -> None:
    assert entry().corpus_value == "corpora/notes"


def test_an_unknown_key_is_named_with_its_entry_and_criterion() -> None:
    with pytest.raises(MigrationSchemaError) as info:
        parse_migration(
            {"migrations": [{**_raw(), "evidense": {}}]}, source="packs/a/migration.yaml"
        )
    msg = str(info.value)
    assert "packs/a/migration.yaml" in msg
    assert f"migrations[0] ({CRIT}).evidense: unknown key" in msg


def test_a_missing_was_says_what_to_write() -> None:
    raw = _raw()
    del raw["was"]
    with pytest.raises(MigrationSchemaError, match=r"was: Field required; write was: \{kind:"):
        parse_migration({"migrations": [raw]})


def test_residual_is_a_model_not_a_string() -> None:
    with pytest.raises(MigrationSchemaError, match=r"residual.*write residual: \{kind: text\|none"):
        parse_migration({"migrations": [{**_raw(), "residual": "none"}]})


def test_a_document_that_is_not_a_mapping_is_refused() -> None:
    with pytest.raises(MigrationSchemaError, match="the document is list"):
        parse_migration([])


def _raw() -> dict:
    return {
        "criterion": CRIT,
        "mode": "narrowed",
        "by": [GATE],
        "corpus": "corpora/notes",
        "was": {"kind": "binary", "required": True, "weight": 1.0, "description": WAS_TEXT},
        "residual": {"kind": "text", "reason": "r"},
        "evidence": {"observations": 17, "kappa": 1.0},
    }


# --- candidate ---------------------------------------------------------------------------------

CURRENT_WAS = {"kind": "binary", "required": True, "weight": 1.0, "description": NARROWED_TEXT}


def candidate(**overrides):
    base = {
        "mode": "candidate",
        "residual": None,
        "evidence": None,
        "combine_weights": None,
        "was": CURRENT_WAS,
    }
    return entry(**{**base, **overrides})


def test_a_candidate_matching_its_criterion_validates() -> None:
    assert findings(candidate()) == []


def test_a_candidate_whose_was_differs_is_refused_naming_the_field() -> None:
    (f,) = findings(candidate(was={**CURRENT_WAS, "weight": 2.0}))
    assert f.rule == "candidate_shape"
    assert "was.weight (declared 2.0, the pack has 1.0)" in f.message
    assert "copy the criterion's current" in f.message


def test_a_candidate_carries_no_evidence_and_no_residual() -> None:
    got = findings(
        candidate(
            evidence={"observations": 3, "kappa": 0.5}, residual={"kind": "text", "reason": "x"}
        )
    )
    assert [f.rule for f in got] == ["candidate_shape", "candidate_shape"]
    assert "remove evidence:" in got[0].message and "remove residual:" in got[1].message


def test_a_candidate_for_a_missing_criterion_is_refused() -> None:
    (f,) = findings(candidate(criterion="nope"))
    assert f.rule == "candidate_shape" and "'nope' is not in packs/a's rubric" in f.message


def test_a_candidate_is_charged_neither_the_veto_nor_the_freed_share_rule() -> None:
    scored = {GATE: ConstraintDecl(GATE, "", "scored")}
    crit = (CriterionShape(CRIT, "binary", False, 1.0, NARROWED_TEXT),)
    e = candidate(was={**CURRENT_WAS, "required": False})
    assert findings(e, pack(criteria=crit, constraints=scored)) == []


# --- narrowed ----------------------------------------------------------------------------------


def test_a_narrow_that_shortened_no_text_is_refused() -> None:
    (f,) = findings(entry(was=CURRENT_WAS))
    assert f.rule == "narrowed_shape" and "nothing was narrowed" in f.message


@pytest.mark.parametrize(("field", "value"), [("required", False), ("kind", "graded")])
def test_was_cross_check_for_narrowed(field: str, value) -> None:
    was = {"kind": "binary", "required": True, "weight": 1.0, "description": WAS_TEXT, field: value}
    got = findings(entry(was=was, combine_weights={"llm_judge": 1.0}))
    assert [f.rule for f in got] == ["was_cross_check"]
    assert f"was.{field} (declared {value!r}" in got[0].message


def test_was_weight_is_deliberately_free_for_narrowed() -> None:
    was = {"kind": "binary", "required": True, "weight": 0.25, "description": WAS_TEXT}
    assert findings(entry(was=was)) == []


def test_a_narrow_needs_evidence_and_a_text_residual() -> None:
    got = findings(entry(evidence=None, residual={"kind": "none", "reason": "x"}))
    assert [f.rule for f in got] == ["narrowed_shape", "narrowed_shape"]
    assert "evidence: {observations" in got[0].message
    assert "residual: {kind: text" in got[1].message


# --- retired -----------------------------------------------------------------------------------


def retired(**overrides):
    base = {"mode": "retired", "residual": {"kind": "none", "reason": "nothing remains"}}
    return entry(**{**base, **overrides})


def test_a_retirement_of_an_absent_criterion_validates() -> None:
    assert findings(retired(), pack(criteria=NOTES_RUBRIC[1:])) == []


def test_a_retired_criterion_must_be_gone_from_the_rubric() -> None:
    (f,) = findings(retired())
    assert f.rule == "retired_shape" and "delete it from llm_judge.rubric.criteria" in f.message


def test_a_retirement_needs_residual_none_with_a_reason_and_evidence() -> None:
    got = findings(
        retired(residual={"kind": "text", "reason": "x"}, evidence=None),
        pack(criteria=NOTES_RUBRIC[1:]),
    )
    assert [f.rule for f in got] == ["retired_shape", "retired_shape"]
    assert "residual: {kind: none, reason:" in got[1].message


# --- constraints -------------------------------------------------------------------------------


def test_every_by_id_resolves_in_the_pack() -> None:
    (f,) = findings(entry(by=[GATE, "typo"]))
    assert f.rule == "by_resolves"
    assert "'typo'" in f.message and GATE in f.message


def routed() -> dict[str, ConstraintDecl]:
    return {
        GATE: ConstraintDecl(GATE, "", "gate"),
        "a1": ConstraintDecl("a1", "route_a", "scored"),
        "a2": ConstraintDecl("a2", "route_a", "scored"),
        "b1": ConstraintDecl("b1", "route_b", "scored"),
    }


def test_one_route_rule_names_both_ids_and_their_routes() -> None:
    e = candidate(by=[GATE, "a1", "b1"])
    (f,) = findings(e, pack(constraints=routed()))
    assert f.rule == "one_route"
    assert "'a1' (route 'route_a') and 'b1' (route 'route_b')" in f.message


def test_ids_of_one_route_with_shared_ones_pass_the_one_route_rule() -> None:
    assert findings(candidate(by=[GATE, "a1", "a2"]), pack(constraints=routed())) == []


def test_veto_rule_refuses_a_scored_or_route_scoped_constraint_for_a_required_criterion() -> None:
    got = findings(entry(by=["a1"]), pack(constraints=routed()))
    assert [f.rule for f in got] == ["veto"]
    assert "'a1' sits in route 'route_a'" in got[0].message
    scored = {GATE: ConstraintDecl(GATE, "", "scored")}
    (f,) = findings(entry(), pack(constraints=scored))
    assert f.rule == "veto" and "is severity: scored" in f.message
    assert "severity: gate" in f.message


def test_freed_share_rule_wants_combine_weights_on_a_scored_criterion() -> None:
    crit = (CriterionShape(CRIT, "binary", False, 1.0, NARROWED_TEXT),)
    was = {"kind": "binary", "required": False, "weight": 1.0, "description": WAS_TEXT}
    scored = {GATE: ConstraintDecl(GATE, "", "scored")}
    (f,) = findings(entry(was=was, combine_weights=None), pack(criteria=crit, constraints=scored))
    assert f.rule == "freed_share" and "combine_weights: {llm_judge:" in f.message
    assert findings(entry(was=was), pack(criteria=crit, constraints=scored)) == []


def test_a_required_criterion_needs_no_combine_weights() -> None:
    assert findings(entry(combine_weights=None)) == []


# --- corpus and acknowledgements ---------------------------------------------------------------


def test_every_entry_names_a_corpus_even_a_candidate() -> None:
    (f,) = findings(candidate(corpus=None))
    assert f.rule == "corpus" and "write corpus:" in f.message


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("/abs/corpus", "is absolute"),
        ("../elsewhere", "climbs out with '..'"),
        ("a/../../b", "'..'"),
    ],
)
def test_a_corpus_value_escaping_the_base_lexically_is_refused(value: str, needle: str) -> None:
    (f,) = findings(entry(corpus=value))
    assert f.rule == "corpus" and needle in f.message


def test_a_corpus_the_caller_could_not_resolve_carries_the_callers_message() -> None:
    bad = {
        "corpora/notes": CorpusResolution(
            "corpora/notes", "/base", "/base/corpora/notes", "no corpus.yaml at /base/corpora/notes"
        )
    }
    (f,) = findings(entry(), corpora=bad)
    assert f.rule == "corpus" and f.message == "no corpus.yaml at /base/corpora/notes"


def test_two_generations_naming_two_corpora_are_refused() -> None:
    e = entry(evidence={"corpus": "other", "observations": 17, "kappa": 1.0})
    (f,) = findings(e)
    assert f.rule == "corpus" and "disagree" in f.message


def test_acknowledged_trials_are_bundles_under_the_corpus() -> None:
    ok = entry(
        acknowledged=[
            {"trial": "met/b0", "reason": "r"},
            {"trial": "./corpora/notes/not_met/b1/", "reason": "r"},
        ]
    )
    assert findings(ok) == []
    (f,) = findings(entry(acknowledged=[{"trial": "met/nope", "reason": "r"}]))
    assert f.rule == "acknowledged_in_corpus" and "'met/nope' is not a bundle" in f.message


def test_every_rule_has_a_test_above() -> None:
    source = Path(__file__).read_text()
    assert [r for r in RULES if f'"{r}"' not in source] == []
