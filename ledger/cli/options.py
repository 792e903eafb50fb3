"""Option bundles defined once, so each flag means the same on every command."""

from __future__ import annotations

import os
import sys
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
import orjson

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_LEDGER = ".vledger"


def default_ledger_path() -> Path:
    return Path(os.environ.get("VLEDGER_HOME") or DEFAULT_LEDGER)


def ledger_option(fn: F) -> F:
    """``--ledger DIR`` (default ``$VLEDGER_HOME`` or ``./.vledger``)."""
    return click.option(
        "--ledger",
        "ledger_dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Ledger directory (default: $VLEDGER_HOME or ./.vledger).",
    )(fn)


def resolve_ledger(ledger_dir: Path | None) -> Path:
    return ledger_dir if ledger_dir is not None else default_ledger_path()


def json_option(fn: F) -> F:
    """``--json``: machine-readable output on stdout, nothing else."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")(fn)


def emit_json(value: Any) -> None:
    sys.stdout.write(
        orjson.dumps(
            value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS, default=str
        ).decode()
        + "\n"
    )


# Line and paragraph separators end a line on many terminals, like the controls do.
_LINE_BREAKING = frozenset("\u2028\u2029\x85")


def _visible(ch: str) -> str:
    if ch in _LINE_BREAKING or unicodedata.category(ch) in ("Cc", "Cf"):
        code = ord(ch)
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    return ch


def escape_controls(text: str) -> str:
    """``text`` with every control, format (bidi override, zero-width) and line-breaking
    character written as a ``\\xNN`` / ``\\uNNNN`` escape, so one record prints as one
    line and looks like what it is. For human-readable output only (``--json`` is exact)."""
    if text.isprintable():  # the common case: nothing to escape (tabs are not printable)
        return text
    return "".join(_visible(ch) for ch in text)
