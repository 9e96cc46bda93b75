"""No import cycle in the package, lazy or eager (issue 38, "Must show").

The import graph of ``src/fedtrees`` is read from the source with :mod:`ast`:
every ``import`` and ``from ... import`` statement counts, wherever it stands
(module level, inside a function, under ``if TYPE_CHECKING:``), relative
imports resolved, and ``from package import name`` pointing at the submodule
``package.name`` when there is one. The implicit import of a module's parent
packages is not an edge (every submodule would otherwise import its package
and every package its submodules). A cycle is a strongly connected component
of more than one module (or a module importing itself); each test names the
modules of every cycle it finds. The components come from the Tarjan of
``tests/test_imports.py``, whose graph counts the imports that run (no
``TYPE_CHECKING`` block); this one counts every import statement.

No package ``__init__`` is left out: the lazy names (``_HOMES``) load their
homes with :func:`importlib.import_module`, which is no import statement, and
their ``TYPE_CHECKING`` imports form no cycle today, so nothing needs an
exception.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

from tests.test_imports import _cycles

SRC = Path(__file__).resolve().parents[1] / "src"

Graph = Mapping[str, frozenset[str]]


# -- the graph ------------------------------------------------------------------------
def modules_under(root: Path) -> dict[str, Path]:
    """Every module below ``root`` (a folder holding top-level packages), by name."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _base(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    """The absolute module a ``from`` import reads from (relative ones resolved)."""
    if node.level == 0:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    anchor = package[: len(package) - (node.level - 1)]
    return ".".join([*anchor, node.module] if node.module else anchor)


def _known(name: str, modules: Mapping[str, Path]) -> str | None:
    """The longest prefix of the dotted ``name`` that is a module of ours."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        if prefix in modules:
            return prefix
    return None


def imports_of(module: str, modules: Mapping[str, Path]) -> frozenset[str]:
    """The modules of ours that ``module``'s import statements load (anywhere)."""
    path = modules[module]
    is_package = path.name == "__init__.py"
    found: set[str | None] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(_known(alias.name, modules) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _base(module, node, is_package)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in modules else _known(base, modules))
    return frozenset(m for m in found if m is not None)


def import_graph(root: Path) -> dict[str, frozenset[str]]:
    """The import graph of every module below ``root``."""
    modules = modules_under(root)
    return {m: imports_of(m, modules) for m in modules}


# -- its cycles ---------------------------------------------------------------------
def cycles(graph: Graph) -> list[list[str]]:
    """The cycles of ``graph``: its strongly connected components of two or more
    modules, or a module importing itself (Tarjan, :func:`tests.test_imports._cycles`).
    """
    return sorted(_cycles({m: set(targets) for m, targets in graph.items()}))


def describe(found: Iterable[list[str]]) -> str:
    """One line per cycle, naming its modules."""
    return "\n".join("import cycle: " + " <-> ".join(c) for c in found)


GRAPH = import_graph(SRC)
CYCLES = cycles(GRAPH)


def cycles_within(prefix: str) -> list[list[str]]:
    """The cycles with a module inside ``prefix`` (a package or module name)."""
    return [
        c for c in CYCLES if any(m == prefix or m.startswith(prefix + ".") for m in c)
    ]


# -- the tests of the tool --------------------------------------------------------------
def _write(root: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_graph_sees_lazy_type_checking_and_relative_imports(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "def f():\n    from pkg import b\n",
            "pkg/b.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from .c import X\n"
            ),
            "pkg/c.py": "from . import d\n",
            "pkg/d.py": "import pkg.sub.e\n",
            "pkg/sub/__init__.py": "from .. import a\n",
            "pkg/sub/e.py": "from ..sub import f\nimport numpy\n",
            "pkg/sub/f.py": "from pkg import nothing_here\n",
        },
    )
    graph = import_graph(tmp_path)
    assert graph == {
        "pkg": frozenset(),
        "pkg.a": {"pkg.b"},
        "pkg.b": {"pkg.c"},
        "pkg.c": {"pkg.d"},
        "pkg.d": {"pkg.sub.e"},
        "pkg.sub": {"pkg.a"},
        "pkg.sub.e": {"pkg.sub.f"},
        "pkg.sub.f": {"pkg"},
    }
    assert cycles(graph) == []


def test_cycles_are_found_and_named(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg.a import A\n",
            "pkg/a.py": "from pkg import b\nA = 1\n",
            "pkg/b.py": "def f():\n    from pkg.a import A\n",
            "pkg/c.py": "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from pkg.d import D\n",
            "pkg/d.py": "from pkg.c import C\n",
            "pkg/e.py": "from pkg import e\n",
            "pkg/f.py": "from pkg.a import A\n",
        },
    )
    found = cycles(import_graph(tmp_path))
    assert sorted(found) == [["pkg.a", "pkg.b"], ["pkg.c", "pkg.d"], ["pkg.e"]]
    assert "import cycle: pkg.a <-> pkg.b" in describe(found)


def test_the_graph_covers_the_package() -> None:
    assert "fedtrees.algorithms.fedforest._state" in GRAPH
    assert "fedtrees.federation" in GRAPH["fedtrees.algorithms.fedforest._state"]
    assert len(GRAPH) > 100


# -- the package -----------------------------------------------------------------------
def test_no_cycle_in_fedforest() -> None:
    found = cycles_within("fedtrees.algorithms.fedforest")
    assert not found, describe(found)


def test_no_import_cycle() -> None:
    assert not CYCLES, describe(CYCLES)
