"""The server replays a site's DP noise (issue 37, item 1).

Until issue 37 every DP draw at a site came from ``keyed_rng(request.seed, stream,
crc32(client id))``: the server chooses the seed and knows the id, so it could draw
the same noise and subtract it. These tests play that server. Each holds only
what the server holds — the recorded messages (:func:`fedtrees.audit.recording`),
decoded — redraws the noise exactly as that code did, subtracts it, and checks
that the result is *not* the site's exact counts (on the code before the fix it
is, to the last bit: FedGA's sizes, Federated-ID3's count tables, the DP forest's
root counts). The exact counts, which only the sites know, are computed by the
test as the referee. ICDTA4FL has no DP option (its Federated-ID3 baseline, on
the same page, is tested here); a test keeps that so.

A site's noise is now its own (:class:`fedtrees.federation.SiteNoise`): fresh
entropy, or keyed by a secret the site holds, its rows and the whole request.
The seeded cases show what that key binding defends against: a replayed request
on changed rows, and a request replayed at another ε.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pytest

from fedtrees import (
    DPForestClassifier,
    FederatedID3Classifier,
    FedGAClassifier,
    ICDTAClassifier,
)
from fedtrees._random import client_key, keyed_rng
from fedtrees.algorithms.dpforest._payloads import DPTreeReply, DPTreeRequest
from fedtrees.algorithms.fedga._payloads import InitReply, InitRequest
from fedtrees.algorithms.fedid3._handlers import count_level
from fedtrees.algorithms.fedid3._payloads import LevelReply, LevelRequest
from fedtrees.audit import answered, recording
from fedtrees.federation import ClientData, Federation, Ledger, decode
from fedtrees.learners import query_epsilon

SITES = ("a", "b", "c")
SIZES = (80, 90, 100)
RANGES = {"x0": (0.0, 1.0), "x1": (0.0, 1.0)}
EDGES = {"x0": [0.25, 0.5, 0.75], "x1": [0.5]}
# The streams the sites' noise was keyed by, with the request's seed and
# crc32(client id): the server's whole recipe.
FEDGA_SIZE_STREAM, FEDID3_STREAM, DPFOREST_STREAM = 13, 8, 6


def _data(seed: int = 37) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.random((sum(SIZES), 2))
    return X, (X[:, 0] + 0.3 * X[:, 1] > 0.6).astype(int), np.repeat(SITES, SIZES)


def _site(client: str) -> ClientData:
    """The referee's copy of a site's rows (the server never has it)."""
    X, y, groups = _data()
    rows = groups == client
    return ClientData.build(client, X[rows], y[rows])


def _fit(model: Any, noise_seed: int | None = None) -> Ledger:
    """Fit on the three sites; their secret noise seed only if one is given."""
    X, y, groups = _data()
    secret = {} if noise_seed is None else {"noise_seed": noise_seed}
    with recording() as ledgers:
        model.fit(X, y, groups=groups, **secret)
    return ledgers[-1]


def _exact_share(recovered: np.ndarray, truth: np.ndarray) -> float:
    """The share of values the server's subtraction turns into the exact count."""
    hits = np.isclose(recovered, truth, rtol=0.0, atol=1e-6)
    return float(np.mean(hits))


# -- FedGA: the noisy sizes ------------------------------------------------------
def _fedga() -> FedGAClassifier:
    return FedGAClassifier(
        population_size=4, n_generations=1, depth_range=(2, 3), cv_folds=3,
        epsilon=1.0, random_state=0,
    )  # fmt: skip


def _fedga_replay(ledger: Ledger) -> tuple[np.ndarray, np.ndarray]:
    recovered, truth = [], []
    for client, request, reply in answered(ledger, InitRequest):
        assert isinstance(reply, InitReply)
        stream = keyed_rng(request.seed, FEDGA_SIZE_STREAM, client_key(client))
        recovered.append(reply.noisy_size - stream.laplace(0.0, 1.0 / request.epsilon))
        truth.append(_site(client).n_rows)
    return np.asarray(recovered), np.asarray(truth, dtype=float)


