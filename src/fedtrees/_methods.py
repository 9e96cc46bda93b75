"""The registry of methods: one entry per method, every method list derived from it.

A method is named once, here: its package, its public estimators, its job (if
a deployment can run it by name), the shape of that job's result document and
its compiled kernel modules. From :data:`METHODS` come the lazy homes of the
faces ``fedtrees`` and ``fedtrees.algorithms``, the jobs
(``fedtrees.algorithms.JOBS``), the packages a client process loads for a job
(``fedtrees.algorithms.JOB_PACKAGES``), the kernel modules the install step
compiles (``fedtrees._compiling.KERNEL_MODULES``) and the estimators the
conformance suite must cover. Adding a method is adding one :class:`Method`.

Names are data here (strings): this module imports nothing but the standard
library, so the faces, the install step and the jobs read it without loading
any method.

**Decision:** the registry is a shared helper directly under ``fedtrees``,
not a module of ``fedtrees.algorithms``: the install step's
``fedtrees._compiling`` reads the kernel modules from it, and a shared helper
imports no package (``docs/design.md``, "Layers"); neither does the install
step load any package face but the root's.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final

__all__ = [
    "KERNEL_MODULES",
    "METHODS",
    "SHARED_KERNEL_MODULES",
    "Document",
    "JobEntry",
    "Method",
    "estimator_homes",
    "job_method",
]


class Document(enum.Enum):
    """What a job's result document holds beside the common part.

    Every fitting job's document holds the common part (the job, the
    estimator, the clients, the classes, the agreed columns, the params) and
    the communication; the member says which model and report sit between
    (``fedtrees.algorithms._jobs`` writes them; ``fedtrees.load`` reads them).
    """

    TOY = "toy"
    """The toy protocol's result (no estimator)."""
    FEDFOREST = "fedforest"
    """The trees and the feature importances."""
    LOCAL_ENSEMBLE = "local-ensemble"
    """The trees, the client of every tree and the clients' weights."""
    DPFOREST = "dpforest"
    """The trees, the client of every tree, the privacy spend and the ranges."""
    ICDTA = "icdta"
    """The tree, its bins, the kept trees, their scores and the rules."""
    FEDID3 = "federated-id3"
    """The tree, its bins, the privacy spend and the levels."""
    SYNTHETIC = "synthetic"
    """The tree, its bins, the synthetic rows' counts and the client trees."""
    FEDGA = "fedga"
    """The personal trees, their structures, the depth and the fitness history."""
    FEDGBDT = "fedgbdt"
    """The boosted trees, the base margin and the validation losses."""


