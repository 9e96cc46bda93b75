"""The ``fedtrees`` command line (typer + rich)."""

from fedtrees.cli._app import app, main

__all__ = ["app", "main"]