@pytest.mark.hostile("correct")
@pytest.mark.parametrize("noise_seed", [None, 12345])
def test_the_server_cannot_subtract_fedga_noise_from_the_sizes(
    noise_seed: int | None,
) -> None:
    recovered, truth = _fedga_replay(_fit(_fedga(), noise_seed=noise_seed))

    assert recovered.shape == (len(SITES),)
    share = _exact_share(recovered, truth)
    assert share == 0.0, f"the server recovered {share:.0%} of the exact sizes"


# -- Federated-ID3 with epsilon: the count tables --------------------------------
def _fedid3() -> FederatedID3Classifier:
    return FederatedID3Classifier(
        epsilon=2.0, max_depth=2, bin_edges=EDGES, random_state=0
    )


def _fedid3_replay(ledger: Ledger) -> tuple[np.ndarray, np.ndarray]:
    recovered, truth = [], []
    for client, request, reply in answered(ledger, LevelRequest):
        assert isinstance(reply, LevelReply)
        stream = keyed_rng(
            request.seed, FEDID3_STREAM, client_key(client), request.level
        )
        noise = stream.laplace(0.0, 1.0 / request.query_epsilon, reply.counts.shape)
        recovered.append((reply.counts - noise).ravel())
        exact = dataclasses.replace(request, epsilon=math.inf)  # the referee
        truth.append(count_level(exact, _site(client)).counts.ravel())
    return np.concatenate(recovered), np.concatenate(truth)


@pytest.mark.hostile("correct")
@pytest.mark.parametrize("noise_seed", [None, 12345])
def test_the_server_cannot_subtract_federated_id3_noise_from_the_counts(
    noise_seed: int | None,
) -> None:
    recovered, truth = _fedid3_replay(_fit(_fedid3(), noise_seed=noise_seed))

    assert recovered.size >= 2 * len(SITES) * 4  # two levels of tables, every site
    share = _exact_share(recovered, truth)
    assert share == 0.0, f"the server recovered {share:.0%} of the exact counts"


# -- DP forest: the root counts ----------------------------------------------------
def _dp_forest(epsilon: float = 1.0) -> DPForestClassifier:
    return DPForestClassifier(
        epsilon=epsilon, max_depth=2, feature_ranges=RANGES, random_state=0
    )


def _root_counts(request: DPTreeRequest, reply: DPTreeReply) -> np.ndarray:
    """A site's noisy root counts, as its tree carries them (clipped at 0)."""
    tree = request.tree(reply)
    return np.asarray(tree.value[0] * tree.count[0])


def _dp_forest_replay(ledger: Ledger) -> tuple[np.ndarray, np.ndarray]:
    recovered, truth = [], []
    for client, request, reply in answered(ledger, DPTreeRequest):
        assert isinstance(reply, DPTreeReply)
        noisy = _root_counts(request, reply)
        eps = query_epsilon(request.epsilon, request.max_depth, 2, request.budget)  # type: ignore[arg-type]
        stream = keyed_rng(request.seed, DPFOREST_STREAM, client_key(client))
        kept = noisy > 0  # a count clipped at 0 hides its noise
        recovered.append((noisy - stream.laplace(0.0, 1.0 / eps, noisy.shape))[kept])
        site = _site(client)
        counts = np.bincount(site.label_codes(request.classes), minlength=2)
        truth.append(counts[kept].astype(float))
    return np.concatenate(recovered), np.concatenate(truth)


@pytest.mark.hostile("correct")
@pytest.mark.parametrize("noise_seed", [None, 12345])
def test_the_server_cannot_subtract_dp_forest_noise_from_the_root_counts(
    noise_seed: int | None,
) -> None:
    recovered, truth = _dp_forest_replay(_fit(_dp_forest(), noise_seed=noise_seed))

    assert recovered.size >= len(SITES)  # most root counts are not clipped
    share = _exact_share(recovered, truth)
    assert share == 0.0, f"the server recovered {share:.0%} of the exact counts"


@pytest.mark.hostile("correct")
def test_two_sites_with_the_same_id_and_other_rows_draw_other_noise() -> None:
    # Two deployments each with a site "a", other rows, the same request.
    rng = np.random.default_rng(1)
    noise = []
    for _ in range(2):
        X = rng.random((120, 2))
        y = (X[:, 0] > 0.5).astype(int)
        with recording() as ledgers:
            _dp_forest(10.0).fit_federation(Federation.from_groups(X, y, ["a"] * 120))
        ((_, request, reply),) = answered(ledgers[-1], DPTreeRequest)
        noise.append(_root_counts(request, reply) - np.bincount(y, minlength=2))

    assert not np.allclose(noise[0], noise[1], rtol=0.0, atol=1e-9), noise


