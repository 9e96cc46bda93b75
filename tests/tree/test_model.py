from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fedtrees.exceptions import ValidationError
from fedtrees.tree import LEAF, Missing, NodeKind, NodeStats, Tree, TreeBuilder
from tests.tree.helpers import random_tree, random_X, reference_value

DIRECTIONS = (Missing.LEFT, Missing.RIGHT, Missing.LARGER)

CLIENTS = ("h1", "h2", "h3", "h4")


@given(seed=st.integers(0, 10_000), n_classes=st.sampled_from([0, 2, 4]))
def test_predict_matches_per_row_reference(seed: int, n_classes: int) -> None:
    tree = random_tree(seed, n_classes=n_classes, clients=CLIENTS)
    X = random_X(seed + 1, tree, 60)
    client_idx = np.random.default_rng(seed).integers(0, len(CLIENTS), size=60)
    names = np.array(CLIENTS, dtype=object)[client_idx]
    expected = np.stack(
        [reference_value(tree, x, int(c)) for x, c in zip(X, client_idx, strict=True)]
    )
    np.testing.assert_allclose(
        tree.predict_value(X, client=names), expected, rtol=0, atol=1e-12
    )


@given(seed=st.integers(0, 10_000))
def test_unknown_client_mixes_branches_by_training_counts(seed: int) -> None:
    tree = random_tree(seed, clients=CLIENTS)
    X = random_X(seed + 2, tree, 40)
    expected = np.stack([reference_value(tree, x, None) for x in X])
    np.testing.assert_allclose(tree.predict_value(X), expected, atol=1e-12)
    np.testing.assert_allclose(tree.predict_value(X).sum(axis=1), 1.0)


@given(seed=st.integers(0, 10_000))
def test_apply_reaches_the_node_whose_value_predict_returns(seed: int) -> None:
    tree = random_tree(seed, clients=None)
    X = random_X(seed + 3, tree, 50)
    nodes = tree.apply(X)
    np.testing.assert_array_equal(tree.predict_value(X), tree.value[nodes])
    stopped = tree.kind[nodes] != NodeKind.LEAF
    # A row may stop at an internal node only at a categorical split without default.
    assert np.all(tree.kind[nodes[stopped]] == NodeKind.CATEGORICAL)
    assert np.all(tree.right[nodes[stopped]] == LEAF)


def _client_tree() -> Tree:
    b = TreeBuilder(
        n_features=1, classes=np.array(["no", "yes"]), clients=["a", "b", "c"]
    )
    root = b.add_root(NodeStats.from_class_counts([5, 5]))
    b.split_client(
        root,
        [([0], NodeStats.from_class_counts([4, 0]))],
        NodeStats.from_class_counts([1, 5]),
    )
    return b.build()


def test_client_split_mixture_weights_are_branch_counts() -> None:
    tree = _client_tree()
    proba = tree.predict_proba([[0.0]])
    # branch counts 4 and 6: 0.4 * [1, 0] + 0.6 * [1/6, 5/6]
    np.testing.assert_allclose(proba, [[0.4 + 0.1, 0.5]])
    assert tree.predict([[0.0]], client="a").tolist() == ["no"]
    assert tree.predict([[0.0]], client="c").tolist() == ["yes"]


def test_apply_without_client_at_a_client_split_is_an_error() -> None:
    with pytest.raises(ValidationError, match="client is unknown; pass client="):
        _client_tree().apply([[0.0]])


def test_unknown_client_name_is_an_error() -> None:
    with pytest.raises(
        ValidationError, match="names 'zz', which is not a known client"
    ):
        _client_tree().predict([[0.0]], client="zz")


def test_client_ids_must_match_rows() -> None:
    with pytest.raises(ValidationError, match="one id or 2 ids"):
        _client_tree().predict([[0.0], [1.0]], client=["a", "b", "c"])


def test_multiway_split_stops_at_the_node_for_unseen_category() -> None:
    b = TreeBuilder(n_features=1, classes=np.array([0, 1]))
    root = b.add_root(NodeStats.from_class_counts([3, 1]))
    b.split_categorical(
        root,
        0,
        [
            ([0], NodeStats.from_class_counts([3, 0])),
            ([1], NodeStats.from_class_counts([0, 1])),
        ],
        default=None,
    )
    tree = b.build()
    assert tree.apply([[0.0], [1.0], [2.0], [0.5], [-1.0]]).tolist() == [1, 2, 0, 0, 0]
    np.testing.assert_allclose(tree.predict_proba([[7.0]]), [[0.75, 0.25]])


