"""The documents describe the product, not its making, and every citation can be followed.

Over README.md, docs/ and the comments and docstrings of the code packages:

* no build history: work items by number, or work periods ("in the previous ...");
  ``git log`` holds that;
* no path outside the repository: a clone has nothing beside it, so a citation names a
  specification and its section instead;
* every specification a comment or docstring cites is listed in docs/specs.md.

Each rule is also run on a planted tree in ``tmp_path``, so the scan is shown to fail.
"""

from __future__ import annotations

import ast
import functools
import io
import os
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CODE = ("ledger", "replay", "reconcile", "schemas", "benchmarks", "tests")

# Build history; pytest's "session-scoped" fixtures are the one use of the word allowed.
HISTORY = re.compile(
    r"\b(?:issues?|tickets?)\s*#?\d+|\bsessions?\b(?!-scoped)|\bsession's\b", re.IGNORECASE
)
# A path into a folder that only exists beside this checkout.
OUTSIDE = re.compile(r"\.\./shared/|\bshared/(?:reference|seeds|compat|corpora)\b|\bseeds/0\d\d_")
# Specification names comments cite; each must be in docs/specs.md when cited.
KNOWN_SPECS = (
    "GRADING.md", "FORMATS.md", "RUBRIC_MIGRATION.md", "TRACE_REPLAY.md", "OUTPUT_FORMAT.md",
    "verdict-core FORMAT.md", "GVC", "Graded Verdict Custody", "gvc-derivation-cases/v1",
    "verdict.run-receipt/v1", "C2SP tlog-checkpoint", "C2SP signed-note", "C2SP tlog-proof",
    "C2SP tlog-witness", "OpenTelemetry GenAI", "OTLP", "inspect_ai", "RFC 9162", "RFC 6962",
    "RFC 8032", "PEP 562", "PEP 639",
)  # fmt: skip
# Any citation of these shapes names a specification too.
SPEC_SHAPES = re.compile(r"\b(?:RFC|PEP) ?\d+|\bC2SP [a-z]+-[a-z-]*[a-z]|\b[A-Z][A-Z_]*\.md\b")
SKIP_DIRS = {".venv", "__pycache__", "data", "out"}


def _python_files(root: Path) -> list[Path]:
    return [
        p
        for pkg in CODE
        for p in sorted((root / pkg).rglob("*.py"))
        if not SKIP_DIRS.intersection(p.relative_to(root).parts[:-1])
    ]


def comment_text(source: str) -> list[tuple[int, str]]:
    """(line, text) of every comment and docstring of a module."""
    found = [
        (tok.start[0], tok.string)
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc and node.body:
                first = node.body[0].lineno
                found += [(first + i, line) for i, line in enumerate(doc.splitlines())]
    return found


@functools.cache
def prose(root: Path) -> list[tuple[str, str]]:
    """(where, text) of README.md, every docs/ page and every code comment or docstring."""
    docs = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    out = [
        (f"{p.relative_to(root)}:{n}", line)
        for p in docs
        if p.is_file()
        for n, line in enumerate(p.read_text().splitlines(), 1)
    ]
    for p in _python_files(root):
        out += [(f"{p.relative_to(root)}:{n}", t) for n, t in comment_text(p.read_text())]
    return out


def history(root: Path) -> list[str]:
    return [f"{w}: {t.strip()}" for w, t in prose(root) if HISTORY.search(t)]


def outside_paths(root: Path) -> list[str]:
    return [f"{w}: {t.strip()}" for w, t in prose(root) if OUTSIDE.search(t)]


def _markdown_names(root: Path) -> set[str]:
    names: set[str] = set()
    for _, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in (".venv", ".git")]
        names.update(f for f in files if f.endswith(".md"))
    return names


def unlisted_specs(root: Path) -> list[str]:
    """Specifications cited in comments, docstrings or docs that docs/specs.md does not list
    (a ``*.md`` that is a file of the repository is a document of ours, not a spec)."""
    listed = root / "docs" / "specs.md"
    specs = listed.read_text() if listed.is_file() else ""
    ours = _markdown_names(root)
    missing = []
    for where, text in prose(root):
        names = [s for s in KNOWN_SPECS if s in text] + SPEC_SHAPES.findall(text)
        missing += [f"{where}: {n}" for n in names if n not in specs and n not in ours]
    return missing


def test_no_build_history_in_docs_or_comments() -> None:
    assert history(ROOT) == []


def test_no_citation_of_a_path_outside_the_repository() -> None:
    assert outside_paths(ROOT) == []


def test_every_cited_specification_is_listed_in_docs_specs() -> None:
    assert unlisted_specs(ROOT) == []


def _planted(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "specs.md").write_text("# Specs\n\nGRADING.md, RFC 9162\n")
    (tmp_path / "README.md").write_text("# x\n\nAs measured in the previous session.\n")
    (tmp_path / "ledger").mkdir()
    (tmp_path / "ledger" / "m.py").write_text(
        '"""Reads ../shared/reference/merkle/vectors.json (RFC 9162 § 2.1)."""\n\n'
        "X = 'issue 17 in a string is code, not a comment'\n"
        "# issue 17: start-up\n"
        "def f():\n"
        '    """GRADING.md § Trace Checks, DESIGN.md § 4 and RFC 8785."""\n'
    )
    return tmp_path


def test_the_scan_finds_planted_history(tmp_path: Path) -> None:
    root = _planted(tmp_path)
    assert history(root) == [
        "README.md:3: As measured in the previous session.",
        "ledger/m.py:4: # issue 17: start-up",
    ]


def test_the_scan_finds_a_planted_outside_path(tmp_path: Path) -> None:
    root = _planted(tmp_path)
    assert [w for w in outside_paths(root)] == [
        "ledger/m.py:1: Reads ../shared/reference/merkle/vectors.json (RFC 9162 § 2.1)."
    ]


def test_the_scan_finds_a_planted_unlisted_spec(tmp_path: Path) -> None:
    root = _planted(tmp_path)
    assert unlisted_specs(root) == ["ledger/m.py:6: DESIGN.md", "ledger/m.py:6: RFC 8785"]
