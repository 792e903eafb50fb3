"""Block-style YAML for JSON-shaped documents, written without PyYAML's representer (pure).

PyYAML's representer was half of a curation's time (``benchmarks/curate.py``), and recorded
documents are JSON-shaped (``yaml_safe`` lets nothing else in). Every value must read back
equal through ``yaml.safe_load`` and ``ledger.sources.yaml_safe`` (pinned by a property test):

* a string is written plain only when it is a bare word no YAML 1.1 resolver claims
  (``[A-Za-z_][A-Za-z0-9_./-]*`` minus null/bool words); otherwise it is a double-quoted
  scalar — JSON's escaping, plus ``\\uXXXX`` for the characters YAML reads as line breaks
  (U+0085, U+2028, U+2029) or refuses as non-printable, which JSON leaves raw;
* a float is written as PyYAML writes it (``repr``, with ``.0`` before a bare exponent:
  YAML 1.1 reads ``1e-05`` as a string);
* anything outside that shape (a non-string key, a key too long for an implicit key)
  falls back to PyYAML's own dumper, so the emitter is never asked to be clever.
"""

from __future__ import annotations

import math
import re
from typing import Any

import orjson
import yaml

try:
    _Dumper: type = yaml.CSafeDumper
except AttributeError:  # pragma: no cover - libyaml missing
    _Dumper = yaml.SafeDumper

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_./\-]*\Z")
_RESOLVED_WORDS = frozenset({"null", "true", "false", "yes", "no", "on", "off", "y", "n"})
# JSON leaves these raw; YAML folds the first three as line breaks and refuses the rest
_YAML_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]")
_MAX_KEY = 1000  # YAML implicit keys are limited to 1024 characters


class _Fallback(Exception):
    """The document holds something the small emitter does not write."""


def _quoted(s: str) -> str:
    text = orjson.dumps(s).decode("utf-8")
    return _YAML_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _string(s: str) -> str:
    if _PLAIN.match(s) and s.lower() not in _RESOLVED_WORDS:
        return s
    return _quoted(s)


def _float(f: float) -> str:
    if not math.isfinite(f):
        raise _Fallback
    text = repr(f).lower()
    return text.replace("e", ".0e", 1) if "." not in text and "e" in text else text


def _scalar(v: Any) -> str:
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _float(v)
    if isinstance(v, str):
        return _string(v)
    raise _Fallback


def _key(k: Any) -> str:
    if not isinstance(k, str) or len(k) > _MAX_KEY:
        raise _Fallback
    return _string(k)


def _lines(v: Any, pad: str, out: list[str], lead: str) -> None:
    """Append ``v`` as block lines at indent ``pad``; ``lead`` prefixes its first line."""
    if isinstance(v, (dict, list)) and v:
        mapping = isinstance(v, dict)
        items = sorted(v.items()) if mapping else [(None, item) for item in v]
        for i, (k, item) in enumerate(items):
            head = (pad if i else lead) + (_key(k) + ":" if mapping else "-")
            _value(item, pad + "  ", out, head, in_mapping=mapping)
    else:
        out.append(lead + _empty_or_scalar(v))


def _empty_or_scalar(v: Any) -> str:
    if isinstance(v, dict):
        return "{}"
    if isinstance(v, list):
        return "[]"
    return _scalar(v)


def _value(v: Any, pad: str, out: list[str], head: str, *, in_mapping: bool) -> None:
    if isinstance(v, dict) and v and not in_mapping:  # "- key: value", the rest under it
        _lines(v, pad, out, head + " ")
    elif isinstance(v, (dict, list)) and v:
        out.append(head)
        # PyYAML's indentless sequence under a key
        inner = pad[:-2] if in_mapping and isinstance(v, list) else pad
        _lines(v, inner, out, inner)
    else:
        out.append(head + " " + _empty_or_scalar(v))


def emit_yaml(document: Any) -> bytes:
    """``document`` as block YAML (keys sorted), UTF-8; see the module docstring."""
    try:
        out: list[str] = []
        _lines(document, "", out, "")
        return ("\n".join(out) + "\n").encode("utf-8")
    except _Fallback:
        text = yaml.dump(
            document, Dumper=_Dumper, sort_keys=True, allow_unicode=True, default_flow_style=False
        )
        return text.encode("utf-8")