def test_category_set_split_sends_other_codes_to_default() -> None:
    b = TreeBuilder(n_features=1, categories=[("r", "g", "b")])
    root = b.add_root(NodeStats.from_mean(1.0, 4))
    b.split_categorical(
        root, 0, [([0, 2], NodeStats.from_mean(0.0, 2))], NodeStats.from_mean(2.0, 2)
    )
    tree = b.build()
    assert tree.predict([[0.0], [1.0], [2.0], [9.0]]).tolist() == [0.0, 2.0, 0.0, 2.0]


def test_regression_predict_returns_means() -> None:
    tree = random_tree(7, n_classes=0)
    X = random_X(8, tree, 10)
    np.testing.assert_array_equal(tree.predict(X), tree.predict_value(X)[:, 0])
    with pytest.raises(ValidationError, match="needs a classification tree"):
        tree.predict_proba(X)


def test_inf_in_X_names_the_column() -> None:
    b = TreeBuilder(n_features=2, feature_names=["age", "chol"])
    b.add_root(NodeStats.from_mean(0.0, 1))
    tree = b.build()
    message = (
        r"Column 'chol' of 'X' \(Tree.predict\) holds inf at row 1; finite values "
        r"or NaN \(missing\) were expected"
    )
    with pytest.raises(ValidationError, match=message):
        tree.predict([[np.nan, 2.0], [1.0, -np.inf]])
    with pytest.raises(ValidationError, match=r"Column 'age' of 'X' \(Tree.apply\)"):
        tree.apply([[np.inf, np.nan]])


def test_wrong_width_is_an_error() -> None:
    with pytest.raises(ValidationError, match="an array with 3 columns"):
        random_tree(1).predict(np.zeros((4, 2)))


def test_shape_properties() -> None:
    tree = _client_tree()
    assert (tree.n_nodes, tree.n_leaves, tree.max_depth) == (3, 2, 1)
    assert tree.node_depth.tolist() == [0, 1, 1]
    assert "n_nodes=3" in repr(tree)


def test_arrays_are_read_only_copies() -> None:
    tree = random_tree(3)
    with pytest.raises(ValueError, match="read-only"):
        tree.threshold[0] = 1.0


def _arrays(tree: Tree) -> dict[str, object]:
    names = (
        "kind",
        "feature",
        "threshold",
        "left",
        "right",
        "branch_ptr",
        "branch_code",
        "branch_child",
        "value",
        "count",
        "impurity",
    )
    out: dict[str, object] = {n: np.array(getattr(tree, n)) for n in names}
    out.update(n_features=tree.n_features, classes=tree.classes, clients=tree.clients)
    return out


def _stump() -> Tree:
    b = TreeBuilder(n_features=2, classes=np.array([0, 1]))
    root = b.add_root(NodeStats.from_class_counts([1, 1]))
    b.split_numeric(
        root,
        0,
        0.0,
        NodeStats.from_class_counts([1, 0]),
        NodeStats.from_class_counts([0, 1]),
    )
    return b.build()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda a: a["left"].__setitem__(0, 0), "larger indices than their parent"),
        (lambda a: a["right"].__setitem__(0, 1), "node 2 has 0 parents"),
        (
            lambda a: a["feature"].__setitem__(0, 5),
            r"split features must lie in \[0, n_features\)",
        ),
        (lambda a: a["threshold"].__setitem__(0, np.nan), "need a finite threshold"),
        (lambda a: a["value"].__setitem__((1, 0), 0.5), "sum to 1"),
        (lambda a: a["count"].__setitem__(1, -1.0), "'count' must be finite and >= 0"),
        (lambda a: a["kind"].__setitem__(0, 7), "unknown node kind"),
        (
            lambda a: a["kind"].__setitem__(0, NodeKind.CATEGORICAL),
            "only numeric splits carry a threshold",
        ),
        (lambda a: a.update(classes=np.array([0, 0])), "'classes' must be unique"),
        (lambda a: a.update(n_features=0), "n_features must be >= 1"),
    ],
)
def test_malformed_trees_are_refused(edit: object, message: str) -> None:
    arrays = _arrays(_stump())
    assert callable(edit)
    edit(arrays)
    with pytest.raises(ValidationError, match=message):
        Tree(**arrays)  # type: ignore[arg-type]


def test_builder_refuses_to_split_a_non_leaf() -> None:
    b = TreeBuilder(n_features=1)
    root = b.add_root(NodeStats.from_mean(0.0, 2))
    b.split_numeric(
        root, 0, 0.0, NodeStats.from_mean(0.0, 1), NodeStats.from_mean(0.0, 1)
    )
    with pytest.raises(ValidationError, match="node 0 is not an existing leaf"):
        b.split_numeric(
            root, 0, 1.0, NodeStats.from_mean(0.0, 1), NodeStats.from_mean(0.0, 1)
        )


