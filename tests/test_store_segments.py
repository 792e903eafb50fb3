"""Guarantee 9: sealing into Parquet segments; trial streams never split; readers never block."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import orjson
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.errors import LedgerBusy, StreamSealed
from ledger.log.segments import cut_points, load_manifest, read_sealed
from ledger.log.store import init_ledger, open_ledger
from ledger.log.verify import verify_ledger
from schemas.envelope import NewEvent
from tests import merkle_oracle
from tests.process_harness import release, worker
from tests.store_helpers import no_extra_checks  # noqa: F401  (fixture)

pytestmark = pytest.mark.usefixtures("no_extra_checks")


def naive_cuts(start: int, end: int, spans: list[tuple[int, int]], max_rows: int) -> list[int]:
    """Brute force: greedily the largest allowed cut within max_rows, else the first beyond."""

    def allowed(b: int) -> bool:
        return not any(lo < b <= hi for lo, hi in spans)

    cuts, pos = [], start
    while pos < end:
        near = [b for b in range(pos + 1, min(pos + max_rows, end) + 1) if allowed(b)]
        b = max(near) if near else min(b for b in range(pos + max_rows + 1, end + 1) if allowed(b))
        cuts.append(b)
        pos = b
    return cuts


@st.composite
def span_sets(draw: st.DrawFn) -> tuple[int, int, list[tuple[int, int]], int]:
    start = draw(st.integers(0, 20))
    end = start + draw(st.integers(1, 60))
    spans = []
    for _ in range(draw(st.integers(0, 8))):
        lo = draw(st.integers(start, end - 1))
        spans.append((lo, draw(st.integers(lo, end - 1))))
    return start, end, spans, draw(st.integers(1, 25))


@settings(max_examples=200, deadline=None)
@given(span_sets())
def test_cut_points_match_brute_force_and_never_split_a_trial(
    case: tuple[int, int, list[tuple[int, int]], int],
) -> None:
    start, end, spans, max_rows = case
    cuts = cut_points(start, end, spans, max_rows)
    assert cuts == naive_cuts(start, end, spans, max_rows)
    assert cuts[-1] == end and cuts == sorted(set(cuts))
    assert not any(lo < b <= hi for b in cuts for lo, hi in spans)


def trial_events(corpus: str, trials: int, per_trial: int) -> list[NewEvent]:
    """Events of several trials interleaved, plus run events between them."""
    out = []
    for k in range(per_trial):
        for t in range(trials):
            out.append(NewEvent(f"trial/{corpus}/t{t}/0", "ext.step", {"t": t, "k": k}))
        out.append(NewEvent("run/r", "ext.tick", {"corpus": corpus, "k": k}))
    return out


def test_seal_writes_segments_matching_store_and_manifest(tmp_path: Path) -> None:
    lg = init_ledger(tmp_path / "l")
    lg.append(trial_events("a", 3, 4))
    lg.append(trial_events("b", 2, 5))
    lg.append(trial_events("c", 1, 3))
    made = lg.seal(max_rows=10)
    assert len(made) >= 3
    assert lg.seal() == []  # nothing new
    manifest = orjson.loads((tmp_path / "l" / "segments" / "manifest.json").read_bytes())
    assert [s["file"] for s in manifest["segments"]] == [m.file for m in made]
    tables = list(read_sealed(tmp_path / "l"))
    assert pa.concat_tables(tables).equals(lg.read_arrow())
    where = defaultdict(set)
    for info, table in zip(made, tables, strict=True):
        seqs = table.column("seq").to_pylist()
        assert info.file == f"seg-{info.first_seq}-{info.last_seq}.parquet"
        assert (seqs[0], seqs[-1], len(seqs)) == (info.first_seq, info.last_seq, info.rows)
        leaves = table.column("leaf_hash").to_pylist()
        assert info.root == merkle_oracle.mth(leaves).hex()
        assert info.log_root == lg.root(info.last_seq + 1).hex()
        for s in table.column("stream").to_pylist():
            where[s].add(info.file)
    split = {s: f for s, f in where.items() if s.startswith("trial/") and len(f) > 1}
    assert split == {}
    assert len(where["run/r"]) > 1  # non-trial streams may span segments
    assert verify_ledger(lg).ok
    lg.close()


def test_sealed_trial_stream_refuses_more_events(tmp_path: Path) -> None:
    lg = init_ledger(tmp_path / "l")
    lg.append(trial_events("a", 2, 2))
    lg.seal()
    with pytest.raises(StreamSealed) as info:
        lg.append(
            [
                NewEvent("run/r", "ext.tick", {"late": 1}),
                NewEvent("trial/a/t1/0", "ext.step", {"late": 1}),
            ]
        )
    assert info.value.stream == "trial/a/t1/0"
    assert lg.size() == 6
    lg.append(
        [NewEvent("run/r", "ext.tick", {"late": 2}), NewEvent("trial/a/t9/0", "ext.step", {})]
    )
    assert lg.size() == 8
    lg.close()


def test_interrupted_seal_is_finished_on_open(tmp_path: Path) -> None:
    lg = init_ledger(tmp_path / "l")
    lg.append(trial_events("a", 2, 3))
    size = lg.size()
    lg._set_sealed_upto(size)  # a crash right after step (1) of seal
    lg.close()
    assert load_manifest(tmp_path / "l").segments == []
    with open_ledger(tmp_path / "l") as lg:
        assert load_manifest(tmp_path / "l").sealed_upto == size == 9
        assert verify_ledger(lg).ok


@pytest.mark.slow
def test_segments_are_readable_while_another_process_writes(tmp_path: Path) -> None:
    path = tmp_path / "l"
    with init_ledger(path) as lg:
        lg.append(trial_events("a", 2, 3))
        lg.seal()
        want = lg.read_arrow()
    holder = worker("hold", path, 120.0)
    assert holder.stdout is not None and holder.stdout.readline().strip() == b"ready"
    try:
        with pytest.raises(LedgerBusy):
            open_ledger(path, busy_timeout=0.2)
        assert pa.concat_tables(list(read_sealed(path))).equals(want)
    finally:
        release(holder)
