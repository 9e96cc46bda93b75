"""The ``fedtrees`` command line (typer + rich).

The typer application is imported on first use, so that the Flower App entry
points (:mod:`fedtrees.cli.flower_app`), which run in a fresh process for every
message, do not pay for the command line's imports.
"""

from __future__ import annotations

from typing import Any

__all__ = ["app", "main"]


def main() -> None:
    """Entry point of the ``fedtrees`` console script."""
    from fedtrees.cli._app import app

    app()


def __getattr__(name: str) -> Any:
    if name == "app":
        from fedtrees.cli._app import app

        return app
    raise AttributeError(f"module 'fedtrees.cli' has no attribute {name!r}")
