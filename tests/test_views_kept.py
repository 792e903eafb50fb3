"""The kept view rows (ledger.analytics.materialise) brought up to date on read equal the
views computed from scratch over the same log, whatever was appended between two reads:
new trials, new corpora, re-scored trials, re-registrations, replays, and a
``replay.completed`` appended after the replayed grades it admits. And nothing is reused
across a change of the kept views' code, a log the rows were not kept from, a damaged file
or ``full``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ledger.analytics import materialise, views
from ledger.analytics import sql as analytics
from ledger.log.store import init_ledger, open_ledger
from schemas.envelope import NewEvent
from tests.analytics_fixtures import (
    check,
    recorded_grade,
    replay_events,
    replayed_grade,
    trial_events,
    trial_stream,
    write_ledger,
)

Rows = dict[str, list[str]]


def _rows(con: Any) -> Rows:
    """Every public view's rows, order-free (views promise no order)."""
    return {
        v.name: sorted(repr(r) for r in analytics.rows(con, f"SELECT * FROM {v.name}"))
        for v in views.PUBLIC_VIEWS
    }


def kept_and_fresh(lg: Path, *, full: bool = False) -> tuple[materialise.Kept, Rows, Rows]:
    """The views over the kept rows, and the same views computed in memory from the log."""
    with analytics.connect(lg, full=full) as (con, source):
        assert source.kept is not None
        kept = _rows(con)
        views.create_views(con, source.relation)  # from scratch: no kept rows read
        fresh = _rows(con)
    return source.kept, kept, fresh


