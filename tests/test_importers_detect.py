"""PATH detection: one test per kind, on the shipped material where it exists."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.sources.detect import DetectError, PathKind, detect, discover_bundles, relative_posix
from tests.data_paths import NOTES, PACKS, VCORE_DEMO_RUN

ROOT = Path(__file__).resolve().parents[1]
MET = NOTES / "met"
DEMO_RUN = VCORE_DEMO_RUN
M0 = MET / "native_shared_domain_policy_demo_20260803_063010_trial0"


def _bundle(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "trajectory.yaml").write_text("task_id: t\nmessages: []\n")
    return path


@pytest.mark.parametrize(
    ("path", "kind", "resolved"),
    [
        (M0, PathKind.BUNDLE, M0),
        (M0 / "trajectory.yaml", PathKind.BUNDLE, M0),
        (MET, PathKind.CORPUS, MET),
        (MET / "corpus.yaml", PathKind.CORPUS, MET),
        (NOTES, PathKind.MULTI_CORPUS, NOTES),
        (
            PACKS / "notes_duplicate_check_narrowed",
            PathKind.PACK,
            PACKS / "notes_duplicate_check_narrowed",
        ),
        (
            PACKS / "notes_duplicate_check_narrowed" / "migration.yaml",
            PathKind.PACK,
            PACKS / "notes_duplicate_check_narrowed",
        ),
        (PACKS, PathKind.PACK_SET, PACKS),
        (DEMO_RUN, PathKind.VERDICT_RUN, DEMO_RUN),
        (DEMO_RUN / "receipt.json", PathKind.VERDICT_RUN, DEMO_RUN),
    ],
)
def test_shipped_material_is_detected(path: Path, kind: PathKind, resolved: Path) -> None:
    found = detect(path)
    assert found.kind is kind
    assert found.path == resolved


def test_run_dir_layout(tmp_path: Path) -> None:
    _bundle(tmp_path / "out" / "trials" / "task_a" / "0")
    _bundle(tmp_path / "out" / "trials" / "task_a" / "1")
    assert detect(tmp_path / "out").kind is PathKind.RUN_DIR
    assert [p.name for p in discover_bundles(tmp_path / "out")] == ["0", "1"]


def test_flat_collection_and_replay_subtrees_are_skipped(tmp_path: Path) -> None:
    _bundle(tmp_path / "c" / "b1")
    _bundle(tmp_path / "c" / "nested" / "b2")
    _bundle(tmp_path / "c" / "trace_replay" / "r1" / "b3")  # never discovered
    _bundle(tmp_path / "c" / "x" / "replays" / "b4")  # never discovered, at any depth
    assert detect(tmp_path / "c").kind is PathKind.COLLECTION
    assert sorted(p.name for p in discover_bundles(tmp_path / "c")) == ["b1", "b2"]


def test_every_subdir_must_hold_corpus_yaml_for_a_multi_part_corpus(tmp_path: Path) -> None:
    for part in ("a", "b"):
        (tmp_path / "m" / part).mkdir(parents=True)
        (tmp_path / "m" / part / "corpus.yaml").write_text("bundles: []\n")
    assert detect(tmp_path / "m").kind is PathKind.MULTI_CORPUS
    _bundle(tmp_path / "m" / "stray")
    assert detect(tmp_path / "m").kind is PathKind.COLLECTION


def test_empty_directory_names_what_was_looked_for(tmp_path: Path) -> None:
    with pytest.raises(DetectError, match="trajectory.yaml") as exc:
        detect(tmp_path)
    assert exc.value.path == str(tmp_path)


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(DetectError, match="no such file"):
        detect(tmp_path / "nope")


def test_unknown_file(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(DetectError, match="not a file ingest reads"):
        detect(tmp_path / "notes.txt")


def test_symlink_loops_do_not_hang_discovery(tmp_path: Path) -> None:
    _bundle(tmp_path / "c" / "b1")
    (tmp_path / "c" / "loop").symlink_to(tmp_path / "c", target_is_directory=True)
    assert [p.name for p in discover_bundles(tmp_path / "c")] == ["b1"]


def _lock(monkeypatch: pytest.MonkeyPatch, locked: Path) -> None:
    """``locked`` as a directory without read or search permission is to its non-root
    owner: listing it or looking up a name inside it fails with EACCES (simulated, so the
    test means the same under root, whom chmod 000 does not stop)."""
    stat, scandir = os.stat, os.scandir

    def denied(path: object) -> bool:
        if isinstance(path, int):  # a file descriptor: opened, so readable
            return False
        return locked in Path(os.fsdecode(path)).parents  # type: ignore[arg-type]

    def fake_stat(path, *a, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
        if denied(path):
            raise PermissionError(errno.EACCES, "Permission denied", os.fsdecode(path))
        return stat(path, *a, **kw)

    def fake_scandir(path="."):  # noqa: ANN001, ANN202
        if not isinstance(path, int) and Path(os.fsdecode(path)) == locked:
            raise PermissionError(errno.EACCES, "Permission denied", os.fsdecode(path))
        return scandir(path)

    monkeypatch.setattr(os, "stat", fake_stat)
    monkeypatch.setattr(os, "scandir", fake_scandir)


@pytest.mark.parametrize("where", ["c/b2", "c/deeper"])
def test_a_directory_discovery_cannot_look_into_is_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Never a PermissionError traceback (a bundle directory), never silently left out (a
    directory below the bundles): what it holds would be missing from the input."""
    _bundle(tmp_path / "c" / "b1")
    _bundle(tmp_path / "c" / "b2")
    _bundle(tmp_path / "c" / "deeper" / "b3")
    _lock(monkeypatch, tmp_path / where)
    with pytest.raises(DetectError, match="permission denied") as exc:
        detect(tmp_path / "c")
        list(discover_bundles(tmp_path / "c"))
    assert exc.value.path == str(tmp_path / where)


