"""The faces: lazy package ``__init__`` modules, their name lists, the registry.

A face (a package ``__init__`` with a ``_HOMES`` table) names its public names
three times: ``__all__`` (what ``import *`` and the docs see), ``_HOMES`` (where
each name loads from on first use) and the ``if TYPE_CHECKING:`` imports (what
mypy and readers see). Here the three agree, name for name and object for
object. The registry of methods (:mod:`fedtrees._methods`) is the one list of
methods: the faces, the jobs, the job packages, the kernel modules and the
conformance suite all read it. And every method's package imports without
scikit-learn, except the few whose client handlers fit scikit-learn trees.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from importlib import import_module
from pathlib import Path
from typing import Any

import pytest

import fedtrees
from fedtrees import algorithms
from fedtrees._compiling import KERNEL_MODULES
from fedtrees._methods import METHODS, SHARED_KERNEL_MODULES, estimator_homes
from fedtrees.algorithms import JOB_PACKAGES, JOBS
from tests.conformance.registry import covers_every_estimator

SOURCE = Path(__file__).resolve().parents[1] / "src"


def _faces() -> list[str]:
    """Every package whose ``__init__`` is a lazy face (defines ``_HOMES``)."""
    found = []
    for path in sorted((SOURCE / "fedtrees").rglob("__init__.py")):
        if "\n_HOMES" in path.read_text(encoding="utf-8"):
            found.append(".".join(path.parent.relative_to(SOURCE).parts))
    return found


FACES = _faces()


def _is_type_checking(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.If)
        and isinstance(node.test, ast.Name)
        and node.test.id == "TYPE_CHECKING"
    )


def _type_checking_imports(package: str) -> dict[str, str]:
    """The names the face's ``if TYPE_CHECKING:`` block imports -> their module."""
    path = SOURCE.joinpath(*package.split("."), "__init__.py")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {}
    for block in (node for node in tree.body if _is_type_checking(node)):
        for node in ast.walk(block):
            if isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    names[alias.asname or alias.name] = node.module
    return names


def _eager_names(package: str) -> set[str]:
    """The names the face binds when it is imported (outside TYPE_CHECKING)."""
    path = SOURCE.joinpath(*package.split("."), "__init__.py")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bound: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                bound |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.Delete):
            bound -= {n.id for n in node.targets if isinstance(n, ast.Name)}
    return bound


def test_the_faces_are_found() -> None:
    assert {"fedtrees", "fedtrees.algorithms", "fedtrees.algorithms.dpforest"} <= set(
        FACES
    )


@pytest.mark.parametrize("package", FACES)
def test_a_faces_three_name_lists_agree(package: str) -> None:
    face = import_module(package)
    homes: dict[str, str] = face._HOMES
    typed = _type_checking_imports(package)
    lazy = set(face.__all__) - _eager_names(package)

    assert sorted(homes) == sorted(lazy), "_HOMES and __all__ (less eager names)"
    assert sorted(typed) == sorted(homes), "the TYPE_CHECKING imports and _HOMES"
    assert len(face.__all__) == len(set(face.__all__)), "a name twice in __all__"


@pytest.mark.parametrize("package", FACES)
def test_a_faces_lazy_names_are_what_the_type_checker_sees(package: str) -> None:
    face = import_module(package)
    typed = _type_checking_imports(package)
    for name, home in face._HOMES.items():
        seen = getattr(import_module(typed[name]), name, None)
        if seen is None:  # `from package import submodule`
            seen = import_module(f"{typed[name]}.{name}")
        assert getattr(face, name) is seen, (name, home)


def test_every_registered_estimator_is_public_at_the_top() -> None:
    public = {n for n in fedtrees.__all__ if n.endswith(("Classifier", "Regressor"))}
    assert set(estimator_homes()) == public
    for name, package in estimator_homes().items():
        assert getattr(fedtrees, name) is getattr(import_module(package), name)
        assert name in import_module(package).__all__, (name, package)


def test_every_method_package_is_on_the_algorithms_face() -> None:
    for method in METHODS:
        assert method.name in algorithms.__all__
        assert getattr(algorithms, method.name) is import_module(method.package)
        for name in method.exports:
            assert getattr(algorithms, name) is getattr(
                import_module(method.package), name
            )


def test_the_jobs_and_the_job_packages_are_the_registrys() -> None:
    jobs = {m.job.name: m for m in METHODS if m.job is not None}
    assert list(JOBS) == list(jobs)
    assert {job: (m.package,) for job, m in jobs.items()} == JOB_PACKAGES
    for method in jobs.values():
        assert set(method.job_fits) <= set(method.estimators)
        assert len(method.job_fits) in (0, 1, 2), method  # 2: a classifier, a regressor
    assert len({m.package for m in METHODS}) == len(METHODS)


def test_the_kernel_modules_are_the_registrys() -> None:
    own = [module for m in METHODS for module in m.kernels]
    assert SHARED_KERNEL_MODULES + tuple(own) == KERNEL_MODULES
    assert len(set(KERNEL_MODULES)) == len(KERNEL_MODULES)
    for method in METHODS:
        for module in method.kernels:
            assert module.startswith(method.package + "."), (method, module)


def test_the_conformance_suite_covers_the_registrys_estimators() -> None:
    assert covers_every_estimator() == set()


NEEDS_SKLEARN = {
    "local": "a site's one round fits a scikit-learn random forest",
    "synthetic": "a site's one round fits a scikit-learn CART tree",
}
"""The method packages whose client handlers load scikit-learn, and why."""


def _loaded_after_import(module: str) -> dict[str, Any]:
    code = (
        "import json, sys\n"
        f"import {module}\n"
        "print(json.dumps({'sklearn': 'sklearn' in sys.modules,"
        " 'methods': sorted(m for m in sys.modules"
        " if m.startswith('fedtrees.algorithms.') and m.count('.') == 2)}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("method", [m.name for m in METHODS])
def test_a_method_package_loads_scikit_learn_only_if_its_handlers_need_it(
    method: str,
) -> None:
    loaded = _loaded_after_import(f"fedtrees.algorithms.{method}")
    assert loaded["sklearn"] == (method in NEEDS_SKLEARN), NEEDS_SKLEARN.get(method)


def test_the_faces_of_fedtrees_and_its_algorithms_load_no_method() -> None:
    loaded = _loaded_after_import("fedtrees.algorithms")
    assert loaded == {"sklearn": False, "methods": []}
