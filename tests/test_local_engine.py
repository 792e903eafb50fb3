"""The local engine streams: a trial is handed on as soon as its last event is read (never
the corpus first), never split, and the results are the same for any number of workers."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ledger.engines import local
from ledger.engines.base import TrialSelection
from ledger.engines.local import LocalEngine, complete_trials, trial_ends
from schemas.envelope import StoredEvent

# seq -> stream: three interleaved trials, one non-trial stream, one stream never registered
LAYOUT = ["trial/a", "trial/b", "note/x", "trial/a", "trial/c", "trial/b", "trial/u",
          "trial/c", "trial/a", "trial/c"]  # fmt: skip


def event(seq: int, stream: str) -> StoredEvent:
    first = LAYOUT.index(stream) == seq
    kind = "trial.registered" if first and stream != "trial/u" else "trial.message"
    return StoredEvent(seq, stream, 0, f"e{seq}", kind, 1, datetime.now(UTC), b"{}", bytes(32))


class FakeLog:
    """Just ``read``, lazily, remembering how far it has been read."""

    def __init__(self) -> None:
        self.events = [event(i, s) for i, s in enumerate(LAYOUT)]
        self.read_upto = -1

    def read(self, stream_prefix: str, to_seq: int, from_seq: int = 0):
        for ev in self.events[from_seq : to_seq + 1]:
            self.read_upto = max(self.read_upto, ev.seq)
            if ev.stream.startswith(stream_prefix):
                yield ev


def count(events: list[StoredEvent], params: int) -> tuple[int, ...]:
    return tuple(e.seq * params for e in events)


@pytest.mark.parametrize("window", [1, 3, 100])
def test_each_trial_comes_out_whole_as_soon_as_its_last_event_is_read(monkeypatch, window):
    monkeypatch.setattr(local, "READ_WINDOW", window)
    lg = FakeLog()
    select = TrialSelection(to_seq=len(LAYOUT) - 1)
    ends = trial_ends(lg, select.to_seq)  # a first pass (the DuckDB store asks SQL instead)
    lg.read_upto, seen = -1, []
    for stream, evs in complete_trials(lg, select, ends):
        assert lg.read_upto == evs[-1].seq  # nothing read beyond this trial's end
        seen.append((stream, [e.seq for e in evs]))
    # trial/u has no trial.registered: not a trial; note/x is not a trial stream
    assert seen == [("trial/b", [1, 5]), ("trial/a", [0, 3, 8]), ("trial/c", [4, 7, 9])]


def test_selection_and_prefix_of_the_log(monkeypatch):
    monkeypatch.setattr(local, "READ_WINDOW", 2)
    lg = FakeLog()
    select = TrialSelection(to_seq=5, streams=frozenset({"trial/a", "trial/b"}))
    got = dict(complete_trials(lg, select, trial_ends(lg, select.to_seq)))
    assert {k: [e.seq for e in v] for k, v in got.items()} == {"trial/a": [0, 3], "trial/b": [1, 5]}


def test_results_are_sorted_by_stream_and_equal_for_any_workers(monkeypatch):
    monkeypatch.setattr(local, "CHUNK", 1)  # one trial per pool task: several in flight
    select = TrialSelection(to_seq=len(LAYOUT) - 1)
    totals: list[int] = []
    one = LocalEngine(1).map_trials(FakeLog(), select, count, 2, on_total=totals.append)
    two = LocalEngine(2).map_trials(FakeLog(), select, count, 2)
    assert one == two == [("trial/a", (0, 6, 16)), ("trial/b", (2, 10)), ("trial/c", (8, 14, 18))]
    assert totals == [4]  # every trial stream the log holds, before filtering


class ArrowFakeLog(FakeLog):
    """The two reads the pool path uses on the DuckDB store: spans and Arrow windows."""

    def trial_spans(self, start: int, end: int) -> list[tuple[int, int]]:
        seqs: dict[str, list[int]] = {}
        for e in self.events[start:end]:
            if e.stream.startswith("trial/"):
                seqs.setdefault(e.stream, []).append(e.seq)
        return [(min(s), max(s)) for s in seqs.values()]

    def read_arrow(self, stream_prefix: str, from_seq: int, to_seq: int):  # noqa: ANN201
        import dataclasses

        import pyarrow as pa

        from schemas.envelope import ARROW_SCHEMA

        rows = [
            dataclasses.asdict(e)
            for e in self.events[from_seq : to_seq + 1]
            if e.stream.startswith(stream_prefix)
        ]
        return pa.Table.from_pylist(rows, schema=ARROW_SCHEMA)


@pytest.mark.parametrize("chunk", [1, 2, 64])
def test_the_pool_reads_arrow_windows_and_keeps_interleaved_trials_whole(monkeypatch, chunk):
    """Workers > 1: the driver ships Arrow windows, each trial projected once, whole, by the
    window holding its last event, even when trials interleave (trial/a spans the log)."""
    monkeypatch.setattr(local, "CHUNK", chunk)
    select = TrialSelection(to_seq=len(LAYOUT) - 1)
    one = LocalEngine(1).map_trials(ArrowFakeLog(), select, count, 2)
    two = LocalEngine(2).map_trials(ArrowFakeLog(), select, count, 2)
    assert one == two == [("trial/a", (0, 6, 16)), ("trial/b", (2, 10)), ("trial/c", (8, 14, 18))]
