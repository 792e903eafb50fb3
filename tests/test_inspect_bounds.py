"""A ``.eval`` archive is read within the same bounds as every other input.

The archives are real logs written by inspect_ai (tests/inspect_support.py) with members
added by ``zipfile``: a sample member past the byte limit that says so, one whose
central-directory size lies (a zip bomb), and one whose name climbs out of the archive.
"""

from __future__ import annotations

import shutil
import struct
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger.app.ingest import IngestError
from ledger.app.ingest import ingest_into as ingest
from ledger.log.store import Ledger, open_ledger
from ledger.sources.yaml_safe import YamlLimits
from tests.inspect_support import EPOCHS, SAMPLES, InspectLogs
from tests.inspect_support import inspect_logs as _session_logs

pytestmark = pytest.mark.xdist_group("inspect")
inspect_logs = _session_logs

LIMIT = 1 << 20  # 1 MiB: every member inspect wrote for the test task is far smaller
BOMB = 64 * LIMIT  # zeros, deflated to ~64 KiB


@pytest.fixture
def lg(tmp_path: Path) -> Iterator[Ledger]:
    with open_ledger(tmp_path / "ledger", create=True) as ledger:
        yield ledger


def _with_member(src: Path, dest: Path, name: str, data: bytes) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
    with zipfile.ZipFile(dest, "a", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(name, data)
    return dest


def _lie_about_size(path: Path, name: str, size: int) -> None:
    """Rewrite ``name``'s uncompressed size in the central directory and local header."""
    raw = bytearray(path.read_bytes())
    encoded = name.encode()
    central = raw.rfind(b"PK\x01\x02")  # the last central entry: the one appended
    assert raw[central + 46 : central + 46 + len(encoded)] == encoded
    struct.pack_into("<I", raw, central + 24, size)
    local = struct.unpack_from("<I", raw, central + 42)[0]
    struct.pack_into("<I", raw, local + 22, size)
    path.write_bytes(bytes(raw))


def _ingest(lg: Ledger, path: Path, **kw: object):  # noqa: ANN202
    return ingest(lg, [path], limits=YamlLimits(max_bytes=LIMIT), **kw)  # type: ignore[arg-type]


def test_a_member_declared_past_the_limit_is_refused_naming_it(
    lg: Ledger, inspect_logs: InspectLogs, tmp_path: Path
) -> None:
    log = _with_member(inspect_logs.eval_log, tmp_path / "big" / "a.eval",
                       "samples/big_epoch_1.json", b"0" * (LIMIT + 1))  # fmt: skip
    with pytest.raises(IngestError) as exc:
        _ingest(lg, log)
    assert "a.eval!samples/big_epoch_1.json" in str(exc.value)
    assert f"{LIMIT + 1} bytes, over the {LIMIT}-byte limit" in str(exc.value)
    assert lg.size() == 0


def test_a_member_that_inflates_past_what_it_declares_is_refused_while_streaming(
    lg: Ledger, inspect_logs: InspectLogs, tmp_path: Path
) -> None:
    name = "samples/bomb_epoch_1.json"
    log = _with_member(inspect_logs.eval_log, tmp_path / "bomb" / "a.eval", name, bytes(BOMB))
    _lie_about_size(log, name, 100)
    with zipfile.ZipFile(log) as zf:
        assert zf.getinfo(name).file_size == 100  # the archive claims a small member
        assert zf.getinfo(name).compress_size < LIMIT
    with pytest.raises(IngestError) as exc:
        _ingest(lg, log)
    assert f"a.eval!{name}" in str(exc.value) and f"{LIMIT}-byte limit" in str(exc.value)
    # with --skip-bad the log is recorded as skipped, naming the member
    report = _ingest(lg, log, skip_bad=True)
    (skip,) = report.skipped
    assert skip["reason"].startswith(f"{log}!{name}: file is ")


def test_a_member_name_is_never_a_path(
    lg: Ledger, inspect_logs: InspectLogs, tmp_path: Path
) -> None:
    (tmp_path / "escape.json").write_text("{}")  # what a path reading of the name would hit
    log = _with_member(inspect_logs.eval_log, tmp_path / "names" / "a.eval",
                       "samples/../../escape.json", b"not json")  # fmt: skip
    with pytest.raises(IngestError) as exc:
        _ingest(lg, log)
    # the member's own bytes were read (and refused as JSON), not the file beside the log
    assert "a.eval!samples/../../escape.json: not valid JSON" in str(exc.value)


def test_the_number_of_members_is_bounded(lg: Ledger, inspect_logs: InspectLogs) -> None:
    with zipfile.ZipFile(inspect_logs.eval_log) as zf:
        members = len(zf.infolist())
    with pytest.raises(IngestError) as exc:
        ingest(lg, [inspect_logs.eval_log], limits=YamlLimits(max_nodes=members - 1))
    assert f"holds {members} members, over the {members - 1}-member limit" in str(exc.value)
    assert ingest(lg, [inspect_logs.eval_log], limits=YamlLimits(max_nodes=members)).trials_new == (
        len(SAMPLES) * EPOCHS
    )


def test_a_log_linked_from_outside_the_directory_is_refused_unread(
    lg: Ledger, inspect_logs: InspectLogs, tmp_path: Path
) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "2026-01-01T00-00-00_outside.eval").symlink_to(inspect_logs.eval_log)
    with pytest.raises(IngestError) as exc:
        ingest(lg, [logs])
    assert "resolves outside the log directory" in str(exc.value)
    assert str(inspect_logs.eval_log) not in str(exc.value)  # the target is not named
    # named on the command line itself, the link is followed
    assert ingest(lg, [logs / "2026-01-01T00-00-00_outside.eval"]).trials_new == (
        len(SAMPLES) * EPOCHS
    )
