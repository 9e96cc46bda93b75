"""ICDTAClassifier: one interpretable tree from the clients' rules (docs/icdta.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import numpy.typing as npt
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin

from fedtrees._random import resolve_seed
from fedtrees._typing import RandomState
from fedtrees.algorithms._base import FitOptions
from fedtrees.algorithms._constraints import (
    RUN_CONSTRAINTS,
    Check,
    Interval,
    Later,
    Options,
    Rule,
    Size,
    check_params,
    config_fields,
)
from fedtrees.algorithms._params import MAX_GRID, check_max_depth
from fedtrees.algorithms._tree_estimator import SingleTreeClassifier
from fedtrees.algorithms.icdta._filter import parse_filters, tree_scores
from fedtrees.algorithms.icdta._global import GAINS
from fedtrees.algorithms.icdta._rules import MERGES
from fedtrees.algorithms.icdta._strategy import (
    ICDTAResult,
    ICDTASettings,
    ICDTAStrategy,
)
from fedtrees.federation import Federation, RunResult

__all__ = ["ICDTAClassifier"]

BASES = ("id3", "cart")
METRICS = ("accuracy", "f1_macro")


CONSTRAINTS: Final = {
    "base": Options(BASES),
    "metric": Options(METRICS),
    "filter": Check(parse_filters),
    "merge": Options(MERGES),
    "max_rules": Interval(int, 1),
    "max_depth": Check(check_max_depth),
    "n_bins": Size(2, MAX_GRID),
    "bin_edges": Later("the binning, against the agreed columns"),
    "rule_gain": Options(GAINS),
    **RUN_CONSTRAINTS,
}
"""The constraint of every parameter of :class:`ICDTAClassifier`."""
RULES: Final = (
    Rule(
        ("base", "bin_edges"),
        lambda base, bin_edges: base != "cart" or bin_edges is None,
        "None with base='cart' (CART splits raw values; bins serve base='id3')",
        parameter="bin_edges",
    ),
)
"""ICDTA's cross-parameter rule: declared bins are never silently ignored."""


