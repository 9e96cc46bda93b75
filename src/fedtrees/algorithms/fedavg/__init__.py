"""FedAvg baselines: logistic regression and small MLPs in numpy (McMahan 2017).

The linear and neural baselines the tree papers compare against, trained on the
same runtime (messages, ledger, audit) as every tree method.

Importing the package registers its client handlers; every other name loads
on first use (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from fedtrees._lazy import lazy_names
from fedtrees.algorithms.fedavg import _handlers  # registers the client handlers

__all__ = ["MAX_BATCH_SIZE", "FedAvgClassifier", "FedAvgStrategy"]

_HOMES: Final[dict[str, str]] = {
    "FedAvgClassifier": "fedtrees.algorithms.fedavg._estimator",
    "FedAvgStrategy": "fedtrees.algorithms.fedavg._strategy",
    "MAX_BATCH_SIZE": "fedtrees.algorithms.fedavg._limits",
}
"""Every public name and the module that defines it."""

if TYPE_CHECKING:
    from fedtrees.algorithms.fedavg._estimator import FedAvgClassifier
    from fedtrees.algorithms.fedavg._limits import MAX_BATCH_SIZE
    from fedtrees.algorithms.fedavg._strategy import FedAvgStrategy

del _handlers

__getattr__, __dir__ = lazy_names(__name__, _HOMES)
