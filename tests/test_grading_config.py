"""The grading.yaml model's load-time rules (GRADING.md § Which keys a grading block
refuses, § What shape a grading key must be, § What is validated before a run, § Turn
bounds, § Score Combination, § Inheriting combine from the project)."""

from __future__ import annotations

import pytest
import yaml

from replay.grading.rules import (
    GradingConfigError,
    effective_combine,
    load_grading_config,
    project_combine,
)
from schemas.grading import unsatisfiable_window_message
from tests.data_paths import NOTES

W = {"combine": {"weights": {"transcript_rules": 1.0}}}


def _load(data, **kw):
    return load_grading_config(data, file="tasks/t/grading.yaml", **kw)


def _problems(data, **kw) -> list[str]:
    with pytest.raises(GradingConfigError) as err:
        _load(data, **kw)
    return err.value.problems


# ------------------------------------------------------------------ key tiers


@pytest.mark.parametrize(
    ("block", "typo", "closest"),
    [
        ("combine", "pass_treshold", "pass_threshold"),
        ("state_checks", "jsonpath", "jsonpaths"),
        ("transcript_rules", "must_contian", "must_contain"),
    ],
)
def test_typed_block_refuses_unknown_key_with_closest_field_and_accepted_set(
    block, typo, closest
) -> None:
    data = {"combine": {"weights": {}}, block: {typo: 1}}
    if block == "combine":
        data = {block: {typo: 0.95}}
    (problem,) = [p for p in _problems(data) if typo in p]
    assert "tasks/t/grading.yaml" in problem
    assert f"{block}.{typo}" in problem
    assert f"closest declared field: {closest}" in problem
    assert f"{block} accepts: " in problem


@pytest.mark.parametrize(
    ("data", "where", "accepts"),
    [
        (
            {
                "transcript_rules": {
                    "required_actions": [{"action_id": "a", "name": "x", "compare_arg": ["k"]}]
                }
            },
            "transcript_rules.required_actions[0].compare_arg",
            "action_id, requestor, name, arguments, compare_args",
        ),
        (
            {"transcript_rules": {"communicate_info": [{"info": "x", "requird": True}]}},
            "transcript_rules.communicate_info[0].requird",
            "info, required",
        ),
        (
            {"state_checks": {"hash": {"enalbed": True}}},
            "state_checks.hash.enalbed",
            "enabled, expect_initial_state, golden_actions, weight, description",
        ),
        (
            {"transcript_rules": {"tool_expectations": {"required_toolz": ["x"]}}},
            "transcript_rules.tool_expectations.required_toolz",
            "required_tools, disallowed_tools",
        ),
    ],
)
def test_nested_positions_get_the_same_message(data, where, accepts) -> None:
    problems = _problems(data)
    assert any(where in p and accepts in p for p in problems), problems


@pytest.mark.parametrize(
    ("block", "data"),
    [
        ("transcript_rules", {"transcript_rules": {"must_contain": ["x"], "newer_key": 1}}),
        ("state_checks", {"state_checks": {"hash": {"enabled": False, "newer": True}}}),
        ("llm_judge", {"llm_judge": {"rubric": {"criteria": []}, "judge_panel": 3}}),
        ("combine", {"combine": {"weights": {}, "tie_break": "x"}}),
    ],
)
def test_a_recorded_snapshot_lists_a_key_it_does_not_know_instead_of_refusing(block, data) -> None:
    """A newer recorder's key degrades its component, never the trial (README § Compatibility)."""
    assert _problems(data)  # authored: still an error
    cfg = _load(data, authored=False)
    (key,) = cfg.unknown_keys
    assert key.split(".")[0] == block and cfg.unknown_in(block) == (key,)
    assert all(cfg.unknown_in(b) == () for b in ("trace_checks", "custom_checks"))


def test_trace_checks_and_llm_judge_refuse_unknown_keys() -> None:
    assert _problems({"llm_judge": {"rubrik": {}}})
    problems = _problems({"trace_checks": {"constraints": [], "regex_engin": "linear"}})
    assert any(p.startswith("tasks/t/grading.yaml: ") and "regex_engin" in p for p in problems)
    # the typed block its own model builds (schemas/trace_checks.py)
    cfg = _load(
        {
            "trace_checks": {
                "constraints": [
                    {"id": "x", "require": {"absent": {"match": {"kind": "tool_call"}}}}
                ]
            },
            "combine": {"weights": {"trace_checks": 1.0}},
        }
    )
    assert [c.id for c in cfg.trace_checks.shared] == ["x"]