def test_ingest_and_curate_name_a_bundle_directory_they_cannot_look_into(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner  # noqa: PLC0415

    from ledger.cli import main  # noqa: PLC0415

    shutil.copytree(M0, tmp_path / "c" / "b1")
    shutil.copytree(M0, tmp_path / "c" / "b2")
    locked = tmp_path / "c" / "b2"
    _lock(monkeypatch, locked)
    for args in (
        ["ingest", "--workers", "1", "--ledger", str(tmp_path / "lg"), str(tmp_path / "c")],
        ["curate", "--criterion", "checked_duplicates_first", "--workers", "1", "--dry-run",
         "--source", str(tmp_path / "c"), "--into", str(tmp_path / "out")],
    ):  # fmt: skip
        got = CliRunner().invoke(main, args)
        assert isinstance(got.exception, SystemExit) and got.exit_code == 1, got.output
        assert f"Error: {locked}: permission denied" in got.stderr


_SEGMENT = st.sampled_from(["a", "b", "ab", "a.b", ".", "..", "c d", "é"])


@given(
    absolute=st.booleans(),
    root=st.lists(_SEGMENT, max_size=3),
    below=st.lists(_SEGMENT, max_size=3),
    other=st.lists(_SEGMENT, max_size=3),
)
def test_relative_posix_is_relative_to(
    absolute: bool, root: list[str], below: list[str], other: list[str]
) -> None:
    """The string shortcut agrees with ``Path.relative_to`` on every pair of paths: those
    under the root, the root itself, siblings sharing a prefix ("a" and "ab"), and paths
    elsewhere (both raise)."""
    start = "/" if absolute else ""
    top = Path(start, *root)
    for path in (Path(top, *below), Path(start, *other)):
        try:
            expected = path.relative_to(top).as_posix()
        except ValueError:
            with pytest.raises(ValueError):
                relative_posix(path, top)
            continue
        assert relative_posix(path, top) == expected


def test_reconcile_finds_the_bundles_ingest_reads(tmp_path: Path) -> None:
    """Reconcile lists a corpus's bundles by ingest's rule: a hidden directory is not read
    by ingest, so reconcile does not look for its trial in the ledger either."""
    from ledger.app.reconcile_packs import discover_bundles as reconcile_bundles

    _bundle(tmp_path / "c" / "b1")
    _bundle(tmp_path / "c" / ".hidden" / "b2")
    _bundle(tmp_path / "c" / "replays" / "b3")
    _bundle(tmp_path / "c" / "sub" / "b4")
    assert reconcile_bundles(tmp_path / "c") == list(discover_bundles(tmp_path / "c"))
    assert [p.name for p in reconcile_bundles(tmp_path / "c")] == ["b1", "b4"]


@pytest.mark.parametrize("locked", ["not_met", "met/b"])
def test_reconcile_names_a_declared_corpus_part_it_cannot_look_into(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, locked: str
) -> None:
    """Resolving a pack's declared corpus names every failure, never raises: a part it
    cannot look into is that corpus's error (it was a PermissionError traceback)."""
    from ledger.app.reconcile_packs import resolve_corpus

    for part in ("met", "not_met"):
        (tmp_path / "corpora" / "n" / part).mkdir(parents=True)
        (tmp_path / "corpora" / "n" / part / "corpus.yaml").write_text("bundles: []\n")
    _bundle(tmp_path / "corpora" / "n" / "met" / "b")
    _lock(monkeypatch, tmp_path / "corpora" / "n" / locked)
    got = resolve_corpus("corpora/n", tmp_path)
    assert got.error is not None and "permission denied" in got.error
    assert str(tmp_path / "corpora" / "n" / locked) in got.error


def test_reconcile_names_a_pack_directory_it_cannot_look_into(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--packs` over a pack without read permission: refused naming it (the search
    skipped it without a word, and its trials then resolved in no pack root)."""
    from ledger.app.reconcile_packs import ReconcileError, find_packs

    shutil.copytree(PACKS, tmp_path / "packs")
    locked = tmp_path / "packs" / "notes_duplicate_check_policy_narrowed"
    _lock(monkeypatch, locked)
    with pytest.raises(ReconcileError, match="cannot look inside") as exc:
        find_packs([tmp_path / "packs"])
    assert str(locked) in str(exc.value)
