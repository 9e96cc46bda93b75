"""``Tree.predict`` on a DataFrame: columns by name, categories by name (issue 42).

Before, a Tree took only a numeric matrix of codes: a DataFrame was read by
position and its category columns refused, so a user of a saved tree coded
categories by hand.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedtrees import FedForestClassifier
from fedtrees.exceptions import ValidationError
from fedtrees.tree import NodeStats, Tree, TreeBuilder
from tests.tree.helpers import N_CATEGORIES, random_tree, random_X

NAMES = ("age", "dose", "ward")  # random_tree's feature 2 is categorical
WARDS = tuple(f"c{i}" for i in range(N_CATEGORIES))


def _named(tree: Tree) -> Tree:
    return dataclasses.replace(tree, feature_names=NAMES)


def _frame(codes: np.ndarray, order: list[str]) -> pd.DataFrame:
    """The codes as a user's DataFrame: wards by name, unseen codes as new names."""
    ward = pd.Series(
        [None if np.isnan(c) else f"c{int(c)}" for c in codes[:, 2]], dtype=object
    )
    frame = pd.DataFrame(
        {"age": codes[:, 0], "dose": codes[:, 1], "ward": ward.astype("category")}
    )
    frame["notes"] = "ignored"  # a column the tree does not split on
    return frame[[*order, "notes"]]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n_classes=st.sampled_from([0, 3]))
def test_a_frame_predicts_as_its_codes_whatever_the_column_order(
    seed: int, n_classes: int
) -> None:
    tree = _named(random_tree(seed, n_classes=n_classes))
    codes = random_X(seed + 1, tree, 50, nan_fraction=0.1)  # codes 5, 6: unseen
    order = list(np.random.default_rng(seed).permutation(list(NAMES)))
    # An unseen category is the code K = 5 (no category has it); NaN stays NaN.
    expected = codes.copy()
    expected[:, 2] = np.where(codes[:, 2] >= N_CATEGORIES, N_CATEGORIES, codes[:, 2])

    got = tree.predict_value(_frame(codes, order))

    np.testing.assert_array_equal(got, tree.predict_value(expected))


def _ward_tree() -> Tree:
    """Ward 'c1' (code 1) is 'yes'; every other ward takes the default: 'no'."""
    b = TreeBuilder(
        n_features=3, classes=np.array(["no", "yes"]), feature_names=NAMES,
        categories=[None, None, WARDS],
    )  # fmt: skip
    root = b.add_root(NodeStats.from_class_counts([5, 5]))
    yes, no = NodeStats.from_class_counts([0, 5]), NodeStats.from_class_counts([5, 0])
    b.split_categorical(root, 2, [([1], yes)], no)
    return b.build()


def test_categories_are_matched_by_name_not_by_the_frames_codes() -> None:
    tree = _ward_tree()
    # The frame's own codes differ from the tree's ('c1' is the frame's code 0).
    ward = pd.Categorical(["c1", "c4", "c1"], categories=["c1", "c4"])
    frame = pd.DataFrame({"ward": ward, "dose": 1.0, "age": 50.0})

    assert tree.predict(frame).tolist() == ["yes", "no", "yes"]
    text = frame.assign(ward=["c1", "c4", "c1"])  # text works as a category column
    assert tree.predict(text).tolist() == ["yes", "no", "yes"]


def test_an_unseen_category_takes_the_default_branch() -> None:
    tree = _ward_tree()
    frame = pd.DataFrame({"age": 50.0, "dose": 1.0, "ward": ["c1", "icu", None]})

    assert tree.predict(frame).tolist() == ["yes", "no", "no"]


def test_numbers_match_the_category_that_prints_them() -> None:
    b = TreeBuilder(
        n_features=1, classes=np.array([0, 1]), feature_names=["grade"],
        categories=[("1", "2", "3")],
    )  # fmt: skip
    root = b.add_root(NodeStats.from_class_counts([5, 5]))
    b.split_categorical(
        root, 0, [([1], NodeStats.from_class_counts([0, 5]))],
        NodeStats.from_class_counts([5, 0]),
    )  # fmt: skip
    grade = pd.Series([2.0, 1.0, 3.0], dtype="category")  # 2.0 is the category "2"

    assert b.build().predict(pd.DataFrame({"grade": grade})).tolist() == [1, 0, 0]


def test_a_frame_routes_as_the_estimator_that_grew_the_tree() -> None:
    """The estimator's encoding (unseen and NaN) and the tree's agree row by row."""
    rng = np.random.default_rng(5)
    n = 300
    ward = pd.Categorical(rng.choice(list(WARDS), n), categories=list(WARDS))
    X = pd.DataFrame(
        {"age": rng.uniform(20, 80, n), "dose": rng.normal(size=n), "ward": ward}
    )
    y = ((X["age"] > 50) ^ X["ward"].isin(["c1", "c3"])).astype(int)
    model = FedForestClassifier(n_estimators=3, max_depth=4, random_state=0)
    model.fit(X, y, groups=np.arange(n) % 3)
    test = X.iloc[:40].copy()
    test["ward"] = test["ward"].cat.add_categories(["icu"])
    test.loc[:9, "ward"] = "icu"  # unseen
    test.loc[10:14, "ward"] = None  # missing
    test.loc[15:19, "age"] = np.nan

    for tree in model.trees_:
        np.testing.assert_array_equal(
            tree.predict_value(test[["ward", "dose", "age"]]),
            tree.predict_value(model._encode(test)),
        )


def test_a_tree_without_names_reads_a_frame_by_position() -> None:
    tree = random_tree(3, n_classes=2, categorical=())
    codes = random_X(4, tree, 20)
    frame = pd.DataFrame(codes, columns=["p", "q", "r"])

    np.testing.assert_array_equal(tree.predict_value(frame), tree.predict_value(codes))
    with pytest.raises(ValidationError, match="X has 2 columns; the tree routes 3"):
        tree.predict(frame[["p", "q"]])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda f: f.drop(columns="dose"), "X has no column 'dose'"),
        (
            lambda f: f.assign(ward=[0, 1]),
            "column 'ward' is categorical in the tree .* but X has it as numbers",
        ),
        (
            lambda f: f.assign(age=pd.Categorical([30, 40])),
            "column 'age' is numeric in the tree, but X has it as 'category'",
        ),
        (
            lambda f: f.assign(dose=["low", "high"]),
            "column 'dose' is numeric in the tree, but X holds text",
        ),
        (
            lambda f: pd.concat([f, f[["age"]]], axis=1),
            "more than one column named 'age'",
        ),
    ],
    ids=["missing column", "codes", "category as number", "text", "twice"],
)
def test_a_frame_of_the_wrong_columns_is_refused_by_name(change, message) -> None:  # type: ignore[no-untyped-def]
    frame = pd.DataFrame(
        {"age": [30.0, 40.0], "dose": [1.0, 2.0], "ward": ["c0", "c1"]}
    )

    with pytest.raises(ValidationError, match=message) as caught:
        _ward_tree().predict(change(frame))
    assert re.search(r"Tree\.predict", str(caught.value))
