from __future__ import annotations

import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier

from fedtrees import datasets
from fedtrees.exceptions import ValidationError
from fedtrees.tree import Missing, NodeStats, Tree, TreeBuilder, export_text
from tests.tree.helpers import random_tree


def test_one_leaf_line_per_leaf_and_one_edge_line_per_child() -> None:
    tree = random_tree(21, clients=("a", "b"), p_split=1.0, max_depth=3)
    lines = tree.to_text().splitlines()
    assert sum("class:" in line for line in lines) == tree.n_leaves
    assert len(lines) == tree.n_leaves + (tree.n_nodes - 1)


def test_names_of_features_categories_and_clients_are_used() -> None:
    b = TreeBuilder(
        n_features=2,
        feature_names=["age", "colour"],
        categories=[None, ("red", "blue")],
        clients=["Cleveland", "Hungary"],
        classes=np.array(["no", "yes"]),
    )
    root = b.add_root(NodeStats.from_class_counts([2, 2]))
    left, right = b.split_numeric(
        root,
        0,
        50.25,
        NodeStats.from_class_counts([2, 1]),
        NodeStats.from_class_counts([0, 1]),
    )
    b.split_categorical(
        left,
        1,
        [([1], NodeStats.from_class_counts([0, 1]))],
        NodeStats.from_class_counts([2, 0]),
    )
    b.split_client(right, [([0], NodeStats.from_class_counts([0, 1]))], None)
    text = b.build().to_text(decimals=2)
    assert text.splitlines() == [
        "|--- age <= 50.25",
        "|   |--- colour in {blue}",
        "|   |   |--- class: yes (n=1, p=[0, 1])",
        "|   |--- colour not in {blue}",
        "|   |   |--- class: no (n=2, p=[1, 0])",
        "|--- age > 50.25",
        "|   |--- client in {Cleveland}",
        "|   |   |--- class: yes (n=1, p=[0, 1])",
    ]


def test_sklearn_tree_renders_with_its_feature_names() -> None:
    data = datasets.load("heart_disease", flamby=True)
    est = DecisionTreeClassifier(max_depth=2, random_state=0).fit(data.X, data.y)
    text = export_text(Tree.from_sklearn(est), show_counts=False)
    root = data.X.columns[est.tree_.feature[0]]
    assert text.splitlines()[
        0
    ] == f"|--- {root} <= {est.tree_.threshold[0]:.3f}".rstrip("0").rstrip(".")


def test_single_leaf_and_bad_decimals() -> None:
    b = TreeBuilder(n_features=1)
    b.add_root(NodeStats.from_mean(1.5, 3))
    tree = b.build()
    assert tree.to_text() == "|--- value: 1.5 (n=3)"
    with pytest.raises(ValidationError, match="'decimals' parameter of export_text"):
        tree.to_text(decimals=-1)


def test_learned_missing_directions_are_shown_and_larger_is_not() -> None:
    b = TreeBuilder(n_features=2, feature_names=["age", "chol"])
    root = b.add_root(NodeStats.from_mean(1.0, 12))
    left, right = b.split_numeric(
        root,
        0,
        54.5,
        NodeStats.from_mean(0.0, 8),
        NodeStats.from_mean(2.0, 4),
        missing=Missing.LEFT,
    )
    b.split_numeric(
        left,
        1,
        200.0,
        NodeStats.from_mean(0.0, 5),
        NodeStats.from_mean(0.5, 3),
        missing=Missing.RIGHT,
    )
    b.split_numeric(
        right, 1, 250.0, NodeStats.from_mean(1.0, 1), NodeStats.from_mean(3.0, 3)
    )  # LARGER: missing rows go right (3 > 1), and nothing says so
    assert b.build().to_text(show_counts=False).splitlines() == [
        "|--- age <= 54.5 or missing",
        "|   |--- chol <= 200",
        "|   |   |--- value: 0",
        "|   |--- chol > 200 or missing",
        "|   |   |--- value: 0.5",
        "|--- age > 54.5",
        "|   |--- chol <= 250",
        "|   |   |--- value: 1",
        "|   |--- chol > 250",
        "|   |   |--- value: 3",
    ]


def test_larger_everywhere_renders_as_before() -> None:
    tree = random_tree(21, clients=("a", "b"), p_split=1.0, max_depth=3)
    assert "missing" not in tree.to_text()
