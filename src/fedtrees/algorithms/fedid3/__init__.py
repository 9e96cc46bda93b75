"""Federated-ID3 (Truex et al. 2019): exact or ε-DP, multiway or binary (docs/icdta.md).

The baseline of ICDTA4FL and the "IBM tree" of FedGA-Tree
(:class:`FederatedID3Classifier`; the protocol in :mod:`._payloads`).

Importing the package registers its client handlers; every other name loads
on first use (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from fedtrees._lazy import lazy_names
from fedtrees.algorithms.fedid3 import _handlers  # registers the client handlers

__all__ = ["FedID3Strategy", "FederatedID3Classifier", "LevelReply", "LevelRequest"]

_HOMES: Final[dict[str, str]] = {
    "FedID3Strategy": "fedtrees.algorithms.fedid3._strategy",
    "FederatedID3Classifier": "fedtrees.algorithms.fedid3._estimator",
    "LevelReply": "fedtrees.algorithms.fedid3._payloads",
    "LevelRequest": "fedtrees.algorithms.fedid3._payloads",
}
"""Every public name and the module that defines it."""

if TYPE_CHECKING:
    from fedtrees.algorithms.fedid3._estimator import FederatedID3Classifier
    from fedtrees.algorithms.fedid3._payloads import LevelReply, LevelRequest
    from fedtrees.algorithms.fedid3._strategy import FedID3Strategy

del _handlers

__getattr__, __dir__ = lazy_names(__name__, _HOMES)
