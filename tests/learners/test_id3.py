"""fit_id3 equals a textbook ID3 written here from its definition (docs/icdta.md)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fedtrees import datasets
from fedtrees.exceptions import ValidationError
from fedtrees.learners import default_max_depth, fit_id3
from fedtrees.tree import NodeKind, Tree

TOLERANCE = 1e-10  # the Decision: gains this close are ties, the first feature wins


def _entropy(counts: list[int] | np.ndarray) -> float:
    total = sum(counts)
    return -sum(c / total * math.log2(c / total) for c in counts if c > 0)


def reference_id3(
    X: np.ndarray, y: np.ndarray, n_classes: int, features: set[int], depth: int
) -> dict[str, Any]:
    """Quinlan's ID3, recursively, with the Decisions fit_id3 names.

    Leaf when pure, out of depth or features; the attribute of highest
    information gain (first within the tolerance of the best); one branch per
    value present; a feature with a single value at the node is no candidate.
    """
    counts = np.bincount(y, minlength=n_classes)
    node: dict[str, Any] = {"counts": counts}
    if depth == 0 or np.count_nonzero(counts) <= 1 or not features:
        return node
    gains = {}
    for f in sorted(features):
        values = np.unique(X[:, f])
        if values.shape[0] < 2:
            continue
        rest = sum(
            (X[:, f] == v).sum() / len(y) * _entropy(np.bincount(y[X[:, f] == v]))
            for v in values
        )
        gains[f] = _entropy(counts) - rest
    if not gains:
        return node
    top = max(gains.values())
    best = next(f for f, g in gains.items() if g >= top - TOLERANCE)
    node["feature"] = best
    node["children"] = {
        int(v): reference_id3(
            X[X[:, best] == v],
            y[X[:, best] == v],
            n_classes,
            features - {best},
            depth - 1,
        )
        for v in np.unique(X[:, best])
    }
    return node


def as_nested(tree: Tree, node: int = 0) -> dict[str, Any]:
    """The Tree in the reference's shape (counts recovered from the distribution)."""
    out: dict[str, Any] = {"counts": tree.value[node] * tree.count[node]}
    if tree.kind[node] == NodeKind.LEAF:
        return out
    assert tree.kind[node] == NodeKind.CATEGORICAL
    assert tree.right[node] == -1  # no default branch: unseen values stop here
    start, stop = tree.branch_ptr[node], tree.branch_ptr[node + 1]
    out["feature"] = int(tree.feature[node])
    out["children"] = {
        int(code): as_nested(tree, int(child))
        for code, child in zip(
            tree.branch_code[start:stop], tree.branch_child[start:stop], strict=True
        )
    }
    return out


def assert_same(ours: dict[str, Any], theirs: dict[str, Any]) -> None:
    np.testing.assert_allclose(ours["counts"], theirs["counts"], atol=1e-9)
    assert ours.get("feature") == theirs.get("feature")
    assert set(ours.get("children", {})) == set(theirs.get("children", {}))
    for value, child in ours.get("children", {}).items():
        assert_same(child, theirs["children"][value])


@st.composite
def categorical_data(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    n = draw(st.integers(1, 60))
    arity = np.array(draw(st.lists(st.integers(1, 4), min_size=1, max_size=5)))
    n_classes = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    X = rng.integers(0, arity, size=(n, arity.shape[0]))
    y = rng.integers(0, n_classes, size=n)
    if draw(st.booleans()):  # a learnable label: more splits, more ties
        y = (X[:, 0] + X[:, -1]) % n_classes
    return X, y, arity, n_classes


@given(categorical_data(), st.integers(1, 5))
def test_equals_the_reference_on_random_categorical_data(
    data: tuple[np.ndarray, np.ndarray, np.ndarray, int], max_depth: int
) -> None:
    X, y, arity, n_classes = data
    tree = fit_id3(X, y, n_classes, arity=arity, max_depth=max_depth)

    reference = reference_id3(X, y, n_classes, set(range(X.shape[1])), max_depth)

    assert_same(as_nested(tree), reference)
    assert tree.max_depth <= max_depth


def _codes(name: str) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    data = datasets.load(name)
    X = np.column_stack([data.X[c].cat.codes.to_numpy() for c in data.X.columns])
    y = data.y.astype("category").cat.codes.to_numpy().astype(np.int64)
    arity = np.array([len(data.X[c].cat.categories) for c in data.X.columns])
    return X, y, int(y.max()) + 1, arity


@pytest.mark.parametrize("name", ["car", "nursery"])
def test_equals_the_reference_on_car_and_nursery(name: str) -> None:
    X, y, n_classes, arity = _codes(name)
    depth = default_max_depth(X.shape[1])  # the paper's |F|/2

    tree = fit_id3(X, y, n_classes, arity=arity)

    reference = reference_id3(X, y, n_classes, set(range(X.shape[1])), depth)
    assert_same(as_nested(tree), reference)
    assert tree.max_depth == depth
    assert (tree.predict(X) == _reference_predict(reference, X)).all()


def _reference_predict(node: dict[str, Any], X: np.ndarray) -> np.ndarray:
    out = np.empty(X.shape[0], dtype=np.int64)
    for i, row in enumerate(X):
        current = node
        while (
            "feature" in current and int(row[current["feature"]]) in current["children"]
        ):
            current = current["children"][int(row[current["feature"]])]
        out[i] = int(np.argmax(current["counts"]))
    return out


def test_an_unseen_value_stops_at_the_node_that_splits_on_it() -> None:
    X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    tree = fit_id3(X, [0, 0, 1, 1], arity=[3, 2])  # code 2 of feature 0 never seen

    assert tree.apply(np.array([[2.0, 0.0]])).tolist() == [0]  # stays at the root
    np.testing.assert_allclose(tree.predict_proba([[2.0, 0.0]]), [[0.5, 0.5]])


def test_weights_count_like_repeated_rows() -> None:
    rng = np.random.default_rng(3)
    X, y = rng.integers(0, 3, size=(40, 4)), rng.integers(0, 2, size=40)
    weight = rng.integers(0, 3, size=40)

    weighted = fit_id3(X, y, 2, arity=[3] * 4, sample_weight=weight, max_depth=3)
    repeated = fit_id3(
        np.repeat(X, weight, axis=0),
        np.repeat(y, weight),
        2,
        arity=[3] * 4,
        max_depth=3,
    )

    assert_same(as_nested(weighted), as_nested(repeated))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"X": [[0.5]], "y": [0]}, "category codes"),
        ({"X": [[-1.0]], "y": [0]}, "category codes"),
        ({"X": [[0], [3]], "y": [0, 1], "arity": [2]}, "'arity'"),
        ({"X": [[0], [1]], "y": [0, 2], "n_classes": 2}, "'y'"),
        ({"X": [[0], [1]], "y": [0, 1], "max_depth": 0}, "'max_depth'"),
        ({"X": np.zeros((0, 2)), "y": []}, "'X'"),
    ],
)
def test_bad_input_is_refused_by_name(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        fit_id3(**kwargs)


@pytest.mark.parametrize("significance", ["0.05", 0.0, -0.1, 1.5, float("nan")])
def test_a_bad_significance_is_refused_by_name(significance: Any) -> None:
    X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    with pytest.raises(ValidationError, match="'significance' parameter of fit_id3"):
        fit_id3(X, [0, 0, 1, 1], significance=significance)
