"""FedGA's ``f1_average``: macro (ours) or binary F1, fitness and depth CV alike.

References: scikit-learn's ``f1_score`` on the very predictions the fitted
structures make, and the macro fitness pinned bit for bit to the values the
code gave before the option existed.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import numpy as np
import pytest
from sklearn.metrics import f1_score
from sklearn.model_selection import StratifiedKFold
from sklearn.tree import DecisionTreeClassifier

from fedtrees import FedGAClassifier
from fedtrees._random import sklearn_seed
from fedtrees.algorithms.fedga import (
    cross_validate_depths,
    evaluate_population,
    fit_structure,
    random_structure,
)
from fedtrees.algorithms.fedga._handlers import _split
from fedtrees.audit import recording
from fedtrees.exceptions import ValidationError
from fedtrees.federation import (
    ClientState,
    Envelope,
    Federation,
    decode,
    encode,
    serve,
)


def _two_classes(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Noisy, unbalanced two-class data: positive is the rarer class."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    y = (X[:, 0] + 0.8 * rng.normal(size=n) > 0.6).astype(int)
    return X, y


@pytest.mark.parametrize("average", ["macro", "binary"])
def test_fitness_equals_scikit_learn_f1_on_the_same_predictions(average: str) -> None:
    X, y = _two_classes(500, 0)
    structures = np.array(
        [random_structure(np.random.default_rng([0, i]), 3, 5, 0.3) for i in range(25)]
        + [[-1] * 7]  # one leaf: predicts class 0 everywhere, F1 of class 1 is 0
    )
    fitness = evaluate_population(
        structures, 3, X[:350], y[:350], X[350:], y[350:], "classification", 2,
        f1_average=average,
    )  # fmt: skip
    reference = [
        f1_score(
            y[350:],
            fit_structure(s, 3, X[:350], y[:350], "classification", 2).predict(X[350:]),
            average=average,
            zero_division=0.0,
        )
        for s in structures
    ]
    np.testing.assert_allclose(fitness, reference, rtol=0, atol=1e-12)
    assert fitness[-1] == (0.0 if average == "binary" else pytest.approx(0.4, 0.1))


def test_binary_f1_with_no_positive_row_anywhere_is_zero_as_scikit_learn() -> None:
    X, _ = _two_classes(60, 1)
    y = np.zeros(60, dtype=int)
    fitness = evaluate_population(
        [[0, 1, -1]], 2, X, y, X, y, "classification", 2, f1_average="binary"
    )
    expected = f1_score(y, np.zeros(60, int), average="binary", zero_division=0.0)
    assert fitness.tolist() == [expected] == [0.0]


@pytest.mark.parametrize("average", ["macro", "binary"])
def test_depth_cv_scores_every_fold_with_the_chosen_f1(average: str) -> None:
    X, y = _two_classes(300, 2)
    cv = cross_validate_depths(
        X, y, "classification", seed=4, depth_range=(2, 5), folds=4,
        f1_average=average,
    )  # fmt: skip
    folds = StratifiedKFold(4, shuffle=True, random_state=sklearn_seed(4))
    for k, (train, valid) in enumerate(folds.split(X, y)):
        for j, depth in enumerate(range(2, 6)):
            tree = DecisionTreeClassifier(max_depth=depth, random_state=4)
            pred = tree.fit(X[train], y[train]).predict(X[valid])
            want = f1_score(y[valid], pred, average=average, zero_division=0.0)
            assert cv.scores[k, j] == pytest.approx(want, abs=1e-12)


def test_the_setting_travels_and_each_client_keeps_its_best_binary_f1() -> None:
    X, y01 = _two_classes(600, 3)
    y = np.where(y01 == 1, "yes", "no")  # positive: "yes", the larger label
    groups = np.arange(600) % 3
    federation = Federation.from_groups(X, y, groups)
    model = FedGAClassifier(
        n_generations=4, population_size=8, depth_range=(2, 5), random_state=0,
        f1_average="binary",
    )  # fmt: skip
    with recording() as ledgers:
        model.fit_federation(federation)
    (ledger,) = ledgers
    sent = {
        (m.kind, decode(m.data).payload.f1_average)  # type: ignore[union-attr]
        for m in ledger.captured
        if m.direction == "down" and m.kind in ("fedga.init", "fedga.evaluate")
    }
    assert sent == {("fedga.init", "binary"), ("fedga.evaluate", "binary")}
    assert list(model.classes_) == ["no", "yes"]
    sites = federation.on_each_site(lambda data: data)
    for client, data in sites.items():
        _, valid = _split(data, 0, 0.8)
        rows = data.X.to_numpy()[valid]
        truth = data.y.to_numpy()[valid]
        pred = model.predict(rows, client=client)
        want = f1_score(truth, pred, average="binary", pos_label="yes")
        assert model.client_fitness_[client] == pytest.approx(want, abs=1e-12)
        fitness = model.population_fitness_  # the server's weighted mean
        assert 0.0 <= fitness.min() <= fitness.max() <= 1.0


@pytest.mark.parametrize(
    ("labels", "average", "match"),
    [
        (np.arange(300) % 3, "binary", "'macro' for a task of 3 classes"),
        (np.arange(300) % 2, "micro", "one of 'macro', 'binary'"),
        (np.arange(300) % 2, None, "one of 'macro', 'binary'"),
    ],
)
def test_a_bad_or_impossible_f1_average_is_refused_by_name(
    labels: np.ndarray, average: Any, match: str
) -> None:
    X, _ = _two_classes(300, 5)
    model = FedGAClassifier(n_generations=1, depth_range=(2, 3), f1_average=average)
    with pytest.raises(ValidationError, match=rf"'f1_average'.*{match}"):
        model.fit(X, labels, groups=np.arange(300) % 3)


def _captured_request(kind: str) -> tuple[Envelope, Any]:
    """A valid FedGA request of ``kind`` and the site that received it."""
    X, y = _two_classes(120, 6)
    federation = Federation.from_groups(X, y, np.arange(120) % 3)
    with recording() as ledgers:
        FedGAClassifier(
            n_generations=1, population_size=4, depth_range=(1, 2), cv_folds=2,
            random_state=0,
        ).fit_federation(federation)  # fmt: skip
    (ledger,) = ledgers
    message = next(
        m for m in ledger.captured if m.direction == "down" and m.kind == kind
    )
    return decode(message.data), federation.on_each_site(lambda d: d)[message.client]


@pytest.mark.parametrize("kind", ["fedga.init", "fedga.evaluate", "fedga.final"])
@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"f1_average": "weighted"}, "one of 'macro', 'binary'"),
        (
            {"f1_average": "binary", "classes": np.array(["0", "1", "2"])},
            "'macro' for a task of 3 classes",
        ),
    ],
)
def test_a_site_refuses_a_request_whose_f1_average_it_cannot_score(
    kind: str, change: dict[str, Any], match: str
) -> None:
    envelope, site = _captured_request(kind)
    bad = dataclasses.replace(envelope.payload, **change)
    data = encode(Envelope("request", envelope.round, envelope.client, kind, bad))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        answer = decode(serve(data, site, state=ClientState()))
    assert answer.type == "error"
    assert answer.error is not None
    assert f"'f1_average' parameter of request {kind!r}" in answer.error
    assert match in answer.error


# The macro fitness of 12 random structures, as float.hex, produced by the code
# before ``f1_average`` existed (the same seeds and data); then a fit's best / mean
# fitness per generation and every client's final fitness, recorded with the sites'
# noise seed 0. A site keys its noise by the whole request (docs/security.md), and
# the init request now carries ``f1_average``: the fit's noisy sizes, so its values,
# cannot be those of the code before; the default and an explicit "macro" must give
# these same values.
BEFORE_STRUCTURES = [
    "0x1.4afd6a052bf5bp-3", "0x1.a0abe464d0385p-2", "0x1.8d2ba58d2ba58p-2",
    "0x1.78dd2b04178ddp-2", "0x1.418dc4c08875fp-2", "0x1.4afd6a052bf5bp-3",
    "0x1.4afd6a052bf5bp-3", "0x1.4afd6a052bf5bp-3", "0x1.eaf54b981c67dp-2",
    "0x1.fb9bba68e9643p-2", "0x1.11ff611ff6120p-2", "0x1.4afd6a052bf5bp-3",
]  # fmt: skip
BEFORE_HISTORY = [
    ["0x1.f9bdb1950d520p-2", "0x1.a67a470f2dfc3p-2"],
    ["0x1.0bc1f7ac07fd3p-1", "0x1.f035c0cbffe1dp-2"],
    ["0x1.10683ba194462p-1", "0x1.0396d04a8b9c0p-1"],
    ["0x1.12b1f240b7c96p-1", "0x1.096d4b3b2b9a6p-1"],
    ["0x1.14a06756edb74p-1", "0x1.0ed6f06aa3229p-1"],
]
BEFORE_CLIENTS = {
    "0": "0x1.534d34d34d34dp-1",
    "1": "0x1.34d34d34d34d3p-1",
    "2": "0x1.5555555555555p-1",
    "3": "0x1.39c0372a3c563p-1",
}


@pytest.mark.parametrize("explicit", [False, True])
def test_macro_is_the_default_and_bit_identical_to_before(explicit: bool) -> None:
    rng = np.random.default_rng(11)
    X = rng.normal(size=(400, 5))
    y = np.digitize(X[:, 0] + X[:, 1] + rng.normal(size=400), [-0.7, 0.7])
    structures = np.array(
        [random_structure(np.random.default_rng([11, i]), 3, 5, 0.3) for i in range(12)]
    )
    option = {"f1_average": "macro"} if explicit else {}
    fitness = evaluate_population(
        structures, 3, X[:300], y[:300], X[300:], y[300:], "classification", 3,
        **option,
    )  # fmt: skip
    assert [float(v).hex() for v in fitness] == BEFORE_STRUCTURES
    model = FedGAClassifier(
        n_generations=5, population_size=10, depth_range=(2, 6), random_state=5,
        **option,
    )  # fmt: skip
    model.fit(X, y, groups=np.arange(400) % 4, noise_seed=0)
    history = [
        [float(a).hex(), float(b).hex()] for a, b in model.fitness_history_.to_numpy()
    ]
    assert history == BEFORE_HISTORY
    clients = {c: float(v).hex() for c, v in model.client_fitness_.items()}
    assert clients == BEFORE_CLIENTS
