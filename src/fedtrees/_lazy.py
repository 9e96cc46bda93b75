"""Names that load on first use (PEP 562): one helper for every package.

A package lists each public name's home module; ``import`` of the package then
loads none of them, and the first attribute access imports the home module and
caches the value in the package (later lookups are plain attribute reads).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str, homes: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Return the ``__getattr__`` and ``__dir__`` of ``package`` for ``homes``.

    ``homes`` maps a public name to the module defining it; a name mapped to
    its own full module name (``"fedtrees.algorithms.toy"`` for ``"toy"``) is
    that submodule.

    Examples
    --------
    >>> get, names = lazy_names("fedtrees", {"Tree": "fedtrees.tree"})
    >>> get("Tree").__name__, "Tree" in names()
    ('Tree', True)
    """

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = import_module(home)
        value = module if home.rpartition(".")[2] == name else getattr(module, name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *homes})

    return __getattr__, __dir__
