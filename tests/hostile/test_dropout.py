"""Dropouts leave no phantom rows (issue 12, item 1).

With ``on_dropout="continue"``, a client that drops out is absent from the level
of its dropout on: every statistic pooled after it comes from the active clients.
Two independent checks, for every round of a small fit and every candidate mode:

- the model equals a run *without* a dropout in which the client's data vanishes
  (it holds zero rows) from the first round of that level on;
- node counts: split nodes below that level count exactly the active clients'
  rows that reach them; those above, every client's rows.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest

from fedtrees import FedForestClassifier, FedForestRegressor
from fedtrees.exceptions import ClientDropoutWarning, RemoteProtocolError
from fedtrees.federation import ClientData, Fault, Federation, RoundEnv
from fedtrees.tree import NodeKind, Tree

SITES = ("a", "b", "c")
DEPTH = 3
MODES: dict[str, dict[str, Any]] = {
    "quantile": {"candidates": "quantile"},
    "exact": {"candidates": "exact"},
    "uniform": {"candidates": "uniform"},
    "avgimp": {"candidates": "quantile", "gain": "avgimp", "top_k": 2},
    # Two features per node: no subtraction, whose kept parents a client whose
    # rows vanish would contradict (test_fedforest_hist covers it with dropouts).
    "hist": {"candidates": "hist", "max_features": 2},
}
# The first round of a level, per mode (later rounds of a level restart it).
LEVEL_START = {
    "quantile": "fedforest.sketch",
    "exact": "fedforest.sketch",
    "uniform": "fedforest.evaluate",
    "avgimp": "fedforest.top_k",
    "hist": "fedforest.histogram",
}


def _data(seed: int = 5) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Three sites with covariate shift: site c's rows sit apart, with flipped labels."""
    rng = np.random.default_rng(seed)
    groups = np.repeat(SITES, [120, 100, 80])
    X = rng.normal(size=(groups.shape[0], 3))
    X[groups == "c", 0] += 3.0
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    y[groups == "c"] = 1 - y[groups == "c"]
    return pd.DataFrame(X, columns=["u", "v", "w"]), y, groups


def _model(mode: str) -> FedForestClassifier:
    return FedForestClassifier(
        n_estimators=1,
        max_depth=DEPTH,
        bootstrap=False,
        on_dropout="continue",
        random_state=0,
        **{"n_quantiles": 8, "max_features": None, **MODES[mode]},
    )


def _kinds(mode: str) -> list[str]:
    """The kind of every round of an undisturbed fit (round 1 first)."""
    seen: list[str] = []
    X, y, groups = _data()
    _model(mode).fit_federation(
        Federation.from_groups(X, y, groups),
        callbacks=[lambda env: seen.append(env.kind) if env.round else None],
    )
    return seen


def _level_start(kinds: list[str], round_: int, mode: str) -> int:
    """The round that opened the level of ``round_`` (other rounds: itself)."""
    if kinds[round_ - 1].split(".")[1] in ("ranges", "grid", "leaf_stats", "score"):
        return round_
    opening = (LEVEL_START[mode], "fedforest.sketch_evaluate")  # a folded level
    starts = [r for r, k in enumerate(kinds, 1) if k in opening]
    before = [r for r in starts if r <= round_]
    return before[-1] if before else round_


def _vanishing(site: str, from_round: int) -> tuple[Federation, Any]:
    """A federation where ``site`` holds zero rows from ``from_round`` on."""
    X, y, groups = _data()
    fed = Federation.from_groups(X, y, groups)
    transport: Any = fed.transport

    def vanish(env: RoundEnv) -> None:
        if env.round == from_round - 1:
            held = transport._clients[site]
            transport._clients[site] = ClientData(
                site, held.X.iloc[:0], held.y.iloc[:0], None
            )
            transport._states[site].clear()

    return fed, vanish


def _dropped(mode: str, round_: int) -> FedForestClassifier:
    X, y, groups = _data()
    fed = Federation.from_groups(
        X, y, groups, faults=(Fault("c", "drop", round=round_),)
    )
    with pytest.warns(ClientDropoutWarning, match=f"round {round_}: Client 'c'"):
        return _model(mode).fit_federation(fed)


