"""The objectives of FedGBDT: loss, gradient and hessian, prior, link.

As XGBoost defines them (``binary:logistic``, ``multi:softprob``,
``reg:squarederror``), so that the pooled model equals XGBoost's on the same
codes:

- binary logloss: ``p = σ(m)``, ``g = p − y``, ``h = max(p(1 − p), 1e-16)``;
- softmax (one tree per class per iteration): ``p = softmax(m)``,
  ``g_k = p_k − [y = k]``, ``h_k = max(2 p_k (1 − p_k), 1e-16)``;
- squared error: ``g = m − y``, ``h = 1``.

Sample weights multiply g and h, and so does ``scale_pos_weight`` those of
the positive rows under binary logloss (XGBoost's ``scale_pos_weight``: the
metrics do not see it). A client computes g and h of its own rows from its
own running raw predictions; the server only ever sees their sums.

The metric a fit records (XGBoost's ``eval_metric`` names) is a weighted mean
of a per-row value, so the sites' sums give it exactly: ``logloss`` and
``mlogloss`` (the loss), ``error`` and ``merror`` (the share of rows whose
most probable class is wrong: a margin > 0 predicts the positive class), and
``rmse`` (the root of the mean squared error).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
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
    scale_pos_weight: float = 1.0
    """The factor of the positive rows' g and h (binary only)."""
    metric: str = ""
    """XGBoost's name of the recorded metric ("": the objective's own)."""

    def scaled(self, scale_pos_weight: float, metric: str) -> Loss:
        """Return this objective with a positive-row factor and a metric."""
        return replace(self, scale_pos_weight=scale_pos_weight, metric=metric)

    @property
    def metric_name(self) -> str:
        """XGBoost's name of the recorded metric."""
        return self.metric or metric_name(self.objective)

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
            if self.scale_pos_weight != 1.0:  # XGBoost: w *= spw where y == 1
                w = w * np.where(y == 1.0, self.scale_pos_weight, 1.0)
            return (p - y) * w, np.maximum(p * (1.0 - p), _EPS) * w
        p = softmax(raw, axis=1)
        onehot = np.zeros_like(p)
        onehot[np.arange(p.shape[0]), np.asarray(target, np.int64)] = 1.0
        return (p - onehot) * w, np.maximum(2.0 * p * (1.0 - p), _EPS) * w

    def row_loss(self, raw: FloatArray, target: FloatArray | IntArray) -> FloatArray:
        """Per-row metric: logloss, multiclass logloss or squared error; or an error.

        An ``error``/``merror`` row is 1 where its most probable class is not
        its label (module docstring), else 0.
        """
        if self.metric in ("error", "merror"):
            wrong: FloatArray = (self._predicted(raw) != np.asarray(target)).astype(
                np.float64
            )
            return wrong
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

    def _predicted(self, raw: FloatArray) -> IntArray:
        """Return every row's most probable class code (XGBoost's error rule)."""
        if raw.shape[1] == 1:
            return (raw[:, 0] > 0.0).astype(np.int64)
        out: IntArray = np.argmax(raw, axis=1)
        return out

    def summary(self, loss_sum: float, weight_sum: float) -> float:
        """Return the pooled metric from summed losses: mean logloss, or RMSE."""
        if weight_sum <= 0:
            return float("nan")
        mean = loss_sum / weight_sum
        return float(np.sqrt(mean)) if self.metric_name == "rmse" else float(mean)


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
    objective: Objective,
    pooled: FloatArray,
    base_score: float | None,
    scale_pos_weight: float = 1.0,
) -> FloatArray:
    """Return the starting raw prediction of every row, one per output.

    ``pooled``: the training rows' weighted class counts (classification) or
    ``(Σw, Σw·y)`` (regression), summed over the clients. ``base_score`` (as
    XGBoost's): a probability for binary logloss, a margin for softmax, a value
    for squared error; None: the pooled prior (log-odds of the pooled class
    shares, or the pooled mean).

    **Decision (scale_pos_weight):** the pooled prior of binary logloss counts
    every positive row ``scale_pos_weight`` times: the constant that minimises
    the scaled training loss, as XGBoost 3's intercept is the scaled mean
    label. No new statistic travels: the server scales the pooled counts.

    Examples
    --------
    >>> float(prior_margin("binary", np.array([30.0, 10.0]), None, 3.0)[0])
    0.0
    """
    if objective == "squared_error":
        mean = pooled[1] / pooled[0] if pooled[0] > 0 else 0.0
        return np.array([mean if base_score is None else base_score])
    if objective == "binary":
        positive = pooled[1] * scale_pos_weight if pooled.shape[0] > 1 else 0.0
        total = pooled[0] + positive  # one class: no positive rows
        share = positive / total if total > 0 else 0.5
        p = share if base_score is None else base_score
        p = float(np.clip(p, _EPS, 1.0 - _EPS))
        return np.array([np.log(p / (1.0 - p))])
    if base_score is not None:
        return np.full(pooled.shape[0], base_score)
    shares = pooled / pooled.sum() if pooled.sum() > 0 else np.ones_like(pooled)
    return np.log(np.clip(shares, _EPS, None))
