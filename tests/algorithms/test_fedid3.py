"""FederatedID3Classifier: exact against pooled ID3, ε-DP accounting, protocol (docs/icdta.md)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chi2_contingency

from fedtrees import FederatedID3Classifier, datasets
from fedtrees.algorithms.fedid3 import LevelReply, LevelRequest
from fedtrees.audit import audit_row_scaling, find_client_values
from fedtrees.exceptions import (
    RemoteProtocolError,
    ValidationError,
)
from fedtrees.federation import Fault, Federation
from fedtrees.learners import fit_id3, split_p_value
from fedtrees.tree import Tree
from tests.algorithms.ledger_helpers import (
    array_bytes,
    exchanges,
    fit_with_ledger,
    packed_bytes,
)
from tests.audit_helpers import estimator_fit, leveled


def _frame(X: np.ndarray, arity: np.ndarray) -> pd.DataFrame:
    """Codes as categorical columns whose categories are the codes themselves."""
    return pd.DataFrame(
        {
            f"f{j}": pd.Categorical(X[:, j], categories=list(range(int(arity[j]))))
            for j in range(X.shape[1])
        }
    )


def _same_tree(a: Tree, b: Tree) -> None:
    for name in ("kind", "feature", "left", "right", "branch_ptr", "branch_code"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    np.testing.assert_array_equal(a.branch_child, b.branch_child)
    np.testing.assert_allclose(a.value, b.value, atol=1e-12)
    np.testing.assert_allclose(a.count, b.count, atol=1e-9)


@st.composite
def federations(draw: st.DrawFn) -> dict[str, Any]:
    n = draw(st.integers(8, 80))
    arity = np.array(draw(st.lists(st.integers(1, 4), min_size=1, max_size=5)))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    X = rng.integers(0, arity, size=(n, arity.shape[0]))
    y = rng.integers(0, 3, size=n)
    if draw(st.booleans()):
        y = (X[:, 0] * 2 + X[:, -1]) % 3
    k = draw(st.integers(1, 7))
    if draw(st.booleans()):  # heterogeneous: clients hold ranges of one feature
        order = np.argsort(X[:, 0] * n + rng.permutation(n), kind="stable")
        groups = np.empty(n, dtype=np.int64)
        groups[order] = np.arange(n) * k // n
    else:
        groups = rng.integers(0, k, size=n)
    depth = draw(st.one_of(st.none(), st.integers(1, 5)))
    significance = draw(st.sampled_from([None, 0.01, 0.5]))
    return {
        "X": X,
        "y": y,
        "arity": arity,
        "groups": groups,
        "depth": depth,
        "significance": significance,
    }


@settings(max_examples=40)
@given(federations())
def test_exact_mode_equals_fit_id3_on_the_pooled_rows(case: dict[str, Any]) -> None:
    X, y, arity = case["X"], case["y"], case["arity"]
    model = FederatedID3Classifier(
        max_depth=case["depth"], significance=case["significance"]
    )
    model.fit(_frame(X, arity), y, groups=case["groups"])

    classes, codes = np.unique(y, return_inverse=True)
    pooled = fit_id3(
        X,
        codes,
        classes.shape[0],
        arity=arity,
        max_depth=case["depth"],
        significance=case["significance"],
    )

    _same_tree(model.tree_, pooled)
    assert (model.predict(_frame(X, arity)) == classes[pooled.predict(X)]).all()
    assert set(model.epsilon_spent_.values()) == {math.inf}  # exact: no guarantee


@settings(max_examples=60)
@given(
    st.lists(
        st.lists(st.integers(0, 40), min_size=2, max_size=4), min_size=2, max_size=5
    )
)
def test_split_p_value_is_the_log_likelihood_chi_square_test(
    rows: list[list[int]],
) -> None:
    # Reference: scipy's G-test on the table without its empty rows and columns.
    table = np.array([r + [0] * (4 - len(r)) for r in rows], dtype=float)
    kept = table[table.sum(axis=1) > 0][:, table.sum(axis=0) > 0]
    got = split_p_value(table)
    if min(kept.shape) < 2:
        assert got == 1.0
        return
    reference = chi2_contingency(kept, correction=False, lambda_="log-likelihood")
    assert got == pytest.approx(reference.pvalue, rel=1e-9, abs=1e-12)


def _noisy_id3_federation(seed: int, n: int) -> tuple[pd.DataFrame, np.ndarray]:
    """Twelve 5-valued features; the label is feature 0's parity, flipped 25 % of the time."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 5, size=(n, 12))
    y = np.where(rng.random(n) < 0.25, 1 - X[:, 0] % 2, X[:, 0] % 2)
    return _frame(X, np.full(12, 5)), y


