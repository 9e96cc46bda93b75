"""The objectives of FedGBDT: loss, gradient and hessian, prior, link.

As XGBoost defines them (``binary:logistic``, ``multi:softprob``,
``reg:squarederror``), so that the pooled model equals XGBoost's on the same
codes:

- binary logloss: ``p = σ(m)``, ``g = p − y``, ``h = max(p(1 − p), 1e-16)``;
- softmax (one tree per class per iteration): ``p = softmax(m)``,
  ``g_k = p_k − [y = k]``, ``h_k = max(2 p_k (1 − p_k), 1e-16)``;
- squared error: ``g = m − y``, ``h = 1``.

Sample weights multiply g and h. A client computes g and h of its own rows
from its own running raw predictions; the server only ever sees their sums.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
from scipy.special import expit, log_softmax, softmax

from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms.fedgbdt._config import Objective

__all__ = ["LOSSES", "Loss", "metric_name", "prior_margin"]

_EPS: Final = 1e-16


@dataclass(frozen=True)
class Loss:
    """One objective: its outputs per row and its per-row formulas."""

    objective: Objective

    def outputs(self, n_classes: int) -> int:
        """Raw predictions per row (one per class for softmax)."""
        return n_classes if self.objective == "softmax" else 1

    def gradients(
        self, raw: FloatArray, target: FloatArray | IntArray, weight: FloatArray
    ) -> tuple[FloatArray, FloatArray]:
        """Return g and h, each (n, outputs), weighted."""
        w = weight[:, None]
        if self.objective == "squared_error":
            return (raw - np.asarray(target, np.float64)[:, None]) * w, np.broadcast_to(
                w, raw.shape
            ).copy()
        if self.objective == "binary":
            p = expit(raw)
            y = np.asarray(target, np.float64)[:, None]
            return (p - y) * w, np.maximum(p * (1.0 - p), _EPS) * w
        p = softmax(raw, axis=1)
        onehot = np.zeros_like(p)
        onehot[np.arange(p.shape[0]), np.asarray(target, np.int64)] = 1.0
        return (p - onehot) * w, np.maximum(2.0 * p * (1.0 - p), _EPS) * w

    def row_loss(self, raw: FloatArray, target: FloatArray | IntArray) -> FloatArray:
        """Per-row loss: logloss, multiclass logloss, or squared error."""
        if self.objective == "squared_error":
            out: FloatArray = (raw[:, 0] - np.asarray(target, np.float64)) ** 2
            return out
        if self.objective == "binary":
            p = np.clip(expit(raw[:, 0]), _EPS, 1.0 - _EPS)
            y = np.asarray(target, np.float64)
            loss: FloatArray = -(y * np.log(p) + (1.0 - y) * np.log1p(-p))
            return loss
        logp = log_softmax(raw, axis=1)
        picked = logp[np.arange(raw.shape[0]), np.asarray(target, np.int64)]
        soft: FloatArray = -np.maximum(picked, np.log(_EPS))
        return soft

    def summary(self, loss_sum: float, weight_sum: float) -> float:
        """Return the pooled metric from summed losses: mean logloss, or RMSE."""
        if weight_sum <= 0:
            return float("nan")
        mean = loss_sum / weight_sum
        return (
            float(np.sqrt(mean)) if self.objective == "squared_error" else float(mean)
        )


LOSSES: Final = {
    "binary": Loss("binary"),
    "softmax": Loss("softmax"),
    "squared_error": Loss("squared_error"),
}


def metric_name(objective: Objective) -> str:
    """XGBoost's name of the default metric of ``objective``."""
    return {"binary": "logloss", "softmax": "mlogloss", "squared_error": "rmse"}[
        objective
    ]


def prior_margin(
    objective: Objective, pooled: FloatArray, base_score: float | None
) -> FloatArray:
    """Return the starting raw prediction of every row, one per output.

    ``pooled``: the training rows' weighted class counts (classification) or
    ``(Σw, Σw·y)`` (regression), summed over the clients. ``base_score`` (as
    XGBoost's): a probability for binary logloss, a margin for softmax, a value
    for squared error; None: the pooled prior (log-odds of the pooled class
    shares, or the pooled mean).
    """
    if objective == "squared_error":
        mean = pooled[1] / pooled[0] if pooled[0] > 0 else 0.0
        return np.array([mean if base_score is None else base_score])
    if objective == "binary":
        positive = pooled[1] if pooled.shape[0] > 1 else 0.0  # one class: none
        share = positive / pooled.sum() if pooled.sum() > 0 else 0.5
        p = share if base_score is None else base_score
        p = float(np.clip(p, _EPS, 1.0 - _EPS))
        return np.array([np.log(p / (1.0 - p))])
    if base_score is not None:
        return np.full(pooled.shape[0], base_score)
    shares = pooled / pooled.sum() if pooled.sum() > 0 else np.ones_like(pooled)
    return np.log(np.clip(shares, _EPS, None))
