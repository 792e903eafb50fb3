"""The import layering of DESIGN.md § 3: schemas ← ledger, schemas ← replay ← reconcile."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# package -> packages it must never import
FORBIDDEN = {
    "schemas": {"ledger", "replay", "reconcile"},
    "replay": {"ledger", "reconcile"},
    "reconcile": {"ledger"},
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_respects_layering(package: str) -> None:
    offenders = {
        str(p.relative_to(ROOT)): sorted(_imports(p) & FORBIDDEN[package])
        for p in (ROOT / package).rglob("*.py")
    }
    offenders = {k: v for k, v in offenders.items() if v}
    assert offenders == {}, f"layering violated: {offenders}"


def test_layering_check_sees_a_violation(tmp_path: Path) -> None:
    bad = tmp_path / "m.py"
    bad.write_text("from ledger.log.store import Ledger\nimport replay.timeline\n")
    assert _imports(bad) == {"ledger", "replay"}
