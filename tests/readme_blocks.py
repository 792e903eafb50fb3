"""The shell commands of README.md and docs/readme/*.md, as the README-commands test runs them.

The marker convention (README § What it does): a fenced block whose language is ``sh``,
``bash`` or ``shell`` is a script of commands; ``console`` holds ``$ ``-prompted commands
with their output. After the language, ``expect-fail`` means every command must exit
non-zero and ``no-run`` means the block is not run (only for set-up commands).

Set-up commands — ``make …`` and ``pip install …`` — are never run: they install, and the
test runs inside an installed ``make test``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

SHELL_LANGS = frozenset({"sh", "bash", "shell", "console"})
MARKERS = frozenset({"expect-fail", "no-run"})
_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```", re.M | re.S)


SETUP = ("make ", "pip install ")


def is_setup(command: str) -> bool:
    return command.lstrip().startswith(SETUP)


@dataclass(frozen=True)
class Command:
    doc: str  # file:line of the block
    text: str
    expect_fail: bool
    run: bool


def doc_files(root: Path) -> list[Path]:
    """README.md first, then docs/readme/*.md by name: the order the test runs them in."""
    return [root / "README.md", *sorted((root / "docs" / "readme").glob("*.md"))]


def blocks(path: Path, root: Path) -> list[tuple[str, str, frozenset[str], str]]:
    """(where, language, markers, body) of every fenced block in ``path``."""
    text = path.read_text(encoding="utf-8")
    out = []
    for m in _FENCE.finditer(text):
        words = m.group(1).split()
        lang = words[0] if words else ""
        unknown = set(words[1:]) - MARKERS
        if lang in SHELL_LANGS and unknown:
            raise ValueError(f"{path.name}: unknown block marker(s) {sorted(unknown)}")
        line = text.count("\n", 0, m.start()) + 1
        out.append((f"{path.relative_to(root)}:{line}", lang, frozenset(words[1:]), m.group(2)))
    return out


def script_commands(body: str) -> list[str]:
    """The commands of an sh block: comment lines dropped, backslash continuations joined."""
    commands, current = [], ""
    for raw in body.splitlines():
        line = raw.rstrip()
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        commands.append(current + line)
        current = ""
    if current:
        commands.append(current)
    return commands


def console_commands(body: str) -> list[str]:
    """The ``$ `` lines of a console block; indented lines right after one continue it."""
    commands: list[str] = []
    continuing = False
    for line in body.splitlines():
        if line.startswith("$ "):
            commands.append(line[2:])
            continuing = True
        elif continuing and line.startswith(" ") and line.strip():
            commands[-1] += "\n" + line
        else:
            continuing = False
    return commands


def readme_commands(root: Path) -> list[Command]:
    cmds = []
    for path in doc_files(root):
        for where, lang, markers, body in blocks(path, root):
            if lang not in SHELL_LANGS:
                continue
            split = console_commands if lang == "console" else script_commands
            for text in split(body):
                run = "no-run" not in markers and not is_setup(text)
                cmds.append(Command(where, text, "expect-fail" in markers, run))
    return cmds
