"""The typer application class of every ``fedtrees`` command group.

Recent typer releases (0.2x, which vendor their own click) print the value type of
every option in the help screens, including a ``<bool>`` beside flags that take
no value (``--quick``, ``--insecure``, even ``--help``). :class:`App` gives every
group and command it creates classes that blank the metavar of flags, so help
screens read ``--quick  A small, fast run`` with every typer this package
supports.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final

import typer
from typer.core import TyperCommand, TyperGroup

__all__ = ["API_TO_FLAGS", "App", "Command", "Group", "cli_words", "hide_flag_metavars"]

API_TO_FLAGS: Final = (
    ("pass path=... or set", "pass --data or set"),
    ("as path=...", "with --data"),
    ("path=...", "--data"),
    ("'client_id'", "--client-id"),
    ("The node config's 'data-path'", "--data"),
    ("The node config's 'target'", "--target"),
    ("The node config's 'cache-dir'", "--cache-dir"),
    ("'supernode_auth'", "--supernode-auth"),
    ("'auth_private_key'", "--auth-key"),
    ("insecure=True", "--insecure"),
)
"""Python-API wording in the library's messages, and the flags that replace it."""
_API_CALLER: Final = re.compile(
    r"^(?:make_supernode_keys|register_supernode(?:_command)?"
    r"|(?:superlink|supernode)_command|write_connection): "
)
"""The function a library message starts with ("supernode_command: ...")."""


def cli_words(message: str) -> str:
    """Return a library message in command-line words (flags, not keywords).

    Examples
    --------
    >>> cli_words("No FedGA data folder: pass path=... or set FEDTREES_FEDGA.")
    'No FedGA data folder: pass --data or set FEDTREES_FEDGA.'
    >>> cli_words("supernode_command: 'client_id' must be a non-empty string.")
    '--client-id must be a non-empty string.'
    """
    message = _API_CALLER.sub("", message)
    for api, flag in API_TO_FLAGS:
        message = message.replace(api, flag)
    return message


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
