"""Pack the Tolokaforge 0.33.1 compatibility corpora into one reproducible .tar.gz.

Usage: python tests/data/pack_compat.py SOURCE_DIR [OUT]

SOURCE_DIR holds ``{trace,grade}-corpus/`` and ``{trace,grade}-expected.json`` as the
reference wrote them; OUT defaults to ``tests/data/tolokaforge/compat-0.33.1.tar.gz``. The
archive is byte-for-byte the same for the same input: names sorted, every mtime, uid and gid
zero, modes 0644/0755, and a gzip header with no name and no time.
"""

from __future__ import annotations

import gzip
import io
import sys
import tarfile
from pathlib import Path

TOP = "tolokaforge-0.33.1"
MEMBERS = ("grade-corpus", "grade-expected.json", "trace-corpus", "trace-expected.json")


def _info(name: str, *, is_dir: bool, size: int = 0) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE if is_dir else tarfile.REGTYPE
    info.mode = 0o755 if is_dir else 0o644
    info.size = size
    info.mtime = info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def pack(source: Path, out: Path) -> None:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        tar.addfile(_info(TOP, is_dir=True))
        for top in MEMBERS:
            root = source / top
            paths = [root, *sorted(root.rglob("*"))] if root.is_dir() else [root]
            for path in paths:
                name = f"{TOP}/{path.relative_to(source).as_posix()}"
                if path.is_dir():
                    tar.addfile(_info(name, is_dir=True))
                else:
                    data = path.read_bytes()
                    tar.addfile(_info(name, is_dir=False, size=len(data)), io.BytesIO(data))
    with out.open("wb") as f, gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0,
                                             compresslevel=9) as gz:  # fmt: skip
        gz.write(raw.getvalue())


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    default = Path(__file__).resolve().parent / "tolokaforge" / "compat-0.33.1.tar.gz"
    pack(Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) == 3 else default)