def _reference(mode: str, from_round: int) -> FedForestClassifier:
    if from_round == 1:  # absent from the start (it could not answer with no rows)
        X, y, groups = _data()
        kept = groups != "c"
        return _model(mode).fit(X[kept], y[kept], groups=groups[kept])
    fed, vanish = _vanishing("c", from_round)
    return _model(mode).fit_federation(fed, callbacks=[vanish])


def _same_nodes(a: Tree, b: Tree) -> bool:
    """The same nodes (splits, counts, values); metadata such as clients aside."""
    return all(
        np.array_equal(getattr(a, f), getattr(b, f), equal_nan=True)
        for f in ("feature", "threshold", "left", "right", "count", "value")
    )


def _counts_hold(tree: Tree, level: int) -> None:
    """Split nodes count the rows that reach them: all sites above, a and b below."""
    X, _, groups = _data()
    reached = tree.apply(X.to_numpy())  # the leaf of every row
    depth = tree.node_depth
    for node in np.flatnonzero(tree.kind != NodeKind.LEAF):
        inside = _reaches(tree, X.to_numpy(), int(node))
        rows = inside if depth[node] < level else inside & (groups != "c")
        assert tree.count[node] == rows.sum(), (node, depth[node], level)
    assert reached.shape[0] == X.shape[0]


def _reaches(tree: Tree, X: np.ndarray, node: int) -> np.ndarray:
    """Rows whose path passes through ``node`` (brute force, one row at a time)."""
    out = np.zeros(X.shape[0], dtype=bool)
    for i, row in enumerate(X):
        at = 0
        while True:
            if at == node:
                out[i] = True
                break
            if tree.kind[at] == NodeKind.LEAF:
                break
            go_left = row[tree.feature[at]] <= tree.threshold[at]
            at = int(tree.left[at] if go_left else tree.right[at])
    return out


@pytest.mark.hostile("correct")
@pytest.mark.parametrize("mode", list(MODES))
def test_a_dropout_at_any_round_equals_the_client_vanishing_at_its_level(
    mode: str,
) -> None:
    kinds = _kinds(mode)
    assert len(kinds) >= DEPTH + 1
    for round_ in range(1, len(kinds) + 1):
        start = _level_start(kinds, round_, mode)
        got = _dropped(mode, round_)
        want = _reference(mode, start)
        assert _same_nodes(got.trees_[0], want.trees_[0]), (mode, round_)
        level = kinds[: start - 1].count(LEVEL_START[mode])
        _counts_hold(got.trees_[0], level)


@pytest.mark.hostile("correct")
def test_a_dropout_before_an_evaluation_leaves_no_phantom_rows() -> None:
    """The hostile tester's case: c answers the root's sketch, then drops out.

    Before the fix the root kept c's rows while the bins did not, so the
    children (parent − left) held phantom rows and the model fitted them.
    """
    X, y, groups = _data()
    kept = groups != "c"
    got = _dropped("quantile", 2)
    assert got.trees_[0].count[0] == kept.sum()  # the root, recounted
    accuracy = float((got.predict(X[kept]) == y[kept]).mean())
    alone = _model("quantile").fit(X[kept], y[kept], groups=groups[kept])
    assert accuracy == float((alone.predict(X[kept]) == y[kept]).mean())
    assert accuracy > 0.9


@pytest.mark.hostile("correct")
def test_a_regressor_drops_a_client_without_phantom_moments() -> None:
    X, _, groups = _data()
    target = X["u"].to_numpy() * 2.0 + (groups == "c") * 10.0
    fed = Federation.from_groups(X, target, groups, faults=(Fault("c", "drop", 2),))
    model = FedForestRegressor(
        n_estimators=1,
        max_depth=2,
        bootstrap=False,
        max_features=None,
        on_dropout="continue",
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClientDropoutWarning)
        model.fit_federation(fed)
    tree = model.trees_[0]
    kept = groups != "c"
    assert tree.count[0] == kept.sum()
    leaves = tree.apply(X[kept].to_numpy())
    for leaf in np.unique(leaves):
        mean = target[kept][leaves == leaf].mean()
        assert tree.value[leaf, 0] == pytest.approx(mean, rel=1e-12)


