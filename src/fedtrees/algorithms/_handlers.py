"""Which packages answer a job's requests: what a client process must load.

A Flower ClientApp serves one job per run; loading only that job's method
packages (their payloads and handlers) keeps every message's process start
short. In process, using an estimator loads its package, so nothing is needed.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import import_module
from typing import Final

from fedtrees._methods import METHODS, Method

__all__ = ["JOB_PACKAGES", "RUNTIME_HANDLERS", "job_packages", "load_handlers"]


def job_packages(methods: Sequence[Method] = METHODS) -> dict[str, tuple[str, ...]]:
    """Return every job's method packages, from ``methods`` (default: the registry).

    A method outside the registry (a test's, a user's) plugs into a ClientApp
    by passing ``(*METHODS, its_method)`` here and to :func:`load_handlers`.

    Examples
    --------
    >>> from fedtrees._methods import JobEntry, Document
    >>> toy = Method("my.stump", job=JobEntry("stump", Document.TOY))
    >>> job_packages((toy,))
    {'stump': ('my.stump',)}
    """
    return {m.job.name: (m.package,) for m in methods if m.job is not None}


JOB_PACKAGES: Final[dict[str, tuple[str, ...]]] = job_packages()
"""Every job's method packages: importing them registers its payloads and handlers.

From the registry of methods (:data:`fedtrees._methods.METHODS`).
"""


RUNTIME_HANDLERS: Final = ("fedtrees.federation._schema",)
"""The runtime's own handlers: the agreement every job starts with."""


def load_handlers(job: str, methods: Sequence[Method] = METHODS) -> None:
    """Register the payloads and handlers of ``job`` (every job's if it is unknown).

    The runtime's agreement comes with every job. An unknown job still gets
    every handler: the client then answers with the handler's own error, not a
    missing one. ``methods``: where the jobs are looked up (:func:`job_packages`).
    """
    for package in RUNTIME_HANDLERS:
        import_module(package)
    jobs = JOB_PACKAGES if methods is METHODS else job_packages(methods)
    for packages in (jobs[job],) if job in jobs else jobs.values():
        for package in packages:
            import_module(package)
