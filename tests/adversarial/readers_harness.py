"""The readers' half of the hostile-input suite: inputs handed to the CLI, one subprocess each.

Every refusal is checked the same way (:func:`refused_unchanged`): the exit code, the file
(or key) named on stderr, no traceback, nothing of an outside target echoed, and the
ledger's files byte-identical (so its event count too). Each test ends with one
``vledger verify`` (:func:`verify_clean`): a subprocess costs seconds on the shared
machine, and a refusal that changed no byte cannot change what verify says.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.adversarial.harness import ROOT, event_count, file_hashes, no_traceback, vledger

SECRET = "TOP-SECRET-7f3a"  # the content of every file planted outside an input


def refused_unchanged(
    ledger: Path,
    *args: str | Path,
    code: int = 1,
    named: tuple[str, ...] = (),
    hidden: tuple[str, ...] = (SECRET,),
    timeout: float = 120,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``vledger ARGS`` against ``ledger`` and assert the whole refusal contract."""
    before, count = file_hashes(ledger), event_count(ledger)
    res = vledger(*args, timeout=timeout, stdin=stdin)
    no_traceback(res)
    assert res.returncode == code, (res.returncode, res.stdout[-1500:], res.stderr[-1500:])
    out = res.stdout + res.stderr
    for name in named:
        assert name in out, (name, out[-1500:])
    for secret in hidden:
        assert secret not in out, (secret, out[-1500:])
    assert event_count(ledger) == count
    assert file_hashes(ledger) == before, "a refused command changed the ledger"
    return res


def verify_clean(ledger: Path) -> None:
    before = file_hashes(ledger)
    res = vledger("verify", "--ledger", ledger)
    no_traceback(res)
    assert res.returncode == 0, res.stdout[-1500:] + res.stderr[-1500:]
    assert file_hashes(ledger) == before


def bundle_copy(dst: Path) -> Path:
    """A private copy of one shipped recorded bundle (the first of the met arm)."""
    met = ROOT / "corpora" / "notes_duplicate_check" / "met"
    src = sorted(p for p in met.iterdir() if (p / "trajectory.yaml").is_file())[0]
    shutil.copytree(src, dst)
    return dst


def run_copy(dst: Path) -> Path:
    shutil.copytree(ROOT / "corpora" / "verdict-core" / "demo-run", dst)
    return dst


def pack_copy(dst: Path) -> Path:
    shutil.copytree(ROOT / "corpora" / "packs" / "notes_duplicate_check_narrowed", dst)
    return dst
