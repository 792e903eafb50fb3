"""Text shown to a person: one rule for making untrusted strings print as what they are."""

from __future__ import annotations

import unicodedata

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
