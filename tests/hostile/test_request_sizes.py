"""Requests whose size fields are damaged are refused before any allocation (issue 12).

A flipped bit in a field that sizes a client's allocation (``n_categories``,
``arity``, ``bin_ptr``, ``q``, ``depth``...) used to make the client allocate
gigabytes to exabytes. Each case takes a valid request captured from a real run
on tiny data, replaces one size field by a huge (or otherwise impossible)
value, serves it, and requires an error envelope whose text names the field —
quickly: nothing may be allocated first.
"""

from __future__ import annotations

import dataclasses
import json
import time
import tracemalloc
import warnings
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np
import pandas as pd
import pytest

from fedtrees.algorithms import (
    FedAvgClassifier,
    FederatedID3Classifier,
    FedForestClassifier,
    FedGAClassifier,
    ICDTAClassifier,
    LocalEnsembleClassifier,
    SyntheticDataClassifier,
    run_toy,
)
from fedtrees.algorithms.fedforest._strategy import FedForestStrategy
from fedtrees.audit import recording
from fedtrees.federation import (
    ClientData,
    ClientState,
    Envelope,
    Federation,
    Payload,
    decode,
    encode,
    serve,
)

HUGE = 2**40 + 3
PAPER = {"candidates": "quantile"}  # FedForest's sketch rounds (default: "hist")
RNG = np.random.default_rng(7)
N = 45
X = pd.DataFrame(
    {
        "a": RNG.normal(size=N),
        "b": RNG.normal(size=N),
        "ward": pd.Categorical(RNG.choice(["n", "s", "e"], size=N)),
    }
)
Y = (X["a"] + 0.3 * RNG.normal(size=N) > 0).astype(int).to_numpy()
GROUPS = np.repeat(["c0", "c1", "c2"], N // 3)
RANGES = [(-5.0, 5.0), (-5.0, 5.0), (np.nan, np.nan)]  # ward: categorical, no range


@dataclasses.dataclass(frozen=True, eq=False)
class Captured:
    """A valid request as one client received it, and that client's data."""

    envelope: Envelope
    site: ClientData
    kept: dict[str, Payload]


def _capture(estimator: Any) -> dict[str, Captured]:
    """Fit ``estimator`` on the tiny federation; the first request of each kind."""

    def fit(fed: Federation) -> None:
        estimator.fit_federation(fed)

    return _captured_by(fit)


def _holdout(fed: Federation) -> None:
    """FedForest with held-out rows: its last round scores them."""
    config = FedForestClassifier(1, max_depth=2, random_state=0)._config()
    strategy = FedForestStrategy(dataclasses.replace(config, holdout=0.3))
    fed.run(strategy, task="classification")


def _captured_by(runner: Callable[[Federation], object]) -> dict[str, Captured]:
    """Run ``runner`` keeping every message; the first request of each kind."""
    fed = Federation.from_groups(X, Y, GROUPS)
    with recording() as ledgers, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runner(fed)
    (ledger,) = ledgers
    sites = fed.on_each_site(lambda data: data)
    states = {c: ClientState() for c in sites}
    out: dict[str, Captured] = {}
    for message in ledger.captured:
        if message.direction != "down":
            continue
        envelope = decode(message.data)
        state = states[message.client]
        kept = dict(state.kept)
        serve(message.data, sites[message.client], state=state)
        out.setdefault(envelope.kind, Captured(envelope, sites[message.client], kept))
    return out


RUNS: dict[str, Callable[[], dict[str, Captured]]] = {
    "fedavg": lambda: _capture(
        FedAvgClassifier(n_rounds=1, local_steps=2, random_state=0)
    ),
    "synthetic": lambda: _capture(
        SyntheticDataClassifier(
            client_max_depth=2,
            samples_per_path=3,
            feature_ranges=RANGES,
            random_state=0,
        )
    ),
    "icdta": lambda: _capture(ICDTAClassifier(max_depth=2, random_state=0)),
    "fedid3": lambda: _capture(FederatedID3Classifier(max_depth=2, random_state=0)),
    "fedforest": lambda: _capture(
        FedForestClassifier(1, max_depth=2, random_state=0, **PAPER)
    ),
    "fedforest-avgimp": lambda: _capture(
        FedForestClassifier(
            1, max_depth=2, random_state=0, gain="avgimp", top_k=2, **PAPER
        )
    ),
    "fedforest-holdout": lambda: _captured_by(_holdout),
    "fedforest-hist": lambda: _capture(
        FedForestClassifier(1, max_depth=2, random_state=0, candidates="hist")
    ),
    "local": lambda: _capture(LocalEnsembleClassifier(2, max_depth=2, random_state=0)),
    "toy": lambda: _captured_by(lambda fed: run_toy(fed, n_rounds=1)),
    "fedga": lambda: _capture(
        FedGAClassifier(
            population_size=4,
            n_generations=1,
            depth_range=(1, 2),
            cv_folds=2,
            random_state=0,
        )
    ),
}


@cache
def _captured(run: str) -> dict[str, Captured]:
    return RUNS[run]()


def _one_huge(values: np.ndarray, at: int = -1) -> np.ndarray:
    out = np.array(values, dtype=np.int64, copy=True)
    out[at] = HUGE
    return out


def _huge_ptr(values: np.ndarray) -> np.ndarray:
    out = np.array(values, dtype=np.int64, copy=True)
    out[1:] = HUGE  # rises from 0 to far beyond the edges
    return out


def _wide_values(values: np.ndarray) -> np.ndarray:
    """As many values per node as a (c, c, bins) histogram cannot be sent."""
    return np.zeros((values.shape[0], 2**12))


def _wide_pairs(pairs: np.ndarray) -> np.ndarray:
    """Every node considers its features a thousand times over."""
    return np.tile(pairs, (1, 1000))


def _many_trees(params: str) -> str:
    return json.dumps({**json.loads(params), "n_estimators": HUGE})


# (run, kind, field, how to damage it) — each a field that sizes an allocation.
CASES: list[tuple[str, str, str, Callable[[Any], Any]]] = [
    ("fedavg", "fedavg.moments", "n_categories", _one_huge),
    ("fedavg", "fedavg.train", "n_categories", _one_huge),
    ("fedavg", "fedavg.train", "widths", lambda w: _one_huge(w, 1)),
    ("fedavg", "fedavg.train", "local_steps", lambda _: 2**62),
    ("fedavg", "fedavg.train", "batch_size", lambda _: -1),
    ("synthetic", "synthetic.tree", "n_categories", _one_huge),
    ("synthetic", "synthetic.tree", "min_samples_leaf", lambda _: 2**62),
    ("icdta", "icdta.fit", "arity", _one_huge),
    ("icdta", "icdta.fit", "bin_ptr", _huge_ptr),
    ("icdta", "discretize.sketch", "q", lambda _: HUGE),
    ("icdta", "discretize.sketch", "columns", lambda c: np.zeros(10**5, np.int64)),
    ("icdta", "icdta.evaluate", "arity", _one_huge),
    ("fedid3", "fedid3.level", "arity", _one_huge),
    ("fedid3", "fedid3.level", "bin_ptr", _huge_ptr),
    ("fedid3", "fedid3.level", "open_nodes", lambda o: _one_huge(o, 0)),
    ("fedforest", "fedforest.sketch", "max_categories", lambda _: HUGE),
    ("fedforest", "fedforest.sketch", "q", lambda _: HUGE),
    ("fedforest-avgimp", "fedforest.top_k", "q", lambda _: HUGE),
    ("fedforest-avgimp", "fedforest.top_k", "k", lambda _: HUGE),
    ("fedforest", "fedforest.sketch", "participation", lambda _: np.ones(10**5 + 1)),
    ("fedforest-avgimp", "fedforest.top_k", "pair_feature", _wide_pairs),
    ("fedforest-holdout", "fedforest.score", "node_values", _wide_values),
    ("fedforest-hist", "fedforest.grid", "max_bins", lambda _: HUGE),
    ("fedforest-hist", "fedforest.grid", "n_features", lambda _: HUGE),
    ("fedforest-hist", "fedforest.grid", "columns", lambda _: np.ones(10**5, bool)),
    ("fedforest-hist", "fedforest.histogram", "feature_bins", _one_huge),
    ("fedforest-hist", "fedforest.histogram", "grid_edge_ptr", _huge_ptr),
    ("fedforest-hist", "fedforest.histogram", "pair_feature", _wide_pairs),
    ("local", "local.forest", "params", _many_trees),
    ("toy", "toy.histogram", "feature", lambda _: HUGE),
    ("fedga", "fedga.evaluate", "depth", lambda _: HUGE),
    ("fedga", "fedga.final", "depth", lambda _: HUGE),
    ("fedga", "fedga.evaluate", "structures", lambda s: np.tile(s, (10**4, 1))),
    ("fedga", "fedga.local", "depth", lambda _: HUGE),
]


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("run", "kind", "name", "damage"),
    CASES,
    ids=[f"{kind}-{name}" for _, kind, name, _ in CASES],
)
def test_a_damaged_size_field_is_refused_by_name_before_allocating(
    run: str, kind: str, name: str, damage: Callable[[Any], Any]
) -> None:
    captured = _captured(run)[kind]
    request: Any = captured.envelope.payload
    assert request is not None
    bad = dataclasses.replace(request, **{name: damage(getattr(request, name))})
    envelope = captured.envelope
    data = encode(Envelope("request", envelope.round, envelope.client, kind, bad))
    state = ClientState()
    state.kept.update(captured.kept)
    tracemalloc.start()
    start = time.perf_counter()
    try:
        answer = decode(serve(data, captured.site, state=state))
        elapsed = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert answer.type == "error", answer
    assert answer.client == envelope.client
    assert answer.error is not None
    assert f"field {name!r}" in answer.error, answer.error
    assert "MemoryError" not in answer.error
    assert peak < 64 * 2**20, f"{peak / 2**20:.0f} MiB: something was allocated"
    # Refused before any work: a hang check, generous for a loaded machine.
    assert elapsed < 30.0, f"{elapsed:.2f} s: something was computed"


@pytest.mark.parametrize(
    "run", ["fedavg", "synthetic", "icdta", "fedid3", "fedforest-hist"]
)
def test_the_undamaged_requests_are_still_answered(run: str) -> None:
    for kind, captured in _captured(run).items():
        state = ClientState()
        state.kept.update(captured.kept)
        answer = decode(serve(encode(captured.envelope), captured.site, state=state))
        assert answer.type == "reply", (kind, answer.error)
