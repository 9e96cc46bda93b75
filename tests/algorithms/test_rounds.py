"""Every method's round count, said at the start of a run, against the rounds run.

A strategy bounds its rounds after the agreement (``expected_rounds()``, handed to
the callbacks as ``RoundEnv.expected_rounds``); with the agreement that is the
count the job logs at its start and the method pages state. Here it is checked
against the ledger's rounds for every estimator and every job on small data:
never fewer, and the same where nothing ends a run early.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from fedtrees import (
    DPForestClassifier,
    FedAvgClassifier,
    FederatedID3Classifier,
    FedForestClassifier,
    FedGAClassifier,
    FedGBDTClassifier,
    ICDTAClassifier,
    LocalEnsembleClassifier,
    LocalModelsClassifier,
    SyntheticDataClassifier,
)
from fedtrees.algorithms import JOBS, run_job
from fedtrees.federation import (
    FLOWER_ROUND_SECONDS,
    Federation,
    RoundEnv,
    duration_text,
)
from tests.algorithms.test_job_documents import PARAMS as JOB_PARAMS
from tests.conformance import checks
from tests.conformance.registry import ENTRIES, Entry

# Entries whose run may end before the bound: a tree stops where its nodes are
# pure or too small (the level protocols); every other count is exact.
MAY_END_EARLY = {
    "FedForestClassifier-hist",
    "FedForestClassifier-quantile",
    "FedForestRegressor-hist",
    "FedForestRegressor-quantile",
    "FederatedID3Classifier",
    "FederatedID3Classifier-epsilon",
}


class _Bound:
    """A round callback keeping round 0's bound (the agreement included)."""

    def __init__(self) -> None:
        self.rounds: int | None = None

    def __call__(self, env: RoundEnv) -> None:
        if env.round == 0:
            assert env.expected_rounds is not None, "the strategy gives no bound"
            self.rounds = env.expected_rounds + 1


def _fit_counting(entry: Entry) -> tuple[int, int]:
    """Fit ``entry`` on its three sites; return (the bound said, the rounds run)."""
    fed = checks.federation(entry)
    bound = _Bound()
    model = entry.make(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit_federation(fed, callbacks=[bound])
    assert bound.rounds is not None
    return bound.rounds, model.communication_.rounds


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.name for e in ENTRIES])
def test_every_estimator_says_its_rounds_before_it_runs_them(entry: Entry) -> None:
    said, run = _fit_counting(entry)
    if entry.name in MAY_END_EARLY:
        assert run <= said
    else:
        assert run == said


@pytest.mark.parametrize("max_depth", [1, 2, 3])
@pytest.mark.parametrize("candidates", ["hist", "quantile"])
def test_a_forest_grown_to_its_depth_takes_exactly_the_rounds_said(
    candidates: str, max_depth: int
) -> None:
    # Enough rows that every tree reaches max_depth: the bound is then exact.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 3))
    y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(int)
    fed = Federation.from_groups(X, y, np.repeat(["a", "b", "c"], 200))
    bound = _Bound()
    model = FedForestClassifier(
        n_estimators=3, max_depth=max_depth, candidates=candidates, random_state=0
    )
    model.fit_federation(fed, callbacks=[bound])
    grid = 1 if candidates == "hist" else 0
    per_level = 1 if candidates == "hist" else 2
    assert bound.rounds == 1 + grid + per_level * max_depth
    assert model.communication_.rounds == bound.rounds


@pytest.mark.parametrize("job", sorted(JOBS))
def test_every_job_says_its_rounds_before_it_runs_them(
    job: str, job_sites: dict[str, Any]
) -> None:
    bound = _Bound()
    _, ledger = run_job(
        job, Federation.from_clients(job_sites), JOB_PARAMS[job], callbacks=[bound]
    )
    assert bound.rounds is not None
    assert ledger.rounds <= bound.rounds
    if job not in ("fedforest", "federated-id3"):  # trees may stop early
        assert ledger.rounds == bound.rounds


