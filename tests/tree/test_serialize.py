from __future__ import annotations

import json
import pickle
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fedtrees.exceptions import SerializationError
from fedtrees.tree import FORMAT, VERSION, Missing, NodeStats, Tree, TreeBuilder
from tests.tree.helpers import random_tree, random_X

DIRECTIONS = (Missing.LEFT, Missing.RIGHT, Missing.LARGER)


def _refuse_nan(token: str) -> float:
    raise AssertionError(f"non-standard JSON constant {token}")


@given(
    seed=st.integers(0, 10_000),
    n_classes=st.sampled_from([0, 2, 3]),
    with_clients=st.booleans(),
)
def test_json_round_trip_is_exact(
    seed: int, n_classes: int, with_clients: bool
) -> None:
    tree = random_tree(
        seed,
        n_classes=n_classes,
        clients=("a", "b", "c") if with_clients else None,
        missing=DIRECTIONS,
    )
    text = tree.to_json()
    json.loads(text, parse_constant=_refuse_nan)  # standard JSON: no NaN / Infinity
    again = Tree.from_json(text)
    assert again == tree
    for name in ("threshold", "value", "count", "impurity", "missing"):
        a, b = getattr(tree, name), getattr(again, name)
        assert a.dtype == b.dtype
        assert a.tobytes() == b.tobytes()  # bit-for-bit, NaN included
    X = random_X(seed, tree, 40, nan_fraction=0.4)
    np.testing.assert_array_equal(again.predict_value(X), tree.predict_value(X))


@pytest.mark.parametrize(
    "classes",
    [
        np.array(["no", "yes"]),
        np.array([3, 7]),
        np.array([0.5, 1.5]),
        np.array([False, True]),
    ],
)
def test_label_dtypes_survive(classes: np.ndarray) -> None:
    b = TreeBuilder(n_features=1, classes=classes, feature_names=["x"])
    b.add_root(NodeStats.from_class_counts([1.0, 2.0]))
    tree = b.build()
    again = Tree.from_dict(json.loads(json.dumps(tree.to_dict())))
    assert again.classes is not None
    assert again.classes.dtype == classes.dtype
    assert again == tree


def test_pickle_goes_through_the_document() -> None:
    tree = random_tree(5, clients=("a", "b"), missing=DIRECTIONS)
    assert np.any(tree.missing != Missing.LARGER)
    again = pickle.loads(pickle.dumps(tree))
    assert again == tree
    np.testing.assert_array_equal(again.missing, tree.missing)
    X = random_X(6, tree, 40, nan_fraction=0.4)
    np.testing.assert_array_equal(again.predict_value(X), tree.predict_value(X))
    assert tree.__reduce__()[0] == Tree.from_dict


def test_the_document_stores_missing_as_an_int_node_field() -> None:
    tree = random_tree(5, categorical=(), p_split=1.0, missing=DIRECTIONS)
    field = tree.to_dict()["nodes"]["missing"]
    assert field["dtype"] == "|i1"
    assert field["data"] == tree.missing.tolist()


def _as_version_1(doc: dict[str, Any]) -> dict[str, Any]:
    """What version 1 wrote: the same document without the 'missing' field."""
    doc["version"] = 1
    del doc["nodes"]["missing"]
    return doc


def test_a_version_1_document_still_loads_with_larger_everywhere() -> None:
    tree = random_tree(4, p_split=1.0, clients=("a", "b"))
    assert Tree.from_dict(_as_version_1(tree.to_dict())) == tree
    learned = random_tree(4, categorical=(), p_split=1.0, missing=DIRECTIONS)
    old = Tree.from_dict(_as_version_1(learned.to_dict()))
    assert np.all(old.missing == Missing.LARGER)
    np.testing.assert_array_equal(old.threshold, learned.threshold)


def test_a_version_2_document_requires_missing() -> None:
    doc = _doc()
    del doc["nodes"]["missing"]
    with pytest.raises(
        SerializationError, match=r"Field 'nodes\.missing' must be an object"
    ):
        Tree.from_dict(doc)


def test_equality_detects_a_changed_threshold() -> None:
    doc = random_tree(9, categorical=(), p_split=1.0).to_dict()
    doc["nodes"]["threshold"]["data"][0] += 1e-12
    assert Tree.from_dict(doc) != random_tree(9, categorical=(), p_split=1.0)


def _doc() -> dict[str, Any]:
    return random_tree(4, p_split=1.0).to_dict()


def test_newer_version_is_refused_with_upgrade_hint() -> None:
    doc = _doc()
    doc["version"] = VERSION + 1
    with pytest.raises(
        SerializationError,
        match=rf"newer than the version {VERSION} .* upgrade fedtrees",
    ):
        Tree.from_dict(doc)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.update(format="sklearn"), "Not a fedtrees tree document"),
        (lambda d: d.update(version="1"), "Unknown tree document version '1'"),
        (lambda d: d.update(version=0), "Unknown tree document version 0"),
        (lambda d: d["nodes"].pop("left"), "Field 'nodes.left' must be an object"),
        (
            lambda d: d["nodes"]["left"].update(dtype="object"),
            "nodes.left' has dtype object",
        ),
        (
            lambda d: d["nodes"]["left"].update(shape=[-1]),
            "'shape' as a list of ints >= 0",
        ),
        (lambda d: d["nodes"]["left"]["data"].pop(), "needs 'data' as a list of"),
        (
            lambda d: d["nodes"]["left"]["data"].__setitem__(0, 1.5),
            "holds 'f'-kind values",
        ),
        (
            lambda d: d["nodes"]["left"]["data"].__setitem__(0, 0),
            "Invalid tree document: Invalid Tree",
        ),
        (lambda d: d.update(n_features=True), "Field 'n_features' must be an int"),
        (
            lambda d: d["nodes"]["missing"]["data"].__setitem__(0, 7),
            "Invalid tree document: Invalid Tree: field 'missing' holds an unknown",
        ),
        (
            lambda d: d["nodes"]["missing"]["data"].__setitem__(0, 257),
            "'nodes.missing' holds values out of the range of dtype int8",
        ),
        (
            lambda d: d["nodes"]["missing"].update(dtype="<f8"),
            "nodes.missing' has dtype float64",
        ),
        (
            lambda d: d.update(clients=[1, 2]),
            "Field 'clients' must be a list of strings",
        ),
    ],
)
def test_malformed_documents_name_the_field(edit: object, message: str) -> None:
    doc = _doc()
    assert callable(edit)
    edit(doc)
    with pytest.raises(SerializationError, match=message):
        Tree.from_dict(doc)


def test_garbage_json_is_a_serialization_error() -> None:
    with pytest.raises(SerializationError, match="Not a JSON tree document"):
        Tree.from_json("{not json")
    with pytest.raises(SerializationError, match="Field 'document' must be an object"):
        Tree.from_json("[1, 2]")


def test_document_header() -> None:
    doc = _doc()
    assert (doc["format"], doc["version"]) == (FORMAT, VERSION)
    assert VERSION == 2  # version 2 added the node field 'missing'
