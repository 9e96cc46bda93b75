"""Which packages answer a job's requests: what a client process must load.

A Flower ClientApp serves one job per run; loading only that job's method
packages (their payloads and handlers) keeps every message's process start
short. In process, using an estimator loads its package, so nothing is needed.
"""

from __future__ import annotations

from importlib import import_module
from typing import Final

from fedtrees._methods import METHODS

__all__ = ["JOB_PACKAGES", "RUNTIME_HANDLERS", "load_handlers"]

JOB_PACKAGES: Final[dict[str, tuple[str, ...]]] = {
    method.job.name: (method.package,) for method in METHODS if method.job is not None
}
"""Every job's method packages: importing them registers its payloads and handlers.

From the registry of methods (:data:`fedtrees._methods.METHODS`).
"""


RUNTIME_HANDLERS: Final = ("fedtrees.federation._schema",)
"""The runtime's own handlers: the agreement every job starts with."""


def load_handlers(job: str) -> None:
    """Register the payloads and handlers of ``job`` (every job's if it is unknown).

    The runtime's agreement comes with every job. An unknown job still gets
    every handler: the client then answers with the handler's own error, not a
    missing one.
    """
    for package in RUNTIME_HANDLERS:
        import_module(package)
    for packages in (
        (JOB_PACKAGES[job],) if job in JOB_PACKAGES else JOB_PACKAGES.values()
    ):
        for package in packages:
            import_module(package)
