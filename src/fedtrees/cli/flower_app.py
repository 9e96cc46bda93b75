"""The components of fedtrees' Flower App (see federation/flower/app/pyproject.toml).

``serverapp`` runs a named fedtrees job over the SuperNodes; ``clientapp`` serves
its requests from each node's local data file (parsed once per run, then read
from the SuperNode's cache: :func:`fedtrees.datasets.load_site_data`), loading
only the packages of the run's job
(:func:`fedtrees.algorithms._handlers.load_handlers`). Each is built
on first use (PEP 562): Flower starts a process per message, and a ClientApp
process never pays for the ServerApp's imports (every method's estimator).
"""

from __future__ import annotations

from typing import Any

__all__ = ["clientapp", "serverapp"]  # noqa: F822 (built on first use)


def __getattr__(name: str) -> Any:
    """Build ``serverapp`` or ``clientapp`` on first use."""
    from fedtrees.federation.flower import make_client_app, make_server_app

    if name == "serverapp":
        from fedtrees.algorithms._jobs import run_job

        app: Any = make_server_app(run_job)
    elif name == "clientapp":
        from fedtrees.algorithms._handlers import load_handlers
        from fedtrees.datasets import load_site_data

        app = make_client_app(load_site_data, load_handlers)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = app
    return app