def _reaching(tree: Tree, stops: np.ndarray) -> np.ndarray:
    """(rows, nodes): whether a row passes through a node, from where it stops."""
    parent = np.full(tree.n_nodes, -1)
    for node in range(tree.n_nodes):
        branches = tree.branch_child[tree.branch_ptr[node] : tree.branch_ptr[node + 1]]
        for child in [*branches.tolist(), tree.left[node], tree.right[node]]:
            if child >= 0:
                parent[child] = node
    out = np.zeros((stops.shape[0], tree.n_nodes), dtype=bool)
    for row, node in enumerate(stops.tolist()):
        while node >= 0:
            out[row, node], node = True, parent[node]
    return out


def test_the_default_tree_learns_the_signal_and_not_the_label_noise() -> None:
    # The paper's rule (every positive gain splits, to depth |F|/2 = 6) fits the
    # flipped labels: on fresh rows it scores well below the 75 % the signal
    # allows. The default splits only where a G-test rejects independence.
    X, y = _noisy_id3_federation(0, 3000)
    X_test, y_test = _noisy_id3_federation(1, 3000)
    groups = np.arange(3000) % 20
    default = FederatedID3Classifier().fit(X, y, groups=groups)
    paper = FederatedID3Classifier(significance=None).fit(X, y, groups=groups)
    assert default.tree_.feature[0] == 0  # the signal
    assert default.score(X_test, y_test) >= 0.74, default.score(X_test, y_test)
    assert paper.score(X_test, y_test) < 0.70, paper.score(X_test, y_test)
    assert default.tree_.n_nodes < paper.tree_.n_nodes / 10
    # Brute force: every split of the default tree rejects independence at 1 %
    # on the rows that reach it.
    codes = default.binning_.transform(X)
    path = _reaching(default.tree_, default.tree_.apply(codes))
    classes = np.searchsorted(default.classes_, y)
    for node in np.flatnonzero(default.tree_.feature >= 0):
        here = path[:, node]
        f = default.tree_.feature[node]
        table = np.zeros((5, 2))
        np.add.at(table, (codes[here, f].astype(int), classes[here]), 1.0)
        assert split_p_value(table) < 0.01, node


def test_numeric_columns_are_binned_by_declared_edges_as_pooled_codes() -> None:
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=300), "b": rng.uniform(0, 10, 300)})
    y = (X["a"] > 0.3).astype(int) + (X["b"] > 7).astype(int)
    edges = {"a": [-1.0, 0.0, 0.3, 1.0], "b": [2.5, 5.0, 7.0]}
    sites = rng.integers(0, 4, 300)

    model = FederatedID3Classifier(max_depth=2, bin_edges=edges)
    model.fit(X, y, groups=sites)

    codes = np.column_stack(
        [np.searchsorted(edges["a"], X["a"]), np.searchsorted(edges["b"], X["b"])]
    )
    pooled = fit_id3(codes, y.to_numpy(), 3, arity=[5, 4], max_depth=2)
    _same_tree(model.tree_, pooled)
    assert model.binning_.labels[1] == ("<= 2.5", "(2.5, 5]", "(5, 7]", "> 7")
    assert "b in {> 7}" in model.tree_.to_text()
    assert model.communication_.rounds == 1 + model.levels_  # no sketch round


