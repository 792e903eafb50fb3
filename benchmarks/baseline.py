"""A baseline revision to measure beside this code in the same run (README § Performance).

``export(rev, into)`` writes ``rev``'s tree with ``git archive`` and builds its optional
native module in place (when the machine can), so the baseline runs what a user of that
revision ran; ``peak_rss`` and ``wall`` measure one fresh ``vledger`` process of either
tree. Every whole-process benchmark uses these, so both sides are started alike.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
import time
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENTRY = "import sys; from ledger.cli import main; sys.exit(main(prog_name='vledger'))"


def export(rev: str, into: Path) -> Path:
    """The tree of ``rev`` in ``into``, its C accelerator built there when a compiler is."""
    blob = subprocess.run(
        ["git", "archive", "--format=tar", rev], cwd=ROOT, capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        tar.extractall(into, filter="data")
    subprocess.run(
        [sys.executable, "-c", _BUILD], cwd=into, capture_output=True, check=False
    )  # optional, as in setup.py: without a compiler the tree runs pure
    return into


# Builds the tree's extension from its setup.py's Extension(...) call alone: running
# setup.py itself reads pyproject.toml, whose license string needs a newer setuptools
# than a project venv may have, and a failed build would leave the baseline pure-Python.
_BUILD = """
import ast
from setuptools import Distribution, Extension
call = next(n for n in ast.walk(ast.parse(open("setup.py").read()))
            if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "Extension")
name = ast.literal_eval(call.args[0])
kw = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
dist = Distribution({"ext_modules": [Extension(name, **kw)]})
cmd = dist.get_command_obj("build_ext")
cmd.inplace = True
cmd.ensure_finalized()
cmd.run()
"""


def _env(code: Path, extra: Mapping[str, str] | None) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(code), **(extra or {})}


def command(*args: str | Path) -> list[str]:
    return [sys.executable, "-c", ENTRY, *map(str, args)]


def wall(code: Path, args: list[str | Path], env: Mapping[str, str] | None = None) -> float:
    """Seconds of one whole ``vledger ARGS`` process run from tree ``code``."""
    t0 = time.perf_counter()
    done = subprocess.run(command(*args), env=_env(code, env), cwd=code, capture_output=True)
    elapsed = time.perf_counter() - t0
    check(done, code, args)
    return elapsed


# A fresh Python process's own peak RSS in bytes, as an expression for a probe's ``-c``:
# VmHWM is the peak of the process's own address space, while ru_maxrss (RUSAGE_SELF) may
# start from the forking parent's resident size and so report the parent's peak instead.
OWN_PEAK = "int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1]) * 1024"


def peak_rss(code: Path, args: list[str | Path], env: Mapping[str, str] | None = None) -> int:
    """Peak RSS in bytes of one fresh ``vledger ARGS`` process from tree ``code``: run in
    its own grandchild, so RUSAGE_CHILDREN holds that one process only (Linux: KiB)."""
    probe = (
        "import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], "
        "stdout=subprocess.DEVNULL, stderr=subprocess.PIPE); "
        "sys.stderr.buffer.write(r.stderr); "
        "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, *command(*args)],
        env=_env(code, env),
        cwd=code,
        capture_output=True,
        text=True,
    )
    code_rc, kib = done.stdout.split()
    if int(code_rc) not in (0, 1) or "Traceback" in done.stderr:
        raise SystemExit(f"vledger {args} under {code} failed: {done.stderr[-2000:]}")
    return int(kib) * 1024


def check(done: subprocess.CompletedProcess[bytes], code: Path, args: list[str | Path]) -> None:
    """A measured run that crashed measures nothing: stop (1 is an answer, e.g. disagreement)."""
    if done.returncode not in (0, 1) or b"Traceback" in done.stderr:
        raise SystemExit(f"vledger {args} under {code} failed: {done.stderr[-2000:].decode()}")
