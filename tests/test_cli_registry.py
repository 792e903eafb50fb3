"""The lazy command registry (ledger/cli COMMANDS) is exactly what the modules register."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from ledger.cli import COMMANDS, main


def test_every_module_registers_exactly_the_commands_the_registry_names() -> None:
    for module in {entry.module for entry in COMMANDS.values()}:
        importlib.import_module(f"ledger.cli.{module}")
    assert set(main.commands) == set(COMMANDS)
    for name, command in main.commands.items():
        assert command.callback.__module__ == f"ledger.cli.{COMMANDS[name].module}", name


def test_running_one_command_does_not_import_the_others() -> None:
    code = (
        "import sys\n"
        "from ledger.cli import main\n"
        "try:\n    main(['init', '--help'])\nexcept SystemExit:\n    pass\n"
        "print('LOADED:' + ' '.join(m for m in ('ledger.cli.analytics', 'ledger.cli.curate', "
        "'ledger.cli.demo', 'ledger.sources.inspect_log') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines()[-1] == "LOADED:", out.stdout


def _first_sentence(help_text: str | None) -> str:
    paragraph = " ".join((help_text or "").split("\n\n")[0].split())
    head, dot, _ = paragraph.partition(". ")
    return head + dot.strip()


def test_each_listing_line_is_the_first_sentence_of_the_commands_own_help() -> None:
    """`vledger --help` lists commands from COMMANDS without importing them; the listing
    must still say what each command's own help says first."""
    for module in {entry.module for entry in COMMANDS.values()}:
        importlib.import_module(f"ledger.cli.{module}")
    assert {n: e.summary for n, e in COMMANDS.items()} == {
        n: _first_sentence(c.help) for n, c in main.commands.items()
    }


def test_help_imports_no_command_module_nor_the_heavy_libraries() -> None:
    code = (
        "import sys\n"
        "from ledger.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = ('pyarrow', 'duckdb', 'replay', 'reconcile', 'ledger.app', 'ledger.log')\n"
        "print('LOADED:' + ' '.join(sorted(m for m in sys.modules if m.startswith('ledger.cli.')"
        " and m not in ('ledger.cli.options', 'ledger.cli.output') or m.split('.')[0] in heavy[:4]"
        " or m.startswith(heavy[4:]))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "Commands:" in out.stdout and "retrace" in out.stdout
    assert out.stdout.splitlines()[-1] == "LOADED:", out.stdout.splitlines()[-1]


# What `vledger CMD --help` may load: the CLI shell and the light API namespace, never the
# engines, the store, the projections or the heavy libraries (start-up, benchmarks/startup.py).
HEAVY = ("pyarrow", "duckdb", "numpy", "replay", "reconcile")
HEAVY_LEDGER = (
    "ledger.app.",
    "ledger.log.",
    "ledger.analytics.",
    "ledger.sources.",
    "ledger.engines.",
)
LIGHT_APP = ("ledger.app.context", "ledger.app.result")  # no import of their own beyond stdlib


def loaded_by_help(name: str) -> list[str]:
    code = (
        "import sys\n"
        "from ledger.cli import main\n"
        f"try:\n    main([{name!r}, '--help'])\nexcept SystemExit:\n    pass\n"
        f"heavy = [m for m in sys.modules if m.split('.')[0] in {HEAVY!r} or "
        f"(m.startswith({HEAVY_LEDGER!r}) and m not in {LIGHT_APP!r})]\n"
        "print('LOADED:' + ' '.join(sorted(heavy)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "Usage:" in out.stdout, out.stdout
    return out.stdout.splitlines()[-1].removeprefix("LOADED:").split()


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_command_help_imports_no_engine_store_or_projection(name: str) -> None:
    assert loaded_by_help(name) == []
