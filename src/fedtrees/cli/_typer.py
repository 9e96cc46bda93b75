"""The typer application class of every ``fedtrees`` command group.

Recent typer releases (0.2x, which vendor their own click) print the value type of
every option in the help screens, including a ``<bool>`` beside flags that take
no value (``--quick``, ``--insecure``, even ``--help``). :class:`App` gives every
group and command it creates classes that blank the metavar of flags, so help
screens read ``--quick  A small, fast run`` with every typer this package
supports.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

__all__ = ["App", "Command", "Group", "hide_flag_metavars"]


def hide_flag_metavars(params: list[Any]) -> list[Any]:
    """Give every flag (an option that takes no value) an empty metavar."""
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    return params


class Command(TyperCommand):
    """A typer command whose help shows no metavar on flags."""

    def get_params(self, ctx: Any) -> list[Any]:
        """Return the parameters (``--help`` included), flags without a metavar."""
        return hide_flag_metavars(list(super().get_params(ctx)))


class Group(TyperGroup):
    """A typer group whose help shows no metavar on flags."""

    def get_params(self, ctx: Any) -> list[Any]:
        """Return the parameters (``--help`` included), flags without a metavar."""
        return hide_flag_metavars(list(super().get_params(ctx)))


class App(typer.Typer):
    """``typer.Typer`` whose groups and commands show no metavar on flags.

    Examples
    --------
    >>> app = App(name="tool", add_completion=False)
    >>> @app.command()
    ... def run(quick: bool = False) -> None:
    ...     '''Run.'''
    """

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("cls", Group)
        super().__init__(**kwargs)

    def command(self, *args: Any, **kwargs: Any) -> Callable[[Any], Any]:
        """Register a command (``typer.Typer.command``) with :class:`Command`."""
        kwargs.setdefault("cls", Command)
        return super().command(*args, **kwargs)
