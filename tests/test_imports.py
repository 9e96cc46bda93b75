"""The import graph of the package: no cycles, no private reach, layers point down.

Every module under ``src/fedtrees`` is parsed (not imported), module-level and
function-level imports alike. Three rules:

- no cycle among modules, counting every import that runs (module-level and
  inside functions; ``if TYPE_CHECKING:`` blocks excluded);
- a private module (``fedtrees.<package>._<name>``) is imported only from inside
  ``fedtrees.<package>``; the shared helpers directly under ``fedtrees``
  (``fedtrees._typing``, ``fedtrees._validation``, ...) are open to all, and a
  kernel module (``fedtrees._compiling.KERNEL_MODULES``) to other kernel modules;
- imports point down the layers: cli -> experiments -> audit -> algorithms ->
  learners -> federation, privacy, stats, tree, datasets, which import nothing
  of the package but ``exceptions`` and the shared helpers; ``flwr`` is imported
  only under ``fedtrees.federation.flower``;
- what the install step imports to compile the kernels (the kernel modules and
  everything they import, with no package ``__init__`` but the root's) holds no
  package face and nothing outside the standard library and the build hook's
  declared dependencies (numpy and numba): the build environment has nothing
  else, and the step skips the packages' ``__init__`` modules.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

from fedtrees._compiling import KERNEL_MODULES

SOURCE: Final = Path(__file__).resolve().parents[1] / "src"
PACKAGE: Final = "fedtrees"

LAYERS: Final[dict[str, int]] = {
    "cli": 6,
    "experiments": 5,
    "audit": 4,
    "algorithms": 3,
    "learners": 2,
    "federation": 1,
    "privacy": 1,
    "stats": 1,
    "tree": 1,
    "datasets": 1,
}
"""Each subpackage's layer; a package imports only from lower layers."""

BOTTOM: Final = 1
"""Packages of this layer import none of each other either."""

FLOWER_HOME: Final = "fedtrees.federation.flower"