@pytest.mark.hostile("clear_error")
def test_by_default_a_dropout_ends_the_fit_naming_the_client_and_round() -> None:
    X, y, groups = _data()
    fed = Federation.from_groups(X, y, groups, faults=(Fault("b", "drop", 3),))
    with pytest.raises(RemoteProtocolError, match=r"Client 'b', round 3"):
        FedForestClassifier(n_estimators=1, max_depth=2).fit_federation(fed)


# -- every method ------------------------------------------------------------------
def _every_method() -> dict[str, tuple[Any, str]]:
    """A small instance of every estimator, with what it does on a dropout."""
    from fedtrees import (
        DPForestClassifier,
        FedAvgClassifier,
        FederatedID3Classifier,
        FedGAClassifier,
        FedGARegressor,
        ICDTAClassifier,
        LocalEnsembleClassifier,
        LocalModelsRegressor,
        SyntheticDataClassifier,
    )

    ranges = {"u": (-4.0, 7.0), "v": (-4.0, 4.0), "w": (-4.0, 4.0)}
    return {
        "fedforest": (FedForestClassifier(n_estimators=2, max_depth=2), "fail"),
        "fedforest-continue": (
            FedForestClassifier(n_estimators=2, max_depth=2, on_dropout="continue"),
            "continue",
        ),
        "dpforest": (DPForestClassifier(max_depth=2, feature_ranges=ranges), "fail"),
        "icdta": (ICDTAClassifier(random_state=0), "fail"),
        "fedid3": (FederatedID3Classifier(max_depth=2), "fail"),
        "synthetic": (SyntheticDataClassifier(random_state=0), "fail"),
        "fedavg": (FedAvgClassifier(n_rounds=2, random_state=0), "fail"),
        "fedavg-continue": (
            FedAvgClassifier(n_rounds=2, on_dropout="continue", random_state=0),
            "continue",
        ),
        "local": (LocalEnsembleClassifier(n_estimators=2, random_state=0), "fail"),
        "local-models": (LocalModelsRegressor(n_estimators=2, random_state=0), "fail"),
        "fedga": (
            FedGAClassifier(n_generations=1, depth_range=(2, 3), random_state=0),
            "continue",
        ),
        "fedga-regressor": (
            FedGARegressor(n_generations=1, depth_range=(2, 3), random_state=0),
            "continue",
        ),
    }


def _fit(model: Any, faults: tuple[Fault, ...] = ()) -> Any:
    X, y, groups = _data()
    target = X["u"].to_numpy() if "Regressor" in type(model).__name__ else y
    fed = Federation.from_groups(X, target, groups, faults=faults)
    return model.fit_federation(fed)


def _rounds_of(model: Any) -> int:
    return int(_fit(model).communication_.to_frame()["round"].max())


@pytest.mark.hostile("documented")
@pytest.mark.parametrize("method", list(_every_method()))
def test_a_dropout_at_any_round_of_any_method_fails_clearly_or_is_left_out(
    method: str,
) -> None:
    """Methods that need every client fail naming it; the others leave it out."""
    model, policy = _every_method()[method]
    for round_ in range(1, _rounds_of(model) + 1):
        drop = (Fault("b", "drop", round=round_),)
        if policy == "fail":
            with pytest.raises(
                RemoteProtocolError, match=rf"Client 'b', round {round_}, .*missing"
            ):
                _fit(model, drop)
            continue
        with pytest.warns(ClientDropoutWarning, match=rf"round {round_}: Client 'b'"):
            fitted = _fit(model, drop)
        frame = fitted.communication_.to_frame()
        answered = frame[(frame["round"] == round_) & (frame["bytes_up"] > 0)]
        assert "b" not in set(answered["client"]), (method, round_)
