"""Replies that pass every shape and declared-bound check but no formula (issue 24).

Each value below has a bound its mathematics gives: a noisy count lies within
the client's rows give or take the reach of its noise, an impurity decrease in
``[0, I(node)]``, a gradient sum within its rows' weight, a CART threshold
within float32, a held-out error within what the forest's values allow. A
client that sends a value beyond it is refused by name (client, round, kind,
field) before its reply touches the model — or dropped from the round where the
method continues without a client (FedGA). Each case mutates one honest reply
with ``dataclasses.replace``.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from fedtrees import (
    FederatedID3Classifier,
    FedForestClassifier,
    FedForestRegressor,
    FedGAClassifier,
    FedGBDTClassifier,
    FedGBDTRegressor,
    ICDTAClassifier,
    LocalEnsembleClassifier,
    SyntheticDataClassifier,
)
from fedtrees.algorithms.fedforest import diagnose
from fedtrees.algorithms.fedforest._payloads import ScoreReply
from fedtrees.algorithms.fedforest._sketch_payloads import (
    AvgImpReply,
    SketchReply,
    TopKReply,
)
from fedtrees.algorithms.fedga._payloads import InitReply, JoinReply
from fedtrees.algorithms.fedgbdt._payloads import LevelReply, LocalReply
from fedtrees.algorithms.fedid3._payloads import LevelReply as CountsReply
from fedtrees.exceptions import ClientDropoutWarning, RemoteProtocolError
from fedtrees.federation import Fault, Federation, Payload
from fedtrees.tree import NodeKind

Mutation = Callable[[Any], Any]


def _only(kind: type[Payload], change: Mutation) -> Callable[[Payload], Payload]:
    """Mutate replies of type ``kind``; pass any other reply through unchanged."""

    def mutate(reply: Payload) -> Payload:
        return change(reply) if isinstance(reply, kind) else reply

    return mutate


def _data(rows: int = 60, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(4 * rows, 4))
    y = (X[:, 0] > 0).astype(int)
    return X, y, np.repeat(["a", "b", "c", "d"], rows)


def _federation(*faults: Fault, y: np.ndarray | None = None) -> Federation:
    X, labels, groups = _data()
    return Federation.from_groups(X, labels if y is None else y, groups, faults=faults)


# -- FedGA: a noisy size far beyond the client's rows ------------------------------
def _ga(**params: Any) -> FedGAClassifier:
    return FedGAClassifier(
        n_generations=2, population_size=6, depth_range=(2, 3), random_state=0,
        **params,
    )  # fmt: skip


@pytest.mark.hostile("documented")
@pytest.mark.parametrize("size", [1e12, 200.0, -1e6], ids=["1e12", "200", "-1e6"])
def test_fedga_drops_a_site_whose_noisy_size_is_beyond_its_rows(size: float) -> None:
    # Site d holds 60 rows (declared bound 64); noise of ε = 1 reaches 50 rows.
    # It used to weigh every fitness average: one site chose everyone's structure.
    fault = Fault("d", "mutate", round=1, mutate=_only(InitReply, _sized(size)))
    with pytest.warns(
        ClientDropoutWarning,
        match=r"Client 'd', round 1, 'fedga.init': field 'noisy_size' "
        r"(holds .*more than the 64 rows .*plus 50 of noise|is -1000000.0; at least "
        r"-50.0)",
    ):
        model = _ga().fit_federation(_federation(fault))
    # Left out of the start; it joins in the first generation, as a late joiner
    # does (steps 29-33), with the size it sends then.
    assert sorted(model.epsilon_spent_) == ["a", "b", "c", "d"]


def _sized(size: float) -> Mutation:
    return lambda r: dataclasses.replace(r, noisy_size=size)


@pytest.mark.hostile("documented")
def test_fedga_drops_a_late_joiner_whose_noisy_size_is_beyond_its_rows() -> None:
    fault = Fault("d", "mutate", mutate=_only(JoinReply, _sized(1e9)))
    with pytest.warns(
        ClientDropoutWarning,
        match=r"Client 'd', round \d+, 'fedga.join': field 'noisy_size' holds "
        r"1000000000.0, more than the 64 rows",
    ):
        model = _ga().fit_federation(_federation(fault), join_at={"d": 1})
    assert "d" not in model.epsilon_spent_


@pytest.mark.hostile("correct")
@pytest.mark.parametrize("epsilon", [0.05, 1.0, 100.0])
def test_fedga_honest_noisy_sizes_always_pass(epsilon: float) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", ClientDropoutWarning)
        model = _ga(epsilon=epsilon).fit_federation(_federation())
    assert sorted(model.epsilon_spent_) == ["a", "b", "c", "d"]


# -- Federated-ID3 with ε: noisy counts far beyond the rows ------------------------
@pytest.mark.hostile("clear_error")
def test_fedid3_noisy_counts_beyond_the_rows_are_refused() -> None:
    def inflate(r: CountsReply) -> CountsReply:
        return dataclasses.replace(r, counts=r.counts + 1e6)

    fault = Fault("b", "mutate", mutate=_only(CountsReply, inflate))
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'b', round \d+, 'fedid3.level': field 'counts' holds .*more "
        r"than the 64 rows .* plus \d+ of noise",
    ):
        FederatedID3Classifier(
            max_depth=2, epsilon=5.0, bin_edges=_EDGES
        ).fit_federation(_federation(fault))


_EDGES = {j: [-1.0, 0.0, 1.0] for j in range(4)}


@pytest.mark.hostile("correct")
def test_fedid3_honest_noisy_counts_pass() -> None:
    model = FederatedID3Classifier(max_depth=3, epsilon=0.5, bin_edges=_EDGES)
    model.fit_federation(_federation())
    assert model.epsilon_spent_ == dict.fromkeys("abcd", 0.5)


# -- FedForest AvgImp / top-k: impurity decreases outside [0, I(node)] ------------
def _avgimp(**params: Any) -> FedForestClassifier:
    return FedForestClassifier(
        n_estimators=2, max_depth=3, random_state=0, gain="avgimp",
        candidates="quantile", **params,
    )  # fmt: skip


def _gains(value: float) -> Mutation:
    return lambda r: dataclasses.replace(r, gains=np.full_like(r.gains, value))


GAIN_CASES = {
    "above gini's most (0.5)": (AvgImpReply, _gains(1e6), {}, "above 0.5"),
    "negative": (AvgImpReply, _gains(-0.3), {}, "below -1e-09"),
    "top-k above gini's most": (TopKReply, _gains(7.0), {"top_k": 2}, "above 0.5"),
    "entropy above log2(2)": (
        AvgImpReply, _gains(1.5), {"criterion": "entropy"}, "above 1.0",
    ),
}  # fmt: skip


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("case", list(GAIN_CASES))
def test_fedforest_avgimp_gains_beyond_the_most_impurity_are_refused(
    case: str,
) -> None:
    kind, change, params, reason = GAIN_CASES[case]
    fault = Fault("c", "mutate", mutate=_only(kind, change))
    with pytest.raises(
        RemoteProtocolError,
        match=rf"Client 'c', round \d+, 'fedforest.(evaluate|top_k)': field 'gains' "
        rf"holds values {reason}",
    ):
        _avgimp(**params).fit_federation(_federation(fault))


@pytest.mark.hostile("clear_error")
def test_fedforest_avgimp_gains_above_the_clients_own_impurity_are_refused() -> None:
    # Site c holds one class only: its nodes are pure, none of its splits gains.
    X, y, groups = _data()
    y[groups == "c"] = 1
    fault = Fault("c", "mutate", mutate=_only(AvgImpReply, _gains(0.4)))
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'c', round \d+, 'fedforest.evaluate': field 'gains' is "
        r"inconsistent .*impurity of the client's own node totals 0.4 exceeds",
    ):
        _avgimp().fit_federation(Federation.from_groups(X, y, groups, faults=(fault,)))


@pytest.mark.hostile("clear_error")
def test_fedforest_avgimp_regression_gains_above_the_node_variance_are_refused() -> (
    None
):
    X, _, groups = _data()
    fault = Fault(
        "a", "mutate", mutate=_only(AvgImpReply, lambda r: dataclasses.replace(
            r, gains=r.gains * 1e3 + 1.0))
    )  # fmt: skip
    model = FedForestRegressor(
        n_estimators=2, max_depth=3, random_state=0, gain="avgimp",
        candidates="quantile",
    )  # fmt: skip
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'a', round \d+, 'fedforest.evaluate': field 'gains' .*own "
        r"node totals",
    ):
        model.fit_federation(
            Federation.from_groups(X, 3 * X[:, 0], groups, faults=(fault,))
        )


@pytest.mark.hostile("correct")
@pytest.mark.parametrize("criterion", ["gini", "entropy"])
def test_fedforest_honest_avgimp_gains_pass(criterion: str) -> None:
    model = _avgimp(criterion=criterion, top_k=2).fit_federation(_federation())
    assert model.score(*_data()[:2]) > 0.9


# -- FedForest sketches: a node's points outside the interval its path allows ------
@pytest.mark.hostile("clear_error")
def test_fedforest_sketch_points_outside_their_nodes_interval_are_refused() -> None:
    # Round 3 sketches the root's left children (x0 <= t, the right ones are
    # pure): a point of 1e6 on x0 there is no row's value.
    def above(r: SketchReply) -> SketchReply:
        if not r.points.size:
            return r
        return dataclasses.replace(r, points=np.full_like(r.points, 1e6))

    fault = Fault("c", "mutate", round=3, mutate=_only(SketchReply, above))
    model = FedForestClassifier(
        n_estimators=3, max_depth=4, candidates="quantile", max_features=None,
        random_state=0,
    )  # fmt: skip
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'c', round 3, 'fedforest.sketch': field 'points' holds "
        r"1000000.0 at a node whose path allows only \(-inf, 0.0\d+\]",
    ):
        model.fit_federation(_federation(fault))


# -- FedGBDT: gradient sums beyond their rows' weight -------------------------------
def _gh(column: int, factor: float) -> Mutation:
    def change(r: LevelReply) -> LevelReply:
        gh = np.asarray(r.node_gh, np.float64).copy()
        gh[:, column] = np.asarray(r.node_weight, np.float64) * factor
        bins = np.asarray(r.bin_stats, np.float64).copy()
        bins[:, column] = bins[:, 2] * factor  # consistent with the node: sums agree
        return dataclasses.replace(r, node_gh=gh, bin_stats=bins)

    return change


GBDT_CASES = {
    "|Σg| above Σw": (FedGBDTClassifier, _gh(0, 3.0), "node_gh", r"\|Σg\|"),
    "Σh above Σw/4 (logloss)": (FedGBDTClassifier, _gh(1, 0.3), "node_gh", "Σh"),
    "Σh not Σw (squared error)": (
        FedGBDTRegressor, _gh(1, 2.0), "node_gh", "a hessian sum",
    ),
}  # fmt: skip


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("case", list(GBDT_CASES))
def test_fedgbdt_gradient_sums_beyond_the_weight_are_refused(case: str) -> None:
    estimator, change, field, reason = GBDT_CASES[case]
    X, y, groups = _data()
    target = y if estimator is FedGBDTClassifier else 2 * X[:, 1]
    fault = Fault("b", "mutate", mutate=_only(LevelReply, change))
    with pytest.raises(
        RemoteProtocolError,
        match=rf"Client 'b', round \d+, 'fedgbdt.level': field '{field}' is "
        rf"inconsistent .*{reason}",
    ):
        estimator(n_estimators=2, max_depth=2, random_state=0).fit_federation(
            Federation.from_groups(X, target, groups, faults=(fault,))
        )


@pytest.mark.hostile("clear_error")
def test_fedgbdt_a_logloss_sum_beyond_its_most_is_refused() -> None:
    def inflate(r: LevelReply) -> LevelReply:
        loss = np.asarray(r.loss, np.float64).copy()
        loss[0] = 40.0 * loss[1] + 1.0  # above -log(1e-16) ≈ 36.8 per unit weight
        return dataclasses.replace(r, loss=loss)

    fault = Fault("c", "mutate", mutate=_only(LevelReply, inflate))
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'c', round \d+, 'fedgbdt.level': field 'loss' .*logloss sum",
    ):
        FedGBDTClassifier(n_estimators=3, max_depth=2, random_state=0).fit_federation(
            _federation(fault)
        )


@pytest.mark.hostile("clear_error")
def test_fedgbdt_a_bagged_leaf_weight_beyond_its_cover_is_refused() -> None:
    def inflate(r: LocalReply) -> LocalReply:
        return dataclasses.replace(r, d_value=np.asarray(r.d_value) * 1e6 + 1.0)

    fault = Fault("a", "mutate", mutate=_only(LocalReply, inflate))
    model = FedGBDTClassifier(
        n_estimators=2, max_depth=2, protocol="bagging", random_state=0
    )
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'a', round \d+, 'fedgbdt.local': field 'd_value' .*leaf weight",
    ):
        model.fit_federation(_federation(fault))


@pytest.mark.hostile("correct")
@pytest.mark.parametrize("protocol", ["bagging", "cyclic"])
def test_fedgbdt_honest_local_trees_pass(protocol: str) -> None:
    model = FedGBDTClassifier(
        n_estimators=3, max_depth=3, protocol=protocol, reg_lambda=0.0,
        min_child_weight=0.0, random_state=0,
    )  # fmt: skip
    assert model.fit_federation(_federation()).score(*_data()[:2]) > 0.9


# -- CART thresholds no tree learns (synthetic data, ICDTA-CART, local forests) -----
def _far_threshold(value: float) -> Mutation:
    def change(r: Any) -> Any:
        threshold = np.asarray(r.threshold, np.float64).copy()
        numeric = np.asarray(r.node_kind) == NodeKind.NUMERIC
        threshold[np.flatnonzero(numeric)[0]] = value
        return dataclasses.replace(r, threshold=threshold)

    return change


def _trees(change: Mutation) -> Callable[[Payload], Payload]:
    return lambda r: change(r) if hasattr(r, "threshold") else r


THRESHOLD_CASES: dict[str, tuple[Callable[[], Any], str, float, str]] = {
    # no declared range: synthetic rows around 1e308 would overflow
    "synthetic": (
        lambda: SyntheticDataClassifier(samples_per_path=10, random_state=0),
        "synthetic.tree", 1e308, r"field 'threshold' .*outside its range \[-2.8\d*e\+306, 2.8\d*e\+306\]",
    ),
    "icdta-cart": (
        lambda: ICDTAClassifier(base="cart", max_depth=2, random_state=0),
        "icdta.fit", -np.inf, r"field 'trees' .*finite threshold",
    ),
    "local": (
        lambda: LocalEnsembleClassifier(n_estimators=2, max_depth=2, random_state=0),
        "local.forest", np.nan, r"field 'trees' .*finite threshold",
    ),
}  # fmt: skip


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("method", list(THRESHOLD_CASES))
def test_a_cart_threshold_no_tree_learns_is_refused(method: str) -> None:
    make, kind, value, reason = THRESHOLD_CASES[method]
    fault = Fault("a", "mutate", mutate=_trees(_far_threshold(value)))
    with pytest.raises(
        RemoteProtocolError,
        match=rf"Client 'a', round \d+, '{kind}': .*{reason}",
    ):
        make().fit_federation(_federation(fault))


# -- FedForest held-out scores (the diagnostics) ------------------------------------
@pytest.mark.hostile("clear_error")
def test_held_out_rows_beyond_the_declared_rows_are_refused() -> None:
    def inflate(r: ScoreReply) -> ScoreReply:
        sums = np.asarray(r.sums, np.float64).copy()
        sums[:2] = 1e6  # every row correct: within the histogram's checks' reach
        return dataclasses.replace(r, sums=sums, hist=r.hist * 0)

    fault = Fault("b", "mutate", mutate=_only(ScoreReply, inflate))
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'b', round \d+, 'fedforest.score': field 'sums' holds "
        r"1000000.0, more than the 64 rows",
    ):
        diagnose(_federation(fault), n_estimators=2, max_depth=2, random_state=0)


@pytest.mark.hostile("clear_error")
def test_a_held_out_error_no_forest_value_allows_is_refused() -> None:
    def inflate(r: ScoreReply) -> ScoreReply:
        if r.hist.size:  # a classification forest's score (diagnose runs both)
            return r
        sums = np.asarray(r.sums, np.float64).copy()
        sums[2] = 1e12  # Σ(y - ŷ)² far beyond (||y|| + √n · max|ŷ|)²
        return dataclasses.replace(r, sums=sums)

    X, _, groups = _data()
    fault = Fault("c", "mutate", mutate=_only(ScoreReply, inflate))
    with pytest.raises(
        RemoteProtocolError,
        match=r"Client 'c', round \d+, 'fedforest.score': field 'sums' is "
        r"inconsistent .*the squared error",
    ):
        diagnose(
            Federation.from_groups(X, X[:, 0] + 1.0, groups, faults=(fault,)),
            task="regression", n_estimators=2, max_depth=2, random_state=0,
        )  # fmt: skip
