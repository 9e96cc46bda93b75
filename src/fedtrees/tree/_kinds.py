"""Node kinds, missing-value directions and the ``LEAF`` sentinel of a Tree."""

from __future__ import annotations

from enum import IntEnum
from typing import Final

__all__ = ["LEAF", "Missing", "NodeKind"]

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


class Missing(IntEnum):
    """Where a numeric node sends a row whose feature value is NaN (missing).

    ``LEFT`` / ``RIGHT``: a direction learned at fit (the side where the training
    rows with a missing value went, or the side that scored best for them).
    ``LARGER``: no direction learned; the row goes to the child with the larger
    training ``count``, ``right`` on a tie. That is what scikit-learn does for a
    feature without missing values at fit, and the rule for a node that saw no
    missing rows. Only numeric nodes may hold ``LEFT`` or ``RIGHT``; every other
    node holds ``LARGER``.

    Examples
    --------
    >>> Missing(1), int(Missing.LARGER)
    (<Missing.LEFT: 1>, -1)
    """

    LARGER = -1
    RIGHT = 0
    LEFT = 1
