"""Segment layout: bounded sizes (rows and bytes), trials whole, and projection outputs
(grade.replayed) accepted on a sealed trial without splitting what projections read."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.app.ingest import ingest_into as ingest
from ledger.app.retrace import retrace
from ledger.errors import StreamSealed
from ledger.log.segments import cut_points, load_manifest
from ledger.log.store import open_ledger
from ledger.log.verify import verify_ledger
from schemas.envelope import NewEvent
from tests.data_paths import NOTES

ROOT = Path(__file__).resolve().parents[1]


def _oracle(start, end, spans, max_rows, sizes, max_bytes):
    """Brute force: the furthest allowed cut within the bounds, else the nearest past them."""
    def allowed(b):
        return not any(lo < b <= hi for lo, hi in spans)

    cuts, pos = [], start
    while pos < end:
        target = min(pos + max_rows, end)
        if max_bytes is not None:
            total, fit = 0, pos
            while fit < end and total + sizes[fit - start] <= max_bytes:
                total += sizes[fit - start]
                fit += 1
            target = max(pos + 1, min(target, fit))
        inside = [b for b in range(pos + 1, target + 1) if allowed(b)]
        b = max(inside) if inside else next(b for b in range(target + 1, end + 1) if allowed(b))
        cuts.append(b)
        pos = b
    return cuts


@st.composite
def layouts(draw):
    start = draw(st.integers(0, 5))
    n = draw(st.integers(1, 60))
    end = start + n
    spans = []
    for _ in range(draw(st.integers(0, 8))):
        lo = draw(st.integers(start, end - 1))
        hi = draw(st.integers(lo, min(end - 1, lo + 15)))
        spans.append((lo, hi))
    max_rows = draw(st.integers(1, 25))
    sizes = draw(st.lists(st.integers(1, 40), min_size=n, max_size=n))
    max_bytes = draw(st.one_of(st.none(), st.integers(1, 300)))
    return start, end, spans, max_rows, sizes, max_bytes


@settings(max_examples=200, deadline=None)
@given(layouts())
def test_cut_points_match_the_brute_force_rule(layout):
    start, end, spans, max_rows, sizes, max_bytes = layout
    got = cut_points(start, end, spans, max_rows, row_bytes=sizes, max_bytes=max_bytes)
    assert got == _oracle(start, end, spans, max_rows, sizes, max_bytes)
    assert got[-1] == end and got == sorted(set(got))
    assert not any(lo < b <= hi for b in got for lo, hi in spans)


def test_max_bytes_bounds_segments_and_never_splits_a_trial(tmp_path: Path):
    with open_ledger(tmp_path / "L", create=True) as lg:
        ingest(lg, [str(NOTES)])
        sizes = lg._row_sizes(0, lg.size())
        made = lg.seal(max_bytes=20_000)
        spans = lg.trial_spans(0, lg.size())
    assert len(made) > 3
    for seg in made:
        seg_bytes = sum(sizes[seg.first_seq : seg.last_seq + 1])
        whole_trial = any(lo == seg.first_seq and hi == seg.last_seq for lo, hi in spans)
        assert seg_bytes <= 20_000 or seg.rows == 1 or whole_trial or any(
            lo <= seg.first_seq and seg.last_seq <= hi for lo, hi in spans
        )
    cuts = [s.last_seq + 1 for s in made]
    assert not any(lo < b <= hi for b in cuts for lo, hi in spans)


def test_retrace_appends_to_a_sealed_log_and_sealed_trials_stay_closed(tmp_path: Path):
    """Replays go to their own stream, so a retrace of sealed trials appends; a sealed
    trial stream itself still refuses any event (its segment holds it whole)."""
    with open_ledger(tmp_path / "L", create=True) as lg:
        ingest(lg, [str(NOTES)])
        lg.seal(max_rows=40)
        result = retrace(ledger=lg)
        assert result.appended == 18  # 17 grade.replayed + replay.completed
        stream = next(iter(lg.streams(prefix="trial/")))
        with pytest.raises(StreamSealed):
            lg.append([NewEvent(stream, "ext.step", {"late": 1})])
        before = load_manifest(lg.path).sealed_upto
        lg.seal(max_rows=5)  # the replay stream is not a trial: cut anywhere
        segs = load_manifest(lg.path).segments
        assert segs[-1].last_seq + 1 == lg.size() > before
        assert all(s.rows <= 5 for s in segs if s.first_seq >= before)
        assert verify_ledger(lg).ok
