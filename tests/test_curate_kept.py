"""``curate --from-ledger`` with kept bundle files (ledger.app.curate_kept) writes the same
bytes as a curation that renders every bundle, whatever was ingested or re-scored between
two curations; it renders only the trials whose streams changed, and nothing kept across a
change of the rendering code or with ``full``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ledger.app import curate as curate_mod
from ledger.app import curate_kept
from ledger.app.curate import curate
from ledger.app.ingest import ingest_into as ingest
from ledger.log.layout import PROJECTIONS_DIR
from ledger.log.store import open_ledger
from schemas.envelope import NewEvent
from tests.curate_support import CRITERION, write_trial


class Grown:
    """A ledger of trials ingested run by run, re-scored now and then, curated between."""

    def __init__(self, root: Path) -> None:
        self.root, self.lg = root, root / "lg"
        self.streams: list[str] = []
        self.k = 0

    def trial(self, run: str, met: bool, dead: bool) -> str:
        self.k += 1
        batch = self.root / f"batch{self.k}"
        write_trial(batch, run=run, index=self.k, met=met, calls=["error"] if dead else ["success"])
        with open_ledger(self.lg, create=True) as lg:
            (stream,) = ingest(lg, [str(batch / run)]).trial_streams
        self.streams.append(stream)
        return stream

    def rescore(self, i: int, met: bool) -> str:
        stream = self.streams[i % len(self.streams)]
        grade = {"binary_pass": met, "score": 1.0, "judge_status": "completed",
                 "criterion_results": [{"id": CRITERION, "met": met, "score": float(met)}]}  # fmt: skip
        with open_ledger(self.lg) as lg:
            lg.append(
                [NewEvent(stream, "grade.recorded", {"source": "grade.yaml", "grade": grade})]
            )
        return stream

    def curate(self, into: str, **kw: Any) -> dict[str, bytes]:
        out = self.root / into
        curate(from_ledger=True, ledger=self.lg, criterion=CRITERION, into=out, replace=True, **kw)
        return {
            str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()
        }


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(curate_mod, "now_utc", lambda: "2026-09-01T00:00:00Z")


def counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the bundles rendered through the kept-files path."""
    calls = [0]
    real = curate_kept.export_bundle.bundle_files

    def spy(events: Any) -> dict[str, bytes]:
        calls[0] += 1
        return real(events)

    monkeypatch.setattr(curate_kept.export_bundle, "bundle_files", spy)
    return calls


def rendered_afresh(grown: Grown, monkeypatch: pytest.MonkeyPatch) -> dict[str, bytes]:
    """The corpus as curated with no kept file at all."""
    with monkeypatch.context() as m:
        m.setattr(curate_kept, "_path", lambda lg: None)
        return grown.curate("fresh")


OPS = st.lists(
    st.one_of(
        st.tuples(
            st.just("trial"),
            st.sampled_from(["run_a", "run_b", "run_c"]),
            st.booleans(),
            st.booleans(),
        ),  # fmt: skip
        st.tuples(st.just("rescore"), st.integers(0, 20), st.booleans()),
        st.just(("curate",)),
    ),
    max_size=8,
)


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=OPS)
@example(ops=[("curate",), ("rescore", 0, False), ("trial", "run_b", True, False)])
def test_kept_bundles_curate_the_same_bytes(
    tmp_path_factory: Any, monkeypatch: pytest.MonkeyPatch, ops: list[Any]
) -> None:
    grown = Grown(tmp_path_factory.mktemp("kept"))
    changed = {grown.trial("run_a", True, False)}
    calls = counting(monkeypatch)
    for op in [*ops, ("curate",)]:
        if op[0] == "trial":
            changed.add(grown.trial(*op[1:]))
        elif op[0] == "rescore":
            changed.add(grown.rescore(*op[1:]))
        else:
            calls[0] = 0
            got = grown.curate("kept")
            assert calls[0] <= len(changed)  # only new or re-scored trials are rendered
            assert got == rendered_afresh(grown, monkeypatch)
            changed = set()


def test_nothing_changed_renders_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    grown = Grown(tmp_path)
    for i in range(3):
        grown.trial("run_a", True, i == 2)
    first = grown.curate("a")
    calls = counting(monkeypatch)
    assert grown.curate("b") == first and calls[0] == 0
    assert grown.curate("c", full=True) == first and calls[0] == 2  # the two admitted
    monkeypatch.setattr(curate_kept, "VERSION", "other rendering code")
    calls[0] = 0
    assert grown.curate("d") == first and calls[0] == 2


def test_a_dry_run_keeps_nothing(tmp_path: Path) -> None:
    grown = Grown(tmp_path)
    grown.trial("run_a", True, False)
    curate(
        from_ledger=True, ledger=grown.lg, criterion=CRITERION, into=tmp_path / "x", dry_run=True
    )
    assert not (grown.lg / PROJECTIONS_DIR / curate_kept.FILE).exists()
