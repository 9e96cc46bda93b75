"""Every reply is checked against the invariants of its kind (issue 12, item 3).

A client that sends finite, non-negative but inflated or inconsistent statistics
is refused by name (client, round, kind, field): counts above the bounds it
declared at the agreement, class counts that do not add up to node counts, bins
that do not add up to their node's totals, moments with a negative variance,
and (FedForest) totals that change between rounds or children that outweigh
their parent. Each case mutates one honest reply with ``dataclasses.replace``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from fedtrees import (
    FedAvgClassifier,
    FederatedID3Classifier,
    FedForestClassifier,
    FedForestRegressor,
    ICDTAClassifier,
    LocalEnsembleClassifier,
    SyntheticDataClassifier,
)
from fedtrees.algorithms.fedavg._payloads import MomentsReply
from fedtrees.algorithms.fedforest._hist_payloads import HistogramReply
from fedtrees.algorithms.fedforest._sketch_payloads import EvaluateReply, SketchReply
from fedtrees.algorithms.fedid3._payloads import LevelReply
from fedtrees.algorithms.toy import ToyCountsReply, run_toy
from fedtrees.exceptions import RemoteProtocolError
from fedtrees.federation import Fault, Federation, Payload
from fedtrees.federation._data import ClientData
from fedtrees.federation._schema import SchemaReply, declared_bounds

Mutation = Callable[[Any], Any]


def _only(kind: type[Payload], change: Mutation) -> Callable[[Payload], Payload]:
    """Mutate replies of type ``kind``; pass any other reply through unchanged."""

    def mutate(reply: Payload) -> Payload:
        return change(reply) if isinstance(reply, kind) else reply

    return mutate


def _data(rows: int = 100, seed: int = 2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(3 * rows, 3))
    y = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int)
    return X, y, np.repeat(["a", "b", "c"], rows)


def _federation(fault: Fault, rows: int = 100) -> Federation:
    X, y, groups = _data(rows)
    return Federation.from_groups(X, y, groups, faults=(fault,))


def _forest(**params: Any) -> FedForestClassifier:
    """The sketch rounds (the paper's mode) unless ``params`` say otherwise."""
    return FedForestClassifier(
        n_estimators=2, max_depth=3, random_state=0,
        **{"candidates": "quantile", **params},
    )  # fmt: skip


def _scaled(factor: float) -> Mutation:
    def change(r: SketchReply) -> SketchReply:
        stats = r.node_stats.astype(np.float64) * factor
        return dataclasses.replace(r, node_stats=stats, counts=stats.sum(axis=1))

    return change


def _one_class(factor: float) -> Mutation:
    def change(r: SketchReply) -> SketchReply:
        stats = r.node_stats.astype(np.float64)
        stats[:, 0] *= factor  # the counts (node weights) stay as they were
        return dataclasses.replace(r, node_stats=stats)

    return change


def _above_rows(r: SketchReply) -> SketchReply:
    stats = r.node_stats.astype(np.float64)
    stats[0] = 0.0
    stats[0, 0] = 129.0  # one more than the 128 rows client 'a' declared
    return dataclasses.replace(r, node_stats=stats, counts=stats.sum(axis=1))


def _class_plus_one(r: SketchReply) -> SketchReply:
    stats = r.node_stats.astype(np.float64)
    stats[0, 1] += 1.0
    return dataclasses.replace(r, node_stats=stats)


SKETCH_CASES = {
    "x1e6": (_scaled(1e6), "counts", "more than the 128 rows"),
    "x1e300": (_scaled(1e300), "counts", "more than the 128 rows"),
    "one class x1.0000001": (_one_class(1.0000001), "counts", "node weight"),
    "class counts not summing": (_class_plus_one, "counts", "node weight"),
    "a count above the row bound": (_above_rows, "counts", "more than the 128 rows"),
}


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("case", list(SKETCH_CASES))
def test_fedforest_sketch_statistics_are_checked(case: str) -> None:
    change, field, reason = SKETCH_CASES[case]
    fault = Fault("a", "mutate", round=1, mutate=_only(SketchReply, change))
    with pytest.raises(
        RemoteProtocolError,
        match=rf"Client 'a', round 1, 'fedforest.sketch': field '{field}' .*{reason}",
    ):
        _forest().fit_federation(_federation(fault))


def _one_bin_plus_one(r: EvaluateReply) -> EvaluateReply:
    bins = r.bin_stats.astype(np.float64)
    bins[0, 0] += 1.0
    return dataclasses.replace(r, bin_stats=bins)


def _all_bins_doubled(r: EvaluateReply) -> EvaluateReply:
    return dataclasses.replace(r, bin_stats=r.bin_stats.astype(np.float64) * 2)


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (_one_bin_plus_one, "vs the node's other pairs"),
        (_all_bins_doubled, "vs the node's totals of the sketch round"),
    ],
    ids=["one pair's bins", "every pair differs from the sketch"],
)
def test_fedforest_evaluate_bins_must_add_up_to_the_node_totals(
    change: Mutation, reason: str
) -> None:
    fault = Fault("b", "mutate", round=2, mutate=_only(EvaluateReply, change))
    with pytest.raises(
        RemoteProtocolError,
        match=rf"Client 'b', round 2, 'fedforest.evaluate': field 'bin_stats' .*"
        rf"{reason}",
    ):
        _forest(max_features=None).fit_federation(_federation(fault))