def test_undeclared_numeric_columns_get_pooled_quantile_bins_in_one_round() -> None:
    rng = np.random.default_rng(1)
    X = pd.DataFrame(
        {"a": np.concatenate([rng.normal(0, 1, 400), rng.normal(5, 1, 400)])}
    )
    y = (X["a"] > 2.5).astype(int)
    sites = np.repeat([0, 1], 400)  # disjoint supports: client quantiles differ

    model = FederatedID3Classifier(max_depth=1).fit(X, y, groups=sites)

    edges = model.binning_.edges[0]
    pooled = np.quantile(X["a"], [0.2, 0.4, 0.6, 0.8])
    ranks = np.searchsorted(np.sort(X["a"]), edges) / 800
    np.testing.assert_allclose(ranks, [0.2, 0.4, 0.6, 0.8], atol=1 / 256 + 1 / 800)
    assert edges.shape == (4,)
    assert np.all(np.diff(edges) > 0)
    assert abs(edges[1] - pooled[1]) < 0.2
    assert model.communication_.by_kind().loc["discretize.sketch", "messages"] == 2


@pytest.mark.parametrize("binary", [False, True])
def test_every_client_is_charged_exactly_epsilon(binary: bool) -> None:
    car = datasets.load("car")
    sites = np.random.default_rng(0).integers(0, 5, car.n_samples)

    model = FederatedID3Classifier(epsilon=2.0, binary=binary, random_state=0)
    model.fit(car.X, car.y, groups=sites)

    assert model.epsilon_spent_ == dict.fromkeys([str(s) for s in range(5)], 2.0)
    # The levels grown spent levels/d of it (each reply checked); the rest of the
    # plan is charged too (Decision: charging the plan).
    answered = {c: round(e, 12) for c, e in model.epsilon_queried_.items()}
    assert set(answered.values()) == {round(2.0 * model.levels_ / model.max_depth_, 12)}


def _balanced(seed: int) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 3, size=(1200, 4))
    y = np.where(X[:, 0] == 2, 1, X[:, 1] % 2)
    flip = rng.random(1200) < 0.05
    y = np.where(flip, 1 - y, y)
    return _frame(X, np.array([3, 3, 3, 3])), y, rng.integers(0, 4, 1200)


def test_accuracy_falls_as_epsilon_shrinks_and_reaches_chance() -> None:
    means = []
    for epsilon in (None, 10.0, 1.0, 0.1, 0.001):
        scores = []
        for seed in range(6):
            X, y, sites = _balanced(seed)
            model = FederatedID3Classifier(epsilon=epsilon, random_state=seed)
            scores.append(model.fit(X, y, groups=sites).score(X, y))
        means.append(float(np.mean(scores)))
    assert means == sorted(means, reverse=True), means
    assert means[0] > 0.9
    assert abs(means[-1] - 0.5) < 0.1, means  # chance on a balanced binary label


def test_messages_hold_no_rows_and_the_ledger_follows_the_formula() -> None:
    rng = np.random.default_rng(2)
    sizes = [101, 163, 233]  # primes: no legitimate array has these lengths
    X = rng.integers(0, 3, size=(sum(sizes), 4))
    y = (X[:, 0] + X[:, 1]) % 2
    sites = np.repeat(["a", "b", "c"], sizes)
    federation = Federation.from_groups(_frame(X, np.full(4, 3)), y, sites)
    model = FederatedID3Classifier(epsilon=5.0, random_state=0)

    ledger = fit_with_ledger(model, federation)

    assert find_client_values(ledger, federation).messages == 2 * 3 * ledger.rounds
    assert ledger.rounds == 1 + model.levels_  # the agreement, then one per level
    binning = 4 + 16 * 4 + 8  # binned flags, pointers, arity; no edges (categories)
    for _, request, reply in exchanges(ledger):
        if isinstance(reply, LevelReply):
            assert isinstance(request, LevelRequest)
            s, f = request.allowed.shape
            cells = 2 * 3 * int(request.allowed.sum())  # Σ_s Σ_{f allowed} arity·C
            assert array_bytes(reply) == 8 * cells
            structure = packed_bytes([request.structure()], 2)
            expected = structure + 8 * s + s * f + binning + request.classes.nbytes
            assert array_bytes(request) == expected