def test_block_name_tier_is_lenient_and_lists_what_it_ignored() -> None:
    cfg = _load({"state_cheks": {"jsonpaths": []}}, authored=False)
    assert cfg.state_checks is None and cfg.ignored_keys == ("state_cheks",)


def test_every_key_a_mapping_or_absent_all_offenders_in_one_raise() -> None:
    problems = _problems({"state_checks": [], "transcript_rules": "must_contain", "combine": None})
    assert len(problems) == 2
    assert "state_checks must be a mapping or absent, but it holds a list (0 items)" in problems[0]
    assert "tasks/t/grading.yaml" in problems[0] and "indent the block's own keys" in problems[0]
    assert "a string ('must_contain')" in problems[1]


def test_whole_file_not_a_mapping_is_refused_naming_its_shape() -> None:
    (problem,) = _problems([{"path": "$.db"}])
    assert "tasks/t/grading.yaml" in problem and "a list (1 item)" in problem


def test_bare_key_is_the_absent_block() -> None:
    cfg = _load({"state_checks": None, "combine": None})
    assert cfg.state_checks is None and cfg.combine.method == "weighted"


@pytest.mark.parametrize("key", ["state_checks", "transcript_rules", "custom_checks"])
def test_empty_sections_are_refused(key: str) -> None:
    assert any(f"{key} is an empty mapping" in p for p in _problems({key: {}}))


def test_combine_and_judge_empty_mappings_load() -> None:
    _load({"combine": {}})
    _load({"llm_judge": {}, "combine": {"weights": {"llm_judge": 1.0}}})


@pytest.mark.parametrize(
    ("block", "needle"),
    [
        ({"state_checks": {"jsonpaths": []}}, "state_checks declares no source"),
        (
            {"state_checks": {"id_fields": {"w": "widget_id"}, "relaxed_validation": True}},
            "declares no source",
        ),
        (
            {
                "transcript_rules": {
                    "must_contain": [],
                    "required_actions": [],
                    "tool_expectations": {"required_tools": []},
                }
            },
            "declares no rule",
        ),
        ({"custom_checks": {"file": "checks.py"}}, "no enabled key"),
    ],
)
def test_blocks_declaring_nothing_are_refused(block: dict, needle: str) -> None:
    assert any(needle in p for p in _problems(block))


def test_custom_checks_opt_out_loads_and_asks_for_nothing() -> None:
    cfg = _load({"custom_checks": {"enabled": False}})
    assert cfg.configured() == ()


# ------------------------------------------------------------ state_checks rules


@pytest.mark.parametrize(
    ("key", "value", "replacement"),
    [
        ("env_assertions", [{"path": "$.db"}], "state_checks.jsonpaths"),
        ("db_hash_check", True, "state_checks.hash"),
    ],
)
def test_populated_retired_state_keys_draw_the_migration(key, value, replacement) -> None:
    problems = _problems({"state_checks": {key: value}})
    assert any(key in p and replacement in p for p in problems)
    # recorded: the same sentence, as an advisory beside a config that loads
    advisories = _load({"state_checks": {key: value}}, authored=False).advisories
    assert any(key in p and replacement in p for p in advisories)


def test_inert_retired_state_keys_are_dropped() -> None:
    cfg = _load(
        {
            "state_checks": {
                "env_assertions": [],
                "db_hash_check": False,
                "jsonpaths": [{"path": "$.db.a", "equals": 1}],
            },
            "combine": {"weights": {"state_checks": 1.0}},
        }
    )
    assert cfg.state_checks.jsonpaths


def test_expected_state_hash_migrates_when_authored_and_drops_when_recorded() -> None:
    data = {
        "state_checks": {
            "hash": {
                "enabled": True,
                "expected_state_hash": "ab" * 32,
                "expect_initial_state": True,
            }
        },
        "combine": {"weights": {"state_checks": 1.0}},
    }
    problems = _problems(data)
    assert any(
        "expected_state_hash is retired" in p
        and "golden_actions" in p
        and "expect_initial_state" in p
        for p in problems
    )
    assert _load(data, authored=False).state_checks.hash.source == "expect_initial_state"


def test_hash_flag_and_source_rules() -> None:
    base = {"combine": {"weights": {"state_checks": 1.0}}}
    off = _problems(
        {**base, "state_checks": {"hash": {"enabled": "off", "expect_initial_state": True}}}
    )
    assert any(
        "state_checks.hash.expect_initial_state is declared under a hash.enabled a run reads as off"
        in p
        for p in off
    )
    bare = _problems({**base, "state_checks": {"hash": {"enabled": True}}})
    assert any("state_checks.hash.enabled is on with no source" in p for p in bare)
    both = _problems(
        {
            **base,
            "state_checks": {
                "hash": {
                    "enabled": True,
                    "expect_initial_state": True,
                    "golden_actions": [{"name": "x"}],
                }
            },
        },
    )
    assert any("expect_initial_state beside golden_actions" in p for p in both)
    notalist = _problems(
        {**base, "state_checks": {"hash": {"enabled": True, "golden_actions": "place_order"}}}
    )
    assert any("golden_actions holds a string" in p for p in notalist)


