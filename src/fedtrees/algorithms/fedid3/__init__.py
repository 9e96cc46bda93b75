"""Federated-ID3 (Truex et al. 2019): exact or ε-DP, multiway or binary (docs/icdta.md).

The baseline of ICDTA4FL and the "IBM tree" of FedGA-Tree
(:class:`FederatedID3Classifier`; the protocol in :mod:`._payloads`).
"""

from fedtrees.algorithms.fedid3 import _handlers  # registers the client handler
from fedtrees.algorithms.fedid3._estimator import FederatedID3Classifier
from fedtrees.algorithms.fedid3._payloads import LevelReply, LevelRequest
from fedtrees.algorithms.fedid3._strategy import FedID3Strategy

__all__ = ["FedID3Strategy", "FederatedID3Classifier", "LevelReply", "LevelRequest"]

del _handlers
