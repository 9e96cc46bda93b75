"""Every job's output document names the agreed columns, as a saved model must.

The jobs run on in-process clients loaded from client files, exactly as the Flower
ClientApp loads them (``load_client_file``), so no Flower process is needed: the
document is the same over Flower (``tests/integration/test_flower.py``).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import numpy as np
import pandas as pd
import pytest

from fedtrees.algorithms import JOBS, run_job
from fedtrees.datasets import load_client_file, save_client_file
from fedtrees.federation import Federation
from fedtrees.tree import Tree

NAMES = ["age", "chest_pain"]
PAIN = ["asymptomatic", "atypical", "typical"]
PARAMS: dict[str, dict[str, Any]] = {
    "toy": {"feature": 0, "n_bins": 2, "n_rounds": 1, "initial": [50.0]},
    "fedforest": {"n_estimators": 2, "max_depth": 2, "random_state": 0},
    "local-ensemble": {"n_estimators": 2, "max_depth": 2, "random_state": 0},
    "dpforest": {
        "epsilon": 1000.0,
        "max_depth": 2,
        "feature_ranges": {"age": [30.0, 70.0]},
    },
    "icdta": {"base": "cart", "max_depth": 2, "random_state": 0},
    "federated-id3": {
        "epsilon": 50.0,
        "max_depth": 2,
        "bin_edges": {"age": [50.0]},
        "random_state": 0,
    },
    "synthetic": {"global_max_depth": 2, "samples_per_path": 5, "random_state": 0},
    "fedga": {
        "n_generations": 1,
        "population_size": 4,
        "depth_range": [1, 2],
        "cv_folds": 2,
        "random_state": 0,
    },
    "fedgbdt": {"n_estimators": 3, "max_depth": 2, "random_state": 0},
}


@pytest.fixture(scope="module")
def sites(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two sites' client files: the label is 'sick' exactly for asymptomatic pain."""
    folder = tmp_path_factory.mktemp("sites")
    rng = np.random.default_rng(0)
    clients = {}
    for site in ("Cleveland", "Hungary"):
        pain = pd.Categorical(rng.choice(PAIN, size=60), categories=PAIN)
        X = pd.DataFrame({"age": rng.uniform(30.0, 70.0, size=60), "chest_pain": pain})
        y = np.where(pain == "asymptomatic", "sick", "healthy")
        clients[site] = load_client_file(save_client_file(folder / f"{site}.npz", X, y))
    return clients


def _document(sites: dict[str, Any], job: str) -> dict[str, Any]:
    document, _ = run_job(job, Federation.from_clients(sites), PARAMS[job])
    return dict(json.loads(json.dumps(document)))  # what the ServerApp writes


def _trees(document: dict[str, Any]) -> list[dict[str, Any]]:
    found = document.get("trees", [])
    if isinstance(found, dict):  # FedGA: client -> personal tree
        found = list(found.values())
    trees = [t for ts in found for t in _listed(ts)]
    trees += [document["tree"]] if "tree" in document else []
    return trees + list(document.get("client_trees", {}).values())


def _listed(trees: Any) -> list[dict[str, Any]]:
    """A forest lists trees; a boosted model lists iterations of trees."""
    return list(trees) if isinstance(trees, list) else [trees]


def test_every_job_is_covered() -> None:
    assert sorted(PARAMS) == sorted(JOBS)


@pytest.mark.parametrize("job", sorted(PARAMS))
def test_the_document_names_the_agreed_columns(sites: dict[str, Any], job: str) -> None:
    document = _document(sites, job)

    assert document["feature_names"] == NAMES, job
    assert document["categories"] == [None, PAIN], job
    assert (document["format"], document["version"]) == ("fedtrees.job", 1), job


TREE_JOBS = ["fedforest", "federated-id3", "icdta", "local-ensemble", "synthetic"]
TREE_JOBS += ["dpforest"]
TREE_JOBS += ["fedgbdt", "fedga"]


@pytest.mark.parametrize("job", TREE_JOBS)
def test_saved_trees_render_with_the_feature_names(
    sites: dict[str, Any], job: str
) -> None:
    trees = _trees(_document(sites, job))

    assert trees, job
    for document in trees:
        tree = Tree.from_dict(document)
        assert tree.feature_names is not None, job
        text = tree.to_text()
        # Splits by name (the synthetic-data tree's one-hot columns are named
        # after theirs: chest_pain=...).
        assert re.search(r"^\|--- (age|chest_pain)", text), text
        assert not re.search(r"\bx[01]\b", text), text


@pytest.mark.parametrize("job", ["fedforest", "icdta", "local-ensemble", "dpforest"])
def test_saved_trees_keep_the_agreed_categories(
    sites: dict[str, Any], job: str
) -> None:
    for document in _trees(_document(sites, job)):
        tree = Tree.from_dict(document)
        assert tree.feature_names == tuple(NAMES), job
        assert tree.categories == (None, tuple(PAIN)), job


def test_a_saved_forest_shows_categorical_splits_by_category_name(
    sites: dict[str, Any],
) -> None:
    for document in _trees(_document(sites, "fedforest")):
        text = Tree.from_dict(document).to_text()
        assert re.search(r"chest_pain (not )?in \{(asymptomatic|atypical)", text), text


def test_a_saved_boosted_model_gives_the_estimators_raw_scores(
    sites: dict[str, Any],
) -> None:
    from fedtrees import FedGBDTClassifier

    document = _document(sites, "fedgbdt")
    X = pd.concat([site[0] for site in sites.values()], ignore_index=True)
    y = np.concatenate([site[1] for site in sites.values()])
    groups = np.repeat(list(sites), [site[0].shape[0] for site in sites.values()])
    model = FedGBDTClassifier(**PARAMS["fedgbdt"]).fit(X, y, groups=groups)

    codes = np.column_stack([X["age"], X["chest_pain"].cat.codes])
    raw = np.full(X.shape[0], document["base_margin"][0])
    for iteration in document["trees"]:
        raw += Tree.from_dict(iteration[0]).predict_value(codes)[:, 0]
    assert document["classes"] == ["healthy", "sick"]
    np.testing.assert_allclose(raw, model.decision_function(X), rtol=0, atol=1e-12)


LIGHT_JOBS = ("toy", "fedforest", "fedgbdt")  # their sites need no scikit-learn


def _client_process_kinds(job: str) -> dict[str, Any]:
    """What a fresh ClientApp process registers for ``job`` (handlers, imports)."""
    code = (
        "import json, sys\n"
        "from fedtrees.algorithms._handlers import load_handlers\n"
        f"load_handlers({job!r})\n"
        "from fedtrees.federation._client import _HANDLERS\n"
        "print(json.dumps({'kinds': sorted(_HANDLERS),"
        " 'sklearn': 'sklearn' in sys.modules}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return dict(json.loads(out.stdout))


@pytest.mark.parametrize("job", sorted(PARAMS))
def test_a_client_process_loads_the_handlers_of_its_job(
    sites: dict[str, Any], job: str
) -> None:
    _, ledger = run_job(job, Federation.from_clients(sites), PARAMS[job])
    asked = set(ledger.to_frame()["kind"])

    loaded = _client_process_kinds(job)

    assert asked <= set(loaded["kinds"]), asked - set(loaded["kinds"])
    if job in LIGHT_JOBS:
        assert not loaded["sklearn"], job  # the estimators stay unloaded