@dataclass(frozen=True)
class JobEntry:
    """A method's job: what a deployment runs by name.

    Parameters
    ----------
    name : str
        The job's name (``run_job``, the Flower ServerApp's ``job``).
    document : Document
        The shape of its result document.
    estimators : tuple of str
        The estimators it fits (classifier, then regressor; ``params["task"]``
        picks one), where that is not all of its method's.
    run_settings : tuple of str
        Job parameters that go to ``fit_federation``, not to the estimator.
    """

    name: str
    document: Document
    estimators: tuple[str, ...] = ()
    run_settings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Method:
    """One federated method: where it lives and what the rest of fedtrees names.

    Parameters
    ----------
    package : str
        The method's module or package (``"fedtrees.algorithms.fedforest"``);
        importing it registers its payloads and client handlers. The face
        ``fedtrees.algorithms`` lists it by its last part.
    estimators : tuple of str
        Its public estimators, the classifier first; the faces ``fedtrees``
        and ``fedtrees.algorithms`` load them from ``package``.
    job : JobEntry or None
        Its job, if a deployment can run it by name.
    exports : tuple of str
        Other names ``fedtrees.algorithms`` lifts from ``package``.
    kernels : tuple of str
        Its modules that declare compiled kernels (``fedtrees._compiling``).
    """

    package: str
    estimators: tuple[str, ...] = ()
    job: JobEntry | None = None
    exports: tuple[str, ...] = ()
    kernels: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The package's own name, as the face ``fedtrees.algorithms`` lists it.

        Examples
        --------
        >>> job_method("fedforest").name
        'fedforest'
        """
        return self.package.rpartition(".")[2]

    @property
    def job_fits(self) -> tuple[str, ...]:
        """The estimators its job fits: the classifier, then the regressor if any.

        Examples
        --------
        >>> job_method("local-ensemble").job_fits
        ('LocalEnsembleClassifier', 'LocalEnsembleRegressor')
        """
        if self.job is not None and self.job.estimators:
            return self.job.estimators
        return self.estimators


METHODS: Final[tuple[Method, ...]] = (
    Method(
        "fedtrees.algorithms.fedforest",
        ("FedForestClassifier", "FedForestRegressor"),
        job=JobEntry("fedforest", Document.FEDFOREST),
        kernels=(
            "fedtrees.algorithms.fedforest._kernels",
            "fedtrees.algorithms.fedforest._rows_kernels",
        ),
    ),
    Method(
        "fedtrees.algorithms.local",
        (
            "LocalEnsembleClassifier",
            "LocalEnsembleRegressor",
            "LocalModelsClassifier",
            "LocalModelsRegressor",
        ),
        job=JobEntry(
            "local-ensemble",
            Document.LOCAL_ENSEMBLE,
            estimators=("LocalEnsembleClassifier", "LocalEnsembleRegressor"),
        ),
    ),
    Method(
        "fedtrees.algorithms.dpforest",
        ("DPForestClassifier",),
        job=JobEntry("dpforest", Document.DPFOREST),
    ),
    Method(
        "fedtrees.algorithms.icdta",
        ("ICDTAClassifier",),
        job=JobEntry("icdta", Document.ICDTA),
    ),
    Method(
        "fedtrees.algorithms.fedid3",
        ("FederatedID3Classifier",),
        job=JobEntry("federated-id3", Document.FEDID3),
    ),
    Method(
        "fedtrees.algorithms.synthetic",
        ("SyntheticDataClassifier",),
        job=JobEntry("synthetic", Document.SYNTHETIC),
    ),
    Method(
        "fedtrees.algorithms.fedga",
        ("FedGAClassifier", "FedGARegressor"),
        job=JobEntry("fedga", Document.FEDGA, run_settings=("join_at",)),
        kernels=("fedtrees.algorithms.fedga._kernels",),
    ),
    Method(
        "fedtrees.algorithms.fedgbdt",
        ("FedGBDTClassifier", "FedGBDTRegressor"),
        job=JobEntry("fedgbdt", Document.FEDGBDT),
        kernels=("fedtrees.algorithms.fedgbdt._route_kernel",),
    ),
    Method("fedtrees.algorithms.fedavg", ("FedAvgClassifier",)),
    Method(
        "fedtrees.algorithms.toy",
        job=JobEntry("toy", Document.TOY),
        exports=("ToyResult", "ToyStrategy", "run_toy"),
    ),
)
"""Every method, in the order the jobs and the kernel modules list them."""

SHARED_KERNEL_MODULES: Final = (
    "fedtrees.stats._quantile_kernel",
    "fedtrees.stats._mixture_kernel",
    "fedtrees.tree._kernels",
    "fedtrees.algorithms.histogram._client_kernels",
    "fedtrees.algorithms.histogram._server_kernels",
    "fedtrees.algorithms.histogram._pool_kernels",
    "fedtrees.algorithms.histogram._check_kernels",
)
"""The kernel modules no one method owns: statistics, trees, the histogram engine."""

KERNEL_MODULES: Final = SHARED_KERNEL_MODULES + tuple(
    module for method in METHODS for module in method.kernels
)
"""Every module that declares kernels (``tests/test_compiling.py`` checks it)."""


def estimator_homes() -> dict[str, str]:
    """Return every public estimator and the package that defines it.

    Examples
    --------
    >>> estimator_homes()["FedGAClassifier"]
    'fedtrees.algorithms.fedga'
    """
    return {name: m.package for m in METHODS for name in m.estimators}


def job_method(job: str) -> Method:
    """Return the method whose job is ``job``.

    Raises
    ------
    KeyError
        If no method has that job (callers check the name first).

    Examples
    --------
    >>> job_method("federated-id3").package
    'fedtrees.algorithms.fedid3'
    """
    return _BY_JOB[job]


_BY_JOB: Final[dict[str, Method]] = {
    m.job.name: m for m in METHODS if m.job is not None
}
