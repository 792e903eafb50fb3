"""transcript_rules over the timeline (GRADING.md § Transcript Rules, § Turn bounds,
§ tool_expectations), plus the transcript_rules_* and user_executed_action parity packs."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.grading.components.transcript_rules import UNRECORDED, evaluate_transcript_rules
from replay.grading.rules import load_grading_config
from schemas.grading import TranscriptRulesConfig
from tests.grading_support import PARITY, pack_case_timeline, read_yaml, timeline_of


def rules(**kw) -> TranscriptRulesConfig:
    return TranscriptRulesConfig.model_validate(kw)


def score(tl, **kw) -> float | None:
    return evaluate_transcript_rules(tl, rules(**kw)).score


TWO_TURNS = timeline_of(
    [
        ("user", "hi"),
        ("assistant", "Refund issued."),
        ("user", "thanks"),
        ("assistant", "Anything else?"),
    ]
)


def test_phrase_rules_read_the_agents_text_case_insensitively() -> None:
    assert score(TWO_TURNS, must_contain=["REFUND ISSUED"]) == 1.0
    # a phrase the user supplied cannot satisfy a rule about what the agent said
    assert score(TWO_TURNS, must_contain=["thanks"]) == 0.0
    assert score(TWO_TURNS, communicate_info=[{"info": "anything else"}]) == 1.0
    # a non-required info is advisory: no sub-check; the other rule alone scores
    assert (
        score(TWO_TURNS, must_contain=["x"], communicate_info=[{"info": "zzz", "required": False}])
        == 0.0
    )


def test_one_sub_check_per_entry_and_the_fraction() -> None:
    assert score(TWO_TURNS, must_contain=["refund", "nope", "else", "zz"]) == 0.5


def test_disallow_regex_under_both_engines() -> None:
    tl = timeline_of([("assistant", "card ending \u0664 on file")])
    assert score(tl, disallow_regex=[r"card ending \d"]) == 1.0  # RE2's \d is ASCII
    assert score(tl, disallow_regex=[r"card ending \d"], regex_engine="backtracking") == 0.0
    assert score(tl, disallow_regex=[r"CARD"]) == 0.0  # case-insensitive


def test_max_turns_counts_assistant_generations() -> None:
    assert score(TWO_TURNS, max_turns=2) == 1.0
    assert score(TWO_TURNS, max_turns=1) == 0.0


def test_min_assistant_turns_is_a_gate_not_a_sub_check() -> None:
    """Unmet, the component is 0.0 whatever else scored — not the (1+1+1+1+0)/5 = 0.8 a
    fifth bucket would give nor the 0.667 a third runner row would; met, it adds no row."""
    four_passing = dict(must_contain=["refund", "else"], disallow_regex=["password"], max_turns=5)
    assert score(TWO_TURNS, **four_passing) == 1.0
    assert score(TWO_TURNS, **four_passing, min_assistant_turns=2) == 1.0
    assert score(TWO_TURNS, **four_passing, min_assistant_turns=3) == 0.0
    half = dict(must_contain=["refund", "absent"])
    assert score(TWO_TURNS, **half, min_assistant_turns=1) == 0.5  # met: not diluted upward
    assert (
        score(TWO_TURNS, must_contain=["refund", "else"], min_assistant_turns=3) == 0.0
    )  # not 0.667


def test_floor_counts_generations_not_answers() -> None:
    tl = timeline_of(
        [
            ("assistant", ""),
            ("call", "a", {}, "agent", "success"),
            ("assistant", ""),
            ("assistant", ""),
        ]
    )
    assert score(tl, min_assistant_turns=3) == 1.0


def test_events_less_timeline_skips_everything_but_the_floor() -> None:
    empty = timeline_of([])
    no_floor = evaluate_transcript_rules(empty, rules(must_contain=["x"], max_turns=3))
    assert no_floor.score is None and no_floor.not_measured is None
    assert "must_contain, max_turns were skipped" in no_floor.reasons[0]
    with_floor = evaluate_transcript_rules(empty, rules(must_contain=["x"], min_assistant_turns=1))
    assert with_floor.score == 0.0
    assert any("must_contain was skipped" in r for r in with_floor.reasons)


TOOLS = timeline_of(
    [
        ("assistant", ""),
        ("call", "db_update", {"id": 1}, "agent", "error"),
        ("call", "lookup", {}, "agent", "success"),
        ("call", "calc", {"e": "1+1"}, "user", "success"),
        ("call", "bash", {}, "agent", "error"),
        ("call", "delete_customer", {}, "agent", None),  # declared on a terminating turn, never ran
    ]
)


@pytest.mark.parametrize(
    ("required", "disallowed", "expected"),
    [
        (["lookup"], [], 1.0),
        (["db_update"], [], 0.0),  # errored: did not do the work
        (["calc"], [], 0.0),  # the user's call satisfies nothing
        ([], ["bash"], 0.0),  # a forbidden attempt fails at any status
        ([], ["calc"], 1.0),  # the user's call violates nothing
        ([], ["delete_customer"], 1.0),  # never ran
        ([], ["never_declared"], 1.0),
        (["lookup", "db_update"], ["bash", "calc"], 0.5),
    ],
)
def test_tool_expectations(required, disallowed, expected) -> None:
    te = {"required_tools": required, "disallowed_tools": disallowed}
    assert score(TOOLS, tool_expectations=te) == expected


def test_records_absent_fails_declared_tools_but_not_undeclared_ones() -> None:
    tl = timeline_of(
        [("assistant", ""), ("call", "bash", {}, "agent", "success")], records_present=False
    )
    result = evaluate_transcript_rules(
        tl,
        rules(tool_expectations={"required_tools": ["bash"], "disallowed_tools": ["bash", "rm"]}),
    )
    assert result.score == pytest.approx(1 / 3)
    assert UNRECORDED in result.reasons[0]


def test_required_actions_match_requestor_status_and_compare_args() -> None:
    tl = timeline_of(
        [
            ("assistant", ""),
            ("call", "cancel", {"order": "O1", "note": "x"}, "agent", "success"),
            ("call", "refund", {"order": "O1"}, "agent", "error"),
            ("call", "calc", {"e": "2+2"}, "user", "success"),
        ]
    )

    def act(**kw):
        base = {"action_id": "a", "name": "cancel", "arguments": {"order": "O1", "note": "y"}}
        return score(tl, required_actions=[{**base, **kw}])

    assert act() == 0.0  # compare_args None compares every declared argument
    assert act(compare_args=["order"]) == 1.0
    assert act(compare_args=[]) == 1.0
    assert act(requestor="user") == 0.0
    assert act(name="refund", compare_args=["order"]) == 0.0  # errored call
    assert act(name="calc", requestor="user", arguments={"e": "2+2"}) == 1.0
    assert act(name="calc", arguments={"e": "2+2"}) == 0.0  # the agent never called it


def _pack(name: str) -> tuple[TranscriptRulesConfig, dict]:
    cfg = load_grading_config(read_yaml(PARITY / name / "grading.yaml")).transcript_rules
    return cfg, read_yaml(PARITY / name / "trial.yaml")


@pytest.mark.parametrize(
    ("pack", "expected"),
    [
        ("transcript_rules_communicate_info", (1.0, 0.0)),
        ("transcript_rules_disallow_regex", (1.0, 0.0)),
        ("transcript_rules_max_turns", (1.0, 0.0)),
        ("transcript_rules_min_assistant_turns", (1.0, 0.0)),
        ("transcript_rules_regex_engine", (1.0, 0.0)),
        ("transcript_rules_required_actions", (1.0, 0.0)),
        ("transcript_rules_tool_expectations", (1.0, 0.0)),
        ("user_executed_action", (1.0, 0.0)),
    ],
)
def test_parity_packs(pack: str, expected: tuple[float, float]) -> None:
    """Satisfying strictly above violating on the component the key feeds (one sub-check,
    so 1.0 vs 0.0)."""
    cfg, trials = _pack(pack)
    got = tuple(
        evaluate_transcript_rules(pack_case_timeline(trials[c]), cfg).score
        for c in ("satisfying", "violating")
    )
    assert got == expected


def test_parity_pack_must_contain_with_its_key() -> None:
    """The pack ships no grading.yaml ("key transcript_rules.must_contain"); its trials
    differ only in "Refund issued", which is the phrase the combine_method pack asserts."""
    trials = read_yaml(PARITY / "transcript_rules_must_contain" / "trial.yaml")
    cfg = rules(must_contain=["Refund issued"])
    got = [
        evaluate_transcript_rules(pack_case_timeline(trials[c]), cfg).score
        for c in ("satisfying", "violating")
    ]
    assert got == [1.0, 0.0]


def test_regex_engine_pack_is_indistinguishable_under_the_linear_default() -> None:
    cfg, trials = _pack("transcript_rules_regex_engine")
    linear = cfg.model_copy(update={"regex_engine": "linear"})
    got = {evaluate_transcript_rules(pack_case_timeline(trials[c]), linear).score for c in trials}
    assert got == {1.0}


@settings(max_examples=100)
@given(
    st.lists(st.sampled_from(["refund", "else", "absent", "zzz"]), min_size=1, max_size=5),
    st.integers(1, 4),
)
def test_the_floor_gates_and_never_dilutes(phrases: list[str], floor: int) -> None:
    """With the floor met the component is exactly what the other keys score; unmet it is
    0.0 — whatever the phrases scored (TWO_TURNS has two assistant generations)."""
    without = score(TWO_TURNS, must_contain=phrases)
    with_floor = score(TWO_TURNS, must_contain=phrases, min_assistant_turns=floor)
    assert with_floor == (without if floor <= 2 else 0.0)
