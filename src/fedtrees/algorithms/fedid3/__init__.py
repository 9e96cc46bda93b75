"""Federated-ID3 (Truex et al. 2019): exact or ε-DP, multiway or binary (docs/icdta.md).

The baseline of ICDTA4FL and the "IBM tree" of FedGA-Tree
(:class:`FederatedID3Classifier`; the protocol in :mod:`._protocol`).
"""

from fedtrees.algorithms.fedid3 import _protocol  # registers the client handler
from fedtrees.algorithms.fedid3._estimator import FederatedID3Classifier
from fedtrees.algorithms.fedid3._protocol import (
    FedID3Strategy,
    LevelReply,
    LevelRequest,
)

__all__ = ["FedID3Strategy", "FederatedID3Classifier", "LevelReply", "LevelRequest"]

del _protocol