@pytest.mark.parametrize(
    ("value", "reads"),
    [
        (1, True),
        ("yes", True),
        ("false", False),
        ("no", False),
        ("off", False),
        ("0", False),
        (None, False),
    ],
)
def test_enabled_reads_the_way_a_run_reads_it(value, reads) -> None:
    cfg = _load(
        {"state_checks": {"hash": {"enabled": value}, "jsonpaths": [{"path": "$.a", "equals": 1}]}},
        authored=False,
    )
    assert cfg.state_checks.hash.enabled is reads


def test_db_probes_beside_another_source_is_refused_naming_both_fixes() -> None:
    probe = {"name": "p", "dsn": "postgresql://g@db/x", "query": "SELECT 1"}
    for other in (
        {"jsonpaths": [{"path": "$.db.a", "equals": 1}]},
        {"hash": {"enabled": True, "expect_initial_state": True}},
    ):
        problems = _problems({"state_checks": {"db_probes": [probe], **other}})
        assert any(
            "db_probes beside" in p and "keep the probes and drop" in p and "drop the probes" in p
            for p in problems
        )
        recorded = _load({"state_checks": {"db_probes": [probe], **other}}, authored=False)
        assert any("db_probes beside" in p for p in recorded.advisories)
    # beside a disabled hash it loads
    _load({"state_checks": {"db_probes": [probe], "hash": {"enabled": False}}}, authored=False)


@pytest.mark.parametrize(
    ("id_fields", "ok"),
    [
        ({"w": "widget_id"}, True),
        ({"p": ["account_id", "symbol"]}, True),
        ({"p": ["a"]}, True),
        ({"p": []}, False),
        ({"p": ["a", " "]}, False),
        ({"p": ["a", "a"]}, False),
        ({"p": ""}, False),
        ({"p": ["a", 3]}, False),
    ],
)
def test_id_fields_shapes(id_fields: dict, ok: bool) -> None:
    data = {"state_checks": {"jsonpaths": [{"path": "$.a", "equals": 1}], "id_fields": id_fields}}
    if ok:
        assert not [a for a in _load(data, authored=False).advisories if "id_fields" in a]
    elif all(
        isinstance(k, str) for v in id_fields.values() for k in (v if isinstance(v, list) else [v])
    ):
        assert any("id_fields" in p for p in _problems(data))
        # a rule a recorded snapshot breaks is an advisory, not a refusal
        assert any("id_fields" in p for p in _load(data, authored=False).advisories)
    else:  # not a field name at all: a shape error on either read
        assert any("id_fields" in p for p in _problems(data))
        assert any("id_fields" in p for p in _problems(data, authored=False))


def test_path_glob_needs_contains_ci_and_filesystem_paths_are_refused() -> None:
    base = {"combine": {"weights": {"state_checks": 1.0}}}
    g = _problems({**base, "state_checks": {"jsonpaths": [{"path_glob": "/env/*", "equals": "x"}]}})
    assert any("path_glob + contains_ci" in p for p in g)
    f = _problems(
        {**base, "state_checks": {"jsonpaths": [{"path": "$.filesystem['/a']", "equals": "x"}]}}
    )
    assert any("rooted at filesystem" in p for p in f)


# --------------------------------------------------------------- turn bounds


@pytest.mark.parametrize(("lo", "hi"), [(5, 3), (2, 1), (40, 7)])
def test_unsatisfiable_turn_window_names_both_keys_values_and_remedies(lo: int, hi: int) -> None:
    """§ Turn bounds: the refusal names both keys and both values, and how to close the
    window from either side. (Its exact wording against the spec's text: make crosscheck.)"""
    problems = _problems({"transcript_rules": {"min_assistant_turns": lo, "max_turns": hi}, **W})
    (msg,) = [p for p in problems if "unsatisfiable turn window" in p]
    assert msg == unsatisfiable_window_message(lo, hi)
    for part in (
        f"min_assistant_turns ({lo}) is above max_turns ({hi})",
        f"Lower min_assistant_turns to at most {hi}",
        f"raise max_turns to at least {lo}.",
    ):
        assert part in msg


def test_floor_equal_to_ceiling_is_satisfiable() -> None:
    _load({"transcript_rules": {"min_assistant_turns": 3, "max_turns": 3}, **W})


