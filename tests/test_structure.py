"""The size and shape guards of ``src/fedtrees/algorithms/`` (issue 38, "Must show").

Read from the source with :mod:`ast`:

- no module over 400 lines, unless its module docstring has a line starting
  with ``Size:`` that says why;
- no class with more than 12 methods of its own (``def``s in its body,
  properties included, dunders excluded);
- no ``getattr(x, name)`` whose name is *built* at run time (an f-string, a
  concatenation, a ``%`` or ``.format`` call): a lookup by a built name is a
  dispatch the reader cannot follow (``getattr(self, f"_plan_{phase}")``) and
  mypy cannot check. **Decision:** a name read from a declared table of field
  names (``for name in PACKED_FIELDS``, ``f.name for f in fields(cls)``) is
  allowed: it copies the fields of a wire format, the table names them all.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ALGORITHMS = Path(__file__).resolve().parents[1] / "src" / "fedtrees" / "algorithms"

MAX_LINES = 400
MAX_METHODS = 12


# -- the rules ----------------------------------------------------------------------------
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def too_long(path: Path) -> str | None:
    """Why ``path`` breaks the size rule, or None."""
    n = len(path.read_text(encoding="utf-8").splitlines())
    if n <= MAX_LINES:
        return None
    doc = ast.get_docstring(_tree(path)) or ""
    if any(line.strip().startswith("Size:") for line in doc.splitlines()):
        return None
    return f"{n} lines and no 'Size:' line in its docstring"


def methods_of(node: ast.ClassDef) -> list[str]:
    """The class's own methods (its body's ``def``s), dunders excluded."""
    return [
        item.name
        for item in node.body
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
        and not (item.name.startswith("__") and item.name.endswith("__"))
    ]


def big_classes(path: Path) -> Iterator[str]:
    """The classes of ``path`` with more than :data:`MAX_METHODS` methods."""
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ClassDef):
            n = len(methods_of(node))
            if n > MAX_METHODS:
                yield f"class {node.name} (line {node.lineno}) has {n} methods"


def built_getattrs(path: Path) -> Iterator[str]:
    """The ``getattr`` calls of ``path`` whose name is built at run time."""
    for node in ast.walk(_tree(path)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and isinstance(node.args[1], (ast.JoinedStr, ast.BinOp, ast.Call))
        ):
            yield f"getattr with a built name (line {node.lineno})"


def modules(root: Path) -> list[Path]:
    return sorted(root.rglob("*.py"))


def offenders(root: Path) -> dict[str, list[str]]:
    """Per module (relative to ``root``), every rule it breaks."""
    out: dict[str, list[str]] = {}
    for path in modules(root):
        found = [*big_classes(path), *built_getattrs(path)]
        long = too_long(path)
        if long is not None:
            found.insert(0, long)
        if found:
            out[path.relative_to(root).as_posix()] = found
    return out


def describe(found: dict[str, list[str]]) -> str:
    return "\n".join(f"{m}: {why}" for m, whys in found.items() for why in whys)


OFFENDERS = offenders(ALGORITHMS)


# -- the tests of the rules ---------------------------------------------------------------
def test_rules_catch_what_they_name(tmp_path: Path) -> None:
    body = "\n".join(f"    def m{i}(self): ...\n" for i in range(13))
    (tmp_path / "big.py").write_text(
        "class Big:\n" + body + "    def __len__(self): return 0\n"
        "class Small:\n" + "    @property\n    def p(self): ...\n",
        encoding="utf-8",
    )
    (tmp_path / "names.py").write_text(
        "x = getattr(o, 'a')\ny = getattr(o, f'do_{k}')\nz = getattr(o, n, None)\n"
        "w = getattr(o, 'd_' + n)\nv = getattr(o, '{}'.format(n))\n",
        encoding="utf-8",
    )
    (tmp_path / "long.py").write_text(
        '"""Long."""\n' + "x = 1\n" * 400, encoding="utf-8"
    )
    (tmp_path / "said.py").write_text(
        '"""Long.\n\nSize: one table, read as one.\n"""\n' + "x = 1\n" * 400,
        encoding="utf-8",
    )
    (tmp_path / "ok.py").write_text(
        '"""Short."""\n' + "x = 1\n" * 399, encoding="utf-8"
    )
    assert offenders(tmp_path) == {
        "big.py": ["class Big (line 1) has 13 methods"],
        "long.py": ["401 lines and no 'Size:' line in its docstring"],
        "names.py": [
            "getattr with a built name (line 2)",
            "getattr with a built name (line 4)",
            "getattr with a built name (line 5)",
        ],
    }


# -- the package ----------------------------------------------------------------------------
def test_no_module_breaks_a_rule() -> None:
    assert not OFFENDERS, describe(OFFENDERS)
