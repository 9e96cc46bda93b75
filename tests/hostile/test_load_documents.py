"""Malformed result documents refused by name (issue 42: ``fedtrees.load``).

A result document may come from anywhere (a file passed around, an edited
copy, another program): ``fedtrees.load`` checks it like a reply. Every family
of mistakes — the source, the header, the job and its params, the agreed
columns and labels, the trees, each method's own fields — is refused with a
:class:`~fedtrees.exceptions.SerializationError` (or ``DataNotFoundError`` for
a missing file) naming the field, never a raw ``KeyError``, ``IndexError`` or
numpy error, and never a model that predicts something else.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import fedtrees
from fedtrees.algorithms import run_job
from fedtrees.exceptions import DataNotFoundError, FedTreesError, SerializationError
from fedtrees.federation import Federation
from fedtrees.tree import NodeStats, TreeBuilder

pytestmark = pytest.mark.hostile("clear_error")

PARAMS: dict[str, dict[str, Any]] = {
    "fedforest": {"n_estimators": 2, "max_depth": 2, "random_state": 0},
    "fedforest-regression": {"task": "regression", "n_estimators": 2, "max_depth": 2},
    "local-ensemble": {"n_estimators": 2, "max_depth": 2, "random_state": 0},
    "dpforest": {"epsilon": 50.0, "max_depth": 2, "feature_ranges": {"x0": [-4, 4], "x1": [-4, 4]}},
    "icdta": {"max_depth": 2, "random_state": 0},
    "federated-id3": {"max_depth": 2},
    "synthetic": {"global_max_depth": 2, "samples_per_path": 5, "random_state": 0},
    "fedga": {"n_generations": 1, "population_size": 4, "depth_range": [1, 2],
              "cv_folds": 2, "random_state": 0},
    "fedgbdt": {"n_estimators": 2, "max_depth": 2, "random_state": 0},
}  # fmt: skip


def _federation(regression: bool = False) -> Federation:
    rng = np.random.default_rng(42)
    X = pd.DataFrame({"x0": rng.normal(size=90), "x1": rng.normal(size=90)})
    X["colour"] = pd.Categorical(rng.choice(["red", "blue"], 90))
    y = X["x0"] + X["x1"] if regression else np.where(X["x0"] > 0, "yes", "no")
    return Federation.from_groups(X, np.asarray(y), np.repeat(["a", "b", "c"], 30))


@pytest.fixture(scope="module")
def documents() -> dict[str, dict[str, Any]]:
    out = {}
    for case, params in PARAMS.items():
        job = case.removesuffix("-regression")
        document, _ = run_job(job, _federation(case.endswith("regression")), params)
        out[case] = json.loads(json.dumps(document))
    return out


def _refused(document: object, field: str) -> str:
    """Load and expect a SerializationError naming ``field``."""
    with pytest.raises(SerializationError, match="Result document") as caught:
        fedtrees.load(document)
    message = str(caught.value)
    assert re.search(rf"['\"]{re.escape(field)}['\"]", message), message
    assert len(message) < 1000, message
    return message


def test_the_valid_documents_load(documents: dict[str, dict[str, Any]]) -> None:
    for case, document in documents.items():
        assert fedtrees.load(document).n_features_in_ == 3, case


# -- the source ----------------------------------------------------------------------
def test_a_missing_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "nowhere" / "result.json"
    with pytest.raises(
        DataNotFoundError, match=r"No result document at .*result\.json"
    ):
        fedtrees.load(path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\xff\xfe not text", "is not UTF-8 text"),
        (b"{not json", "is not JSON"),
        (b"[1, 2]", "a JSON object is expected; got list"),
        (b"[" * 100_000, "nests JSON arrays or objects more than 32 deep"),
    ],
    ids=["bytes", "not json", "a list", "recursion bomb"],
)
def test_a_file_that_is_no_document_is_refused(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "result.json"
    path.write_bytes(content)
    with pytest.raises(SerializationError, match=message):
        fedtrees.load(path)


def test_a_source_of_another_type_is_refused() -> None:
    with pytest.raises(SerializationError, match=r"takes a result document.*got int"):
        fedtrees.load(42)


# -- the header, the job, the params --------------------------------------------------
Mutation = Callable[[dict[str, Any]], None]


def _set(field: str, value: object) -> Mutation:
    def mutate(document: dict[str, Any]) -> None:
        document[field] = value

    return mutate


def _drop(field: str) -> Mutation:
    def mutate(document: dict[str, Any]) -> None:
        del document[field]

    return mutate


def _params(**changes: object) -> Mutation:
    def mutate(document: dict[str, Any]) -> None:
        document["params"] = {**document["params"], **changes}

    return mutate


HEADER_AND_JOB: dict[str, tuple[str, Mutation, str]] = {
    "written before formats": ("fedforest", _drop("format"), "format"),
    "a tree document": ("fedforest", _set("format", "fedtrees.tree"), "format"),
    "no version": ("fedforest", _drop("version"), "version"),
    "version as text": ("fedforest", _set("version", "1"), "version"),
    "unknown job": ("fedforest", _set("job", "xgboost"), "job"),
    "the toy": ("fedforest", _set("job", "toy"), "job"),
    "job not text": ("fedforest", _set("job", ["fedforest"]), "job"),
    "params not an object": ("fedforest", _set("params", [1, 2]), "params"),
    "unknown param": ("fedforest", _params(learning_rate=0.1), "params"),
    "bad param value": ("fedforest", _params(max_depth="deep"), "params"),
    "bad task": ("fedforest", _params(task="ranking"), "params"),
    "task of a one-task job": ("icdta", _params(task="regression"), "params"),
    "another estimator": (
        "fedforest",
        _set("estimator", "FedForestRegressor"),
        "estimator",
    ),
    "weighting unknown": ("local-ensemble", _params(weighting="by size"), "params"),
    "bad dp budget": ("dpforest", _params(budget="all"), "params"),
}


def test_a_newer_version_asks_for_an_upgrade(
    documents: dict[str, dict[str, Any]],
) -> None:
    document = {**documents["fedforest"], "version": 99}
    with pytest.raises(SerializationError, match=r"version 99, newer .* upgrade"):
        fedtrees.load(document)


# -- the agreed columns, clients and labels -------------------------------------------
COLUMNS: dict[str, tuple[str, Mutation, str]] = {
    "no names": ("fedforest", _drop("feature_names"), "feature_names"),
    "a name not text": ("fedforest", _set("feature_names", ["x0", 1, "c"]), "feature_names"),
    "names twice": ("fedforest", _set("feature_names", ["x0", "x0", "c"]), "feature_names"),
    "categories short": ("fedforest", _set("categories", [None, None]), "categories"),
    "categories repeated": (
        "fedforest", _set("categories", [None, None, ["red", "red"]]), "categories[2]",
    ),
    "no clients": ("fedforest", _set("clients", []), "clients"),
    "no classes": ("fedforest", _set("classes", None), "classes"),
    "classes of two types": ("fedforest", _set("classes", ["no", 1]), "classes"),
    "classes twice": ("fedforest", _set("classes", ["no", "no"]), "classes"),
    "nan class": ("fedgbdt", _set("classes", [0.0, float("nan")]), "classes"),
    "classes of a regressor": (
        "fedforest-regression", _set("classes", ["a", "b"]), "classes",
    ),
    "fewer classes than the trees": ("fedforest", _set("classes", ["no"]), "trees[0]"),
}  # fmt: skip


# -- the trees and each method's fields ----------------------------------------------
def _tree_of(n_features: int, classes: list[str] | None) -> dict[str, Any]:
    b = TreeBuilder(
        n_features=n_features, classes=None if classes is None else np.array(classes)
    )
    b.add_root(
        NodeStats.from_mean(0.0, 1.0)
        if classes is None
        else NodeStats.from_class_counts([1.0] * len(classes))
    )
    return b.build().to_dict()


def _at(path: tuple[object, ...], value: object) -> Mutation:
    def mutate(document: dict[str, Any]) -> None:
        target: Any = document
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return mutate


def _broken_tree(document: dict[str, Any]) -> None:
    document["trees"][1]["nodes"]["left"]["data"][0] = 99  # a child out of range


MODELS: dict[str, tuple[str, Mutation, str]] = {
    "no trees": ("fedforest", _drop("trees"), "trees"),
    "empty forest": ("fedforest", _set("trees", []), "trees"),
    "a tree that is no tree": ("fedforest", _at(("trees", 0), {"a": 1}), "trees[0]"),
    "a broken tree": ("fedforest", _broken_tree, "trees[1]"),
    "a tree of 2 features": (
        "fedforest", _at(("trees", 1), _tree_of(2, ["no", "yes"])), "trees[1]",
    ),
    "a regression tree in a classifier": (
        "fedforest", _at(("trees", 0), _tree_of(3, None)), "trees[0]",
    ),
    "importances short": ("fedforest", _set("feature_importances", [1.0]), "feature_importances"),
    "local trees of unknown clients": (
        "local-ensemble", _set("tree_clients", ["a", "z"] * 3), "tree_clients",
    ),
    "local tree clients short": ("local-ensemble", _set("tree_clients", ["a"]), "tree_clients"),
    "negative client weight": (
        "local-ensemble", _set("client_weights", {"a": -1.0, "b": 1.0, "c": 1.0}),
        "client_weights",
    ),
    "dp trees of one client twice": (
        "dpforest", _set("tree_clients", ["a", "a", "b"]), "tree_clients",
    ),
    "dp ranges short": ("dpforest", _set("feature_ranges", [[0, 1]]), "feature_ranges"),
    "dp range reversed": ("dpforest", _at(("feature_ranges", 0), [4, -4]), "feature_ranges[0]"),
    "no tree": ("icdta", _drop("tree"), "tree"),
    "bins short": ("icdta", _set("bins", [[0.0]]), "bins"),
    "bins of a category": ("icdta", _at(("bins", 2), [0.5]), "bins[2]"),
    "bins decreasing": ("icdta", _at(("bins", 0), [1.0, 0.0]), "bins[0]"),
    "no bins for id3": ("federated-id3", _set("bins", None), "bins"),
    "kept unknown client": ("icdta", _set("kept", ["z"]), "kept"),
    "levels negative": ("federated-id3", _set("levels", -1), "levels"),
    "synthetic tree over the raw columns": (
        "synthetic", _set("tree", _tree_of(3, ["no", "yes"])), "tree",
    ),
    "fedga tree of an unknown client": (
        "fedga", _at(("trees", "z"), _tree_of(3, ["no", "yes"])), "trees",
    ),
    "fedga structure of text": ("fedga", _at(("structures", "a"), ["x"]), "structures['a']"),
    "fedga history ragged": ("fedga", _set("fitness_history", [[0.5]]), "fitness_history"),
    "boosting iteration short": ("fedgbdt", _at(("trees", 0), []), "trees"),
    "margin nan": ("fedgbdt", _set("base_margin", [float("nan")]), "base_margin"),
    "margin as text": ("fedgbdt", _set("base_margin", ["0.1"]), "base_margin"),
    "margin per class of a binary model": (
        "fedgbdt", _set("base_margin", [0.0, 0.0]), "base_margin",
    ),
    "best iteration beyond": ("fedgbdt", _set("best_iteration", 7), "best_iteration"),
    "losses of text": ("fedgbdt", _set("evals_result", {"training_logloss": ["low"]}),
                       "evals_result['training_logloss']"),
}  # fmt: skip


FAMILIES = {"header and job": HEADER_AND_JOB, "columns": COLUMNS, "models": MODELS}
CASES = {
    f"{f}: {case}": v for f, cases in FAMILIES.items() for case, v in cases.items()
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_malformed_field_is_named(
    documents: dict[str, dict[str, Any]], case: str
) -> None:
    job, mutate, field = CASES[case]
    document = copy.deepcopy(documents[job])
    mutate(document)
    _refused(document, field)


def test_every_error_is_a_fedtrees_error(documents: dict[str, dict[str, Any]]) -> None:
    """Fuzz: drop or scramble every top-level field of every job's document."""
    for case, document in documents.items():
        for field in document:
            if field in ("communication", "evals_result", "n_rules", "fitness_history"):
                continue
            for value in (None, "text", [], {}, -3, [None], float("nan")):
                if value == document[field]:
                    continue  # its own value (a regressor's classes: None)
                broken = {**copy.deepcopy(document), field: value}
                try:
                    fedtrees.load(broken)
                except FedTreesError:
                    continue
                # Accepted: only where the field is not part of the model, or
                # params of every default (they describe the fit, the trees are
                # the model).
                assert field in _NOT_READ or (field, value) == ("params", {}), (
                    case, field, value,
                )  # fmt: skip


_NOT_READ = frozenset({"communication", "n_rules", "n_synthetic_rows", "n_flipped"})
"""Fields the document reports but the model does not read."""
