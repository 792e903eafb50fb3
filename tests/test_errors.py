"""One exception root carrying its exit code: every exception class the product
defines derives from schemas.errors.LedgerError, no two share a name, and the codes are the
README's table."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import schemas.errors as codes
from ledger.errors import EventIdConflict, LedgerBusy, StreamSealed, StreamVersionConflict

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("schemas", "ledger", "replay", "reconcile", "corpora")


def _exception_classes(root: Path) -> dict[str, list[str]]:
    """Every public class whose base says it is an exception -> where it is defined (a
    private one is control flow inside its module: it never reaches a caller)."""
    found: dict[str, list[str]] = {}
    for pkg in PACKAGES:
        for path in (root / pkg).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ClassDef) and not node.name.startswith("_") and any(
                    re.search(r"(Error|Exception|Failure)$", ast.unparse(b)) for b in node.bases
                ):
                    found.setdefault(node.name, []).append(str(path.relative_to(root)))
    return found


def _module(path: str) -> str:
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def test_every_exception_class_derives_from_the_one_root() -> None:
    import importlib

    outside = []
    for name, where in _exception_classes(ROOT).items():
        for path in where:
            cls = getattr(importlib.import_module(_module(path)), name)
            if not issubclass(cls, codes.LedgerError):
                outside.append(f"{path}:{name}")
    assert outside == []


def test_no_two_exception_classes_share_a_name() -> None:
    assert {n: w for n, w in _exception_classes(ROOT).items() if len(w) > 1} == {}


def test_the_scan_sees_an_exception_outside_the_root(tmp_path: Path) -> None:
    (tmp_path / "ledger").mkdir()
    (tmp_path / "ledger" / "m.py").write_text("class Oops(ValueError):\n    pass\n")
    assert _exception_classes(tmp_path) == {"Oops": ["ledger/m.py"]}


def test_exit_codes_are_distinct_and_carried_by_the_classes() -> None:
    table = {k: v for k, v in vars(codes).items() if k.isupper() and isinstance(v, int)}
    assert len(set(table.values())) == len(table)
    assert LedgerBusy.exit_code == codes.BUSY
    assert {c.exit_code for c in (StreamVersionConflict, EventIdConflict, StreamSealed)} == {
        codes.CONFLICT
    }
    from ledger.app.reconcile_packs import ReconcileError

    assert ReconcileError.exit_code == codes.CANNOT_RUN != codes.BUSY


def test_the_readme_table_is_the_code_table() -> None:
    readme = (ROOT / "README.md").read_text()
    rows = dict(re.findall(r"^\| `(\d+)` \| `([A-Z_]+)` \|", readme, re.M))
    table = {k: v for k, v in vars(codes).items() if k.isupper() and isinstance(v, int)}
    assert {name: int(code) for code, name in rows.items()} == table