@pytest.mark.hostile("clear_error")
def test_fedforest_children_may_not_outweigh_their_parent() -> None:
    # 80 rows declare 128: x1.5 stays within the bound but not within the root.
    fault = Fault("c", "mutate", round=3, mutate=_only(SketchReply, _scaled(1.5)))
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'c', round 3, 'fedforest.sketch': field 'node_stats' .*child",
    ):
        _forest(bootstrap=False).fit_federation(_federation(fault, rows=80))


def _negative_variance(r: SketchReply) -> SketchReply:
    stats = r.node_stats.astype(np.float64).copy()
    stats[:, 2] = 0.5 * stats[:, 1] ** 2 / np.maximum(stats[:, 0], 1.0)
    return dataclasses.replace(r, node_stats=stats)


@pytest.mark.hostile("clear_error")
def test_fedforest_regression_moments_must_have_a_variance() -> None:
    X, _, groups = _data()
    y = 3.0 * X[:, 0] + 5.0
    fault = Fault("a", "mutate", round=1, mutate=_only(SketchReply, _negative_variance))
    model = FedForestRegressor(
        n_estimators=2, max_depth=3, random_state=0, candidates="quantile"
    )
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'a', round 1, 'fedforest.sketch': field 'node_stats' .*"
        r"negative variance",
    ):
        model.fit_federation(Federation.from_groups(X, y, groups, faults=(fault,)))


@pytest.mark.hostile("clear_error")
def test_fedid3_inflated_counts_are_refused() -> None:
    def inflate(r: LevelReply) -> LevelReply:
        return dataclasses.replace(r, counts=r.counts * 1e6)

    fault = Fault("a", "mutate", mutate=_only(LevelReply, inflate))
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'a', round \d+, 'fedid3.level': field 'counts' .*more than the "
        r"128 rows",
    ):
        FederatedID3Classifier(max_depth=2).fit_federation(_federation(fault))


@pytest.mark.hostile("clear_error")
def test_fedid3_tables_of_a_node_must_hold_the_same_rows() -> None:
    def one_more(r: LevelReply) -> LevelReply:
        counts = r.counts.copy()
        counts[0] += 1.0  # the first feature's table gains a row the others lack
        return dataclasses.replace(r, counts=counts)

    fault = Fault("b", "mutate", mutate=_only(LevelReply, one_more))
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'b', round \d+, 'fedid3.level': field 'counts' .*a feature's "
        r"table",
    ):
        FederatedID3Classifier(max_depth=2).fit_federation(_federation(fault))


@pytest.mark.hostile("clear_error")
def test_toy_inflated_counts_are_refused() -> None:
    def inflate(r: ToyCountsReply) -> ToyCountsReply:
        return dataclasses.replace(r, counts=r.counts * 1e6)

    fault = Fault("c", "mutate", round=1, mutate=_only(ToyCountsReply, inflate))
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'c', round 1, 'toy.counts': field 'counts' .*more than the 128",
    ):
        run_toy(_federation(fault), n_rounds=1)


def _fedavg_squares_zero(r: MomentsReply) -> MomentsReply:
    return dataclasses.replace(r, squares=np.zeros_like(r.squares))


def _fedavg_weight_inflated(r: MomentsReply) -> MomentsReply:
    return dataclasses.replace(r, weight=r.weight * 1e6)


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("change", "field", "reason"),
    [
        (_fedavg_squares_zero, "total", "negative variance"),
        (_fedavg_weight_inflated, "weight", "more than the 128 rows"),
    ],
    ids=["moments", "weight"],
)
def test_fedavg_moments_must_be_consistent(
    change: Mutation, field: str, reason: str
) -> None:
    fault = Fault("a", "mutate", round=1, mutate=_only(MomentsReply, change))
    model = FedAvgClassifier((), n_rounds=1, random_state=0)
    with pytest.raises(
        RemoteProtocolError,
        match=rf"Client 'a', round 1, 'fedavg.moments': field '{field}' .*{reason}",
    ):
        model.fit_federation(_federation(fault))


def _tree_counts(factor: float) -> Mutation:
    def change(r: Any) -> Any:
        return dataclasses.replace(r, count=r.count * factor)

    return change


def _root_emptied(r: Any) -> Any:
    count = r.count.copy()
    count[0] = 1.0  # the root holds one row, its children many more
    return dataclasses.replace(r, count=count)


