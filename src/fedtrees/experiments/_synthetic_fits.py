"""The fits of the one-shot synthetic-data experiment (docs/synthetic.md).

One row of measurements per fit: the global tree of
:class:`~fedtrees.SyntheticDataClassifier` (accuracy, its synthetic set, bytes
and client seconds from the ledger), FedAvg read at every variant's target from
one run (:func:`fedavg_to_target`), and the centralized scikit-learn tree. The
protocol and the Decisions are in :mod:`fedtrees.experiments.synthetic`.
"""

from __future__ import annotations

import time
from typing import Any, Final

import numpy as np
from sklearn.tree import DecisionTreeClassifier

from fedtrees.algorithms import FedAvgClassifier, SyntheticDataClassifier
from fedtrees.experiments._synthetic_data import Split, one_hot

__all__ = [
    "HIDDEN",
    "TRAIN_KIND",
    "TREE_KIND",
    "cached_tree",
    "centralized_row",
    "fedavg_rows",
    "fedavg_to_target",
    "tree_row",
]

HIDDEN: Final = (12, 12)
"""The FedAvg MLP's hidden layers (the paper's [12, 12])."""
TREE_KIND: Final = "synthetic.tree"
TRAIN_KIND: Final = "fedavg.train"
"""The ledger's message kinds of the tree round and of FedAvg's training rounds."""


def tree_row(split: Split, params: dict[str, Any], seed: int) -> dict[str, Any]:
    """Fit the synthetic-data classifier; its accuracy, synthetic set and costs."""
    start = time.perf_counter()
    model = SyntheticDataClassifier(random_state=seed, **params)
    model.fit(split.X, split.y, groups=split.groups)
    seconds = time.perf_counter() - start
    ledger = model.communication_.to_frame()
    tree = ledger[ledger["kind"] == TREE_KIND]
    origin = model.synthetic_origin_
    predicted = model.tree_.predict(model.synthetic_X_.to_numpy())
    votes = origin["vote"].astype(str) == str(split.majority_label)
    return {
        "accuracy": float(model.score(split.X_test, split.y_test)),
        "majority": split.majority,
        "synthetic_accuracy": float(np.mean(predicted == model.synthetic_y_)),
        "synthetic_rows": len(origin),
        "flipped_share": float(origin["flipped"].mean()),
        "vote_majority_share": float(votes.mean()),
        "tree_bytes_up": float(tree["bytes_up"].mean()),
        "tree_bytes": float((tree["bytes_up"] + tree["bytes_down"]).mean()),
        "client_seconds": float(np.mean(list(model.client_fit_seconds_.values()))),
        "seconds": seconds,
    }


def cached_tree(
    cache: dict[str, dict[str, Any]],
    split: Split,
    params: dict[str, Any],
    seed: int,
) -> dict[str, Any]:
    """Fit once per parameter set of a split and repeat (same seed, same model).

    The cache belongs to one split; the min-max scaled copy of the "authors"
    variant never collides, as its parameters (class weights) are its own.
    """
    key = repr(sorted(params.items()))
    if key not in cache:
        cache[key] = tree_row(split, params, seed)
    return dict(cache[key])


def fedavg_to_target(model: FedAvgClassifier, target: float) -> dict[str, Any]:
    """FedAvg's figures at the first round whose test score reaches ``target``.

    All rounds if none does (``reached`` False). Bytes (down + up) and seconds
    are the ledger's training messages up to that round, summed per client and
    averaged over clients (``bytes_per_client_`` / ``client_seconds_`` of a run
    stopped there).
    """
    curve = np.asarray(model.score_curve_, dtype=float)
    hits = np.flatnonzero(curve >= target)
    rounds = int(hits[0]) + 1 if hits.size else int(curve.shape[0])
    frame = model.communication_.to_frame()
    train = frame[frame["kind"] == TRAIN_KIND]
    used = train[train["round"] < train["round"].min() + rounds]
    per_client = used.groupby("client")[["bytes_down", "bytes_up", "seconds"]].sum()
    return {
        "target": target,
        "rounds": rounds,
        "reached": bool(hits.size),
        "accuracy": float(curve[rounds - 1]),
        "bytes_per_client": float(
            (per_client["bytes_down"] + per_client["bytes_up"]).mean()
        ),
        "client_seconds": float(per_client["seconds"].mean()),
    }


def fedavg_rows(
    split: Split,
    targets: dict[str, float],
    *,
    max_rounds: int,
    batch_size: int,
    seed: int,
) -> list[dict[str, Any]]:
    """One FedAvg run to the best tree; every variant's figures from its curve."""
    start = time.perf_counter()
    model = FedAvgClassifier(
        HIDDEN,
        n_rounds=max_rounds,
        local_epochs=10,
        learning_rate=0.01,
        batch_size=batch_size,
        stop_at_score=max(targets.values()),
        random_state=seed,
    )
    model.fit(
        split.X, split.y, groups=split.groups, eval_set=(split.X_test, split.y_test)
    )
    seconds = time.perf_counter() - start
    curve = " ".join(f"{s:.6f}" for s in model.score_curve_)
    return [
        {
            "variant": variant,
            "method": "FedAvg",
            **fedavg_to_target(model, target),
            "majority": split.majority,
            "seconds": seconds,
            "curve": curve,
        }
        for variant, target in targets.items()
    ]


def centralized_row(split: Split, depth: int, seed: int) -> dict[str, Any]:
    """scikit-learn's entropy CART of the same depth on the pooled one-hot rows."""
    X, X_test = one_hot(split)
    start = time.perf_counter()
    tree = DecisionTreeClassifier(
        criterion="entropy", max_depth=depth, random_state=seed
    )
    tree.fit(X, split.y)
    return {
        "variant": "-",
        "method": "centralized tree",
        "accuracy": float(tree.score(X_test, split.y_test)),
        "majority": split.majority,
        "seconds": time.perf_counter() - start,
    }
