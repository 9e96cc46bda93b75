"""SyntheticDataClassifier: Algorithm 1, the vote, the flips, the messages (docs/synthetic.md)."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.utils.class_weight import compute_sample_weight

from fedtrees import SyntheticDataClassifier, Tree, datasets
from fedtrees.algorithms.histogram import fit_binned_cart
from fedtrees.algorithms.synthetic import (
    FillSpec,
    GenerationSpec,
    flip_probability,
    generate,
    sub_path_boxes,
)
from fedtrees.algorithms.synthetic._payloads import TreeReply
from fedtrees.audit import audit_row_scaling, find_client_values
from fedtrees.exceptions import RemoteProtocolError, ValidationError
from fedtrees.federation import Fault, Federation
from fedtrees.learners import fit_cart
from fedtrees.tree import NodeKind, vote_shares
from tests.algorithms.ledger_helpers import (
    array_bytes,
    exchanges,
    fit_with_ledger,
    packed_bytes,
)
from tests.audit_helpers import estimator_fit, leveled

RANGES = np.array([[0.0, 10.0], [-5.0, 5.0], [0.0, 1.0]])


def _random_tree(seed: int, depth: int, n_classes: int = 3) -> Tree:
    """A CART on random rows within RANGES (features reused along paths)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(RANGES[:, 0], RANGES[:, 1], size=(400, 3))
    y = (np.floor(X[:, 0] / 2) + (X[:, 1] > 0) + rng.integers(0, 2, 400)) % n_classes
    return fit_cart(X, y.astype(np.int64), n_classes=n_classes, max_depth=depth, seed=0)


def _spec(fill: FillSpec, m: int = 30, p_max: float = 0.0, seed: int = 0) -> Any:
    return GenerationSpec(m, 0.1, fill, p_max, None, seed)


# -- Algorithm 1 ------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    depth=st.integers(1, 6),
    mode=st.sampled_from(["outside", "uniform"]),
)
def test_every_row_satisfies_its_sub_path_and_the_rest_is_filled(
    seed: int, depth: int, mode: str
) -> None:
    tree = _random_tree(seed, depth)
    fill = FillSpec(mode)  # type: ignore[arg-type]
    synthetic = generate({"a": tree}, RANGES, _spec(fill, seed=seed))

    rules = {rule.leaf: rule for rule in tree.rules()}
    assert synthetic.X.shape[0] == 30 * sum(len(r.conditions) for r in rules.values())
    outside = RANGES[:, 0] - (RANGES[:, 1] - RANGES[:, 0])
    keys = np.column_stack([synthetic.leaf, synthetic.suffix])
    for leaf, i in np.unique(keys, axis=0):
        rows = synthetic.X[(synthetic.leaf == leaf) & (synthetic.suffix == i)]
        conditions = rules[leaf].conditions[len(rules[leaf].conditions) - i :]
        assert rows.shape[0] == 30
        for condition in conditions:
            assert condition.holds(rows).all(), (leaf, i, condition)
        tested = sorted({c.feature for c in conditions})
        others = np.setdiff1d(np.arange(3), tested)
        if mode == "outside":
            np.testing.assert_array_equal(
                rows[:, others], np.tile(outside[others], (30, 1))
            )
        else:
            assert (rows[:, others] >= RANGES[others, 0]).all()
            assert (rows[:, others] <= RANGES[others, 1]).all()


def test_a_value_comes_from_its_last_condition_narrowed_by_the_others() -> None:
    # x <= 10, then x > 9.5: the α-interval of "> 9.5" is (9.5, 10.45], cut at 10.
    tree = _tree_with_path([(0, "<=", 10.0), (0, ">", 9.5)])
    (leaf,) = [
        r.leaf for r in tree.rules() if [c.op for c in r.conditions] == ["<=", ">"]
    ]
    boxes = sub_path_boxes(tree, alpha=0.1)
    (path,) = np.flatnonzero((boxes.leaf == leaf) & (boxes.suffix == 2))
    entry = boxes.path == path
    assert (boxes.low[entry], boxes.high[entry], boxes.low_open[entry]) == (
        9.5,
        10.0,
        True,
    )
    # A threshold of 0 gets the width α (not α·|t| = 0).
    zero = sub_path_boxes(_tree_with_path([(1, "<=", 0.0)]), alpha=0.1)
    np.testing.assert_allclose([zero.low[0], zero.high[0]], [-0.1, 0.0])


