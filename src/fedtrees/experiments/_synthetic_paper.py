"""The one-shot synthetic-data paper's (003) figures, for printing beside ours.

Transcribed from its Tables 1-2 and Sec. 4.2-4.4 (docs/synthetic.md): the global
tree and FedAvg (MLP [12, 12]) on census (adult) and on the hotel IoT data with
200 clients; means of 15 runs. The census accuracies of both methods equal the
majority-class rate of adult.test after dropping ``?`` rows (11360/15060), and its
FedAvg run stopped after round 1. The sizes (48 bytes per tree, 480 bytes of
weights) are ``sys.getsizeof`` of the Python objects in the authors' notebooks —
the shallow size of an object header, not of the tree's or the tensors' arrays —
so they are not bytes on a wire.
"""

from __future__ import annotations

from typing import Final

import pandas as pd

__all__ = ["PAPER", "paper_table"]

PAPER: Final = {
    "census": {
        "tree": 75.43,
        "fedavg": 75.43,
        "synthetic": 65.55,
        "rounds": 1.0,
        "tree_bytes": 48.0,
        "weight_bytes": 480.0,
        "fedavg_bytes": 960.0,
        "tree_seconds": 0.0010,
        "fedavg_seconds": 0.0138,
        "bytes_ratio": 20.0,
        "compute_ratio": 13.8,
    },
    "iot-200": {
        "tree": 85.62,
        "fedavg": 84.40,
        "synthetic": 63.58,
        "rounds": 34.47,
        "tree_bytes": 48.0,
        "weight_bytes": 480.0,
        "fedavg_bytes": 33091.2,
        "tree_seconds": 0.0012,
        "fedavg_seconds": 0.3861,
        "bytes_ratio": 689.4,
        "compute_ratio": 321.75,
    },
}
"""The paper's figures by our dataset name (accuracies in percent).

Examples
--------
>>> PAPER["iot-200"]["bytes_ratio"], PAPER["census"]["tree"]
(689.4, 75.43)
"""

_LABELS: Final = {
    "tree": "global tree test accuracy (%)",
    "fedavg": "FedAvg test accuracy at stop (%)",
    "synthetic": "global tree accuracy on the synthetic set (%)",
    "rounds": "FedAvg rounds (mean of 15 runs)",
    "tree_bytes": "tree size, bytes (sys.getsizeof)",
    "weight_bytes": "FedAvg weights, bytes (sys.getsizeof)",
    "fedavg_bytes": "FedAvg bytes per client (weights x 2 x rounds)",
    "tree_seconds": "tree client compute, s",
    "fedavg_seconds": "FedAvg client compute to the target, s",
    "bytes_ratio": "communication ratio FedAvg / tree",
    "compute_ratio": "compute ratio FedAvg / tree",
}


def paper_table() -> pd.DataFrame:
    """Return the paper's figures: one row per metric, one column per dataset.

    Examples
    --------
    >>> paper_table().loc["communication ratio FedAvg / tree", "iot-200"]
    '689.4'
    """
    return pd.DataFrame(
        {
            name: [f"{figures[key]:g}" for key in _LABELS]
            for name, figures in PAPER.items()
        },
        index=pd.Index(list(_LABELS.values()), name="paper 003 (Tables 1-2)"),
    )