def test_no_message_grows_with_the_rows() -> None:
    X, y, groups = leveled()
    report = audit_row_scaling(
        estimator_fit(lambda: FederatedID3Classifier(max_depth=2, random_state=0)),
        X,
        y,
        groups,
        per_row={"discretize.sketch_reply": ["points"]},  # exact below 256 rows
    )
    assert report.messages > 0
    assert report.per_row_by_design == ("discretize.sketch_reply.points",)


def test_a_hostile_spend_or_negative_exact_counts_are_refused() -> None:
    car = datasets.load("car")
    sites = np.random.default_rng(0).integers(0, 3, car.n_samples)

    def overspend(reply: LevelReply) -> LevelReply:
        return LevelReply(counts=reply.counts, epsilon_spent=reply.epsilon_spent / 2)

    def negative(reply: LevelReply) -> LevelReply:
        return LevelReply(counts=-reply.counts - 1, epsilon_spent=reply.epsilon_spent)

    for exact, fault in ((False, overspend), (True, negative)):
        federation = Federation.from_groups(
            car.X, car.y, sites, faults=[Fault("1", "mutate", round=1, mutate=fault)]
        )
        model = FederatedID3Classifier(epsilon=None if exact else 1.0, random_state=0)
        field = "counts" if exact else "epsilon_spent"
        with pytest.raises(RemoteProtocolError, match=f"Client '1'.*{field}"):
            model.fit_federation(federation)


def test_dp_refuses_the_sketch_round_naming_the_column() -> None:
    X = pd.DataFrame(
        {"colour": pd.Categorical(["r", "g"] * 20), "age": np.arange(40.0)}
    )
    with pytest.raises(ValidationError, match="column 'age' has none"):
        FederatedID3Classifier(epsilon=1.0).fit(X, [0, 1] * 20, groups=[0, 1] * 20)
    model = FederatedID3Classifier(epsilon=1.0, bin_edges={"age": [10, 20, 30]})
    assert model.fit(X, [0, 1] * 20, groups=[0, 1] * 20).binning_.arity.tolist() == [
        2,
        4,
    ]


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"epsilon": 0.0}, "'epsilon'"),
        ({"max_depth": 0}, "'max_depth'"),
        ({"binary": "yes"}, "'binary'"),
        ({"significance": 0.0}, "'significance'"),
        ({"significance": 1.5}, "'significance'"),
        ({"significance": "5%"}, "'significance'"),
        ({"n_bins": 1}, "'n_bins'"),
        ({"bin_edges": {"nope": [1.0]}}, "bin_edges"),
        ({"bin_edges": {"age": [2.0, 1.0]}}, r"bin_edges\['age'\]"),
        ({"bin_edges": {"colour": [1.0]}}, "categorical"),
    ],
)
def test_bad_settings_name_the_parameter(params: dict[str, Any], match: str) -> None:
    X = pd.DataFrame(
        {"colour": pd.Categorical(["r", "g"] * 10), "age": np.arange(20.0)}
    )
    with pytest.raises(ValidationError, match=match):
        FederatedID3Classifier(**params).fit(X, [0, 1] * 10)