def _tree_with_path(path: list[tuple[int, str, float]]) -> Tree:
    """A tree whose leftmost-or-rightmost path holds the given conditions."""
    from fedtrees.tree import NodeStats, TreeBuilder

    b = TreeBuilder(n_features=3, classes=np.array([0, 1]))
    node = b.add_root(NodeStats.from_class_counts([5, 5]))
    for feature, op, t in path:
        left, right = b.split_numeric(
            node,
            feature,
            t,
            NodeStats.from_class_counts([4, 1]),
            NodeStats.from_class_counts([1, 4]),
        )
        node = left if op == "<=" else right
    return b.build()


def test_the_flip_rate_is_p_max_times_one_minus_i_over_l() -> None:
    tree = _random_tree(3, 4, n_classes=2)
    synthetic = generate(
        {"a": tree}, RANGES, _spec(FillSpec("outside"), m=4000, p_max=0.5)
    )
    frame = pd.DataFrame(
        {"i": synthetic.suffix, "L": synthetic.length, "flip": synthetic.flipped}
    )
    checked = 0
    for (i, L), group in frame.groupby(["i", "L"]):
        p = 0.5 * (1 - i / L)
        n = group.shape[0]
        assert abs(group.flip.mean() - p) <= 4 * np.sqrt(p * (1 - p) / n) + 1e-12
        checked += int(i < L)
    assert checked >= 3
    # The vote itself is the tree's prediction (one tree): flips are the only noise.
    np.testing.assert_array_equal(synthetic.vote, tree.predict(synthetic.X))


def test_a_flip_schedule_goes_by_conditions_cut_and_flips_to_other_classes() -> None:
    p = flip_probability(
        np.array([1, 2, 3, 1]), np.array([3, 3, 3, 5]), 0.5, [0.55, 0.65]
    )
    np.testing.assert_allclose(p, [0.65, 0.55, 0.0, 0.65])
    tree = _random_tree(4, 3, n_classes=3)
    spec = GenerationSpec(3000, 0.1, FillSpec("outside"), 0.0, (1.0,), 0)
    synthetic = generate({"a": tree}, RANGES, spec)
    cut = synthetic.suffix < synthetic.length
    assert (synthetic.y[cut] != synthetic.vote[cut]).all()  # p = 1: always another
    assert (synthetic.y[~cut] == synthetic.vote[~cut]).all()
    shifts = (synthetic.y[cut] - synthetic.vote[cut]) % 3
    assert abs((shifts == 1).mean() - 0.5) < 0.05  # the other classes, uniformly


def test_rows_are_keyed_by_client_and_labelled_by_the_vote_of_all_trees() -> None:
    trees = {c: _random_tree(s, 3) for c, s in [("a", 1), ("b", 2), ("c", 3)]}
    spec = _spec(FillSpec("uniform"), m=20)
    full = generate(trees, RANGES, spec)
    alone = generate({"b": trees["b"]}, RANGES, spec)
    np.testing.assert_array_equal(full.X[full.source == 1], alone.X)
    shares = vote_shares(list(trees.values()), full.X)
    np.testing.assert_array_equal(full.vote, np.argmax(shares, axis=1))