# -- A site's secret: reproducible by it, and bound to its rows and the request ----
def _noisy_sizes(ledger: Ledger) -> dict[str, float]:
    return {c: reply.noisy_size for c, _, reply in answered(ledger, InitRequest)}


@pytest.mark.hostile("correct")
def test_a_site_secret_reproduces_its_noise_and_only_its_secret_does() -> None:
    first = _noisy_sizes(_fit(_fedga(), noise_seed=7))
    again = _noisy_sizes(_fit(_fedga(), noise_seed=7))
    other = _noisy_sizes(_fit(_fedga(), noise_seed=8))
    fresh = _noisy_sizes(_fit(_fedga()))

    assert first == again  # the site's operator reproduces the run
    for site in SITES:  # another secret, or none, draws other noise
        assert other[site] != first[site]
        assert fresh[site] != first[site]
    assert len(set(first.values())) == len(SITES)  # sites' streams are their own


@pytest.mark.hostile("correct")
def test_a_request_replayed_on_changed_rows_draws_new_noise() -> None:
    # A seeded site answers the same request before and after one row is added:
    # the same noise would give the server the new row's class exactly.
    X, y, _ = _data()
    roots = []
    for n in (100, 101):
        with recording() as ledgers:
            _dp_forest(10.0).fit_federation(
                Federation.from_groups(X[:n], y[:n], ["a"] * n, noise_seed=99)
            )
        ((_, request, reply),) = answered(ledgers[-1], DPTreeRequest)
        roots.append(_root_counts(request, reply))
    added = np.bincount(y[100:101], minlength=2)

    assert not np.allclose(roots[1] - roots[0], added, rtol=0.0, atol=1e-6)


@pytest.mark.hostile("correct")
def test_a_request_replayed_at_another_epsilon_draws_independent_noise() -> None:
    # The same uniforms at two noise scales (ε and ε/2) would give the counts:
    # a1 = c + b·L and a2 = c + 2b·L, so c = 2·a1 − a2.
    roots, truth = [], None
    for epsilon in (10.0, 5.0):
        ledger = _fit(_dp_forest(epsilon), noise_seed=99)
        exchanges = list(answered(ledger, DPTreeRequest))
        roots.append(np.stack([_root_counts(q, r) for _, q, r in exchanges]))
        truth = np.stack(
            [np.bincount(_site(c).label_codes(q.classes), minlength=2)
             for c, q, _ in exchanges]
        )  # fmt: skip
    solved = 2.0 * roots[0] - roots[1]

    assert _exact_share(solved.ravel(), np.asarray(truth, float).ravel()) == 0.0


# -- The sampler is the site's ------------------------------------------------------
@pytest.mark.hostile("correct")
def test_no_request_names_the_sampler_and_the_sites_choose_it() -> None:
    X, y, groups = _data()
    ledgers = [
        _fit(_fedga()),
        _fit(_fedid3()),
        _fit(_dp_forest()),
    ]
    sent: list[bytes] = []
    for sampler in ("numpy", "opendp"):
        sites = Federation.from_groups(X, y, groups, noise_sampler=sampler)
        with recording() as runs:
            _dp_forest().fit_federation(sites)
        ledgers.append(runs[-1])
        sent.append(
            b"".join(m.data for m in runs[-1].captured if m.direction == "down")
        )
    requests = [
        decode(m.data).payload
        for ledger in ledgers
        for m in ledger.captured
        if m.direction == "down"
    ]

    assert requests
    for request in requests:
        names = {f.name for f in dataclasses.fields(request)}  # type: ignore[arg-type]
        assert not any("sampler" in name for name in names), type(request)
    assert sent[0] == sent[1]  # the server sends the same, whatever the sites draw
    assert "sampler" not in _dp_forest().get_params()


@pytest.mark.hostile("documented")
def test_icdta_has_no_dp_option_to_replay() -> None:
    # docs/icdta.md: ICDTA4FL exchanges exact client trees; its DP baseline is
    # Federated-ID3 (replayed above). A DP option added to ICDTA must join here.
    params = ICDTAClassifier().get_params()

    assert not any("epsilon" in name or "noise" in name for name in params)
