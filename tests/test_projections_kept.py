"""What ``projections/`` keeps of per-config results: the most recent few of each kind, and
no temporary file a killed writer left (``ledger.log.layout.prune_derived``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ledger.app.ingest import ingest_into
from ledger.app.reconcile import reconcile
from ledger.app.retrace import retrace
from ledger.log import layout
from ledger.log.store import open_ledger

ROOT = Path(__file__).resolve().parents[1]
NOTES = ROOT / "corpora" / "notes_duplicate_check"
PACKS = ROOT / "corpora" / "packs"
NARROWED = PACKS / "notes_duplicate_check_narrowed" / "grading.yaml"
OLD = 2 * layout.ORPHAN_SECONDS


def touch(path: Path, age: float, body: bytes = b"x") -> Path:
    path.write_bytes(body)
    then = os.stat(path).st_mtime - age
    os.utime(path, (then, then))
    return path


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    return int(proc.stdout)


def test_only_the_most_recent_results_of_each_kind_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(layout, "KEPT_CONFIGS", 2)
    for i, name in enumerate(["retrace-a", "retrace-b", "retrace-c", "reconcile-a"]):
        touch(tmp_path / f"{name}.results", age=100 - i)
    index = touch(tmp_path / "ingest-bundles.index", age=1000)
    layout.prune_derived(tmp_path, "retrace")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "ingest-bundles.index", "reconcile-a.results", "retrace-b.results", "retrace-c.results",
    ]  # fmt: skip
    assert index.read_bytes() == b"x"


def test_a_temporary_file_is_removed_only_once_its_writer_is_gone_and_it_is_old(
    tmp_path: Path,
) -> None:
    gone, here = dead_pid(), os.getpid()
    left = touch(tmp_path / f".retrace-{gone}-k3x9.tmp", OLD)
    left_unnamed = touch(tmp_path / ".reconcile-q8w_1.tmp", OLD)  # no pid in its name
    filters = touch(tmp_path / f".append-filters.bin-{gone}-z1.tmp", OLD)
    live = touch(tmp_path / f".retrace-{here}-a1b2.tmp", OLD)
    fresh = touch(tmp_path / f".retrace-{gone}-c3d4.tmp", 0)
    layout.prune_derived(tmp_path, "retrace")
    assert not left.exists() and not left_unnamed.exists() and not filters.exists()
    assert live.exists() and fresh.exists()


def test_a_writer_names_its_temporary_file_with_its_pid(tmp_path: Path) -> None:
    """What a killed writer leaves is recognised as its: a child makes one and exits."""
    code = ("import sys; from pathlib import Path; from ledger.log.layout import derived_temp; "
            "print(derived_temp(Path(sys.argv[1]), 'reconcile')[1])")  # fmt: skip
    made = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                          text=True, check=True, cwd=ROOT).stdout.strip()  # fmt: skip
    temp = Path(made)
    assert temp.parent == tmp_path and temp.name.startswith(".reconcile-")
    layout.prune_derived(tmp_path, "reconcile")
    assert temp.exists()  # written just now: perhaps a live writer elsewhere
    touch(temp, OLD)
    layout.prune_derived(tmp_path, "reconcile")
    assert not temp.exists()


def test_retrace_keeps_the_latest_configs_and_the_kept_one_still_extends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(layout, "KEPT_CONFIGS", 1)
    kept = tmp_path / "L" / "projections"
    with open_ledger(tmp_path / "L", create=True) as lg:
        ingest_into(lg, [str(NOTES)], "notes")
        retrace(ledger=lg)
        (first,) = kept.glob("retrace-*.results")
        retrace(ledger=lg, constraints_file=NARROWED)
        (second,) = kept.glob("retrace-*.results")
        assert second != first and not first.exists()
        assert "extends" in retrace(ledger=lg, constraints_file=NARROWED).report["receipt"]
    monkeypatch.setattr(layout, "KEPT_CONFIGS", 2)
    with open_ledger(tmp_path / "L") as lg:
        retrace(ledger=lg, full=True)
    assert len(list(kept.glob("retrace-*.results"))) == 2


def test_reconcile_keeps_the_latest_configs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(layout, "KEPT_CONFIGS", 1)
    for part in (NOTES, PACKS):
        shutil.copytree(part, tmp_path / "corpora" / part.name)
    lg = tmp_path / "lg"
    with open_ledger(lg, create=True):
        pass
    root = tmp_path / "corpora" / "packs"
    each = sorted(p for p in root.iterdir() if p.is_dir())  # the same packs, searched apart:
    reconcile(packs=[root], base=tmp_path, ledger=lg)  # another config
    (first,) = (lg / "projections").glob("reconcile-*.results")
    reconcile(packs=each, base=tmp_path, ledger=lg)
    (second,) = (lg / "projections").glob("reconcile-*.results")
    assert second != first
    again = reconcile(packs=each, base=tmp_path, ledger=lg)
    assert again.document["receipt"].get("carried") == 17
