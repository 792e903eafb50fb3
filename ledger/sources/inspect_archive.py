"""A ``.eval`` archive read member by member, bounded (docs/readme/inspect.md § "Bounds").

An inspect_ai ``.eval`` log is a zip: ``header.json`` (or, for a log still being
written, ``_journal/start.json``) and one ``samples/<id>_epoch_<n>.json`` per sample.
Reading it through inspect's ``read_eval_log`` holds the whole log; here each member is
read on its own, so a log costs the memory of its largest sample. Every member is
bounded like any other input file: its declared size is checked before reading and its
decompressed bytes are counted as they stream, so a member that inflates past the byte
limit (a zip bomb) is refused by name before it reaches memory. Member names are only
compared, never used as paths.
"""

from __future__ import annotations

import os
import stat
import struct
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ledger.sources.files import InputError, InputTooLarge, confine

HEADER = "header.json"
START = "_journal/start.json"
SAMPLES = "samples/"
_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")  # APPNOTE.TXT § 4.3.7
_LOCAL_SIGNATURE = b"PK\x03\x04"
_STORED, _DEFLATED, _ZSTD = 0, 8, 93
_CHUNK = 1 << 16


class ArchiveError(InputError):
    """A ``.eval`` archive, or one of its members, that cannot be read within bounds."""


def member_label(label: str, name: str) -> str:
    return f"{label}!{name}"  # where: the archive as named, then the member inside it


class Archive:
    """One open ``.eval`` file: its member list, and bounded reads of single members."""

    def __init__(
        self, path: Path, label: str, max_bytes: int, max_members: int, root: Path
    ) -> None:
        self.label = label
        self.max_bytes = max_bytes
        real = confine(path, root, label, "the log directory", allow=())
        flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(real, flags)
        except OSError as exc:
            raise InputError(label, f"cannot read: {exc.strerror or exc}") from None
        self.file: IO[bytes] = os.fdopen(fd, "rb")
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise InputError(label, "is not a regular file")
            zf = zipfile.ZipFile(self.file)
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            self.file.close()
            raise ArchiveError(label, f"not a .eval archive (a zip file): {exc}") from None
        except InputError:
            self.file.close()
            raise
        infos = zf.infolist()
        if len(infos) > max_members:
            self.file.close()
            raise ArchiveError(
                label, f"holds {len(infos)} members, over the {max_members}-member limit"
            )
        self.members = {i.filename: i for i in infos}

    def close(self) -> None:
        self.file.close()

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def sample_names(self) -> list[str]:
        """The sample members, in the order the archive holds them."""
        return [n for n in self.members if n.startswith(SAMPLES) and n.endswith(".json")]

    def read(self, name: str) -> bytes:
        """One member's bytes, decompressed within the byte limit or refused naming it."""
        info = self.members[name]
        where = member_label(self.label, name)
        if info.file_size > self.max_bytes:
            raise InputTooLarge(where, info.file_size, self.max_bytes)
        if info.flag_bits & 1:
            raise ArchiveError(where, "is encrypted; inspect_ai never writes that")
        raw = _Slice(self.file, _data_offset(self.file, info, where), info.compress_size)
        if info.compress_type == _STORED:
            chunks = iter(lambda: raw.read(_CHUNK), b"")
        elif info.compress_type == _DEFLATED:
            chunks = _inflate(raw)
        elif info.compress_type == _ZSTD:
            chunks = _unzstd(raw, where)
        else:
            raise ArchiveError(
                where, f"compression method {info.compress_type} is not one inspect_ai writes"
            )
        out: list[bytes] = []
        total = 0
        try:
            for chunk in chunks:
                total += len(chunk)
                if total > self.max_bytes:  # more than it declared: never read on
                    raise InputTooLarge(where, total, self.max_bytes)
                out.append(chunk)
        except InputError:
            raise
        except (zlib.error, ValueError, OSError) as exc:
            raise ArchiveError(where, f"cannot decompress: {exc}") from None
        except Exception as exc:  # zstandard.ZstdError, imported lazily
            if type(exc).__name__ != "ZstdError":
                raise
            raise ArchiveError(where, f"cannot decompress: {exc}") from None
        return b"".join(out)


def _data_offset(file: IO[bytes], info: zipfile.ZipInfo, where: str) -> int:
    file.seek(info.header_offset)
    head = file.read(_LOCAL_HEADER.size)
    if len(head) != _LOCAL_HEADER.size or head[:4] != _LOCAL_SIGNATURE:
        raise ArchiveError(where, "its local header is missing or damaged")
    fields = _LOCAL_HEADER.unpack(head)
    return info.header_offset + _LOCAL_HEADER.size + fields[9] + fields[10]


class _Slice:
    """``size`` bytes of ``file`` from ``offset``, read in order."""

    def __init__(self, file: IO[bytes], offset: int, size: int) -> None:
        self.file, self.pos, self.left = file, offset, size

    def read(self, n: int = -1) -> bytes:
        n = self.left if n is None or n < 0 else min(n, self.left)
        if n <= 0:
            return b""
        self.file.seek(self.pos)
        data = self.file.read(n)
        self.pos += len(data)
        self.left -= len(data)
        return data


def _inflate(raw: _Slice) -> Iterator[bytes]:
    """Raw deflate, at most ``_CHUNK`` bytes of output per step, however well it packs."""
    d = zlib.decompressobj(-zlib.MAX_WBITS)
    for data in iter(lambda: raw.read(_CHUNK), b""):
        while data:
            yield d.decompress(data, _CHUNK)
            data = d.unconsumed_tail
    yield d.flush()


def _unzstd(raw: _Slice, where: str) -> Iterator[bytes]:
    try:
        import zstandard
    except ImportError:  # inspect_ai depends on it; without it nothing reads these logs
        raise ArchiveError(
            where, "is zstd-compressed and the zstandard module is missing"
        ) from None
    reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
    yield from iter(lambda: reader.read(_CHUNK), b"")


def parse_member(data: bytes, where: str) -> Any:
    """A member's JSON (inspect writes NaN and Infinity for unmeasured metrics, so the
    standard parser's reading, which keeps them, not the strict one)."""
    import json

    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise ArchiveError(where, f"not valid JSON: {exc}") from None
