"""The components of fedtrees' Flower App (see federation/flower/app/pyproject.toml).

``serverapp`` runs a named fedtrees job over the SuperNodes; ``clientapp``
hands every request to the site worker, or serves it itself
(:func:`serve_here`): from each node's local data file (parsed once per run,
then read from the SuperNode's cache: :func:`fedtrees.datasets.load_site_data`),
loading only the packages of the run's job
(:func:`fedtrees.algorithms._handlers.load_handlers`). Each is built on first
use (PEP 562): Flower starts a process per message, and a ClientApp process
never pays for the ServerApp's imports (every method's estimator), nor, with a
site worker, for serving.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from fedtrees.federation.flower import SiteAnswer, SiteMessage

__all__ = ["clientapp", "serve_here", "serverapp", "warm_up"]  # noqa: F822


def __getattr__(name: str) -> Any:
    """Build ``serverapp`` or ``clientapp`` on first use."""
    if name == "serverapp":
        from fedtrees.algorithms import check_job, run_job
        from fedtrees.federation.flower import make_server_app

        app: Any = make_server_app(run_job, check_job)
    elif name == "clientapp":
        from fedtrees.federation.flower import make_client_app

        app = make_client_app(_load_site_data, _load_handlers, site_worker=True)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = app
    return app


def serve_here(message: SiteMessage) -> SiteAnswer:
    """Serve one request of this site, in this process."""
    from fedtrees.federation.flower import serve_site

    return serve_site(message, _load_site_data, _load_handlers)


def warm_up() -> None:
    """Load what serving needs: the runtime and every job's handlers.

    Each kernel loads at its first call, once per worker: compiling them all
    here would hold the first message for as long as that takes whenever the
    installed kernels cannot serve (about 40 s on 2 cores).
    """
    from fedtrees.algorithms import JOB_PACKAGES, load_handlers
    from fedtrees.federation.flower import serve_site  # noqa: F401

    for job in JOB_PACKAGES:
        load_handlers(job)


def _load_site_data(
    path: str,
    target: str | None,
    *,
    cache_dir: Path | None,
    run_id: int,
    na_values: tuple[str, ...],
    categorical: tuple[str, ...],
) -> tuple[pd.DataFrame, Any]:
    from fedtrees.datasets import load_site_data

    return load_site_data(
        path,
        target,
        cache_dir=cache_dir,
        run_id=run_id,
        na_values=na_values,
        categorical=categorical,
    )


def _load_handlers(job: str) -> None:
    from fedtrees.algorithms import load_handlers

    load_handlers(job)
