"""Heterogeneity diagnostics (docs/fedforest.md, paper App. D.3).

- **Covariate shift**: a small federated forest learns to predict the *client* from
  X (each client's statistics are just its own counts); a large root gain or a
  held-out one-vs-rest AUC well above 0.5 means the clients' feature distributions
  differ, and its feature importances say which features separate them.
- **Outcome shift**: two federated forests on the real target, one on X and one
  that may split on the client indicator; a clearly better held-out score with the
  client means the outcome depends on the client.

Held-out rows (``holdout``, keyed per client) never train; clients score them and
send histograms of predicted probabilities or sums, never rows.
**Decision** (thresholds, exposed as parameters): covariate shift when the mean
client AUC is at least 0.6; outcome shift when the score gain of (X, H) over X is
above 0.01 (accuracy or R²). ``gain="auto"`` uses AvgImp only when neither holds
(sketch modes only: under ``candidates="hist"`` it is the exact gain, undiagnosed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from fedtrees._random import resolve_seed
from fedtrees._typing import FloatArray, RandomState
from fedtrees.algorithms.fedforest._config import Amount, ForestConfig
from fedtrees.algorithms.fedforest._payloads import ScoreReply
from fedtrees.algorithms.fedforest._strategy import FedForestStrategy, ForestResult
from fedtrees.federation import Federation, Task

__all__ = ["DiagnosisReport", "diagnose"]


@dataclass(frozen=True)
class DiagnosisReport:
    """What the diagnostics found, and the gain rule they recommend."""

    root_gain: float
    client_auc: Mapping[str, float]
    separating_features: tuple[tuple[str, float], ...]
    covariate_shift: bool
    score_x: float
    score_xh: float
    outcome_shift: bool
    recommended_gain: Literal["exact", "avgimp"]

    @property
    def outcome_gap(self) -> float:
        """Held-out score of (X, H) minus that of X."""
        return self.score_xh - self.score_x

    def summary(self) -> str:
        """Return a few readable lines."""
        aucs = ", ".join(f"{k}: {v:.2f}" for k, v in self.client_auc.items())
        top = ", ".join(f"{name} ({w:.2f})" for name, w in self.separating_features[:3])
        return (
            f"covariate shift: {self.covariate_shift} (root gain {self.root_gain:.3f}; "
            f"client AUC {aucs}; separating features {top})\n"
            f"outcome shift: {self.outcome_shift} (held-out score X "
            f"{self.score_x:.3f}, X+client {self.score_xh:.3f})\n"
            f"recommended gain: {self.recommended_gain!r}"
        )


def _config(
    task: Task,
    seed: int,
    n_estimators: int,
    max_depth: int,
    holdout: float,
    target: Literal["label", "client"],
    split_on_client: bool,
) -> ForestConfig:
    classification = task != "regression"
    return ForestConfig(
        task="classification" if classification else "regression",
        n_estimators=n_estimators,
        max_depth=max_depth,
        min_samples_split=Amount(2.0),
        min_samples_leaf=Amount(1.0),
        min_impurity_decrease=0.0,
        max_features="sqrt" if classification else 1.0,
        bootstrap=True,
        criterion="gini" if classification else "squared_error",
        candidates="quantile",
        n_quantiles=32,
        gain="exact",
        top_k=None,
        split_on_client=split_on_client,
        client_fraction=1.0,
        on_dropout="fail",
        seed=seed,
        target=target,
        holdout=holdout,
    )


def diagnose(
    federation: Federation,
    *,
    task: Literal["classification", "regression"] = "classification",
    n_estimators: int = 20,
    max_depth: int = 4,
    holdout: float = 0.25,
    auc_threshold: float = 0.6,
    gap_threshold: float = 0.01,
    timeout: float = 60.0,
    random_state: RandomState = None,
) -> DiagnosisReport:
    """Test a federation for covariate and outcome shift (three small forests).

    Examples
    --------
    >>> import numpy as np
    >>> from fedtrees.datasets.synthetic import make_fedforest
    >>> data = make_fedforest("covariate_shift", random_state=0)
    >>> fed = Federation.from_groups(data.X, data.y, data.groups)
    >>> report = diagnose(fed, task="regression", random_state=0)
    >>> top = report.separating_features[0][0]
    >>> report.covariate_shift, top, report.recommended_gain
    (True, 'x0', 'exact')
    """
    seed = resolve_seed(random_state, "diagnose")
    client_cfg = _config(
        "classification", seed, n_estimators, max_depth, holdout, "client", False
    )
    shift = _run(federation, client_cfg, "features", timeout)
    aucs = _client_auc(shift.scores, shift.info.clients)
    names = shift.info.schema.feature_names
    importances = shift.growth.feature_importances()
    order = np.argsort(-importances, kind="stable")
    separating = tuple(
        (names[j], float(importances[j])) for j in order if importances[j] > 0
    )
    covariate = float(np.mean(list(aucs.values()))) >= auc_threshold
    base = _config(task, seed, n_estimators, max_depth, holdout, "label", False)
    score_x = _score(_run(federation, base, task, timeout).scores, task)
    score_xh = _score(
        _run(federation, replace(base, split_on_client=True), task, timeout).scores,
        task,
    )
    outcome = score_xh - score_x > gap_threshold
    return DiagnosisReport(
        root_gain=float(shift.growth.table.improvement[:n_estimators].mean()),
        client_auc=aucs,
        separating_features=separating,
        covariate_shift=covariate,
        score_x=score_x,
        score_xh=score_xh,
        outcome_shift=outcome,
        recommended_gain="exact" if covariate or outcome else "avgimp",
    )


def _run(
    federation: Federation, config: ForestConfig, task: Task, timeout: float
) -> ForestResult:
    strategy = FedForestStrategy(config)
    result: ForestResult = federation.run(strategy, task=task, timeout=timeout).result
    return result


def _client_auc(
    scores: Sequence[ScoreReply], clients: Sequence[str]
) -> dict[str, float]:
    """One-vs-rest AUC of every client from binned predicted probabilities."""
    hist = np.sum([s.hist for s in scores], axis=0)
    out = {}
    for k, client in enumerate(clients):
        positive = hist[k, k]
        negative = hist[:, k].sum(axis=0) - positive
        out[client] = _binned_auc(positive, negative)
    return out


def _binned_auc(positive: FloatArray, negative: FloatArray) -> float:
    """P(score of a positive > score of a negative), ties counted half."""
    n_pos, n_neg = positive.sum(), negative.sum()
    if n_pos == 0 or n_neg == 0:
        return 0.5
    below = np.concatenate([[0.0], np.cumsum(negative)[:-1]])
    return float((positive * (below + 0.5 * negative)).sum() / (n_pos * n_neg))


def _score(scores: Sequence[ScoreReply], task: Task) -> float:
    """Held-out accuracy, or R² = 1 - SSE/SST, from the clients' sums."""
    sums = np.sum([s.sums for s in scores], axis=0)
    rows, correct, sse, total, squares = sums
    if rows == 0:
        return float("nan")
    if task == "regression":
        sst = squares - total * total / rows
        return float(1.0 - sse / sst) if sst > 0 else 0.0
    return float(correct / rows)
