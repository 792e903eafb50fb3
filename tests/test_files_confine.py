"""``files.confine``: its shortcut for a plain file directly in the root gives what
resolving the whole path gives, and every other name still takes the full resolution;
``files.Directory`` reads each name as ``read_input`` does."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ledger.sources.files import Directory, InputError, OutsideRoot, confine, present, read_input


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


def _outcome(read) -> tuple[str, object]:  # noqa: ANN001 - a thunk
    try:
        return "bytes", read()
    except InputError as exc:
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize("via_link", [False, True])
def test_directory_reads_each_name_as_read_input_does(tmp_path: Path, via_link: bool) -> None:
    """``files.Directory`` (a bundle's files, its directory resolved once) gives, name for
    name, the bytes or the refusal (type and text) that ``read_input`` with the directory
    as root gives: plain files, links inside and out, a dangling link, a directory, a
    FIFO, a file over the limit, an absent name."""
    real, linked = _tree(tmp_path)
    (real / "big.yaml").write_bytes(b"x" * 100)
    (real / "dangling.yaml").symlink_to(tmp_path / "nowhere.yaml")
    os.mkfifo(real / "fifo.yaml")
    root = linked if via_link else real
    folder = Directory(root, "the bundle b")
    names = ("trajectory.yaml", "inside_link.yaml", "outside_link.yaml", "dangling.yaml", "sub",
             "fifo.yaml", "big.yaml", "missing.yaml", "..")  # fmt: skip
    for name in names:
        shown = f"b/{name}"
        got = _outcome(lambda n=name, s=shown: folder.read(n, max_bytes=50, shown=s))
        want = _outcome(
            lambda n=name, s=shown: read_input(
                root / n, max_bytes=50, name=s, root=root, what="the bundle b"
            )
        )
        assert got == want, name
        assert folder.present(name) == present(root / name), name
        # the plain read a bundle's key is made from: bytes only for a regular file directly
        # in the directory (no link, even one inside) within the limit; read_input's bytes
        plain = folder.read_plain(name, 50)
        regular = not (root / name).is_symlink() and (root / name).is_file()
        if plain is None:
            assert not regular or name == "big.yaml", name
        else:
            assert regular and want == ("bytes", plain[0]), name
            assert plain[1].st_ino == (root / name).stat().st_ino
    assert _outcome(lambda: folder.read("trajectory.yaml", max_bytes=50, shown="t")) == (
        "bytes", b"a: 1\n"
    )  # fmt: skip
    assert folder.present("dangling.yaml") and not folder.present("missing.yaml")
