"""Node kinds and the ``LEAF`` sentinel of :class:`fedtrees.tree.Tree`."""

from __future__ import annotations

from enum import IntEnum
from typing import Final

__all__ = ["LEAF", "NodeKind"]

LEAF: Final = -1
"""Sentinel for "no child" in ``left``/``right`` and "no feature" in ``feature``."""


class NodeKind(IntEnum):
    """How a node routes a row.

    ``NUMERIC``: ``x[feature] <= threshold`` goes to ``left``, otherwise ``right``.
    ``CATEGORICAL``: the integer code ``x[feature]`` is looked up in the node's branch
    table; a listed code goes to its child, any other code to ``right`` (the default
    branch). A default of ``LEAF`` means such a row *stops at this node* and takes the
    node's own value — used by multiway (ID3) splits for unseen categories.
    ``CLIENT``: as ``CATEGORICAL``, with the row's client code instead of a feature.
    """

    LEAF = 0
    NUMERIC = 1
    CATEGORICAL = 2
    CLIENT = 3