@pytest.mark.parametrize("key", ["max_turns", "min_assistant_turns"])
@pytest.mark.parametrize("value", [0, -1])
def test_turn_bounds_start_at_one(key: str, value: int) -> None:
    problems = _problems({"transcript_rules": {key: value}, **W})
    assert any(f"transcript_rules.{key} is {value}, below its bound of 1" in p for p in problems)


@pytest.mark.parametrize("value", [True, "3", 2.0])
def test_turn_bounds_are_not_coerced(value) -> None:
    assert _problems({"transcript_rules": {"max_turns": value}, **W})


def test_uncompilable_regex_is_refused_at_load() -> None:
    problems = _problems({"transcript_rules": {"disallow_regex": ["(unclosed"]}, **W})
    assert any("disallow_regex[0]" in p and "does not compile" in p for p in problems)


# ------------------------------------------------------------------- combine


def test_combine_method_set_is_closed() -> None:
    problems = _problems({"combine": {"method": "average"}})
    assert any(
        "'average' is not a combine method; write one of weighted, all, any" in p for p in problems
    )


@pytest.mark.parametrize("threshold", [True, "0.8", 1.2])
def test_pass_threshold_is_a_real_number_in_range(threshold) -> None:
    assert any("pass_threshold" in p for p in _problems({"combine": {"pass_threshold": threshold}}))


def test_component_and_weight_name_each_other_both_directions() -> None:
    unweighted = _problems({"transcript_rules": {"max_turns": 3}})
    assert any(
        "declare combine.weights.transcript_rules, or drop the transcript_rules section" in p
        for p in unweighted
    )
    orphan = _problems({"combine": {"weights": {"llm_judge": 1.0}}})
    assert any("configure the llm_judge section, or drop the weight" in p for p in orphan)
    typo = _problems({"combine": {"weights": {"llm_jugde": 1.0}}})
    assert any(
        "names no grading component" in p and "drop the weight" in p and "configure" not in p
        for p in typo
    )


def test_a_pack_scoring_nothing_is_clean() -> None:
    assert _load({}).configured() == ()


def test_project_combine_layering() -> None:
    """§ Inheriting combine: the project block's weights survive, the task's threshold wins."""
    eff = effective_combine(
        {"pass_threshold": 0.7}, {"weights": {"llm_judge": 1.0}, "pass_threshold": 0.8}
    )
    assert (eff.method, dict(eff.weights), eff.pass_threshold) == (
        "weighted",
        {"llm_judge": 1.0},
        0.7,
    )
    merged = effective_combine(
        {"weights": {"state_checks": 0.4}},
        {"weights": {"llm_judge": 1.0, "state_checks": 0.9}, "method": "all"},
    )
    assert (
        dict(merged.weights) == {"llm_judge": 1.0, "state_checks": 0.4} and merged.method == "all"
    )
    assert effective_combine(None, None).model_dump() == {
        "method": "weighted",
        "weights": {},
        "pass_threshold": 0.8,
    }


def test_inherited_weights_satisfy_the_mutual_naming_rule() -> None:
    cfg = load_grading_config(
        {"llm_judge": {"rubric": {"criteria": [{"id": "a"}]}}, "combine": {"pass_threshold": 0.7}},
        project_combine={"weights": {"llm_judge": 1.0}},
    )
    assert cfg.combine.weights == {"llm_judge": 1.0}


def test_the_specs_project_example() -> None:
    project = yaml.safe_load(
        "task_defaults:\n  grading_defaults:\n    combine:\n      weights: { llm_judge: 1.0 }\n"
        "      pass_threshold: 0.8\n  grading_defaults_typo: {}\n"
    )
    eff = effective_combine({"pass_threshold": 0.7}, project_combine(project))
    assert (dict(eff.weights), eff.pass_threshold, eff.method) == (
        {"llm_judge": 1.0},
        0.7,
        "weighted",
    )
    assert project_combine({"task_defaults": {}}) is None


def test_project_layer_unknown_key_names_its_dotted_path() -> None:
    with pytest.raises(GradingConfigError) as err:
        effective_combine(None, {"pass_treshold": 0.9})
    assert "task_defaults.grading_defaults.combine.pass_treshold" in str(err.value)


def test_recorded_notes_configs_load() -> None:
    for task in sorted(NOTES.glob("*/*/task.yaml")):
        cfg = load_grading_config(
            yaml.safe_load(task.read_text())["grading_config"], authored=False
        )
        assert cfg.configured() == ("llm_judge",)
        assert [c.id for c in cfg.llm_judge.rubric.criteria] == [
            "checked_duplicates_first",
            "note_saved",
            "clarity",
        ]
