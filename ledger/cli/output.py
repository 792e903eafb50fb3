"""The output rules of every ``vledger`` command, in one place (README.md § CLI reference):
results on stdout, the rest on stderr; one rounding rule (:func:`fmt_number`), one table
renderer (:func:`render_table`), one escaped ``Error:`` line (a message may quote a
stranger's bundle).
"""

from __future__ import annotations

import math
import os
import shutil
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import IO, Any

import click
import orjson

import ledger

escape_controls = ledger.escape_controls  # one escaping rule for the API's messages and the CLI

# Three decimals: enough to tell κ 0.999 from 1, and what reconcile has always printed.
DECIMALS = 3
# Below this a column is not worth cutting further: the table then overflows the terminal
# rather than showing cells that read as nothing.
MIN_CELL = 8
ELLIPSIS = "…"


def is_terminal(stream: IO[str] | None = None) -> bool:
    """Whether ``stream`` (default stdout) is an interactive terminal."""
    stream = sys.stdout if stream is None else stream
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or fake stream is not a terminal
        return False


def terminal_width(stream: IO[str] | None = None) -> int | None:
    """The terminal's width in columns, or None when ``stream`` is not a terminal (no limit).

    ``$COLUMNS`` wins when set, as for every other terminal program.
    """
    if not is_terminal(stream):
        return None
    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    return shutil.get_terminal_size((100, 24)).columns


def fmt_number(value: Any) -> str:
    """A number as text: integers as they are, floats rounded to three decimals.

    ``0.7999999999999999`` reads ``0.800``; ``1`` stays ``1``; ``True`` stays ``True`` (a
    boolean is not a number here); NaN and infinities are spelled out.
    """
    if not isinstance(value, float) or not math.isfinite(value):  # bool and int included
        return str(value)
    text = f"{value:.{DECIMALS}f}"
    return "0.000" if text == "-0.000" else text  # a rounded -0.0001 is not negative


def cut(text: str, width: int) -> str:
    """``text`` shortened to ``width`` characters, the cut marked with an ellipsis."""
    return text if len(text) <= width else text[: max(width - 1, 0)] + ELLIPSIS


def fit_widths(natural: Sequence[int], limit: int | None, gap: int = 2) -> list[int]:
    """Column widths that fit ``limit`` columns (with ``gap`` between columns).

    ``limit`` None (not a terminal): every column at its natural width. Otherwise the
    widest columns are narrowed first, never below :data:`MIN_CELL` (or their natural
    width, when that is smaller), so short columns such as counts are never cut.
    """
    widths = list(natural)
    if limit is None:
        return widths
    budget = limit - gap * max(len(widths) - 1, 0)
    while sum(widths) > budget:
        widest = max(range(len(widths)), key=lambda i: widths[i])
        floor = min(MIN_CELL, natural[widest])
        if widths[widest] <= floor:
            break  # nothing left to narrow: overflow rather than destroy the cells
        widths[widest] -= 1
    return widths


def render_table(
    headers: Sequence[str], rows: Iterable[Sequence[Any]], width: int | None = None
) -> str:
    """Rows as aligned text columns; cells are text (numbers through :func:`fmt_number`).

    ``width`` is the terminal width (None: not a terminal, nothing is cut). Numbers align
    right, text left. Line breaks inside a cell are shown as ``\\n`` so a row stays a line.
    """
    body = [[_cell_text(v) for v in r] for r in rows]
    numeric = [
        bool(body) and all(_is_number(r[i]) or r[i] == "" for r in body)
        for i in range(len(headers))
    ]
    natural = [max([len(h)] + [len(r[i]) for r in body]) for i, h in enumerate(headers)]
    widths = fit_widths(natural, width)

    def line(cells: Sequence[str]) -> str:
        parts = [
            cut(c, w).rjust(w) if num else cut(c, w).ljust(w)
            for c, w, num in zip(cells, widths, numeric, strict=True)
        ]
        return "  ".join(parts).rstrip()

    out = [line(list(headers)), "  ".join("-" * w for w in widths)]
    out.extend(line(r) for r in body)
    return "\n".join(out) + "\n"


