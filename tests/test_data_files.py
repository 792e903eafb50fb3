"""The recorded data the tests read is all in the repository, and the compat archive is
reproducible from what it holds (tests/data/README.md)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from tests import data_paths
from tests.data_paths import COMPAT_TARBALL, DATA, ROOT, unpack_compat


def test_every_declared_data_path_exists_inside_the_checkout() -> None:
    paths = [v for v in vars(data_paths).values() if isinstance(v, Path)]
    assert len(paths) > 10
    for p in paths:
        assert p.exists(), p
        assert p.resolve().is_relative_to(ROOT), p


def test_the_compat_archive_repacks_to_the_same_bytes(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("pack_compat", DATA / "pack_compat.py")
    assert spec and spec.loader
    packer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(packer)
    source = unpack_compat(tmp_path / "unpacked")
    assert sorted(p.name for p in source.iterdir()) == sorted(packer.MEMBERS)
    assert len(list((source / "trace-corpus").iterdir())) == 360
    assert len(list((source / "grade-corpus").iterdir())) == 250
    packer.pack(source, tmp_path / "again.tar.gz")
    assert (tmp_path / "again.tar.gz").read_bytes() == COMPAT_TARBALL.read_bytes()


def test_no_code_reaches_for_a_sibling_reference_folder() -> None:
    """A clone has nothing beside it: no module builds a path into ``../shared`` (only the
    optional tests/crosscheck, which ``make test`` never collects, reads reference material,
    and it is handed the folder)."""
    reach = re.compile(r"""/\s*["']shared["']|["']\.\./shared|parent\s*/\s*["']shared""")
    found = [
        f"{p.relative_to(ROOT)}:{n}"
        for top in ("ledger", "replay", "reconcile", "schemas", "benchmarks", "tests")
        for p in sorted((ROOT / top).rglob("*.py"))
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if reach.search(line)
    ]
    assert found == []
