"""A level whose every node has one client takes one round (issue 13).

The strategy's **Decision**: where every open node may hold rows of one active
client only — every level of ``fit`` without ``groups``, every level when each
tree has one client (``client_fraction``), deep levels under covariate shift,
the levels after a dropout that leaves one client — the sketch and the
evaluation are folded into one ``fedforest.sketch_evaluate`` round. The client
derives the server's candidates from its own sketch. The reference for every
test is the same fit with folding switched off: the forest must be the same bit
for bit, in fewer rounds, with the same statistics on the wire.
"""

from __future__ import annotations

import dataclasses
import warnings
from functools import partial
from typing import Any, TypeVar

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.tree import DecisionTreeClassifier

from fedtrees import FedForestClassifier, FedForestRegressor
from fedtrees.algorithms.fedforest import _state
from fedtrees.algorithms.fedforest._candidates import own_candidates
from fedtrees.algorithms.fedforest._layout import first_bins, rebase_bins
from fedtrees.algorithms.fedforest._sketch_payloads import (
    SketchEvaluateReply,
    SketchEvaluateRequest,
)
from fedtrees.audit import audit_row_scaling, find_client_values, recording
from fedtrees.datasets import synthetic
from fedtrees.exceptions import (
    CentralizedFitWarning,
    ClientDropoutWarning,
    RemoteProtocolError,
)
from fedtrees.federation import Fault, Federation, Ledger, Resync, decode
from fedtrees.tree import NodeKind
from tests.algorithms.exact_compare import divergences
from tests.algorithms.ledger_helpers import (
    check_bin_sizes,
    check_sketch_sizes,
    exchanges,
)
from tests.audit_helpers import estimator_fit, leveled

FOLDED = "fedforest.sketch_evaluate"
# The fold belongs to the sketch modes: the paper's "quantile" unless a test says.
Classifier = partial(FedForestClassifier, candidates="quantile")
Regressor = partial(FedForestRegressor, candidates="quantile")


Model = TypeVar("Model", FedForestClassifier, FedForestRegressor)


def unfolded(model: Model) -> Model:
    """Switch the fold off (``ForestConfig.fold``): every level takes its sketch
    and evaluation rounds."""
    config = model._config
    model._config = lambda: dataclasses.replace(config(), fold=False)  # type: ignore[method-assign]
    return model


def _data(n: int = 600, regression: bool = False) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 5))
    X[:, 4] = rng.integers(0, 4, n)  # ties
    signal = X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(scale=0.3, size=n)
    return X, signal if regression else (signal > 0).astype(int)


def _fit(model: Any, X: Any, y: Any, groups: Any = None, **kw: Any) -> Ledger:
    """Fit ``model`` (keeping every message); ``groups=None``: one client."""
    sites = np.zeros(len(y), dtype=int) if groups is None else groups
    fed = Federation.from_groups(X, y, sites, **kw)
    with recording() as ledgers, warnings.catch_warnings():
        warnings.simplefilter("ignore", ClientDropoutWarning)
        model.fit_federation(fed)
    (ledger,) = ledgers
    return ledger


def _folded_and_not(
    make: Any, kw: dict[str, Any], X: Any, y: Any, groups: Any = None, **fed: Any
) -> tuple[Any, Ledger, Ledger]:
    """Fit with and without the fold; the forests must be the same bit for bit.

    Returns the folded model, its ledger and the unfolded fit's ledger.
    """
    folded = make(**kw)
    ledger = _fit(folded, X, y, groups, **fed)
    reference = unfolded(make(**kw))
    two_rounds = _fit(reference, X, y, groups, **fed)
    assert folded.trees_ == reference.trees_  # the Tree equality compares arrays
    return folded, ledger, two_rounds


def _kinds(ledger: Ledger) -> dict[str, int]:
    """Message kinds sent down per kind (one per client and round)."""
    out: dict[str, int] = {}
    for m in ledger.captured:
        if m.direction == "down" and m.round:
            out[m.kind] = out.get(m.kind, 0) + 1
    return out


