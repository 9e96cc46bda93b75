"""FedAvg baselines: logistic regression and small MLPs in numpy (McMahan 2017).

The linear and neural baselines the tree papers compare against, trained on the
same runtime (messages, ledger, audit) as every tree method.
"""

from fedtrees.algorithms.fedavg import _handlers  # registers the client handlers
from fedtrees.algorithms.fedavg._estimator import FedAvgClassifier
from fedtrees.algorithms.fedavg._limits import MAX_BATCH_SIZE
from fedtrees.algorithms.fedavg._strategy import FedAvgStrategy

__all__ = ["MAX_BATCH_SIZE", "FedAvgClassifier", "FedAvgStrategy"]

del _handlers