def test_client_split_needs_client_list() -> None:
    b = TreeBuilder(n_features=1)
    root = b.add_root(NodeStats.from_mean(0.0, 2))
    with pytest.raises(ValidationError, match="needs the builder's 'clients' list"):
        b.split_client(root, [([0], NodeStats.from_mean(0.0, 1))], None)


def test_prediction_is_vectorised_over_rows() -> None:
    # 200k rows through a depth-12 tree: the loop is per level, so this is fast.
    tree = random_tree(11, categorical=(), max_depth=12, p_split=1.0, n_classes=2)
    X = np.random.default_rng(0).normal(size=(200_000, 3))
    assert tree.predict(X).shape == (200_000,)


# -- missing values ---------------------------------------------------------------
def _missing_stump(direction: Missing, n_left: float, n_right: float) -> Tree:
    """``x0 <= 0`` with means 1 (left) and 2 (right) and these training counts."""
    b = TreeBuilder(n_features=2)
    root = b.add_root(NodeStats.from_mean(1.5, n_left + n_right))
    b.split_numeric(
        root,
        0,
        0.0,
        NodeStats.from_mean(1.0, n_left),
        NodeStats.from_mean(2.0, n_right),
        missing=direction,
    )
    return b.build()


@pytest.mark.parametrize(
    ("direction", "n_left", "n_right", "nan_goes_to"),
    [
        (Missing.LEFT, 1, 9, 1),  # learned: left, whatever the counts
        (Missing.RIGHT, 9, 1, 2),  # learned: right, whatever the counts
        (Missing.LARGER, 9, 1, 1),  # the larger child is left
        (Missing.LARGER, 1, 9, 2),  # the larger child is right
        (Missing.LARGER, 5, 5, 2),  # a tie goes right
    ],
)
def test_a_nan_row_follows_the_node_direction(
    direction: Missing, n_left: float, n_right: float, nan_goes_to: int
) -> None:
    tree = _missing_stump(direction, n_left, n_right)
    X = [[-1.0, 0.0], [1.0, 0.0], [np.nan, 0.0], [0.0, np.nan]]
    # Values route by the threshold as ever; NaN in another column changes nothing.
    assert tree.apply(X).tolist() == [1, 2, nan_goes_to, 1]
    assert tree.predict(X).tolist() == [1.0, 2.0, float(nan_goes_to), 1.0]


def test_nan_at_a_categorical_split_takes_the_default_branch() -> None:
    b = TreeBuilder(n_features=1, categories=[("r", "g", "b")])
    root = b.add_root(NodeStats.from_mean(1.0, 4))
    b.split_categorical(
        root, 0, [([0, 2], NodeStats.from_mean(0.0, 2))], NodeStats.from_mean(2.0, 2)
    )
    assert b.build().apply([[np.nan], [0.0]]).tolist() == [2, 1]
    multiway = TreeBuilder(n_features=1)
    root = multiway.add_root(NodeStats.from_mean(1.0, 4))
    multiway.split_categorical(root, 0, [([0], NodeStats.from_mean(0.0, 2))], None)
    assert multiway.build().apply([[np.nan]]).tolist() == [0]  # stops at the node


def test_nan_at_a_categorical_split_listing_the_missing_category_follows_it() -> None:
    # Three categories: code 3 is the missing one (FedForest hist learns such sets).
    b = TreeBuilder(n_features=1, categories=[("r", "g", "b")])
    root = b.add_root(NodeStats.from_mean(1.0, 4))
    b.split_categorical(
        root, 0, [([1, 3], NodeStats.from_mean(0.0, 2))], NodeStats.from_mean(2.0, 2)
    )
    tree = b.build()
    assert tree.apply([[np.nan], [1.0], [0.0]]).tolist() == [1, 1, 2]
    assert tree.to_text().splitlines()[0] == "|--- x0 in {g, missing}"
    assert Tree.from_json(tree.to_json()).apply([[np.nan]]).tolist() == [1]
    # Without known categories no code stands for missing: the default branch.
    bare = TreeBuilder(n_features=1)
    root = bare.add_root(NodeStats.from_mean(1.0, 4))
    bare.split_categorical(
        root, 0, [([1, 3], NodeStats.from_mean(0.0, 2))], NodeStats.from_mean(2.0, 2)
    )
    assert bare.build().apply([[np.nan], [3.0]]).tolist() == [2, 1]


