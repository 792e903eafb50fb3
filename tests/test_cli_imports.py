"""The CLI is a shell over the public API: every ``ledger/cli/*.py`` module imports nothing
of the project but ``ledger`` (the names of ``ledger.__all__``) and its own ``ledger.cli``
helpers — function-level and ``TYPE_CHECKING`` imports included — and every ``ledger.X`` it
reads is a public name. Each check is shown to catch a violation on a synthetic module."""

from __future__ import annotations

import ast
from pathlib import Path

import ledger

ROOT = Path(__file__).resolve().parents[1]
CLI = ROOT / "ledger" / "cli"
PROJECT = ("ledger", "schemas", "replay", "reconcile", "corpora")


def _is_project(module: str) -> bool:
    return module.split(".")[0] in PROJECT


def _allowed(module: str) -> bool:
    return module == "ledger" or module == "ledger.cli" or module.startswith("ledger.cli.")


def forbidden_imports(source: str) -> list[str]:
    """Each import of a project module other than ``ledger`` and ``ledger.cli.*``, and each
    name taken ``from ledger`` that the API does not export."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names if _is_project(a.name) and not _allowed(a.name)]
        elif isinstance(node, ast.ImportFrom):
            module = "ledger.cli" if node.level else (node.module or "")
            if _is_project(module) and not _allowed(module):
                out.append(f"from {module} import {', '.join(a.name for a in node.names)}")
            elif module == "ledger":
                out += [f"from ledger import {a.name}" for a in node.names if a.name not in ledger.API]
    return out


def private_api_reads(source: str) -> list[str]:
    """Each ``ledger.X`` read where X is not an exported name (``ledger.cli`` aside)."""
    return sorted(
        f"ledger.{node.attr}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "ledger"
        and node.attr not in ledger.API
        and node.attr != "cli"
    )


def _cli_sources() -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(CLI.glob("*.py"))}


def test_the_cli_imports_only_the_public_api_and_its_own_helpers() -> None:
    sources = _cli_sources()
    assert len(sources) >= 10  # every command module is read
    found = {name: forbidden_imports(text) for name, text in sources.items()}
    assert {k: v for k, v in found.items() if v} == {}


def test_the_cli_reads_only_exported_names_of_ledger() -> None:
    found = {name: private_api_reads(text) for name, text in _cli_sources().items()}
    assert {k: v for k, v in found.items() if v} == {}


def test_the_checks_see_a_violation() -> None:
    bad = (
        "import ledger\nimport click\nfrom ledger.cli.output import error\n"
        "from ledger.app.retrace import RetraceError\nimport replay.grading.grade\n"
        "from ledger import _private\n"
        "def f():\n    from schemas.errors import FAILED\n    return ledger.app, ledger.retrace\n"
        "if False:\n    from ledger.log.store import Ledger\n"
    )
    assert forbidden_imports(bad) == [
        "from ledger.app.retrace import RetraceError",
        "replay.grading.grade",
        "from ledger import _private",
        "from schemas.errors import FAILED",
        "from ledger.log.store import Ledger",
    ]
    assert private_api_reads(bad) == ["ledger.app"]
