"""``files.confine``: its shortcut for a plain file directly in the root gives what
resolving the whole path gives, and every other name still takes the full resolution."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ledger.sources.files import OutsideRoot, confine


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    real = tmp_path / "real" / "bundle"
    real.mkdir(parents=True)
    (real / "trajectory.yaml").write_text("a: 1\n")
    (real / "sub").mkdir()
    (tmp_path / "outside.yaml").write_text("b: 2\n")
    (real / "inside_link.yaml").symlink_to(real / "trajectory.yaml")
    (real / "outside_link.yaml").symlink_to(tmp_path / "outside.yaml")
    linked = tmp_path / "linked"
    linked.symlink_to(real)  # the root itself named through a link
    return real, linked


@pytest.mark.parametrize("via_link", [False, True])
def test_each_name_in_the_root_resolves_as_realpath_does(tmp_path: Path, via_link: bool) -> None:
    real, linked = _tree(tmp_path)
    root = linked if via_link else real
    for name in ("trajectory.yaml", "inside_link.yaml", "sub", "missing.yaml"):
        assert confine(root / name, root, name) == Path(os.path.realpath(root / name))
    for name in ("outside_link.yaml", ".."):
        with pytest.raises(OutsideRoot):
            confine(Path(f"{root}/{name}"), root, name)
