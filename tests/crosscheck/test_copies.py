"""The repository's copies of reference data are still byte-identical to the reference."""

from __future__ import annotations

import filecmp
import tarfile
from pathlib import Path

import pytest

from tests.data_paths import (
    COMPAT_TARBALL,
    GRADING_BUNDLES,
    GRADING_PARITY,
    GVC_CASES,
    GVC_REGISTRATION,
    MERKLE_VECTORS,
    NOTES,
    PACKS,
    VCORE_DEMO_RUN,
)


def _files(root: Path) -> dict[str, bytes]:
    """Data files under ``root`` by relative path; prose (.md) is never copied."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.suffix != ".md"
    }


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (MERKLE_VECTORS, "reference/merkle/vectors.json"),
        (GVC_CASES, "reference/gvc/conformance/fixtures/derivation-cases.json"),
        (GVC_REGISTRATION, "reference/gvc/registration/verdict-grade-registration.json"),
    ],
)
def test_single_files(reference: Path, ours: Path, theirs: str) -> None:
    assert filecmp.cmp(ours, reference / theirs, shallow=False)


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (GRADING_PARITY, "reference/tolokaforge/grading_parity"),
        (GRADING_BUNDLES, "reference/tolokaforge/grading_bundles"),
        (NOTES, "corpora/notes_duplicate_check"),
        (PACKS, "corpora/packs"),
        (VCORE_DEMO_RUN, "reference/verdict-core/demo-run"),
    ],
)
def test_folders(reference: Path, ours: Path, theirs: str) -> None:
    assert _files(ours) == _files(reference / theirs)


def test_compat_archive(reference: Path) -> None:
    with tarfile.open(COMPAT_TARBALL, "r:gz") as tar:
        packed = {
            m.name.removeprefix("tolokaforge-0.33.1/"): tar.extractfile(m).read()
            for m in tar.getmembers()
            if m.isfile()
        }
    assert packed == _files(reference / "compat" / "tolokaforge-0.33.1")
