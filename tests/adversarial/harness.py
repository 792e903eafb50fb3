"""Driving the installed CLI as an attacker's victim would: a subprocess per command.

Every helper here asserts the hostile-input contract for one command run: the exit code, the
file or key the message names, no traceback, and — for ``verify`` — every file of the
ledger byte-identical before and after.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[2]
_ENTRY = "import sys; from ledger.cli import main; sys.exit(main(prog_name='vledger'))"


def vledger(
    *args: str | Path,
    home: Path | None = None,
    timeout: float = 120,
    stdin: str | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``vledger ARGS`` from this checkout (PYTHONPATH=ROOT) in a fresh process."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if home is not None:
        env["HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-c", _ENTRY, *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
        input=stdin,
        cwd=cwd,
    )


def no_traceback(res: subprocess.CompletedProcess[str]) -> None:
    out = res.stdout + res.stderr
    assert "Traceback" not in out, out[-3000:]


def refused(res: subprocess.CompletedProcess[str], code: int, *named: str) -> None:
    """Exit ``code``, one ``Error:`` line naming each of ``named``, no traceback."""
    no_traceback(res)
    assert res.returncode == code, (res.returncode, res.stdout[-1000:], res.stderr[-1000:])
    for name in named:
        assert name in res.stderr, (name, res.stderr)


def file_hashes(directory: Path) -> dict[str, str]:
    """sha256 of every file under ``directory`` (the set of names included)."""
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def verify_unchanged(ledger: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """Run ``vledger verify`` and assert it changed no file of the ledger (nor added one)."""
    before = file_hashes(ledger)
    res = vledger("verify", "--ledger", ledger, *args)
    no_traceback(res)
    assert file_hashes(ledger) == before, "vledger verify changed the ledger's files"
    return res


def event_count(ledger: Path) -> int:
    con = duckdb.connect(str(ledger / "events.duckdb"), read_only=True)
    try:
        return int(con.execute("SELECT count(*) FROM events").fetchone()[0])
    finally:
        con.close()


def copy_ledger(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst
