"""One realistic ledger per test run, built by the CLI itself, copied by every test.

``vledger demo`` ingests the shipped corpora (trials, packs, a verdict-core run), records
verdict units, retraces, reconciles and signs; the fixture then seals it into several
segments, keeps an older copy (for rollback), appends once more and signs a checkpoint
kept outside the ledger. Building it once keeps the subprocess tests inside the time
budget of ``make test``.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.adversarial.harness import copy_ledger, vledger


@dataclass(frozen=True)
class Built:
    ledger: Path  # sealed, signed at its full size
    older: Path  # a genuine copy from before the last append (a rollback target)
    key: Path
    pub: Path
    outside: Path  # checkpoint of `ledger` at its full size, kept outside it
    segments: tuple[str, ...]


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    base = tmp_path_factory.mktemp("adversarial")
    ledger = base / "L"
    res = vledger("demo", "--ledger", ledger, "--report", base / "demo.html", timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    key = base / "L.key"  # where the demo keeps its key: beside the ledger, outside it
    sealed = vledger("seal", "--ledger", ledger, "--max-rows", "200", "--json")
    assert sealed.returncode == 0, sealed.stderr
    older = copy_ledger(ledger, base / "older")
    (base / "one.jsonl").write_text(
        json.dumps({"stream": "ext/notes", "type": "ext.note", "payload": {"n": 1}}) + "\n"
    )
    assert vledger("append", "--ledger", ledger, base / "one.jsonl").returncode == 0
    outside = base / "head.note"
    cp = vledger("checkpoint", "--ledger", ledger, "--key", key, "--out", outside)
    assert cp.returncode == 0, cp.stderr
    segments = tuple(s["file"] for s in json.loads(sealed.stdout))
    assert len(segments) > 1
    return Built(ledger, older, key, Path(str(key) + ".pub"), outside, segments)


@pytest.fixture
def ledger(built: Built, tmp_path: Path) -> Iterator[Path]:
    """A private copy of the built ledger for one test to attack."""
    path = copy_ledger(built.ledger, tmp_path / "L")
    yield path
    shutil.rmtree(path, ignore_errors=True)
