"""The store's two row paths (ledger.log.rows): Arrow from ARROW_FROM_ROWS events, plain
lists below it, and the same split for reads. Whatever path a batch or a read takes, the
log holds and returns the same values."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.log import rows
from ledger.log.store import Ledger, init_ledger
from schemas.envelope import NewEvent
from tests.store_helpers import no_extra_checks  # noqa: F401  (fixture)

pytestmark = pytest.mark.usefixtures("no_extra_checks")

ALWAYS_ARROW = 0
NEVER_ARROW = 10**9

json_leaf = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
payloads = st.dictionaries(
    st.text(max_size=6), json_leaf | st.lists(json_leaf, max_size=3), max_size=4
)
events = st.builds(
    NewEvent,
    stream=st.sampled_from(["run/a", "run/b", 'trial/c"q/t/0', "trial/ü/t/1"]),
    type=st.sampled_from(["ext.x", "ext.ÿ", 'ext."quoted"']),
    payload=payloads,
    schema_version=st.integers(0, 65535),
)
# batches big enough to complete stored Merkle nodes (level 6 and up: every 64 leaves)
batches = st.lists(st.lists(events, min_size=1, max_size=90), min_size=1, max_size=4)

SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


# 70 events first, so every example completes a stored node (level 6: 64 leaves)
FILLER = [NewEvent("run/f", "ext.f", {"i": i}) for i in range(70)]


def _filled(path: Path, parts: list[list[NewEvent]], arrow_from: int) -> Ledger:
    lg = init_ledger(path)
    with mock.patch.object(rows, "ARROW_FROM_ROWS", arrow_from):
        for part in [FILLER, *parts]:
            lg.append(part)
    return lg


def _tables(lg: Ledger) -> dict[str, Any]:
    con = lg._con
    cols = "seq, stream, stream_version, event_id, type, schema_version, payload, leaf_hash"
    return {
        "events": con.execute(f"SELECT {cols} FROM events ORDER BY seq").fetchall(),
        "nodes": con.execute("SELECT * FROM nodes ORDER BY level, idx").fetchall(),
        "tree": con.execute("SELECT * FROM tree_state").fetchall(),
    }


@SETTINGS
@given(parts=batches)
def test_both_append_paths_store_the_same_rows(
    tmp_path_factory: pytest.TempPathFactory, parts: list[list[NewEvent]]
) -> None:
    """Every column (time apart: each ledger stamps its own), every stored Merkle node and
    the tree state are equal, and both logs verify."""
    from ledger.log.verify import verify_ledger

    tmp = tmp_path_factory.mktemp("rows")
    with (
        _filled(tmp / "arrow", parts, ALWAYS_ARROW) as a,
        _filled(tmp / "lists", parts, NEVER_ARROW) as b,
    ):
        assert _tables(a) == _tables(b)
        assert _tables(a)["nodes"]
        assert verify_ledger(b).ok and verify_ledger(a).ok


@SETTINGS
@given(
    parts=batches,
    where=st.sampled_from(
        [
            {},
            {"stream": "run/a"},
            {"stream_prefix": "trial/"},
            {"type": "ext.x"},
            {"from_seq": 3, "to_seq": 70},
        ]
    ),
)
def test_both_read_paths_return_the_same_events(
    tmp_path_factory: pytest.TempPathFactory, parts: list[list[NewEvent]], where: dict
) -> None:
    """Tuples below ARROW_FROM_ROWS, Arrow from it: the same StoredEvents, the time
    included, for every filter."""
    with _filled(tmp_path_factory.mktemp("read") / "l", parts, ALWAYS_ARROW) as lg:
        with mock.patch.object(rows, "ARROW_FROM_ROWS", ALWAYS_ARROW):
            via_arrow = list(lg.read(**where))
        with mock.patch.object(rows, "ARROW_FROM_ROWS", NEVER_ARROW):
            via_tuples = list(lg.read(**where))
    assert via_tuples == via_arrow


def test_a_large_payload_takes_the_arrow_path_below_arrow_from_rows(tmp_path: Path) -> None:
    """One event with a payload over the large-append size is inserted through Arrow (as a
    list parameter DuckDB converted it at several times its size), and read back as
    written; a small one still takes the plain lists."""
    from ledger.log.connection import LARGE_APPEND_BYTES  # noqa: PLC0415

    big = {"text": "x" * (LARGE_APPEND_BYTES + 1)}
    with (
        init_ledger(tmp_path / "l") as lg,
        mock.patch.object(rows, "arrow_events", wraps=rows.arrow_events) as arrow,
    ):
        lg.append([NewEvent("run/a", "ext.x", {"small": 1})])
        assert arrow.call_count == 0
        lg.append([NewEvent("run/a", "ext.x", big)])
        assert arrow.call_count == 1
        assert [e.data() for e in lg.read(stream="run/a")] == [{"small": 1}, big]
