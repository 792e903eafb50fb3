"""Properties of ingest over generated corpora: idempotent, and change is never merged."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.generate_corpus import generate
from ledger.app.ingest import IngestError
from ledger.app.ingest import ingest_into as ingest
from ledger.log.store import open_ledger


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    victim=st.integers(0, 5),
    message=st.integers(0, 50),
    text=st.text(max_size=8),
)
def test_reingest_is_a_no_op_and_an_edit_is_reported_by_name(
    seed: int, victim: int, message: int, text: str
) -> None:
    with tempfile.TemporaryDirectory(prefix="vledger-prop-") as tmp:
        corpus = Path(tmp) / "c"
        generate(corpus, 6, seed=seed)
        with open_ledger(Path(tmp) / "lg", create=True) as lg:
            first = ingest(lg, [corpus])
            size = lg.size()
            assert first.trials_new == 6 and first.events_new == size
            again = ingest(lg, [corpus])
            assert (again.events_new, again.events_present, lg.size()) == (0, size, size)

            bundle = sorted(p for p in corpus.iterdir() if p.is_dir())[victim]
            traj = yaml.safe_load((bundle / "trajectory.yaml").read_text())
            m = traj["messages"][message % len(traj["messages"])]
            new_content = (m["content"] or "") + "\u2063" + text  # always a real change
            m["content"] = new_content
            (bundle / "trajectory.yaml").write_text(yaml.safe_dump(traj, sort_keys=False))
            with pytest.raises(IngestError) as exc:
                ingest(lg, [corpus])
            assert exc.value.kind == "changed"
            assert bundle.name in str(exc.value)
            assert lg.size() == size
        shutil.rmtree(corpus)
