"""The import layering (README § Layout): schemas ← ledger, schemas ← replay ← reconcile.

Also, over every module of :data:`PACKAGES`: no import cycle (function-level imports
count; ``if TYPE_CHECKING:`` blocks do not, they never run), no private name imported from
another module, no module over :data:`MAX_LINES` lines, and inside ``ledger`` the log never
imports the application (nor the application the CLI). Each check is shown to catch a
violation on a tiny synthetic tree.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("schemas", "ledger", "replay", "reconcile", "corpora")
MAX_LINES = 500

# package -> packages it must never import
FORBIDDEN = {
    "schemas": {"ledger", "replay", "reconcile"},
    "replay": {"ledger", "reconcile"},
    "reconcile": {"ledger"},
}
# sub-package -> module prefixes it must never import (function-level imports too)
FORBIDDEN_INSIDE = {
    "ledger.log": ("ledger.app", "ledger.sources", "ledger.analytics", "ledger.cli"),
    "ledger.app": ("ledger.cli",),
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
    bad.write_text("from ledger.log.store import Ledger\nimport replay.timeline.build\n")
    assert _imports(bad) == {"ledger", "replay"}


# --- the module graph ---------------------------------------------------------------------


def modules(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` under the packages."""
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node, except inside ``if TYPE_CHECKING:`` (typing-only imports never run)."""
    out, todo = [], [tree]
    while todo:
        node = todo.pop()
        out.append(node)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))
    return out


def imported(name: str, path: Path, known: dict[str, Path]) -> list[tuple[str, str]]:
    """``(module, imported name or "")`` for each import of the module ``name``: relative
    imports resolved, and ``from pkg import x`` read as the module ``pkg.x`` when it is one."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in _runtime_nodes(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            out.extend((a.name, "") for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            for a in node.names:
                sub = f"{base}.{a.name}"
                out.append((sub, "") if sub in known else (base, a.name))
    return out


def import_graph(known: dict[str, Path]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        targets = set()
        for module, _ in imported(name, path, known):
            while module and module not in known:  # `import a.b.c` of a non-module c
                module = module.rpartition(".")[0]
            if module and module != name:
                targets.add(module)
        graph[name] = targets
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as ``[a, b, …, a]``, or None (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(graph):
        if state.get(start):
            continue
        path, stack = [start], [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            elif not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph.get(nxt, ()))))
    return None


def private_imports(known: dict[str, Path]) -> list[str]:
    """``module: from other import _name`` for each private name taken from another module."""
    out = []
    for name, path in known.items():
        for module, attr in imported(name, path, known):
            private = attr.startswith("_") and not attr.startswith("__")
            if private and module in known and module != name:
                out.append(f"{name}: from {module} import {attr}")
    return out


def long_modules(known: dict[str, Path], limit: int = MAX_LINES) -> dict[str, int]:
    lengths = {name: len(path.read_text().splitlines()) for name, path in known.items()}
    return {name: n for name, n in lengths.items() if n > limit}


def forbidden_inside(known: dict[str, Path]) -> list[str]:
    graph = import_graph(known)
    return [
        f"{src} imports {dst}"
        for src, targets in sorted(graph.items())
        for dst in sorted(targets)
        for inner, banned in FORBIDDEN_INSIDE.items()
        if (src == inner or src.startswith(inner + ".")) and dst.startswith(banned)
    ]


KNOWN = modules(ROOT)


def test_no_import_cycle() -> None:
    assert find_cycle(import_graph(KNOWN)) is None


def test_no_private_name_imported_from_another_module() -> None:
    assert private_imports(KNOWN) == []


def test_no_module_over_the_line_limit() -> None:
    assert long_modules(KNOWN) == {}


def test_the_log_never_imports_the_application() -> None:
    assert forbidden_inside(KNOWN) == []


def test_the_log_and_engines_pass_every_check() -> None:
    """The log and the engines on their own (verify and reconcile_ray have other owners)."""
    others = ("ledger.log.verify", "ledger.engines.reconcile_ray")
    mine = {n: p for n, p in KNOWN.items() if n.startswith(("ledger.log", "ledger.engines"))}
    mine = {n: p for n, p in mine.items() if not n.startswith(others)}
    assert find_cycle(import_graph(mine)) is None
    assert private_imports(mine) == []
    assert long_modules(mine) == {}


# --- each check catches a violation -------------------------------------------------------


def _tree(root: Path, files: dict[str, str]) -> dict[str, Path]:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return modules(root, ("pkg",))


def test_the_cycle_check_sees_function_level_and_relative_imports(tmp_path: Path) -> None:
    known = _tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg import b\n",
            "pkg/b.py": "def f():\n    from .sub import c\n",
            "pkg/sub/__init__.py": "",
            "pkg/sub/c.py": "import pkg.a.x\n",  # a dotted import of a non-module name
            "pkg/d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\n",
        },
    )
    assert find_cycle(import_graph(known)) == ["pkg.a", "pkg.b", "pkg.sub.c", "pkg.a"]
    (tmp_path / "pkg/sub/c.py").write_text("")
    assert find_cycle(import_graph(known)) is None  # and pkg.d's typing-only import is none


def test_the_private_name_check_sees_one(tmp_path: Path) -> None:
    known = _tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "_x = 1\n__all__ = []\n",
            "pkg/b.py": "from pkg.a import __all__, _x\nfrom .a import _x as y\n",
        },
    )
    assert private_imports(known) == ["pkg.b: from pkg.a import _x"] * 2


def test_the_length_check_sees_a_long_module(tmp_path: Path) -> None:
    known = _tree(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": "x = 1\n" * 501})
    assert long_modules(known) == {"pkg.a": 501}
    assert long_modules(known, limit=501) == {}


def test_the_inner_layering_check_sees_the_log_importing_the_app(tmp_path: Path) -> None:
    files = {
        "ledger/__init__.py": "",
        "ledger/log/__init__.py": "",
        "ledger/app/__init__.py": "",
        "ledger/app/use.py": "from ledger.log import store\n",
        "ledger/log/store.py": "def f():\n    from ledger.app import use\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    known = modules(tmp_path, ("ledger",))
    assert forbidden_inside(known) == ["ledger.log.store imports ledger.app.use"]


def test_only_the_cli_imports_click_or_rich() -> None:
    """The API returns results and raises LedgerErrors; printing is the CLI's."""
    below_cli = [p for p in (ROOT / "ledger").rglob("*.py") if "cli" not in p.parts]
    offenders = {
        str(p.relative_to(ROOT)): sorted(_imports(p) & {"click", "rich"}) for p in below_cli
    }
    assert {k: v for k, v in offenders.items() if v} == {}