CASES = {
    "quantile": (Classifier, {}),
    "exact": (Classifier, {"candidates": "exact"}),
    "entropy": (Classifier, {"criterion": "entropy", "n_quantiles": 5}),
    "regression": (Regressor, {}),
    "categorical": (Classifier, {"max_features": None}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_client_takes_one_round_per_level_and_grows_the_same_forest(
    case: str,
) -> None:
    make, params = CASES[case]
    X, y = _data(regression=make is Regressor)
    if case == "categorical":  # a pandas category column: Fisher groupings
        import pandas as pd

        X = pd.DataFrame(X, columns=list("abcde"))
        X["e"] = X["e"].astype(int).astype("category")
    kw = {"n_estimators": 5, "max_depth": 4, "random_state": 3, **params}
    _, ledger, two_rounds = _folded_and_not(make, kw, X, y)
    assert ledger.rounds == 1 + 4  # the agreement, then one round per level
    assert two_rounds.rounds == 1 + 2 * 4
    assert _kinds(ledger) == {FOLDED: 4}
    # Up: the sketches and bins of the two rounds; down: no candidates at all.
    assert ledger.bytes_up <= two_rounds.bytes_up
    assert ledger.bytes_down < two_rounds.bytes_down / 2
    assert find_client_values(ledger, _federation(X, y)).messages == len(
        ledger.captured
    )


def _federation(X: Any, y: Any) -> Federation:
    return Federation.from_groups(X, y, np.zeros(len(y), dtype=int))


def test_fit_without_groups_folds_and_predicts_as_before() -> None:
    X, y = _data()
    kw = {"n_estimators": 5, "max_depth": 3, "random_state": 0}
    with pytest.warns(CentralizedFitWarning):
        model = Classifier(**kw).fit(X, y)
    assert model.communication_.rounds == 1 + 3
    with pytest.warns(CentralizedFitWarning):
        reference = unfolded(Classifier(**kw)).fit(X, y)
    np.testing.assert_array_equal(model.predict_proba(X), reference.predict_proba(X))


def test_a_folded_exact_tree_is_scikit_learns_tree() -> None:
    rng = np.random.default_rng(4)
    X = rng.normal(size=(300, 4)).astype(np.float32).astype(np.float64)
    y = np.sin(3 * X[:, 0]) + X[:, 1] > 0.3
    params = {"max_depth": 6, "min_samples_leaf": 3}
    sk = DecisionTreeClassifier(random_state=0, **params).fit(X, y)
    ours = Classifier(
        n_estimators=1,
        bootstrap=False,
        max_features=None,
        candidates="exact",
        **params,
    )
    ledger = _fit(ours, X, y)
    assert _kinds(ledger) == {FOLDED: ledger.rounds - 1}
    assert divergences(ours.trees_[0], sk.tree_) == []


def _shifted() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Covariate shift with disjoint supports: the root splits the two sites apart."""
    rng = np.random.default_rng(1)
    Xa, Xb = rng.normal(size=(200, 3)), rng.normal(size=(200, 3))
    Xb[:, 0] += 10.0
    y = np.r_[Xa[:, 1] > 1.2, Xb[:, 1] > -1.2].astype(int)
    y[rng.random(400) < 0.1] ^= 1  # label noise: deep trees
    return np.vstack([Xa, Xb]), y, np.repeat(["a", "b"], 200)


def test_levels_below_a_split_between_sites_fold_in_a_federation() -> None:
    X, y, groups = _shifted()
    kw = {
        "n_estimators": 1,
        "bootstrap": False,
        "max_features": None,
        "max_depth": 5,
        "min_samples_leaf": 5,
    }
    model, ledger, two_rounds = _folded_and_not(Classifier, kw, X, y, groups)
    kinds = _kinds(ledger)
    # The root splits the sites apart; the server learns it from the next
    # sketch, so the levels from depth 2 on are folded.
    assert model.trees_[0].feature[0] == 0
    assert model.trees_[0].count[1] == 200  # site a's rows, all of them
    assert kinds["fedforest.sketch"] == 2 * 2  # depths 0 and 1, both sites
    assert kinds[FOLDED] == 2 * 3  # depths 2 to 4, each site its own nodes
    assert ledger.rounds == two_rounds.rounds - kinds[FOLDED] // 2
    assert find_client_values(ledger, Federation.from_groups(X, y, groups)).messages


def test_one_client_per_tree_folds_every_level() -> None:
    X, y = _data()
    groups = np.arange(600) % 3
    kw = {"n_estimators": 6, "max_depth": 4, "client_fraction": 0.34, "random_state": 2}
    _, ledger, _ = _folded_and_not(Classifier, kw, X, y, groups)
    assert ledger.rounds == 1 + 4
    assert set(_kinds(ledger)) == {FOLDED}


@pytest.mark.parametrize(("drop_at", "min_split"), [(3, 2), (4, 120)])
def test_a_dropout_that_leaves_one_client_folds_the_levels_after_it(
    drop_at: int, min_split: int
) -> None:
    X, y = _data()
    groups = np.repeat(["a", "b", "c"], 200)
    kw = {
        "n_estimators": 3,
        "max_depth": 4,
        "min_samples_split": min_split,  # 120: too many for some of a's nodes
        "on_dropout": "continue",
        "random_state": 0,
    }
    drops = (Fault("b", "drop", round=drop_at), Fault("c", "drop", round=drop_at))
    _, ledger, two_rounds = _folded_and_not(Classifier, kw, X, y, groups, faults=drops)
    kinds = _kinds(ledger)
    if drop_at == 3:
        # b and c drop in level 1's sketch: its evaluation follows, then 'a'
        # alone folds the levels below.
        assert ledger.rounds == two_rounds.rounds - kinds[FOLDED] == 1 + 2 + 2 + 2
    else:
        # They drop in level 1's evaluation: the level starts again, folded,
        # at nodes whose statistics now come from 'a' alone (some too small to
        # split: their bins are left out).
        assert kinds[FOLDED] >= 1
        assert ledger.rounds == two_rounds.rounds - kinds[FOLDED]
    assert kinds["fedforest.sketch"] == 3 * 2  # levels 0 and 1, three sites


def test_folded_bins_move_to_the_evaluated_nodes_only() -> None:
    """Bins of asked nodes that are not evaluated are dropped, the others shift."""
    rng = np.random.default_rng(0)
    own = rng.integers(0, 4, size=(5, 3))  # 5 asked nodes, 3 features
    at = np.array([1, 3, 4])  # evaluated: asked nodes 1, 3 and 4
    bins = own.ravel() + 1
    dense = rng.integers(0, 3, size=(int(bins.sum()), 2))  # every bin's statistics
    index = np.flatnonzero(dense.any(axis=1))
    reply = SketchEvaluateReply(
        counts=np.zeros(5),
        node_stats=np.zeros((5, 2)),
        n_points=np.zeros((5, 3), np.int64),
        points=np.zeros(0),
        cat_stats=np.zeros((0, 0, 2)),
        bin_index=index,
        bin_stats=dense[index],
    )
    moved, stats = rebase_bins(reply, own, at, own[at])
    blocks = np.split(dense, np.cumsum(bins)[:-1])  # one block per pair
    want = np.concatenate([blocks[r * 3 + f] for r in at for f in range(3)])
    got = np.zeros_like(want)
    got[moved] = stats
    np.testing.assert_array_equal(got, want)


def test_state_lost_in_folded_rounds_is_resent_and_changes_nothing() -> None:
    X, y = _data()
    kw = {"n_estimators": 4, "max_depth": 5, "n_quantiles": 8, "random_state": 4}
    clean = Classifier(**kw)
    _fit(clean, X, y)
    faults = (Fault("0", "forget", round=2), Fault("0", "forget", round=4))
    model = Classifier(**kw)
    ledger = _fit(model, X, y, faults=faults)
    assert model.trees_ == clean.trees_
    assert ledger.rounds == 1 + 5
    resynced = {
        m.round
        for m in ledger.captured
        if m.direction == "up" and isinstance(decode(m.data).payload, Resync)
    }
    assert resynced == {2, 4}


def test_folded_bytes_follow_section_1_5() -> None:
    """A folded reply holds the sketch (min(q, r) + 1 points) and lean bins.

    Per pair: at most min(candidates + 1, r) non-zero bins, which add up to
    the node's r rows; the candidates are the client's own, within its range.
    """
    rng = np.random.default_rng(5)
    n, q, fp = 227, 8, 2
    X, y = rng.normal(size=(n, 6)), rng.integers(0, 3, n)
    forest = {"n_estimators": 2, "max_depth": 4, "bootstrap": False}
    model = Classifier(n_quantiles=q, max_features=fp, **forest)
    ledger = _fit(model, X, y)
    checked = 0
    for message, request, reply in exchanges(ledger):
        if message.kind != FOLDED:
            continue
        assert isinstance(request, SketchEvaluateRequest)
        assert isinstance(reply, SketchEvaluateReply)
        r = check_sketch_sizes(reply, q, fp)
        count, thresholds = request.own_layout(reply)
        assert np.all(count <= q - 1)
        assert thresholds.shape[0] == count.sum()
        check_bin_sizes(reply, count, r, 3)
        checked += 1
    assert checked == 4


def test_no_folded_message_grows_with_the_rows() -> None:
    X, y, _ = leveled()
    params = {"n_estimators": 2, "max_depth": 2, "bootstrap": False}
    params |= {"n_quantiles": 4, "min_samples_leaf": 5, "max_features": None}
    report = audit_row_scaling(
        estimator_fit(lambda: Classifier(random_state=0, **params)),
        X,
        y,
        np.zeros(y.shape[0], dtype=int),
    )
    assert report.messages > 0
    assert report.per_row_by_design == ()


def _mutate_folded(change: Any) -> Fault:
    def mutate(reply: Any) -> Any:
        return change(reply) if isinstance(reply, SketchEvaluateReply) else reply

    return Fault("0", "mutate", round=2, mutate=mutate)


def _one_bin_plus_one(r: SketchEvaluateReply) -> SketchEvaluateReply:
    bins = r.bin_stats.astype(np.float64)
    bins[0, 0] += 1.0
    return dataclasses.replace(r, bin_stats=bins)


def _bin_past_the_layout(r: SketchEvaluateReply) -> SketchEvaluateReply:
    index = r.bin_index.astype(np.int64)
    index[-1] += 10**6
    return dataclasses.replace(r, bin_index=index)


def _shuffled_points(r: SketchEvaluateReply) -> SketchEvaluateReply:
    return dataclasses.replace(r, points=r.points[::-1].copy())


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("change", "field", "reason"),
    [
        (_one_bin_plus_one, "bin_stats", "a pair's bins sum"),
        (_bin_past_the_layout, "bin_index", "the layout has"),
        (_shuffled_points, "points", "non-decreasing"),
    ],
    ids=["bins", "index", "points"],
)
def test_a_folded_reply_is_checked_against_its_own_sketch(
    change: Any, field: str, reason: str
) -> None:
    X, y = _data()
    model = Classifier(n_estimators=2, max_depth=3, random_state=0)
    with pytest.raises(
        RemoteProtocolError,
        match=rf"Client '0', round 2, '{FOLDED}': field '{field}' .*{reason}",
    ):
        _fit(model, X, y, faults=(_mutate_folded(change),))


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n_clients=st.integers(1, 4),
    depth=st.integers(1, 6),
    regression=st.booleans(),
    candidates=st.sampled_from(["quantile", "exact"]),
    fraction=st.sampled_from([1.0, 0.3]),
)
def test_folded_and_unfolded_fits_grow_the_same_forest(
    seed: int,
    n_clients: int,
    depth: int,
    regression: bool,
    candidates: str,
    fraction: float,
) -> None:
    """Random federations: sizes, supports apart or shared, bootstrap, modes,
    client splits."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(40, 300))
    X = rng.normal(size=(n, 3))
    groups = rng.integers(0, n_clients, n)
    if rng.random() < 0.5:  # covariate shift: each client's own range of x0
        X[:, 0] += 6.0 * groups
    signal = X[:, 0] * X[:, 1] + rng.normal(scale=0.5, size=n)
    make = Regressor if regression else Classifier
    y = signal if regression else (signal > 0).astype(int)
    kw = {
        "n_estimators": 3,
        "max_depth": depth,
        "candidates": candidates,
        "n_quantiles": int(rng.integers(2, 16)),
        "client_fraction": fraction,
        "split_on_client": bool(rng.random() < 0.3),
        "random_state": seed,
    }
    _, ledger, two_rounds = _folded_and_not(make, kw, X, y, groups)
    # Each folded round replaces a sketch and an evaluation (or a lone sketch
    # when nothing numeric is left to evaluate).
    folded_rounds = len({m.round for m in ledger.captured if m.kind == FOLDED})
    assert two_rounds.rounds - folded_rounds <= ledger.rounds <= two_rounds.rounds


def test_children_of_client_splits_are_asked_of_their_side_only() -> None:
    """Outcome shift (docs/fedforest.md, "The experiments") with client splits: the server knows each client's
    side of a client split, so a child is asked only of the clients sent there,
    and a child with one client folds at once."""
    data = synthetic.make_fedforest("outcome_shift", random_state=0)
    kw = {"n_estimators": 10, "max_depth": 6, "split_on_client": True}
    model = Regressor(random_state=0, **kw)
    ledger = _fit(model, data.X, data.y, data.groups)
    blind = (np.zeros(0, np.int64), np.zeros((0, 0), bool))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_state, "client_sides", lambda g, n, p: blind)
        reference = unfolded(Regressor(random_state=0, **kw))
        before = _fit(reference, data.X, data.y, data.groups)
    assert model.trees_ == reference.trees_
    assert any(NodeKind.CLIENT in t.kind for t in model.trees_)
    assert _asked(ledger) < _asked(before)
    assert ledger.rounds < before.rounds == 1 + 2 * 6
    assert ledger.bytes_down < before.bytes_down / 2


def _asked(ledger: Ledger) -> int:
    """(client, node) pairs asked about over the whole fit."""
    return sum(
        decode(m.data).payload.open_nodes.shape[0]  # type: ignore[union-attr]
        for m in ledger.captured
        if m.direction == "down" and m.round
    )


def _points_on_the_category(r: SketchEvaluateReply) -> SketchEvaluateReply:
    """An internally consistent folded reply with points of the categorical pair.

    Its own layout gains candidates there (their bins empty, like a categorical
    pair's one bin), so the reply passes its own checks; only the request's
    feature kinds show that the pair is not numeric.
    """
    n_points = r.n_points.astype(np.int64)
    row, col = int(np.flatnonzero(r.counts > 0)[0]), n_points.shape[1] - 1
    start = int(n_points.ravel()[: row * n_points.shape[1] + col].sum())
    points = np.insert(r.points, start, [0.0, 3.0])
    bent = n_points.copy()
    bent[row, col] = 2
    before, _ = own_candidates(n_points, r.points, r.counts, "quantile", 32)
    after, _ = own_candidates(bent, points, r.counts, "quantile", 32)
    index = r.bin_index.astype(np.int64)
    pair = np.searchsorted(first_bins(before), index, side="right") - 1
    moved = first_bins(after)[pair] + index - first_bins(before)[pair]
    return dataclasses.replace(
        r, n_points=bent.astype(r.n_points.dtype), points=points, bin_index=moved
    )


@pytest.mark.hostile("clear_error")
def test_points_of_a_categorical_pair_are_refused_before_any_candidate() -> None:
    import pandas as pd

    X, y = _data()
    frame = pd.DataFrame(X, columns=list("abcde"))
    frame["e"] = frame["e"].astype(int).astype("category")  # codes 0-3, last
    model = Classifier(n_estimators=2, max_depth=3, max_features=None)
    with pytest.raises(
        RemoteProtocolError,
        match=rf"Client '0', round 2, '{FOLDED}': field 'n_points' .*categorical",
    ):
        _fit(model, frame, y, faults=(_mutate_folded(_points_on_the_category),))
