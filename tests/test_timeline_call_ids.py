"""G3's call-id derivation: x, x#2, x#3, … per view in observation order."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from replay.timeline.call_ids import CallIdDeriver, derive_call_ids


def spec_formula(raw_ids: list[str]) -> list[str]:
    """GRADING.md G3 verbatim: the k-th occurrence (0-based) of x is x for k = 0 and
    x#<k+1> thereafter. The oracle for ids not themselves spelled like derived ones."""
    seen: dict[str, int] = {}
    out = []
    for raw in raw_ids:
        k = seen.get(raw, 0)
        seen[raw] = k + 1
        out.append(raw if k == 0 else f"{raw}#{k + 1}")
    return out


def test_g3_per_turn_numbering_is_disambiguated() -> None:
    raw = ["search:0", "read:1", "search:0", "read:1", "search:0"]
    assert derive_call_ids(raw) == ["search:0", "read:1", "search:0#2", "read:1#2", "search:0#3"]


def test_g3_identity_on_unique_ids_byte_for_byte() -> None:
    raw = ["toolu_01XyZ", "call_abc", "x#2", "x"]
    assert derive_call_ids(raw) == raw


def test_g3_raw_id_spelled_like_a_derived_one_gets_the_next_free_suffix() -> None:
    """x, x, x#2: the formula would key both the second x and the raw x#2 as x#2. The
    spec promises unique call ids whatever the provider did (N7), so the later one moves
    to the next free suffix."""
    assert derive_call_ids(["x", "x", "x#2"]) == ["x", "x#2", "x#2#2"]
    assert derive_call_ids(["x", "x#2", "x"]) == ["x", "x#2", "x#3"]


def test_each_view_derives_independently() -> None:
    first, second = CallIdDeriver(), CallIdDeriver()
    assert [first.derive("a"), first.derive("a")] == ["a", "a#2"]
    assert second.derive("a") == "a"


plain_ids = st.lists(st.sampled_from(["a", "b", "call_1", "t:0"]), max_size=30)
any_ids = st.lists(st.sampled_from(["a", "a#2", "a#3", "a#2#2", "b", "b#2"]), max_size=30)


@settings(max_examples=200)
@given(plain_ids)
def test_g3_matches_the_spec_formula_on_plain_ids(raw: list[str]) -> None:
    assert derive_call_ids(raw) == spec_formula(raw)


@settings(max_examples=200)
@given(any_ids)
def test_derived_keys_are_unique_and_prefix_stable(raw: list[str]) -> None:
    keys = derive_call_ids(raw)
    assert len(set(keys)) == len(keys)
    for cut in range(len(raw) + 1):  # a view holding a prefix derives the same keys for it
        assert derive_call_ids(raw[:cut]) == keys[:cut]


@settings(max_examples=200)
@given(st.lists(st.text(max_size=6), unique=True, max_size=20))
def test_derivation_is_the_identity_on_unique_ids(raw: list[str]) -> None:
    assert derive_call_ids(raw) == raw
