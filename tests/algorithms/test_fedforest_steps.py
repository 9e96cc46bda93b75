"""The FedForest server's steps: asking for a round changes nothing.

Each round is one step of the fit's candidate mode: ``ask`` says what to
request and must leave the fit's state (and the mode's) as it found it; only
the request builder (who was asked, the layouts their requests carry, the
forest version) and ``absorb`` move the fit on.
"""

from __future__ import annotations

import pickle
import warnings
from typing import Any

import numpy as np
import pytest

from fedtrees.algorithms.fedforest import FedForestClassifier, FedForestStrategy
from fedtrees.algorithms.fedforest._phase import Phase
from fedtrees.exceptions import ClientDropoutWarning
from fedtrees.federation import Fault, Federation, RoundPlan


class AskTwice(FedForestStrategy):
    """Before planning each round, ask its step once more and compare states."""

    asked: int = 0

    def plan_round(self, round: int) -> RoundPlan | None:
        if self.phase is not Phase.DONE:
            before = _snapshot(self)
            self.steps[self.phase].ask(self.state)
            assert _snapshot(self) == before, f"{self.phase} changed the state"
            self.asked += 1
        return super().plan_round(round)


def _snapshot(strategy: FedForestStrategy) -> bytes:
    """Everything a step could write: the fit's state and the mode's."""
    return pickle.dumps((strategy.state, strategy.mode, strategy.phase))


MODES: dict[str, dict[str, Any]] = {
    "quantile": {"candidates": "quantile"},
    "exact": {"candidates": "exact", "split_on_client": True},
    "uniform": {"candidates": "uniform"},
    "avgimp": {"candidates": "quantile", "gain": "avgimp", "top_k": 2},
    "hist": {"candidates": "hist"},
    "hist dropout": {"candidates": "hist", "on_dropout": "continue"},
    "dropout": {"candidates": "quantile", "on_dropout": "continue"},
}


@pytest.mark.parametrize("mode", list(MODES))
def test_asking_for_a_round_changes_nothing(mode: str) -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(int)
    groups = np.repeat(["a", "b", "c"], 100)
    faults = (Fault("c", "drop", round=4),) if "dropout" in mode else ()
    fed = Federation.from_groups(X, y, groups, faults=faults)
    model = FedForestClassifier(n_estimators=3, max_depth=4, random_state=0)
    config = model.set_params(**MODES[mode])._config()
    strategy = AskTwice(config)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClientDropoutWarning)
        fed.run(strategy, task="classification")
    assert strategy.asked >= 4