TREE_METHODS: dict[str, tuple[Callable[[], Any], str]] = {
    "icdta": (lambda: ICDTAClassifier(max_depth=2, random_state=0), "icdta.fit"),
    "synthetic": (
        lambda: SyntheticDataClassifier(
            client_max_depth=2, samples_per_path=10, random_state=0
        ),
        "synthetic.tree",
    ),
    "local": (
        lambda: LocalEnsembleClassifier(n_estimators=2, max_depth=2, random_state=0),
        "local.forest",
    ),
}


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("method", list(TREE_METHODS))
@pytest.mark.parametrize(
    ("change", "reason"),
    [(_tree_counts(1e6), "more than the 128 rows"), (_root_emptied, "children")],
    ids=["inflated", "children above their node"],
)
def test_client_tree_counts_are_checked(
    method: str, change: Mutation, reason: str
) -> None:
    make, kind = TREE_METHODS[method]
    fault = Fault("b", "mutate", mutate=_only_trees(change))
    with pytest.raises(
        RemoteProtocolError,
        match=rf"Client 'b', round \d+, '{kind}': field 'count' .*{reason}",
    ):
        make().fit_federation(_federation(fault))


def _only_trees(change: Mutation) -> Callable[[Payload], Payload]:
    def mutate(reply: Payload) -> Payload:
        return change(reply) if hasattr(reply, "count") else reply

    return mutate


@pytest.mark.hostile("clear_error")
def test_a_declared_bound_must_be_a_power_of_two() -> None:
    def exact(r: SchemaReply) -> SchemaReply:
        return dataclasses.replace(r, row_bound=100)  # would reveal n itself

    fault = Fault("a", "mutate", round=0, mutate=_only(SchemaReply, exact))
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'a', round 0, 'federation.schema': field 'row_bound' .*power",
    ):
        _forest().fit_federation(_federation(fault))


@pytest.mark.parametrize(
    ("rows", "weights", "bounds"),
    [
        (1, None, (1, 1.0)),
        (100, None, (128, 128.0)),
        (128, None, (128, 128.0)),
        (129, None, (256, 256.0)),
        (10, [0.1] * 10, (16, 1.0)),
        (4, [1.0, 1.0, 1.0, 50.0], (4, 256.0)),  # a resample may draw 50 four times
    ],
)
def test_declared_bounds_are_powers_of_two_above_the_rows(
    rows: int, weights: list[float] | None, bounds: tuple[int, float]
) -> None:
    X = np.zeros((rows, 1))
    data = ClientData.build("a", X, np.zeros(rows), weights)
    assert declared_bounds(data) == bounds


@pytest.mark.hostile("correct")
def test_honest_weighted_bootstrap_runs_pass_the_checks() -> None:
    # Skewed sample weights: a bootstrap may draw the heavy row many times, so
    # the weight bound (n * max w) must hold every resample's node weights.
    X, y, groups = _data(rows=40)
    weights = np.ones(X.shape[0])
    weights[::40] = 1000.0
    for params in ({}, {"candidates": "uniform"}, {"candidates": "hist"}):
        model = _forest(**params).fit(X, y, groups=groups, sample_weight=weights)
        assert model.trees_[0].count[0] > 0  # fitted: no honest reply was refused


def _hist_scaled(factor: float) -> Mutation:
    """Node statistics and every bin scaled alike: consistent within the reply."""

    def change(r: HistogramReply) -> HistogramReply:
        return dataclasses.replace(
            r,
            node_stats=r.node_stats.astype(np.float64) * factor,
            bin_stats=r.bin_stats.astype(np.float64) * factor,
        )

    return change


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("round_", "factor", "rows", "reason"),
    [(2, 1e6, 100, "more than the 128 rows"), (3, 1.5, 80, "child")],
    ids=["the root above the declared rows", "children outweigh their parent"],
)
def test_fedforest_hist_statistics_are_checked(
    round_: int, factor: float, rows: int, reason: str
) -> None:
    # hist: round 1 is the grid, then one histogram round per level
    fault = Fault(
        "c", "mutate", round=round_, mutate=_only(HistogramReply, _hist_scaled(factor))
    )
    with pytest.raises(
        RemoteProtocolError,
        match=rf"Client 'c', round {round_}, 'fedforest.histogram': "
        rf"field 'node_stats' .*{reason}",
    ):
        _forest(bootstrap=False, candidates="hist").fit_federation(
            _federation(fault, rows=rows)
        )


def _hist_negative_variance(r: HistogramReply) -> HistogramReply:
    stats = r.node_stats.astype(np.float64).copy()
    stats[:, 2] = 0.5 * stats[:, 1] ** 2 / np.maximum(stats[:, 0], 1.0)
    return dataclasses.replace(r, node_stats=stats)


@pytest.mark.hostile("clear_error")
def test_fedforest_hist_regression_moments_must_have_a_variance() -> None:
    X, _, groups = _data()
    y = 3.0 * X[:, 0] + 5.0
    mutate = _only(HistogramReply, _hist_negative_variance)
    fault = Fault("a", "mutate", round=2, mutate=mutate)
    model = FedForestRegressor(
        n_estimators=2, max_depth=3, random_state=0, candidates="hist"
    )
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'a', round 2, 'fedforest.histogram': field 'node_stats' .*"
        r"negative variance",
    ):
        model.fit_federation(Federation.from_groups(X, y, groups, faults=(fault,)))