class ICDTAClassifier(SingleTreeClassifier, ClassifierMixin, BaseEstimator):  # type: ignore[misc]
    """ICDTA4FL: a global decision tree aggregated from client trees' rules.

    One-shot federated learning by rule aggregation (docs/icdta.md; paper
    002, Algorithm 1). Every client trains a local tree and sends it; every
    client scores the OTHER clients' trees on its rows; the server keeps the
    trees that pass the filter, merges their root-to-leaf rules by Cartesian
    product (compatible pairs only, ŷ summed, duplicates merged) and grows one
    global tree over the rules; the clients receive the tree and the rules.

    Parameters
    ----------
    base : {"id3", "cart"}, default "id3"
        The clients' trees: multiway ID3 on categorical and discretized numeric
        features (max_depth |F|/2), or binary CART (Gini, max_depth 5) on raw
        values, categorical columns as their category codes (as the paper, which
        encodes them as numbers).
    metric : {"accuracy", "f1_macro"}, default "accuracy"
        How clients score the other clients' trees (and the global tree).
    filter : str or sequence of str, default "mean"
        Which trees are kept: ``"mean"``, ``"median"``, ``"percentile:P"`` (a
        tree must score at least that statistic of all trees' scores) or
        ``"threshold:T"`` (a fixed score; beyond the paper). A sequence, e.g.
        ``["mean", "percentile:90", "percentile:100"]``, is tried in order: the
        server aggregates again with the next filter when the previous one's
        product would exceed ``max_rules`` (no refit). See
        :mod:`fedtrees.algorithms.icdta._filter`.
    merge : {"intersection", "paper"}, default "intersection"
        **Decision** (CART rules): the merged condition of two compatible rules
        on one feature is the intersection of their intervals (the logical
        conjunction), or the paper's "keep the less restrictive bound".
    max_rules : int, default 100_000
        Largest aggregated rule set; a Cartesian product that would exceed it
        stops with :class:`~fedtrees.exceptions.RuleLimitExceeded` naming the
        step, before the product is allocated.
    max_depth : int, optional
        Depth of the clients' trees and of the global tree; None is the paper's
        (|F|/2 for ID3, 5 for CART).
    random_state : int, Generator or None
        Client k's CART is seeded by ``[seed, 7, crc32(k)]`` (ID3 is
        deterministic).
    n_bins : int, default 5
        ID3: quantile bins of every numeric column without declared edges (the
        paper's 5); the bins come from one extra round of quantile sketches.
    bin_edges : dict, optional
        ID3: declared interior bin edges per numeric column (name or position),
        e.g. ``{"age": [30, 45, 60]}``; declared columns need no sketch.
    rule_gain : {"quinlan", "paper"}, default "quinlan"
        **Decision** (step 5): the global tree weights a child's rule entropy by
        its rule count over the node's (Quinlan's information gain), or over
        the sum of the children's, as the paper's Eq. 1–2 print. Rules free of
        the split feature go to every child; with "paper" such copies lower the
        weighted entropy, and a single client's CART is reproduced at its depth
        on only 58–98 % of rows (1.00 with "quinlan"); see
        :mod:`fedtrees.algorithms.icdta._global`.
    timeout : float, default 120.0
        Seconds each round may take.
    workers : int, default 1
        Threads for in-process clients; results do not depend on it.
    verbose : bool, default False
        Show a progress bar with per-round metrics.

    Attributes
    ----------
    tree_ : Tree
        The global tree. With ``base="id3"`` it routes *codes* (numeric columns
        binned by ``binning_``); use :meth:`predict`, or
        ``binning_.transform`` first. Its node counts hold rules, not rows.
    client_trees_ : dict
        Every client's local tree, by client id.
    score_matrix_ : DataFrame
        ``score_matrix_.loc[k, i]``: client k's score of client i's tree (NaN on
        the diagonal: no client scores its own tree).
    tree_scores_ : Series
        Every tree's mean score over the other clients.
    kept_ : list of str
        The clients whose trees passed the filter, in aggregation order.
    filter_ : str
        The filter that was used (the first of a sequence whose product fits).
    rules_ : DataFrame
        The aggregated rule set, readable: one row per rule (its conditions as
        text, the predicted class, the normalised summed ŷ).
    rule_set_ : RuleSet
        The same rules as arrays.
    global_scores_ : dict
        Every client's score of the global tree on its own rows (step 6).
    binning_ : Binning or None
        ID3: how columns became codes (bin edges of numeric columns).
    max_depth_ : int
        The depth used.
    communication_ : Ledger

    Notes
    -----
    An unseen category (or a code no training rule covered) stops an ID3 row at
    the node that splits on it; the row gets that node's distribution (summed ŷ
    of its rules). Sample weights are not supported (the clients' trees are
    unweighted, as in the paper).

    Examples
    --------
    >>> import numpy as np
    >>> from fedtrees import datasets
    >>> car = datasets.load("car")
    >>> sites = np.arange(car.n_samples) % 3
    >>> model = ICDTAClassifier(random_state=0).fit(car.X, car.y, groups=sites)
    >>> len(model.kept_) >= 1, model.tree_.is_classifier
    (True, True)
    """

    _constraint_table = CONSTRAINTS

    def __init__(
        self,
        base: str = "id3",
        metric: str = "accuracy",
        filter: str | Sequence[str] = "mean",
        merge: str = "intersection",
        max_rules: int = 100_000,
        max_depth: int | None = None,
        random_state: RandomState = None,
        *,
        n_bins: int = 5,
        bin_edges: object = None,
        rule_gain: str = "quinlan",
        timeout: float = 120.0,
        workers: int = 1,
        verbose: bool = False,
    ) -> None:
        self.base = base
        self.metric = metric
        self.filter = filter
        self.merge = merge
        self.max_rules = max_rules
        self.max_depth = max_depth
        self.random_state = random_state
        self.n_bins = n_bins
        self.bin_edges = bin_edges
        self.rule_gain = rule_gain
        self.timeout = timeout
        self.workers = workers
        self.verbose = verbose

    def _settings(self) -> ICDTASettings:
        checked = check_params(self, RULES)
        owner = type(self).__name__
        return ICDTASettings(
            **config_fields(ICDTASettings, checked),
            filters=checked["filter"],
            seed=resolve_seed(self.random_state, owner),
            owner=owner,
        )

    def _strategy(
        self,
        federation: Federation,
        classes: npt.NDArray[Any] | None,
        options: FitOptions,
    ) -> ICDTAStrategy:
        return ICDTAStrategy(self._settings())

    def _keep(self, outcome: RunResult, strategy: ICDTAStrategy) -> None:
        result: ICDTAResult = outcome.result
        self.binning_ = result.binning
        self.max_depth_ = result.max_depth
        owners = list(result.client_trees)
        self.client_trees_ = {
            c: self._with_meta(t) for c, t in result.client_trees.items()
        }
        self.score_matrix_ = pd.DataFrame(
            result.score_matrix,
            index=pd.Index(owners, name="evaluator"),
            columns=pd.Index(owners, name="tree of"),
        )
        self.tree_scores_ = pd.Series(
            tree_scores(result.score_matrix), index=owners, name="score"
        )
        self.kept_ = list(result.kept)
        self.filter_ = result.filter
        self.rule_set_ = result.rules
        self.tree_ = self._with_meta(result.tree)
        self.rules_ = result.rules.to_frame(
            feature_names=self.tree_.feature_names,
            categories=self.tree_.categories,
            classes=self.classes_,
        )
        self.global_scores_ = dict(result.global_scores)
