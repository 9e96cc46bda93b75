"""FedGA's personal trees: fitted and kept at the site, sent in the last round.

Each client fits its personal tree when it chooses (the final round) and keeps
it in its per-run client state; one more round brings the trees to the server.
The state is a cache: a client that lost it fits the same tree again from the
request, so ``trees_`` never depends on it (docs/fedga.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from fedtrees.algorithms.fedga import FedGAClassifier, FedGARegressor
from fedtrees.algorithms.fedga import _handlers as handlers
from fedtrees.algorithms.fedga import _payloads as payloads
from fedtrees.federation import ClientData, ClientState, Fault, Federation
from fedtrees.tree import Tree

ROWS = {"a": 90, "b": 110, "c": 130}
SMALL = {"population_size": 6, "n_generations": 3, "depth_range": (2, 4)}


def _data(regression: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    n = sum(ROWS.values())
    X = rng.normal(size=(n, 4))
    signal = X[:, 0] + 0.5 * X[:, 1] * X[:, 2] + rng.normal(scale=0.3, size=n)
    y = signal if regression else np.digitize(signal, [-0.5, 0.5])  # 3 classes
    return X, y, np.repeat(list(ROWS), list(ROWS.values()))


def _model(regression: bool) -> FedGAClassifier | FedGARegressor:
    make = FedGARegressor if regression else FedGAClassifier
    return make(random_state=7, **SMALL)


def _fit(
    regression: bool, faults: tuple[Fault, ...] = ()
) -> tuple[FedGAClassifier | FedGARegressor, Federation]:
    X, y, groups = _data(regression)
    federation = Federation.from_groups(X, y, groups, faults=faults)
    return _model(regression).fit_federation(federation), federation


def _refit(model: Any, data: ClientData) -> Tree:
    """The tree the site fits for its chosen structure, with the estimator's meta."""
    classes = np.asarray([str(c) for c in getattr(model, "classes_", [])], dtype=str)
    tree = handlers.personal_tree(
        data,
        model.structures_[data.client_id],
        model.depth_,
        task=model._task,
        classes=classes,
        train_ratio=model.train_ratio_,
        seed=7,
    )
    return model._with_meta(tree)  # type: ignore[no-any-return]


@pytest.mark.parametrize("regression", [False, True])
def test_every_trees_entry_is_the_sites_own_fit_of_its_choice(
    regression: bool,
) -> None:
    model, federation = _fit(regression)

    sites = federation.on_each_site(lambda data: data)
    assert sorted(model.trees_) == sorted(ROWS)
    for client, data in sites.items():
        assert model.trees_[client] == _refit(model, data), client
    assert model.communication_.rounds == 1 + SMALL["n_generations"] + 4


@pytest.mark.parametrize("regression", [False, True])
def test_dropping_client_state_at_random_rounds_gives_the_same_trees(
    regression: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    fits: list[str] = []
    fit_once = handlers.personal_tree

    def counted(data: ClientData, *args: Any, **kwargs: Any) -> Tree:
        fits.append(data.client_id)
        return fit_once(data, *args, **kwargs)

    monkeypatch.setattr(handlers, "personal_tree", counted)
    reference, _ = _fit(regression)
    assert sorted(fits) == sorted(ROWS)  # fitted once, when choosing: then kept
    last = 1 + SMALL["n_generations"] + 3
    rng = np.random.default_rng(13)
    faults = (
        Fault("b", "forget", round=last),
        *(
            Fault(str(client), "forget", round=int(r))
            for client, r in zip(
                rng.choice(list(ROWS), 4), rng.integers(1, last + 1, 4), strict=True
            )
        ),
    )
    fits.clear()
    model, _ = _fit(regression, faults)

    assert model.trees_ == reference.trees_  # Tree equality compares the arrays
    docs = {c: t.to_dict() for c, t in model.trees_.items()}
    assert docs == {c: t.to_dict() for c, t in reference.trees_.items()}
    forgot_last = {f.client for f in faults if f.round == last}
    assert sorted(fits) == sorted([*ROWS, *forgot_last])  # refitted from the request


def test_a_kept_tree_of_another_fit_is_not_sent() -> None:
    # The state may hold a tree of an earlier run (another seed): the request
    # names its fit, and the client fits that one instead.
    X, y, groups = _data(False)
    data = Federation.from_groups(X, y, groups).on_each_site(lambda d: d)["a"]
    state = ClientState()
    classes = np.asarray(["0", "1", "2"])
    structure = np.asarray([0, 1, 2])
    request = payloads.TreeRequest(
        "classification", classes, structure, 2, 4, 0.8, seed=1
    )
    other = payloads.TreeRequest("classification", classes, structure, 2, 4, 0.8, 2)
    state.put(handlers.TREE_KEY, handlers._fit_tree(other, data))

    reply = handlers.send_tree(request, data, state)

    assert request.tree(reply) == handlers.personal_tree(
        data, structure, 2, task="classification", classes=classes,
        train_ratio=0.8, seed=1,
    )  # fmt: skip
    kept = state.get(handlers.TREE_KEY, payloads.KeptTree)
    assert kept is not None
    assert kept.fits(request)