def test_clients_with_other_categories_or_one_class_and_unseen_categories() -> None:
    a = pd.DataFrame({"c": pd.Categorical(["x", "y", "x"])})
    b = pd.DataFrame({"c": pd.Categorical(["x", "z", "z"])})
    federation = Federation.from_clients([(a, [0, 1, 0]), (b, [1, 1, 0])])
    union = FederatedID3Classifier().fit_federation(federation)  # the union, as fit:
    pooled = pd.concat([a, b], ignore_index=True).astype("category")
    expected = FederatedID3Classifier().fit(
        pooled, [0, 1, 0, 1, 1, 0], [0] * 3 + [1] * 3
    )
    np.testing.assert_array_equal(
        union.predict_proba(pooled), expected.predict_proba(pooled)
    )

    X = pd.DataFrame({"c": pd.Categorical(["x", "y", "x", "y"] * 5)})
    y = np.array(["no", "yes", "no", "yes"] * 5)
    sites = np.array([0, 0, 1, 1] * 5)
    y[sites == 0] = "no"  # client 0 holds a single class: it simply counts it
    model = FederatedID3Classifier().fit(X, y, groups=sites)
    unseen = pd.DataFrame({"c": pd.Categorical(["w"])})  # documented: stops there
    np.testing.assert_allclose(
        model.predict_proba(unseen), [model.tree_.value[0]], atol=1e-12
    )


def _best_gini_root(X: np.ndarray, y: np.ndarray) -> tuple[int, float]:
    """Brute force: the (feature, code threshold) of the largest Gini decrease.

    Ties go to the lower feature, then the lower threshold (as the split search).
    """

    def gini(labels: np.ndarray) -> float:
        p = np.bincount(labels, minlength=3) / max(len(labels), 1)
        return 1.0 - float((p * p).sum())

    best, found = 0.0, (-1, np.nan)  # a split must lower the Gini impurity
    for f in range(X.shape[1]):
        for t in np.unique(X[:, f])[:-1] + 0.5:
            left = X[:, f] <= t
            gain = (
                gini(y) - left.mean() * gini(y[left]) - (~left).mean() * gini(y[~left])
            )
            if gain > best + 1e-12:
                best, found = gain, (f, float(t))
    return found


@settings(max_examples=30)
@given(federations())
def test_binary_exact_mode_splits_the_root_at_the_best_gini_threshold(
    case: dict[str, Any],
) -> None:
    X, y, arity = case["X"], case["y"], case["arity"]
    # Declared edges between the integer values: bin codes equal the values.
    edges = {f"f{j}": np.arange(max(a, 2) - 1) + 0.5 for j, a in enumerate(arity)}
    frame = pd.DataFrame(X.astype(float), columns=[f"f{j}" for j in range(X.shape[1])])
    model = FederatedID3Classifier(max_depth=2, binary=True, bin_edges=edges)
    model.fit(frame, y, groups=case["groups"])
    pooled = FederatedID3Classifier(max_depth=2, binary=True, bin_edges=edges)
    pooled.fit(frame, y)  # one client holding every row

    _same_tree(model.tree_, pooled.tree_)
    feature, threshold = _best_gini_root(X, np.unique(y, return_inverse=True)[1])
    if feature < 0:  # no threshold lowers the impurity: the root is a leaf
        assert model.tree_.n_nodes == 1
        return
    root = (int(model.tree_.feature[0]), float(model.tree_.threshold[0]))
    assert root == (feature, threshold)


def test_a_sketch_whose_points_contradict_its_counts_is_refused() -> None:
    from fedtrees.algorithms._discretize import BinSketchReply

    def no_points(reply: BinSketchReply) -> BinSketchReply:
        return BinSketchReply(
            counts=reply.counts, points=np.full_like(reply.points, np.nan)
        )

    X = pd.DataFrame({"age": np.arange(40.0)})
    federation = Federation.from_groups(
        X,
        [0, 1] * 20,
        [0, 1] * 20,
        faults=[Fault("1", "mutate", round=1, mutate=no_points)],
    )
    with pytest.raises(RemoteProtocolError, match=r"Client '1'.*'points'.*counts > 0"):
        FederatedID3Classifier().fit_federation(federation)
