"""Round four, FedGA's protocol (issue 37): late joins, F1 averaging, trust settings.

- ``join_at`` naming every client: the run used to ask nobody in its first
  round and end with "Round 1: 0 valid replies"; it is refused at ``fit``
  naming ``join_at``.
- ``f1_average`` of FedGAClassifier: an unknown name, or "binary" for a task
  of three classes, refused naming ``f1_average``; the binary fitness checked
  against scikit-learn's ``f1_score`` on the same predictions.
- ``noise`` / ``honest_clients`` of FederatedID3Classifier: impossible settings
  refused by name; the honest-clients reading charged ``ε·sqrt(t − 1)``.
"""

from __future__ import annotations

import math

import numpy as np
from _sweep_core import SIZES, Verdict, blobs, case, check, make, secret_rows

F = "fedga-protocol"
EDGES = {0: [0.0], 1: [0.0], 2: [0.0]}  # declared bins: DP refuses the sketch


def _late(name: str) -> Verdict:
    X, y, groups = blobs()
    secret_rows(SIZES)
    joins = {g: 1 + i % 2 for i, g in enumerate(sorted(set(groups)))}  # G = 2
    make(name).fit(X, y, groups, join_at=joins)
    return check(False, "", f"fitted with every client joining late: {joins}")


case("FedGAClassifier-join_at-every-client", F, ("join_at", "start"))(
    lambda: _late("FedGAClassifier")
)
case("FedGARegressor-join_at-every-client", F, ("join_at", "start"))(
    lambda: _late("FedGARegressor")
)


@case("FedGAClassifier-join_at-one-starter", F)
def one_starter() -> Verdict:
    X, y, groups = blobs()
    secret_rows(SIZES)
    model = make("FedGAClassifier").fit(X, y, groups, join_at={"b": 1, "c": 2})
    return check(
        sorted(model.trees_) == ["a", "b", "c"],
        "every client, late or not, has its tree",
        f"trees for {sorted(model.trees_)} only",
    )


@case("FedGAClassifier-f1_average-binary-three-classes", F, ("f1_average", "macro"))
def binary_three_classes() -> Verdict:
    X, _, groups = blobs()
    secret_rows(SIZES)
    make("FedGAClassifier", f1_average="binary").fit(X, np.arange(101) % 3, groups)
    return check(False, "", "binary F1 accepted for three classes")


@case("FedGAClassifier-f1_average-unknown", F, ("f1_average", "'binary'"))
def unknown_average() -> Verdict:
    X, y, groups = blobs()
    make("FedGAClassifier", f1_average="weighted").fit(X, y, groups)
    return check(False, "", "f1_average='weighted' accepted")


@case("evaluate_population-binary-f1-as-scikit-learn", F)
def binary_as_sklearn() -> Verdict:
    from sklearn.metrics import f1_score

    from fedtrees.algorithms.fedga import evaluate_population, fit_structure

    X, y, _ = blobs()
    structures = np.array([[0, 1, 2], [1, -1, -1], [-1, 0, 0], [2, 0, 1]])
    got = evaluate_population(
        structures, 2, X[:60], y[:60], X[60:], y[60:], "classification", 2,
        f1_average="binary",
    )  # fmt: skip
    want = [
        f1_score(
            y[60:],
            fit_structure(s, 2, X[:60], y[:60], "classification", 2).predict(X[60:]),
            zero_division=0.0,
        )
        for s in structures
    ]
    return check(
        bool(np.allclose(got, want, rtol=0, atol=1e-12)),
        "binary fitness equals scikit-learn's f1_score",
        f"fitness {got.tolist()} against {want}",
    )


@case("FederatedID3Classifier-honest_clients-without-epsilon", F, ("noise", "epsilon"))
def honest_exact() -> Verdict:
    X, y, groups = blobs()
    make("FederatedID3Classifier", noise="honest_clients").fit(X, y, groups)
    return check(False, "", "exact counts with noise='honest_clients' accepted")


@case("FederatedID3Classifier-honest_clients-above-the-clients", F, ("honest_clients",))
def honest_too_many() -> Verdict:
    X, y, groups = blobs()
    secret_rows(SIZES)
    make(
        "FederatedID3Classifier",
        epsilon=1.0,
        bin_edges=EDGES,
        noise="honest_clients",
        honest_clients=9,
    ).fit(X, y, groups)
    return check(False, "", "9 honest clients of 3 accepted")


@case("FederatedID3Classifier-honest_clients-charged-honestly", F)
def honest_charge() -> Verdict:
    X, y, groups = blobs()
    secret_rows(SIZES)
    model = make(
        "FederatedID3Classifier", epsilon=1.0, bin_edges=EDGES, noise="honest_clients"
    ).fit(X, y, groups)
    spent = sorted(set(model.epsilon_spent_.values()))
    return check(
        len(spent) == 1 and math.isclose(spent[0], math.sqrt(2.0), rel_tol=1e-12),
        "3 honest clients: each charged ε·sqrt(2)",
        f"charged {spent}",
    )