def _cell_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return fmt_number(value)
    return str(value).replace("\r", "\\r").replace("\n", "\\n")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 trial`` / ``2 trials``."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


def result(text: str = "", nl: bool = True) -> None:
    """A result line, on stdout."""
    click.echo(text, nl=nl)


def write_lines(lines: Iterable[str], out: IO[str] | None = None) -> None:
    """Result text on stdout, a batch of lines (each ending in its newline) at a time: a
    report with a row per trial is never held whole."""
    out = sys.stdout if out is None else out
    batch: list[str] = []
    for line in lines:
        batch.append(line)
        if len(batch) >= 4096:
            out.write("".join(batch))
            batch.clear()
    out.write("".join(batch))


def error(message: object) -> None:
    """The ``Error: …`` line of a failed command (the caller exits with the code). A message
    that lists problems one per line keeps them: each line is escaped on its own and every
    line after the first is indented, so no text inside one can start a line of its own."""
    head, *rest = str(message).split("\n")
    lines = [f"Error: {escape_controls(head)}", *(f"  {escape_controls(r)}" for r in rest)]
    click.echo("\n".join(lines), err=True)


def json_text(value: Any) -> str:
    """The one JSON encoding of a result document (indented, non-string keys allowed)."""
    return _indented(value) + "\n"


def write_json_document(doc: Mapping[str, Any], out: IO[str] | None = None) -> None:
    """:func:`json_text` of ``doc``, the same bytes, written a piece at a time; a value that
    is a sequence view rather than a list (retrace's rows parked on disk, reconcile's rows
    per trial), at any depth, is written item by item, so a corpus-sized document never
    sits in memory whole."""
    out = sys.stdout if out is None else out
    for piece in _indented_pieces(doc):
        out.write(piece)
    out.write("\n")


def _indented_pieces(value: Any) -> Iterator[str]:
    """:func:`_indented` of ``value`` in pieces that join to it, each view item by item."""
    try:  # most documents hold no view: encoded at once, not walked first
        yield orjson.dumps(value, option=_INDENT).decode()
        return
    except orjson.JSONEncodeError:
        pass
    if not ledger.has_view(value):
        yield _indented(value)
        return
    skeleton = ledger.Skeleton(value)
    text = _indented(skeleton.value)
    at = 0
    for m in skeleton.pattern.finditer(text):
        yield text[at : m.start()]
        at = m.end()
        line = text[text.rfind("\n", 0, m.start()) + 1 : m.start()]
        pad = "\n" + " " * (len(line) - len(line.lstrip(" ")))
        view = skeleton.views[int(m.group(1))]
        if not len(view):
            yield "[]"
            continue
        for i, item in enumerate(view):
            yield ("[" if i == 0 else ",") + pad + "  "
            for piece in _indented_pieces(item):
                yield piece.replace("\n", pad + "  ")
        yield pad + "]"
    yield text[at:]


_INDENT = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS


def _indented(value: Any) -> str:
    return orjson.dumps(value, option=_INDENT, default=str).decode()


def write_json_rows(rows: Iterable[Any], nl: bool, out: IO[str] | None = None) -> None:
    """A list of results: one JSON array, or (``nl``) one compact JSON object per line.

    Rows are written as they come, so a long list never sits in memory, and a reader that
    stops early (``| head``) ends the output quietly (see :func:`quiet_broken_pipe`).
    """
    out = sys.stdout if out is None else out
    if nl:
        for row in rows:
            out.write(orjson.dumps(row, default=str).decode() + "\n")
        return
    first = True
    out.write("[")
    for row in rows:
        out.write("\n" if first else ",\n")
        out.write(orjson.dumps(row, default=str).decode())
        first = False
    out.write("\n]\n" if not first else "]\n")
