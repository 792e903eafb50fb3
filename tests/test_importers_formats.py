"""Importer invariants with closed forms: stream naming, event ids, events.jsonl bytes."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.sources.plan import event_id, trial_stream
from ledger.sources.shape import BundleError
from ledger.sources.verdict_core import parse_events_file, reassemble_events_file

_component = st.text(min_size=1, max_size=12)


def _unescape(s: str) -> str:
    return s.replace("%2F", "/").replace("%25", "%")


@settings(max_examples=150)
@given(_component, _component, _component)
def test_trial_stream_splits_back_into_its_parts(corpus: str, task: str, trial: str) -> None:
    parts = trial_stream(corpus, task, trial).split("/")
    assert len(parts) == 4 and parts[0] == "trial"
    assert [_unescape(p) for p in parts[1:]] == [corpus, task, trial]


@settings(max_examples=100)
@given(
    st.text(max_size=10),
    st.integers(0, 50),
    st.dictionaries(st.text(max_size=5), st.integers(-(2**63), 2**63 - 1)),
)
def test_event_id_is_a_function_of_stream_position_type_and_payload(stream, pos, payload) -> None:
    a = event_id(stream, pos, "trial.message", payload)
    assert a == event_id(stream, pos, "trial.message", dict(reversed(list(payload.items()))))
    assert a != event_id(stream, pos + 1, "trial.message", payload)
    assert a != event_id(stream + "x", pos, "trial.message", payload)
    assert a != event_id(stream, pos, "trial.ended", payload)
    assert a != event_id(stream, pos, "trial.message", {**payload, "extra": 1})


_line = st.one_of(
    st.builds(
        lambda d: ("event", d),
        st.dictionaries(
            st.text(max_size=6), st.integers(-(2**63), 2**63 - 1) | st.text(max_size=8), max_size=3
        ),
    ),
    st.sampled_from([("blank", ""), ("blank", "   "), ("blank", "\t")]),
)


@settings(max_examples=150)
@given(st.lists(_line, max_size=12), st.booleans())
def test_events_file_bytes_reassemble_exactly(lines, final_newline) -> None:
    """Whatever the blank lines and final newline, the ledger can give the bytes back."""
    out, seq = [], 0
    for kind, value in lines:
        if kind == "blank":
            out.append(value)
        else:
            seq += 1
            out.append(
                json.dumps(
                    {"seq": seq, "type": "x", "at": "", "node_id": "", "data": value},
                    sort_keys=True,
                    separators=(",", ":"),
                )
            )
    data = "\n".join(out).encode()
    if final_newline and out:
        data += b"\n"
    payloads, layout = parse_events_file(data, "events.jsonl")
    assert len(payloads) == seq
    assert reassemble_events_file(payloads, layout) == data


def test_seq_must_increase() -> None:
    data = b'{"seq":2,"type":"a"}\n{"seq":2,"type":"b"}\n'
    with pytest.raises(
        BundleError, match=r"events.jsonl: key 'line 2.seq': expected a seq greater than 2"
    ):
        parse_events_file(data, "events.jsonl")


def test_corrupt_line_is_named() -> None:
    with pytest.raises(
        BundleError, match=r"key 'line 2': expected one JSON object per line, got corrupt event"
    ):
        parse_events_file(b'{"seq":1,"type":"a"}\n{"seq":\n', "events.jsonl")


def test_planned_events_read_like_new_events() -> None:
    """Other areas read a plan's events with NewEvent's attribute names."""
    from dataclasses import fields

    from ledger.sources.plan import to_events
    from schemas.envelope import NewEvent

    (planned,) = to_events("trial/c/t/x", [("trial.ended", {"status": "completed", "n": 1.0})], "x")
    new = planned.new_event()
    for f in fields(NewEvent):
        assert getattr(planned, f.name) == getattr(new, f.name), f.name
    assert new.payload == {"status": "completed", "n": 1.0}
    assert new.expected_version == "no_stream"
