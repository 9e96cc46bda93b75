"""FedGA with every client joining late (turn 3's leftover, issue 37).

``join_at`` makes a client join at a later generation (Algorithm 1, steps
29–33). The global depth and the first population come from the clients
present at the start (steps 5–21), so when ``join_at`` names every client
nobody can start: the run used to ask nobody in its first round and end with
"Round 1: 0 valid replies", naming nothing. It is now refused at ``fit``,
before any round, naming ``join_at``; a run with one starter still gives every
client its tree.
"""

from __future__ import annotations

import numpy as np
import pytest

from fedtrees import FedGAClassifier, FedGARegressor
from fedtrees.audit import recording
from fedtrees.exceptions import ValidationError
from fedtrees.federation import Federation

GA = {"n_generations": 3, "population_size": 6, "depth_range": (2, 3)}


def _data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(37)
    X = rng.normal(size=(240, 3))
    return X, (X[:, 0] > 0).astype(int), np.repeat(["a", "b", "c", "d"], 60)


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("estimator", [FedGAClassifier, FedGARegressor])
@pytest.mark.parametrize(
    "join_at",
    [{"a": 1, "b": 1, "c": 1, "d": 1}, {"a": 3, "b": 2, "c": 2, "d": 1}],
)
def test_everyone_joining_late_is_refused_at_fit_by_name(
    estimator: type, join_at: dict[str, int]
) -> None:
    X, y, groups = _data()
    federation = Federation.from_groups(X, y, groups)
    with (
        recording() as ledgers,
        pytest.raises(
            ValidationError,
            match=r"'join_at' parameter of Fed\w+ must be a mapping that leaves at "
            r"least one client of the federation to start the run",
        ),
    ):
        estimator(random_state=0, **GA).fit_federation(federation, join_at=join_at)
    assert ledgers == []  # refused before any message, the agreement's included


@pytest.mark.hostile("correct")
def test_one_starter_is_enough_and_every_late_client_gets_its_tree() -> None:
    X, y, groups = _data()
    model = FedGAClassifier(random_state=0, **GA)
    model.fit(X, y, groups=groups, join_at={"b": 1, "c": 2, "d": 3})
    assert sorted(model.trees_) == ["a", "b", "c", "d"]
    assert model.epsilon_spent_ == dict.fromkeys("abcd", 1.0)
    for client in "abcd":
        rows = groups == client
        assert (model.predict(X[rows], client=client) == y[rows]).mean() > 0.8
