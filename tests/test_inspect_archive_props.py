"""The archive reader's byte rule as a property: a member reads back exactly when its
bytes fit the limit and is refused by name otherwise, whatever its directory entry
declares and however well it compresses."""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.sources.files import InputTooLarge
from ledger.sources.inspect_archive import Archive

NAME = "samples/x_epoch_1.json"


def _declare(path: Path, size: int) -> None:
    """Rewrite the one member's uncompressed size in the central directory."""
    raw = bytearray(path.read_bytes())
    central = raw.rfind(b"PK\x01\x02")
    struct.pack_into("<I", raw, central + 24, size)
    path.write_bytes(bytes(raw))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=st.one_of(st.binary(max_size=3000), st.integers(0, 300_000).map(bytes)),
    limit=st.integers(0, 200_000),
    method=st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED]),
    lie=st.booleans(),
)
def test_a_member_reads_back_exactly_or_is_refused_by_name(
    tmp_path: Path, data: bytes, limit: int, method: int, lie: bool
) -> None:
    path = tmp_path / "a.eval"
    with zipfile.ZipFile(path, "w", compression=method) as zf:
        zf.writestr(NAME, data)
    if lie:
        _declare(path, min(len(data), limit))  # claims to fit
    with Archive(path, "a.eval", limit, 10, tmp_path) as arc:
        if len(data) <= limit:
            assert arc.read(NAME) == data
        else:
            with pytest.raises(InputTooLarge) as exc:
                arc.read(NAME)
            assert str(exc.value).startswith(f"a.eval!{NAME}: file is ")
