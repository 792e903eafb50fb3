"""Every shell command in README.md and docs/readme/*.md runs (README § Docs that run).

The commands are extracted from the fenced blocks (tests/readme_blocks.py states the
markers) and run in order with bash, in a temporary copy of the checkout's documents and
corpora after ``vledger demo``, with ``$HOME`` inside the copy. Each must exit 0 unless its
block is marked ``expect-fail``. The code under test is this checkout (PYTHONPATH), and
``vledger`` is the one installed beside the running interpreter (``.venv/bin``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.readme_blocks import Command, blocks, doc_files, is_setup, readme_commands

# one xdist worker builds the demo copy the commands run in (make test: --dist loadgroup)
pytestmark = pytest.mark.xdist_group("readme")

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
TIMEOUT = 300


@dataclass(frozen=True)
class Ran:
    command: Command
    code: int
    output: str


def _env(home: Path) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if k not in ("VLEDGER_HOME", "VLEDGER_KEY", "COLUMNS")
    }
    env.update(
        HOME=str(home),
        PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
    )
    return env


def _checkout_copy(tmp: Path) -> Path:
    """The documents and corpora the commands name, copied; nothing outside the checkout,
    so a command that reaches beyond it fails here as it would in a fresh clone."""
    repo = tmp / "verdict-ledger"
    repo.mkdir()
    for name in ("README.md", "corpora", "docs"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copyfile)(src, repo / name)
    (tmp / "home").mkdir()
    _inspect_inputs(repo)
    return repo


def _inspect_inputs(repo: Path) -> None:
    """docs/readme/inspect.md reads your own inspect_ai logs (``logs/``) and constraints
    (``constraints.yaml``): the same real log the inspect tests write (mockllm, no network),
    and their constraints. inspect_ai is a dev dependency, so make test has it."""
    import yaml

    from tests.inspect_support import require_inspect, write_logs
    from tests.test_inspect_retrace import CONSTRAINTS

    require_inspect()
    write_logs(repo / "logs")
    (repo / "constraints.yaml").write_text(yaml.safe_dump(CONSTRAINTS))


def _bash(text: str, cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    proc = subprocess.run(
        ["bash", "-c", text], cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT
    )
    return proc.returncode, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], list[Ran]]:
    tmp = tmp_path_factory.mktemp("readme")
    repo = _checkout_copy(tmp)
    env = _env(tmp / "home")
    code, out = _bash("vledger demo", repo, env)
    assert code == 0, out
    results = []
    for cmd in readme_commands(ROOT):
        if cmd.run:
            results.append(Ran(cmd, *_bash(cmd.text, repo, env)))
    return repo, env, results


def test_every_readme_command_runs(ran: tuple[Path, dict[str, str], list[Ran]]) -> None:
    _, _, results = ran
    assert len(results) >= 20  # the blocks were found (the README and six docs hold them)
    failed = [
        f"{r.command.doc}: exit {r.code}{' (expected a failure)' if r.command.expect_fail else ''}"
        f"\n$ {r.command.text}\n{r.output[-1500:]}"
        for r in results
        if (r.code == 0) == r.command.expect_fail
    ]
    assert not failed, "\n\n".join(failed)


def test_only_setup_commands_are_not_run() -> None:
    """``no-run`` cannot hide a command that fails: only installs go unrun."""
    skipped = [c for c in readme_commands(ROOT) if not c.run]
    assert any(c.text.startswith("make demo") for c in skipped)
    assert all(is_setup(c.text) for c in skipped), skipped


def test_the_readme_verify_uses_the_key_an_earlier_command_made() -> None:
    """Point 1: the verify --pub of the README names a key some README command creates."""
    cmds = [c.text for c in readme_commands(ROOT) if c.doc.startswith("README.md")]
    made = {m for c in cmds for m in re.findall(r"keygen --out (\S+)", c)}
    used = {m.removesuffix(".pub") for c in cmds for m in re.findall(r"--pub (\S+)", c)}
    assert used and used <= made, (used, made)


def test_unknown_markers_are_refused(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("```sh expect-failure\nvledger log\n```\n")
    with pytest.raises(ValueError, match="unknown block marker"):
        blocks(tmp_path / "README.md", tmp_path)
    assert doc_files(tmp_path) == [tmp_path / "README.md"]


def test_readme_pass_at_k_query_gives_one_row_per_task_and_k(
    ran: tuple[Path, dict[str, str], list[Ran]],
) -> None:
    """Point 7: the README's pass@k query, over the README's own ledger, has one row per
    (task, k), and no blank where k exceeds the trials there are."""
    repo, env, _ = ran
    readme = (ROOT / "README.md").read_text()
    (query,) = re.findall(r'^vledger sql "(select [^"]*from pass_at_k[^"]*)"', readme, re.M)
    code, out = _bash(f'vledger sql "{query}" --format json 2>/dev/null', repo, env)
    assert code == 0, out
    rows = json.loads(out)
    keys = [(r["task_id"], r["k"]) for r in rows]
    assert rows and len(keys) == len(set(keys)), keys
    assert all(r["pass_at_k"] is not None for r in rows)
    # the notes corpus: 5 trials of the gated task, 12 of the policy task
    assert {t: max(k for tt, k in keys if tt == t) for t, _ in keys} == {
        "notes_add_note_duplicate_check_gated": 5,
        "notes_add_note_duplicate_check_policy": 12,
    } or all(r["k"] <= r["n"] for r in rows)