@dataclass(frozen=True)
class Import:
    """One import statement's target, as seen from its module."""

    source: str
    target: str
    line: int
    runtime: bool  # False under ``if TYPE_CHECKING:``

    def __str__(self) -> str:
        return f"{self.source}:{self.line} imports {self.target}"


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted((SOURCE / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(SOURCE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES: Final = _modules()


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST, runtime: bool) -> Iterator[tuple[ast.AST, bool]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child):
            for inner in child.body:
                yield inner, False
                yield from _walk(inner, False)
            for inner in child.orelse:
                yield inner, runtime
                yield from _walk(inner, runtime)
            continue
        yield child, runtime
        yield from _walk(child, runtime)


def _imports(module: str) -> list[Import]:
    """Every import in ``module`` (its targets: modules where they are modules)."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    found = []
    for node, runtime in _walk(tree, True):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [
                f"{node.module}.{alias.name}"
                if f"{node.module}.{alias.name}" in MODULES
                else node.module
                for alias in node.names
            ]
        else:
            continue
        line = getattr(node, "lineno", 0)
        found += [Import(module, name, line, runtime) for name in dict.fromkeys(names)]
    return found


IMPORTS: Final = [i for module in MODULES for i in _imports(module)]
INTERNAL: Final = [i for i in IMPORTS if i.target.split(".")[0] == PACKAGE]


def _package(module: str) -> str:
    """The package a module belongs to (a package belongs to itself)."""
    is_package = MODULES[module].name == "__init__.py"
    return module if is_package else module.rpartition(".")[0]


def _private_owner(target: str) -> str | None:
    """The package whose private module ``target`` is, if it is one."""
    parts = target.split(".")
    for i in range(2, len(parts)):
        if parts[i].startswith("_"):
            return ".".join(parts[:i])
    return None


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in edges.get(node, ()):
                out.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return out


def test_every_module_is_parsed() -> None:
    assert "fedtrees.tree._model" in MODULES
    assert any(i.target == "fedtrees.tree._model" for i in INTERNAL)


def test_no_import_cycle() -> None:
    edges: dict[str, set[str]] = {}
    for i in INTERNAL:
        if i.runtime and i.target in MODULES and i.target != i.source:
            edges.setdefault(i.source, set()).add(i.target)
    assert _cycles(edges) == []


def test_no_private_module_is_imported_across_packages() -> None:
    reaching = []
    for i in INTERNAL:
        owner = _private_owner(i.target)
        package = _package(i.source)
        across = owner and package != owner and not package.startswith(owner + ".")
        kernels = i.source in KERNEL_MODULES and i.target in KERNEL_MODULES
        if across and not kernels:
            reaching.append(str(i))
    assert reaching == []


def test_imports_point_down_the_layers() -> None:
    upward = []
    for i in INTERNAL:
        source, target = _layer(i.source), _layer(i.target)
        if source is None or target is None or source == target:
            continue
        rank = LAYERS[source]
        if LAYERS[target] >= rank or (rank == BOTTOM and target != source):
            upward.append(str(i))
    assert upward == []


def test_the_shared_helpers_import_no_package() -> None:
    helpers = [m for m in MODULES if m.count(".") == 1 and _package(m) == PACKAGE]
    reaching = [
        str(i) for i in INTERNAL if i.source in helpers and _layer(i.target) is not None
    ]
    assert reaching == []


def test_flower_is_imported_only_in_its_home() -> None:
    outside = [
        str(i)
        for i in IMPORTS
        if i.target.split(".")[0] == "flwr"
        and not (i.source == FLOWER_HOME or i.source.startswith(FLOWER_HOME + "."))
    ]
    assert outside == []


@pytest.mark.parametrize(
    ("target", "owner"),
    [
        ("fedtrees.stats._splits", "fedtrees.stats"),
        ("fedtrees.federation.flower._site", "fedtrees.federation.flower"),
        ("fedtrees._validation", None),
        ("fedtrees.stats", None),
    ],
)
def test_private_owner(target: str, owner: str | None) -> None:
    assert _private_owner(target) == owner


def test_a_cycle_is_found() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [
        ["a", "b", "c"]
    ]


def _build_hook_dependencies() -> set[str]:
    """The import names the build hook's environment holds (numpy, numba)."""
    config = tomllib.loads((SOURCE.parent / "pyproject.toml").read_text("utf-8"))
    hook = config["tool"]["hatch"]["build"]["targets"]["wheel"]["hooks"]["custom"]
    names = {
        re.split(r"[^A-Za-z0-9_.-]", d, maxsplit=1)[0] for d in hook["dependencies"]
    }
    return {name.lower().replace("-", "_") for name in names}


def _install_closure() -> list[Import]:
    """Every import that runs when the install step imports the kernel modules."""
    seen, todo, found = set(), [PACKAGE, *KERNEL_MODULES], []
    while todo:
        module = todo.pop()
        if module in seen or module not in MODULES:
            continue
        seen.add(module)
        imports = [i for i in _imports(module) if i.runtime]
        found += imports
        todo += [i.target for i in imports if i.target.split(".")[0] == PACKAGE]
    return found


def test_the_install_step_imports_no_face_and_only_the_build_dependencies() -> None:
    allowed = _build_hook_dependencies() | set(sys.stdlib_module_names)
    faces = [
        str(i)
        for i in _install_closure()
        if i.target != PACKAGE
        and i.target in MODULES
        and MODULES[i.target].name == "__init__.py"
    ]
    assert faces == []
    outside = [
        str(i)
        for i in _install_closure()
        if i.target.split(".")[0] not in {PACKAGE, *allowed}
    ]
    assert outside == []
    assert {"numpy", "numba"} <= _build_hook_dependencies()


def test_the_install_closure_reaches_every_kernel_module() -> None:
    sources = {i.source for i in _install_closure()}
    assert set(KERNEL_MODULES) <= sources
    assert "fedtrees._compiling" in sources
