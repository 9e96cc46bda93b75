"""ICDTAClassifier: the protocol, the global tree, the messages (docs/icdta.md)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.metrics import accuracy_score, f1_score

from fedtrees import ICDTAClassifier, Tree, datasets
from fedtrees.algorithms.icdta import RuleSet, score_labels
from fedtrees.algorithms.icdta._payloads import (
    EvaluateRequest,
    GlobalRequest,
    ScoresReply,
    TreeReply,
)
from fedtrees.audit import audit_row_scaling, find_client_values
from fedtrees.exceptions import (
    RemoteProtocolError,
    RuleLimitExceeded,
    ValidationError,
)
from fedtrees.federation import Fault, Federation, Ledger
from tests.algorithms.ledger_helpers import (
    array_bytes,
    exchanges,
    fit_with_ledger,
    packed_bytes,
)
from tests.audit_helpers import estimator_fit, leveled


def _random_sites(n: int, k: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, k, n).astype(str)


@pytest.mark.parametrize("name", ["car", "nursery"])
def test_one_client_keeps_its_rules_and_the_global_tree_predicts_as_its_tree(
    name: str,
) -> None:
    data = datasets.load(name)
    model = ICDTAClassifier().fit(data.X, data.y)  # groups=None: one client

    (client_tree,) = model.client_trees_.values()
    codes = model._codes(data.X)
    agree = np.mean(model.tree_.predict(codes) == client_tree.predict(codes))
    assert agree >= 0.99
    assert model.kept_ == ["0"]
    assert len(model.rule_set_) == client_tree.n_leaves  # every rule kept, none merged


def test_one_client_cart_on_numeric_data() -> None:
    credit = datasets.load("credit_default")
    model = ICDTAClassifier(base="cart", random_state=0).fit(credit.X, credit.y)

    (client_tree,) = model.client_trees_.values()
    codes = model._codes(credit.X)  # categorical columns as codes, numbers raw
    assert np.mean(model.tree_.predict(codes) == client_tree.predict(codes)) >= 0.99
    assert model.binning_ is None  # CART splits raw values
    assert model.max_depth_ == 5
    assert model.tree_.max_depth <= 5


def test_the_papers_rule_gain_loses_the_client_tree_at_its_depth() -> None:
    """The Decision behind rule_gain="quinlan", shown (docs/icdta.md step 5)."""
    hotel = datasets.load("hotel_ac_iot")
    X = hotel.X.to_numpy()
    agreement = {}
    for gain in ("quinlan", "paper"):
        model = ICDTAClassifier(base="cart", rule_gain=gain, random_state=0)
        model.fit(hotel.X, hotel.y)
        (client_tree,) = model.client_trees_.values()
        agreement[gain] = np.mean(model.tree_.predict(X) == client_tree.predict(X))
    assert agreement["quinlan"] > 0.95
    assert agreement["paper"] < 0.8  # copies of free rules win the splits


def _fit_with_ledger(
    X: pd.DataFrame, y: Any, sites: np.ndarray, **params: Any
) -> tuple[ICDTAClassifier, Ledger, Federation]:
    federation = Federation.from_groups(X, y, sites)
    model = ICDTAClassifier(**params)
    return model, fit_with_ledger(model, federation), federation


def test_no_client_ever_scores_its_own_tree() -> None:
    car = datasets.load("car")
    model, ledger, _ = _fit_with_ledger(car.X, car.y, _random_sites(1728, 4))

    checked = 0
    for message, request, reply in exchanges(ledger):
        if isinstance(reply, ScoresReply):
            assert isinstance(request, EvaluateRequest)
            own = request.recipient
            assert str(request.owners[own]) == message.client
            assert np.isnan(reply.scores[own])
            assert np.isfinite(np.delete(reply.scores, own)).all()
            checked += 1
    assert checked == 4
    matrix = model.score_matrix_.to_numpy()
    assert np.isnan(np.diag(matrix)).all()
    assert np.isfinite(matrix[~np.eye(4, dtype=bool)]).all()


def test_messages_hold_no_rows_and_bytes_follow_the_formula() -> None:
    rng = np.random.default_rng(5)
    sizes = [211, 307, 401]  # primes: no legitimate array has these lengths
    n = sum(sizes)
    X = pd.DataFrame(
        {
            "colour": pd.Categorical(rng.choice(["r", "g", "b"], n)),
            "size": rng.normal(size=n),
            "weight": rng.uniform(0, 10, n),
        }
    )
    y = np.where((X["colour"] == "r") | (X["size"] > 0.5), "yes", "no")
    sites = np.repeat(["a", "b", "c"], sizes)
    model, ledger, federation = _fit_with_ledger(X, y, sites)

    # The sketch of a client with at most SKETCH_POINTS rows (client 'a', 211) is
    # exact: every value of each numeric column, sorted. Declared, and listed.
    sketch = {"discretize.sketch_reply": ["points"]}
    report = find_client_values(ledger, federation, per_row=sketch)
    assert report.messages == 2 * 3 * 5
    assert report.per_row_by_design == ("discretize.sketch_reply.points",)
    assert ledger.rounds == 1 + 1 + 3  # agreement, sketch, fit, evaluate, global
    assert ledger.messages == 3 * 5
    trees = list(model.client_trees_.values())
    f, c, edges = 3, 2, sum(e.shape[0] for e in model.binning_.edges if e is not None)
    binning = f + 16 * f + 8 + 8 * edges
    n_rules = len(model.rule_set_)  # codes below 128: one byte per rule and feature
    for message, request, reply in exchanges(ledger):
        labels = request.classes.nbytes if hasattr(request, "classes") else 0
        if isinstance(reply, TreeReply):
            tree = model.client_trees_[message.client]
            assert array_bytes(reply) == packed_bytes([tree], c)
        if isinstance(request, EvaluateRequest):
            expected = packed_bytes(trees, c) + binning + labels
            assert array_bytes(request) == expected + request.owners.nbytes
        if isinstance(reply, ScoresReply):
            assert array_bytes(reply) == 8 * 3
        if isinstance(request, GlobalRequest):
            rules = n_rules * (8 * c + 1 * f)
            expected = packed_bytes([model.tree_], c) + binning + labels + rules
            assert array_bytes(request) == expected
    frame = ledger.to_frame()
    sent = [len(m.data) for m in ledger.captured]
    assert frame.bytes_up.sum() + frame.bytes_down.sum() == sum(sent)


def test_no_message_grows_with_the_rows() -> None:
    X, y, groups = leveled()
    report = audit_row_scaling(
        estimator_fit(lambda: ICDTAClassifier(max_depth=2, random_state=0)),
        X,
        y,
        groups,
        per_row={"discretize.sketch_reply": ["points"]},  # exact below 256 rows
    )
    assert report.messages > 0
    assert report.per_row_by_design == ("discretize.sketch_reply.points",)


def test_filters_keep_the_trees_at_or_above_their_threshold() -> None:
    nursery = datasets.load("nursery")
    sites = _random_sites(nursery.n_samples, 6, seed=1)
    mean = ICDTAClassifier().fit(nursery.X, nursery.y, groups=sites)
    scores = mean.tree_scores_
    assert mean.kept_ == [c for c in scores.index if scores[c] >= scores.mean() - 1e-12]
    strict = ICDTAClassifier(filter="percentile:100").fit(
        nursery.X, nursery.y, groups=sites
    )
    assert strict.kept_ == [scores.idxmax()]
    assert len(strict.rule_set_) == strict.client_trees_[scores.idxmax()].n_leaves


def test_a_filter_that_keeps_no_tree_is_a_clear_error() -> None:
    car = datasets.load("car")
    with pytest.raises(
        ValidationError, match=r"filter 'threshold:0\.999'.*kept no tree"
    ):
        ICDTAClassifier(filter="threshold:0.999").fit(
            car.X, car.y, groups=_random_sites(1728, 4)
        )


def test_too_many_rules_stop_before_the_product_naming_the_step() -> None:
    car = datasets.load("car")
    with pytest.raises(RuleLimitExceeded, match=r"client '\d'.*max_rules=50.*filter"):
        ICDTAClassifier(filter="threshold:0.0", max_rules=50).fit(
            car.X, car.y, groups=_random_sites(1728, 4)
        )


def test_cart_merge_modes_and_string_labels() -> None:
    hotel = datasets.load("hotel_ac_iot")
    labels = hotel.y.map({0: "ok", 1: "fault"})
    rows = np.random.default_rng(0).permutation(hotel.n_samples)[:4000]
    X, y = hotel.X.iloc[rows], labels.iloc[rows]
    sites = _random_sites(4000, 3)
    models = {
        merge: ICDTAClassifier(
            base="cart", merge=merge, filter="threshold:0", random_state=0
        ).fit(X, y, groups=sites)
        for merge in ("intersection", "paper")
    }
    for model in models.values():
        assert set(model.predict(X)) <= {"ok", "fault"}
        assert model.score(X, y) > 0.6  # the hotel files are balanced: 0.5
        assert isinstance(model.rule_set_, RuleSet)
        assert list(model.rules_.columns[:2]) == ["rule", "class"]
    # "paper" keeps the less restrictive bound: never narrower than intersection.
    paper, inter = models["paper"].rule_set_, models["intersection"].rule_set_
    assert (paper.high - paper.low).mean() >= (inter.high - inter.low).mean()


def test_global_tree_is_a_real_tree_and_rules_are_readable() -> None:
    car = datasets.load("car")
    model = ICDTAClassifier().fit(car.X, car.y, groups=_random_sites(1728, 3))

    text = model.tree_.to_text()
    assert "safety in {" in text or "persons in {" in text
    assert Tree.from_json(model.tree_.to_json()) == model.tree_
    assert model.tree_.rules()
    assert "=" in model.rules_["rule"].iloc[0]
    assert set(model.global_scores_) == {"0", "1", "2"}
    assert all(0 <= s <= 1 for s in model.global_scores_.values())


def test_single_class_clients_other_categories_and_unseen_categories() -> None:
    X = pd.DataFrame(
        {"c": pd.Categorical(list("xyxy") * 6), "d": pd.Categorical(list("ppqq") * 6)}
    )
    y = np.array(["no", "yes", "no", "yes"] * 6)
    sites = np.array([0, 0, 1, 1, 2, 2] * 4)
    y[sites == 0] = "no"  # client 0 holds one class: its tree is a single leaf
    model = ICDTAClassifier(filter="threshold:0").fit(X, y, groups=sites)
    assert model.client_trees_["0"].n_nodes == 1
    unseen = pd.DataFrame(  # documented: stops at the split
        {"c": pd.Categorical(["w"]), "d": pd.Categorical(["p"])}
    )
    assert model.predict(unseen).shape == (1,)

    a = pd.DataFrame({"c": pd.Categorical(["x", "y", "x"])})
    b = pd.DataFrame({"c": pd.Categorical(["x", "z", "z"])})
    union = ICDTAClassifier().fit_federation(  # the union of x, y, z, as fit:
        Federation.from_clients([(a, [0, 1, 0]), (b, [1, 1, 0])])
    )
    pooled = pd.concat([a, b], ignore_index=True).astype("category")
    expected = ICDTAClassifier().fit(pooled, [0, 1, 0, 1, 1, 0], [0] * 3 + [1] * 3)
    np.testing.assert_array_equal(
        union.predict_proba(pooled), expected.predict_proba(pooled)
    )


def test_a_reply_scoring_its_own_tree_is_refused() -> None:
    car = datasets.load("car")

    def own(reply: ScoresReply) -> ScoresReply:
        return ScoresReply(scores=np.nan_to_num(reply.scores, nan=1.0))

    federation = Federation.from_groups(
        car.X,
        car.y,
        _random_sites(1728, 3),
        faults=[Fault("1", "mutate", round=2, mutate=own)],
    )
    with pytest.raises(RemoteProtocolError, match=r"Client '1'.*'scores'.*own"):
        ICDTAClassifier().fit_federation(federation)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"base": "c45"}, "'base'"),
        ({"metric": "auc"}, "'metric'"),
        ({"filter": "percentile:101"}, "'filter'"),
        ({"filter": "top"}, "'filter'"),
        ({"merge": "union"}, "'merge'"),
        ({"max_rules": 0}, "'max_rules'"),
        ({"max_depth": 0}, "'max_depth'"),
        ({"n_bins": 1}, "'n_bins'"),
        ({"bin_edges": {"weight": []}}, r"bin_edges\['weight'\]"),
        ({"base": "cart", "bin_edges": {"weight": [1.0]}}, "'bin_edges'.*base='cart'"),
    ],
)
def test_bad_settings_name_the_parameter(params: dict[str, Any], match: str) -> None:
    X = pd.DataFrame(
        {"colour": pd.Categorical(["r", "g"] * 10), "weight": np.arange(20.0)}
    )
    with pytest.raises(ValidationError, match=match):
        ICDTAClassifier(**params).fit(X, [0, 1] * 10)


@given(
    hnp.arrays(np.int64, st.integers(1, 40), elements=st.integers(0, 3)),
    st.integers(0, 2**31 - 1),
)
def test_client_scores_equal_scikit_learn(y: np.ndarray, seed: int) -> None:
    predicted = np.random.default_rng(seed).integers(0, 4, y.shape[0])
    assert score_labels(y, predicted, "accuracy") == pytest.approx(
        accuracy_score(y, predicted)
    )
    assert score_labels(y, predicted, "f1_macro") == pytest.approx(
        f1_score(y, predicted, average="macro", zero_division=0)
    )


def test_a_sequence_of_filters_falls_back_without_refitting() -> None:
    car = datasets.load("car")
    sites = _random_sites(1728, 4)
    filters = ["threshold:0", "percentile:100"]

    model = ICDTAClassifier(filter=filters, max_rules=40).fit(
        car.X, car.y, groups=sites
    )

    assert model.filter_ == "percentile:100"  # every tree kept: 63 rules, over 40
    assert model.kept_ == [model.tree_scores_.idxmax()]
    assert model.communication_.rounds == 1 + 3  # one federation, two aggregations
    with pytest.raises(RuleLimitExceeded, match="max_rules=5"):
        ICDTAClassifier(filter=filters, max_rules=5).fit(car.X, car.y, groups=sites)