# -- the estimator ------------------------------------------------------------------
def _blobs(n: int = 900, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(RANGES[:, 0], RANGES[:, 1], size=(n, 3))
    y = np.where(X[:, 0] > 6, "high", np.where(X[:, 1] > 1, "mid", "low"))
    return X, y


def _one_client_agreement(fill: str) -> float:
    X, y = _blobs()
    model = SyntheticDataClassifier(
        client_max_depth=4,
        samples_per_path=1000,
        p_max=0.0,
        fill=fill,
        feature_ranges=RANGES,
        random_state=0,
    ).fit(X, y)
    (client,) = model.client_trees_.values()
    test = np.random.default_rng(1).uniform(RANGES[:, 0], RANGES[:, 1], (5000, 3))
    return float((model.predict(test) == client.predict(test)).mean())


def test_one_client_without_flips_gives_back_its_own_tree() -> None:
    assert _one_client_agreement("uniform") >= 0.98


def test_an_out_of_range_fill_misplaces_rows_of_short_sub_paths() -> None:
    # The paper's fill puts every untested feature below its range, so rows made
    # for "x0 > 6 → high" (x1 untested) sit on the "x1 <= 1" side of every
    # split: the global tree may split x1 first and route those rows wrongly.
    assert _one_client_agreement("outside") < 0.95


@pytest.fixture(scope="module")
def adult_200() -> dict[str, Any]:
    """Adult (rows with ? dropped): 8,000 training rows dealt to 200 clients."""
    data = datasets.load("adult", dropna=True)
    train = (data.split == "train").to_numpy()
    rng = np.random.default_rng(0)
    rows = rng.choice(np.flatnonzero(train), 8000, replace=False)
    test = np.flatnonzero(~train)
    y_test = data.y.to_numpy()[test]
    return {
        "X": data.X.iloc[rows].reset_index(drop=True),
        "y": data.y.to_numpy()[rows],
        "groups": np.arange(8000) % 200,
        "X_test": data.X.iloc[test].reset_index(drop=True),
        "y_test": y_test,
        "majority": float(pd.Series(y_test).value_counts(normalize=True).iloc[0]),
    }


def test_adult_with_200_clients_beats_the_majority_rate_by_3_points(
    adult_200: dict[str, Any],
) -> None:
    # With the default global depth. The former default (global_max_depth=None)
    # grew the global tree until its leaves were pure, fitted the flipped labels
    # and scored 56 % here, against a majority rate of 75 %.
    model = SyntheticDataClassifier(samples_per_path=30, random_state=0).fit(
        adult_200["X"], adult_200["y"], groups=adult_200["groups"]
    )
    accuracy = model.score(adult_200["X_test"], adult_200["y_test"])
    assert accuracy >= adult_200["majority"] + 0.03, (accuracy, adult_200["majority"])
    assert model.tree_.max_depth <= 10


def _global_reference(
    model: SyntheticDataClassifier, depth: Any, leaf: int, weight: Any = None
) -> Tree:
    """The global tree refitted on the model's synthetic set: binned CART, given limits."""
    return fit_binned_cart(
        model.synthetic_X_.to_numpy(),
        np.searchsorted(model.classes_, model.synthetic_y_),
        n_classes=len(model.classes_),
        max_depth=depth,
        criterion="entropy",
        min_samples_split=2,
        min_samples_leaf=leaf,
        sample_weight=weight,
    )


def _noisy_federation() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """20 clients of noisy two-class rows: a full global tree fits the flips."""
    rng = np.random.default_rng(4)
    X = rng.uniform(RANGES[:, 0], RANGES[:, 1], size=(2000, 3))
    y = (X[:, 0] + X[:, 1] + rng.normal(0, 2, 2000) > 5).astype(int)
    return X, y, np.arange(2000) % 20


@pytest.mark.parametrize("m", [20, 50])
def test_the_default_global_tree_is_bounded_and_every_leaf_holds_a_sub_path(
    m: int,
) -> None:
    X, y, groups = _noisy_federation()
    model = SyntheticDataClassifier(samples_per_path=m, random_state=1)
    model.fit(X, y, groups=groups)
    tree = model.tree_
    # Brute force: route every synthetic row, count the rows of every leaf.
    rows = np.bincount(
        tree.apply(model.synthetic_X_.to_numpy()), minlength=tree.n_nodes
    )
    leaves = tree.kind == NodeKind.LEAF
    assert rows[leaves].min() >= m
    assert tree.max_depth <= 10
    assert tree.n_leaves > 1
    reference = _global_reference(model, 10, m)
    np.testing.assert_array_equal(tree.feature, reference.feature)
    np.testing.assert_array_equal(tree.threshold, reference.threshold)
    # What the former default grows on the same rows: leaves of one row.
    full = _global_reference(model, None, 1)
    assert full.max_depth > 10
    assert (
        np.bincount(full.apply(model.synthetic_X_.to_numpy()))[
            full.kind == NodeKind.LEAF
        ].min()
        < m
    )


def test_the_global_tree_is_the_binned_cart_of_the_synthetic_rows() -> None:
    # The server's own rows, binned (docs/synthetic.md): at most 254 thresholds
    # per column, cut at the rows' quantiles; class weights weigh the rows as
    # scikit-learn's class_weight does. scikit-learn's exact CART on the same
    # rows (the global tree before) splits between adjacent values instead.
    X, y, groups = _noisy_federation()
    model = SyntheticDataClassifier(
        samples_per_path=50, class_weight="balanced", random_state=2
    ).fit(X, y, groups=groups)
    rows = model.synthetic_X_.to_numpy()
    codes = np.searchsorted(model.classes_, model.synthetic_y_)
    assert min(np.unique(rows[:, j]).shape[0] for j in range(3)) > 255
    weights = compute_sample_weight("balanced", codes)
    reference = _global_reference(model, 10, 50, weights)
    tree = model.tree_
    assert tree.n_leaves > 8
    for name in ("feature", "threshold", "left", "right", "count", "value"):
        np.testing.assert_array_equal(getattr(tree, name), getattr(reference, name))
    for j in range(3):
        used = np.unique(tree.threshold[tree.feature == j])
        assert used.shape[0] <= 254
    exact = fit_cart(
        rows, codes, n_classes=2, max_depth=10, seed=0, criterion="entropy",
        min_samples_leaf=50, class_weight="balanced",
    )  # fmt: skip
    assert not np.array_equal(tree.threshold, exact.threshold, equal_nan=True)


@pytest.mark.parametrize(("depth", "leaf"), [(None, 1), (7, 1), (4, 3)])
def test_a_given_global_depth_keeps_the_given_leaf_size(depth: Any, leaf: int) -> None:
    # The paper's behaviour (a fixed depth, leaves of min_samples_leaf) and the
    # former default (None: grown until pure) stay one parameter value away.
    X, y, groups = _noisy_federation()
    model = SyntheticDataClassifier(
        samples_per_path=20,
        global_max_depth=depth,
        min_samples_leaf=leaf,
        random_state=1,
    ).fit(X, y, groups=groups)
    reference = _global_reference(model, depth, leaf)
    np.testing.assert_array_equal(model.tree_.threshold, reference.threshold)
    if depth is not None:
        assert model.tree_.max_depth == depth


def test_the_papers_out_of_range_fill_collapses_the_vote_to_the_majority(
    adult_200: dict[str, Any],
) -> None:
    # The paper's census figure (75.43 %) is the majority rate: with every untested
    # feature below its range, almost every tree of 200 votes "<=50K" everywhere.
    model = SyntheticDataClassifier(
        fill="outside", global_max_depth=7, samples_per_path=30, random_state=0
    ).fit(adult_200["X"], adult_200["y"], groups=adult_200["groups"])
    votes = model.synthetic_origin_["vote"]
    assert (votes == "<=50K").mean() > 0.99
    accuracy = model.score(adult_200["X_test"], adult_200["y_test"])
    assert abs(accuracy - adult_200["majority"]) < 0.01


def _frame(n: int = 600, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(
        {
            "colour": pd.Categorical(rng.choice(["red", "green", "blue"], n)),
            "size": rng.uniform(0, 10, n),
        }
    )
    y = np.where((X["colour"] == "red") | (X["size"] > 7), "yes", "no")
    return X, y, np.repeat(["north", "south", "east"], n // 3)


def test_messages_are_trees_only_and_bytes_are_the_packed_tree() -> None:
    sizes = [211, 307, 401]  # primes: no legitimate array has these lengths
    X, y, _ = _frame(sum(sizes), seed=2)
    sites = np.repeat(["a", "b", "c"], sizes)
    model = SyntheticDataClassifier(random_state=0)
    federation = Federation.from_groups(X, y, sites)
    ledger = fit_with_ledger(model, federation)

    assert find_client_values(ledger, federation).messages == 2 * 3 * 2
    assert ledger.rounds == 2  # the agreement, then one round of trees
    replies = [(m, r) for m, _, r in exchanges(ledger) if isinstance(r, TreeReply)]
    assert sorted(m.client for m, _ in replies) == ["a", "b", "c"]
    for message, reply in replies:
        tree = model.client_trees_[message.client]
        assert array_bytes(reply) == packed_bytes([tree], 2)
        assert (
            len(message.data)
            == ledger.to_frame()
            .query("client == @message.client and round == 1")
            .bytes_up.item()
        )
    assert model.synthetic_X_.columns.tolist() == [
        "colour=blue",
        "colour=green",
        "colour=red",
        "size",
    ]


def test_no_message_grows_with_the_rows() -> None:
    X, y, groups = leveled()
    report = audit_row_scaling(
        estimator_fit(
            lambda: SyntheticDataClassifier(client_max_depth=2, random_state=0)
        ),
        X,
        y,
        groups,
    )
    assert report.messages == 3 * 2 * 3 * 2  # size audit, then each run's values
    assert report.per_row_by_design == ()


def test_frames_string_labels_text_pickle_and_the_same_seed() -> None:
    X, y, sites = _frame()
    model = SyntheticDataClassifier(global_max_depth=4, random_state=3)
    model.fit(X, y, groups=sites)
    assert set(model.predict(X)) <= {"no", "yes"}
    assert model.score(X, y) > 0.8
    assert "colour=red" in model.tree_.to_text()
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(again.predict(X), model.predict(X))
    same = SyntheticDataClassifier(global_max_depth=4, random_state=3, workers=3)
    same.fit(X, y, groups=sites)
    assert same.tree_ == model.tree_
    np.testing.assert_array_equal(same.synthetic_X_, model.synthetic_X_)


# -- bad input ------------------------------------------------------------------------
def test_a_single_leaf_client_votes_but_makes_no_rows() -> None:
    X, y, sites = _frame()
    y = np.where(sites == "east", "no", y)  # east holds one class: a single leaf
    model = SyntheticDataClassifier(random_state=0).fit(X, y, groups=sites)
    assert model.client_trees_["east"].n_nodes == 1
    assert "east" not in set(model.synthetic_origin_["client"])
    with pytest.raises(ValidationError, match="every client's tree is a single leaf"):
        SyntheticDataClassifier(random_state=0).fit(X, np.full(600, "no"), groups=sites)


def test_classes_missing_at_some_clients_keep_the_agreed_columns() -> None:
    X, y, sites = _frame()
    y = np.where((sites == "north") & (y == "yes"), "maybe", y)  # only north has it
    model = SyntheticDataClassifier(random_state=0).fit(X, y, groups=sites)
    assert model.classes_.tolist() == ["maybe", "no", "yes"]
    for tree in model.client_trees_.values():
        assert tree.value.shape[1] == 3
    assert model.predict_proba(X).shape == (600, 3)


def test_a_range_that_excludes_a_clients_threshold_names_client_and_column() -> None:
    X, y, sites = _frame()
    narrow = {"size": (0.0, 5.0)}  # the clients split "size" near 7
    with pytest.raises(RemoteProtocolError, match=r"Client '\w+'.*'size'.*\[0, 5\]"):
        SyntheticDataClassifier(feature_ranges=narrow, random_state=0).fit(
            X, y, groups=sites
        )


def test_a_hostile_tree_is_refused_before_it_is_used() -> None:
    X, y, sites = _frame()

    def categorical_root(reply: Any) -> Any:
        kind = reply.node_kind.copy()
        kind[0] = int(NodeKind.CATEGORICAL)
        return type(reply)(**{**vars(reply), "node_kind": kind})

    fed = Federation.from_groups(
        X, y, sites, faults=[Fault("south", "mutate", round=1, mutate=categorical_root)]
    )
    with pytest.raises(RemoteProtocolError, match="south"):
        SyntheticDataClassifier(random_state=0).fit_federation(fed)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"samples_per_path": 0}, "samples_per_path"),
        ({"client_max_depth": 0}, "client_max_depth"),
        ({"alpha": 0.0}, "alpha"),
        ({"p_max": 1.5}, "p_max"),
        ({"fill": "inside"}, "fill"),
        ({"fill": [1.0, np.nan]}, "fill"),
        ({"flip_schedule": [0.5, 2.0]}, "flip_schedule"),
        ({"global_max_depth": 0}, "global_max_depth"),
        ({"global_max_depth": "deep"}, "global_max_depth"),
        ({"global_max_depth": 2.5}, "global_max_depth"),
        ({"class_weight": {"purple": 2.0}}, "purple"),
        ({"class_weight": "heavy"}, "class_weight"),
        ({"feature_ranges": {"size": (5.0, 1.0)}}, "size"),
    ],
)
def test_bad_settings_name_the_parameter(params: dict[str, Any], match: str) -> None:
    X, y, sites = _frame()
    with pytest.raises(ValidationError, match=match):
        SyntheticDataClassifier(**params).fit(X, y, groups=sites)
