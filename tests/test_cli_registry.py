"""The lazy command registry (ledger/cli COMMANDS) is exactly what the modules register."""

from __future__ import annotations

import importlib
import subprocess
import sys

from ledger.cli import COMMANDS, main


def test_every_module_registers_exactly_the_commands_the_registry_names() -> None:
    for module in set(COMMANDS.values()):
        importlib.import_module(f"ledger.cli.{module}")
    assert set(main.commands) == set(COMMANDS)
    for name, command in main.commands.items():
        assert command.callback.__module__ == f"ledger.cli.{COMMANDS[name]}", name


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
