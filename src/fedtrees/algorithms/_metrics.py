"""Accuracy and macro-F1, per group, in one pass: one home for client scores.

ICDTA4FL's clients score every other client's tree (K² scores a fit) and the
ICDTA4FL experiment scores every client's test fold; scikit-learn's metric
functions validate their inputs on every call, which dominated both. Macro-F1
averages over the labels present in a group's truth or predictions, 0 where a
label has no true positive: scikit-learn's ``f1_score(average="macro",
zero_division=0)`` (tests compare them).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pandas as pd

from fedtrees._typing import FloatArray

__all__ = ["client_scores"]


def client_scores(
    truth: npt.ArrayLike, predicted: npt.ArrayLike, clients: npt.ArrayLike
) -> tuple[FloatArray, FloatArray]:
    """Accuracy and macro-F1 of every client (in order of first appearance).

    Examples
    --------
    >>> acc, f1 = client_scores(
    ...     np.array(["a", "b", "a", "a"]), np.array(["a", "a", "a", "b"]),
    ...     np.array([0, 0, 1, 1]))
    >>> acc.tolist(), f1.round(3).tolist()
    ([0.5, 0.5], [0.333, 0.333])
    """
    truth, predicted = np.asarray(truth), np.asarray(predicted)
    codes = pd.factorize(np.concatenate([truth, predicted]))[0]
    owner = pd.factorize(np.asarray(clients))[0]
    n, labels, k = len(truth), int(codes.max()) + 1, int(owner.max()) + 1
    cell = (owner * labels + codes[:n]) * labels + codes[n:]
    confusion = np.bincount(cell, minlength=k * labels * labels)
    confusion = confusion.reshape(k, labels, labels)
    hits = np.diagonal(confusion, axis1=1, axis2=2)
    both = confusion.sum(axis=2) + confusion.sum(axis=1)  # 2·tp + fp + fn
    f1 = np.where(both > 0, 2 * hits / np.maximum(both, 1), 0.0).sum(axis=1)
    accuracy: FloatArray = hits.sum(axis=1) / confusion.sum(axis=(1, 2))
    return accuracy, f1 / (both > 0).sum(axis=1)