@pytest.fixture(scope="module")
def job_sites() -> dict[str, Any]:
    from tests.algorithms.test_job_documents import NAMES, PAIN

    rng = np.random.default_rng(0)
    sites = {}
    for site in ("Cleveland", "Hungary"):
        pain = pd.Categorical(rng.choice(PAIN, size=60), categories=PAIN)
        X = pd.DataFrame({NAMES[0]: rng.uniform(30.0, 70.0, size=60), NAMES[1]: pain})
        sites[site] = (X, np.where(pain == "asymptomatic", "sick", "healthy"))
    return sites


# -- the method pages' rounds for the default settings ---------------------------
class _Said(Exception):
    """Ends a fit right after the agreement, carrying the rounds said."""


def _said_then_stop(env: RoundEnv) -> None:
    assert env.expected_rounds is not None
    raise _Said(env.expected_rounds + 1)


RANGES = [(-5.0, 5.0)] * 4
DEFAULT_ROUNDS = {
    # estimator with its defaults, the rounds its method page states for them
    # (numeric columns, no declared bin edges; the agreement included), the page
    "FedForestClassifier": (FedForestClassifier(), 66, "fedforest"),  # 64 levels
    "FedGBDTClassifier": (FedGBDTClassifier(), 603, "fedgbdt"),
    "DPForestClassifier": (DPForestClassifier(feature_ranges=RANGES), 2, "dpforest"),
    "ICDTAClassifier": (ICDTAClassifier(), 5, "icdta"),
    "FederatedID3Classifier": (FederatedID3Classifier(), 4, "icdta"),  # depth 4 // 2
    "SyntheticDataClassifier": (
        SyntheticDataClassifier(feature_ranges=RANGES),
        2,
        "synthetic",
    ),
    "FedGAClassifier": (FedGAClassifier(), 105, "fedga"),
    "FedAvgClassifier": (FedAvgClassifier(), 17, "fedforest"),
    "LocalEnsembleClassifier": (LocalEnsembleClassifier(), 2, "fedforest"),
    "LocalModelsClassifier": (LocalModelsClassifier(), 2, "fedforest"),
}
DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.mark.parametrize("name", sorted(DEFAULT_ROUNDS))
def test_the_default_settings_take_the_rounds_the_method_pages_state(
    name: str,
) -> None:
    estimator, documented, page = DEFAULT_ROUNDS[name]
    rng = np.random.default_rng(1)
    X = rng.uniform(-3.0, 3.0, size=(300, 4))
    y = (X[:, 0] > 0).astype(int)
    fed = Federation.from_groups(X, y, np.repeat(["a", "b", "c"], 100))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(_Said) as said:
            estimator.fit_federation(fed, callbacks=[_said_then_stop])
    assert said.value.args[0] == documented
    # the page states the count and the time it means over Flower
    text = " ".join((DOCS / f"{page}.md").read_text().split())
    section = text[text.index("Rounds and time") :]
    time = duration_text(documented * FLOWER_ROUND_SECONDS)
    assert f"{documented} rounds" in section
    assert f"about {time}" in section
    assert f"at {FLOWER_ROUND_SECONDS:g} s a round" in section


@pytest.mark.parametrize("holdout", [0.0, 0.25])
def test_the_held_out_scores_round_is_counted(holdout: float) -> None:
    # diagnose() grows its forests with held-out rows scored in a last round.
    from fedtrees.algorithms.fedforest._diagnose import _config
    from fedtrees.algorithms.fedforest._strategy import FedForestStrategy

    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 3))
    y = (X[:, 0] > 0).astype(int)
    fed = Federation.from_groups(X, y, np.repeat(["a", "b", "c"], 200))
    config = _config("classification", 0, 3, 2, holdout, "label", False)
    bound = _Bound()
    result = fed.run(
        FedForestStrategy(config), task="classification", callbacks=[bound]
    )
    assert result.ledger.rounds == bound.rounds == 1 + 2 * 2 + (holdout > 0)