class Log:
    """A ledger grown batch by batch, as ingest and retrace would grow it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        init_ledger(path).close()
        self.trials: list[tuple[str, str]] = []  # (stream, task)
        self.pending: list[tuple[str, str, dict[str, Any]]] = []  # replay.completed to come
        self.n = 0

    def append(self, events: list[tuple[str, str, dict[str, Any]]]) -> int:
        with open_ledger(self.path) as lg:
            batch = [
                NewEvent(s, t, p, event_id=f"e{self.n + i}") for i, (s, t, p) in enumerate(events)
            ]
            lg.append(batch)
        self.n += len(events)
        return len(events)

    def trial(self, corpus: str, task: str, score: float, passed: bool) -> int:
        idx = sum(1 for s, _ in self.trials if s.startswith(f"trial/{corpus}/{task}/"))
        grade = recorded_grade(score, passed, criteria=[("c1", passed, score)], judge=score)
        grade["judge_usage"] = {"cost_usd": score, "prompt_tokens": 10}
        self.trials.append((trial_stream(corpus, task, idx), task))
        return self.append(trial_events(corpus, task, idx, grade=grade, met=passed))


OPS = st.lists(
    st.one_of(
        st.tuples(
            st.just("trial"),
            st.sampled_from(["c1", "c2"]),
            st.sampled_from(["t1", "t2"]),
            st.floats(0, 1).map(lambda x: round(x, 2)),
            st.booleans(),
        ),  # fmt: skip
        st.tuples(st.just("rescore"), st.integers(0, 50), st.floats(0, 1), st.booleans()),
        st.tuples(st.just("reregister"), st.integers(0, 50), st.sampled_from(["m1", "m2"])),
        st.tuples(
            st.just("replay"), st.integers(0, 50), st.sampled_from(["pass", "fail", "undecided"])
        ),
        st.tuples(st.just("orphan"), st.integers(0, 50), st.sampled_from(["pass", "fail"])),
        st.just(("complete",)),
        st.just(("query",)),
    ),
    min_size=1,
    max_size=9,
)


def apply(log: Log, op: tuple[Any, ...], k: int) -> int:
    """Append what ``op`` stands for; how many events were appended."""
    kind = op[0]
    if kind == "complete":  # a replay's receipt after its grades: admits them (view_kit)
        done, log.pending = log.pending, []
        return log.append(done) if done else 0
    if kind == "trial" or not log.trials:
        return log.trial(*op[1:]) if kind == "trial" else log.trial("c1", "t1", 0.5, True)
    stream, task = log.trials[op[1] % len(log.trials)]
    if kind == "rescore":
        grade = recorded_grade(round(op[2], 2), op[3], criteria=[("c1", not op[3], 0.0)])
        return log.append([(stream, "grade.recorded", {"source": "grade.yaml", "grade": grade})])
    if kind == "reregister":
        corpus, _, idx = stream.split("/")[1:]
        (reg,) = [
            e
            for e in trial_events(corpus, task, int(idx), model=op[2])
            if e[1] == "trial.registered"
        ]
        return log.append([reg])
    grade = replayed_grade(0.5, op[-1] == "pass", checks=[check("k1", str(op[-1]))])
    events = replay_events(f"r{k}", {stream: grade}, task_of={stream: task})
    if kind == "orphan":  # the grade now, its replay.completed with a later "complete"
        log.pending.append(events[-1])
        return log.append(events[:-1])
    return log.append(events)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=OPS)
@example(ops=[("orphan", 0, "pass"), ("query",), ("complete",), ("rescore", 0, 0.1, False)])
def test_kept_rows_brought_up_to_date_equal_a_fresh_computation(
    tmp_path_factory: Any, ops: list[Any]
) -> None:
    log = Log(tmp_path_factory.mktemp("kept") / "lg")
    log.trial("c1", "t1", 0.8, True)
    kept, got, want = kept_and_fresh(log.path)
    assert (kept.action, kept.folded) == ("built", log.n)
    assert got == want
    since = 0
    for k, op in enumerate([*ops, ("query",)]):
        if op[0] != "query":
            since += apply(log, op, k)
            continue
        kept, got, want = kept_and_fresh(log.path)
        assert got == want
        assert (kept.action, kept.folded, kept.size) == (
            ("extended", since, log.n) if since else ("reused", 0, log.n)
        )
        since = 0


@pytest.fixture
def grown(tmp_path: Path) -> Log:
    log = Log(tmp_path / "lg")
    for i in range(3):
        log.trial("c1", "t1", 0.3 * i, i % 2 == 0)
    kept_and_fresh(log.path)  # kept at this size
    log.trial("c2", "t2", 0.9, True)
    return log


def test_a_change_of_the_kept_views_code_reuses_nothing(
    grown: Log, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(materialise, "VERSION", "another-version")
    kept, got, want = kept_and_fresh(grown.path)
    assert (kept.action, kept.folded, kept.reason) == (
        "built",
        grown.n,
        "the kept views' code changed",
    )
    assert got == want
    monkeypatch.undo()  # and back: the rows of the other version are not reused either
    assert kept_and_fresh(grown.path)[0].action == "built"


def test_full_builds_again(grown: Log) -> None:
    kept, got, want = kept_and_fresh(grown.path, full=True)
    assert (kept.action, kept.folded) == ("built", grown.n)
    assert got == want


def test_rows_kept_from_another_log_are_not_used(grown: Log, tmp_path: Path) -> None:
    other = Log(tmp_path / "other")
    for i in range(5):
        other.trial("c9", "t9", 0.1 * i, False)
    kept_file = Path(materialise.PROJECTIONS_DIR) / materialise.FILE
    (other.path / kept_file).parent.mkdir()
    shutil.copy(grown.path / kept_file, other.path / kept_file)  # kept at a smaller size
    kept, got, want = kept_and_fresh(other.path)
    assert kept.action == "built" and "root at size" in kept.reason
    assert got == want


def test_a_damaged_file_is_computed_around_then_built(grown: Log) -> None:
    path = grown.path / materialise.PROJECTIONS_DIR / materialise.FILE
    path.write_bytes(b"not a database" * 100)
    kept, got, want = kept_and_fresh(grown.path)
    assert kept.action == "in_memory" and got == want
    assert kept_and_fresh(grown.path)[0].action == "built"


def test_a_reader_that_cannot_write_uses_current_rows_or_computes(
    grown: Log, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(self: Path, *a: Any, **k: Any) -> None:
        raise PermissionError(f"read-only: {self}")

    monkeypatch.setattr(materialise.Path, "mkdir", refuse)
    kept, got, want = kept_and_fresh(grown.path)  # the kept rows are behind the log
    assert kept.action == "in_memory" and "cannot write" in kept.reason
    assert got == want
    monkeypatch.undo()
    kept_and_fresh(grown.path)  # now current
    monkeypatch.setattr(materialise.Path, "mkdir", refuse)
    kept, got, want = kept_and_fresh(grown.path)
    assert (kept.action, got) == ("reused", want)


def test_a_file_it_can_neither_open_for_writing_nor_remove_is_computed_around(
    grown: Log, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only ledger directory whose kept file is behind the log: DuckDB refuses to
    open it for writing, and removing it (as a damaged one is) is refused too. The views
    are computed in memory (`vledger report` reached the user as a PermissionError)."""
    path = grown.path / materialise.PROJECTIONS_DIR / materialise.FILE
    path.write_bytes(b"not a database" * 100)  # refused by DuckDB, as an unwritable file is

    def refuse(self: Path, *a: Any, **k: Any) -> None:
        raise PermissionError(f"read-only: {self}")

    monkeypatch.setattr(materialise.Path, "unlink", refuse)
    kept, got, want = kept_and_fresh(grown.path)
    assert kept.action == "in_memory" and "cannot write" in kept.reason
    assert got == want and path.is_file()


def test_a_query_reading_no_kept_view_leaves_the_file_alone(tmp_path: Path) -> None:
    log = Log(tmp_path / "lg")
    log.trial("c1", "t1", 0.5, True)
    _, source = analytics.query_with_source(log.path, "SELECT count(*) FROM events, messages")
    assert source.kept is None
    assert not (log.path / materialise.PROJECTIONS_DIR / materialise.FILE).exists()
    _, source = analytics.query_with_source(log.path, "SELECT count(*) FROM pass_at_k")
    assert source.kept is not None and source.kept.action == "built"


def test_a_store_without_a_tree_is_computed_in_memory(tmp_path: Path) -> None:
    """Events written straight into the table (no tree state): nothing is kept against it."""
    lg = write_ledger(tmp_path / "raw", trial_events("c", "t", 0, grade=recorded_grade(0.5, True)),
                      via_store=False)  # fmt: skip
    table, source = analytics.query_with_source(lg, "SELECT count(*) AS n FROM current_grades")
    assert source.kept is not None and source.kept.action == "in_memory"
    assert table.to_pylist() == [{"n": 1}]
