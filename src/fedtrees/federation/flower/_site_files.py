"""How a site describes its CSV data file in its node config.

Two optional entries (docs/flower.md, "A site's data file"), each a string of
comma-separated items or a JSON list of strings (for items holding a comma):

- ``na-values``: the site's missing tokens besides the empty cell, e.g.
  ``na-values="?"`` for UCI data, or ``na-values="?,NA"``;
- ``categorical``: the columns to read as categories whatever their cells look
  like, e.g. ``categorical="doors,persons"``.

They describe CSV files only (an ``.npz`` file carries its kinds), and are the
site's settings: the server's run config cannot change how a site reads its data.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from fedtrees.exceptions import ValidationError

__all__ = ["CATEGORICAL_KEY", "NA_VALUES_KEY", "CsvDeclarations", "csv_declarations"]

NA_VALUES_KEY: Final = "na-values"
"""The node config entry listing the site's missing tokens (CSV)."""
CATEGORICAL_KEY: Final = "categorical"
"""The node config entry listing the site's categorical columns (CSV)."""


@dataclass(frozen=True)
class CsvDeclarations:
    """A CSV site's missing tokens and categorical columns (both may be empty)."""

    na_values: tuple[str, ...] = ()
    categorical: tuple[str, ...] = ()


def csv_declarations(node_config: Mapping[str, Any]) -> CsvDeclarations:
    """Return what the node config declares about the site's CSV file.

    Raises
    ------
    ValidationError
        An entry that is not a string of comma-separated items (or a JSON list
        of strings), or that holds an empty item, naming the entry.

    Examples
    --------
    >>> csv_declarations({"na-values": "?, NA", "categorical": '["a,b", "c"]'})
    CsvDeclarations(na_values=('?', 'NA'), categorical=('a,b', 'c'))
    >>> csv_declarations({})
    CsvDeclarations(na_values=(), categorical=())
    """
    return CsvDeclarations(
        _items(node_config, NA_VALUES_KEY, 'na-values="?,NA"'),
        _items(node_config, CATEGORICAL_KEY, 'categorical="doors,persons"'),
    )


def _items(node_config: Mapping[str, Any], key: str, example: str) -> tuple[str, ...]:
    value = node_config.get(key)
    if value is None:
        return ()
    items = _split(value) if isinstance(value, str) else None
    if items is None or not all(item.strip() for item in items):
        raise ValidationError(
            f"The node config's {key} must be a string of comma-separated, "
            f"non-empty items, or a JSON list of strings (--node-config "
            f"'{example}'). Got {value!r} instead."
        )
    return tuple(item.strip() for item in items)


def _split(text: str) -> list[str] | None:
    """Split a node config entry's items (None: a JSON list that is not one)."""
    if not text.strip().startswith("["):
        return text.split(",") if text.strip() else []
    try:
        items = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if isinstance(items, list) and all(isinstance(i, str) for i in items):
        return items
    return None
