"""Docs kept honest: every command has help and a row in README's CLI reference."""

from pathlib import Path

import click
import pytest

from ledger.cli import main

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def _commands(group: click.Group, prefix: str = "") -> list[tuple[str, click.Command]]:
    out = []
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        out.append((f"{prefix}{name}", cmd))
        if isinstance(cmd, click.Group):
            out.extend(_commands(cmd, f"{prefix}{name} "))
    return out


@pytest.mark.parametrize("name,cmd", _commands(main), ids=lambda v: v if isinstance(v, str) else "")
def test_every_command_has_help(name: str, cmd: click.Command) -> None:
    assert (cmd.help or "").strip(), f"vledger {name} has no help text"


@pytest.mark.parametrize("name", [n for n, _ in _commands(main) if " " not in n])
def test_every_top_level_command_is_in_the_readme(name: str) -> None:
    assert f"`vledger {name}" in README, f"README's CLI reference lacks vledger {name}"


def test_readme_keeps_the_two_setup_commands() -> None:
    assert "make demo" in README and "make test" in README