def test_missing_defaults_to_larger_everywhere() -> None:
    tree = random_tree(3)
    assert tree.missing.dtype == np.int8
    assert np.all(tree.missing == Missing.LARGER)
    with pytest.raises(ValueError, match="read-only"):
        tree.missing[0] = Missing.LEFT


@given(
    seed=st.integers(0, 10_000),
    n_classes=st.sampled_from([0, 2, 4]),
    nan_fraction=st.sampled_from([0.1, 0.5]),
)
def test_nan_routing_matches_per_row_reference(
    seed: int, n_classes: int, nan_fraction: float
) -> None:
    tree = random_tree(seed, n_classes=n_classes, clients=CLIENTS, missing=DIRECTIONS)
    X = random_X(seed + 1, tree, 60, nan_fraction=nan_fraction)
    client_idx = np.random.default_rng(seed).integers(0, len(CLIENTS), size=60)
    names = np.array(CLIENTS, dtype=object)[client_idx]
    expected = np.stack(
        [reference_value(tree, x, int(c)) for x, c in zip(X, client_idx, strict=True)]
    )
    np.testing.assert_allclose(
        tree.predict_value(X, client=names), expected, rtol=0, atol=1e-12
    )
    mixed = np.stack([reference_value(tree, x, None) for x in X])
    np.testing.assert_allclose(tree.predict_value(X), mixed, rtol=0, atol=1e-12)


@given(seed=st.integers(0, 10_000))
def test_apply_with_nan_reaches_the_node_whose_value_predict_returns(
    seed: int,
) -> None:
    tree = random_tree(seed, clients=None, missing=DIRECTIONS)
    X = random_X(seed + 3, tree, 50, nan_fraction=0.3)
    np.testing.assert_array_equal(tree.predict_value(X), tree.value[tree.apply(X)])


def test_missing_is_compared_by_equality() -> None:
    a = _missing_stump(Missing.LEFT, 1, 2)
    assert a == _missing_stump(Missing.LEFT, 1, 2)
    assert a != _missing_stump(Missing.LARGER, 1, 2)


@pytest.mark.parametrize(
    ("missing", "message"),
    [
        (
            [Missing.LEFT, -1],
            r"field 'missing' has shape \(2,\), expected \(3,\)",
        ),
        ([5, -1, -1], "field 'missing' holds an unknown direction"),
        (
            [-1, Missing.RIGHT, -1],
            r"field 'missing' may hold LEFT or RIGHT only at numeric splits.*\(node 1\)",
        ),
        ([[1, -1, -1]], r"field 'missing' has shape \(1, 3\)"),
        (["left", -1, -1], "field 'missing' is not convertible to int8"),
    ],
)
def test_malformed_missing_is_refused_naming_the_field(
    missing: object, message: str
) -> None:
    arrays = _arrays(_stump())
    arrays["missing"] = missing
    with pytest.raises(ValidationError, match=f"Invalid Tree: {message}"):
        Tree(**arrays)  # type: ignore[arg-type]


def test_learned_direction_on_a_categorical_node_is_refused() -> None:
    b = TreeBuilder(n_features=1, categories=[("r", "g")])
    root = b.add_root(NodeStats.from_mean(1.0, 4))
    b.split_categorical(root, 0, [([0], NodeStats.from_mean(0.0, 2))], None)
    arrays = _arrays(b.build())
    arrays["missing"] = np.array([Missing.LEFT, Missing.LARGER])
    with pytest.raises(
        ValidationError,
        match=r"Invalid Tree: field 'missing' may hold LEFT or RIGHT only at numeric "
        r"splits; other nodes need Missing.LARGER \(-1\) \(node 0\)",
    ):
        Tree(**arrays)  # type: ignore[arg-type]


def test_builder_refuses_an_unknown_direction() -> None:
    b = TreeBuilder(n_features=1)
    root = b.add_root(NodeStats.from_mean(0.0, 2))
    with pytest.raises(
        ValidationError,
        match=r"'missing' parameter of TreeBuilder.split_numeric must be a Missing",
    ):
        b.split_numeric(
            root,
            0,
            0.0,
            NodeStats.from_mean(0.0, 1),
            NodeStats.from_mean(0.0, 1),
            missing=2,
        )
    assert b.n_nodes == 1  # nothing was changed


def test_nan_routing_is_vectorised_over_rows() -> None:
    tree = random_tree(
        11, categorical=(), max_depth=12, p_split=1.0, n_classes=2, missing=DIRECTIONS
    )
    X = np.random.default_rng(0).normal(size=(200_000, 3))
    X[::3, 1] = np.nan
    assert tree.predict(X).shape == (200_000,)
