"""Sweep cases of issue 37, item 1: a server that replays a site's DP noise.

Family ``dp-noise``. Each ``server-replay`` case fits a DP method on three
in-process sites with its messages recorded, then plays the server: from the
decoded requests and replies alone it redraws the noise as a generator keyed by
what the server knows would give it — ``keyed_rng(request seed, stream,
crc32(site id))``, the derivation before issue 37 — and subtracts it. A case that
recovers any exact count (FedGA's sizes, Federated-ID3's count tables, the DP
forest's root counts; the sweep holds the sites' rows as the referee) is a
*leak*. Beside them: two sites with one id and other rows must not share noise,
no request may name a sampler, ICDTA has no DP option to replay, and the DP
forest's site whose rows lie outside the declared ranges must warn (clipping,
docs/dpforest.md) rather than score at the majority rate in silence.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Any

import numpy as np
from _sweep_core import LEAK, Verdict, blobs, case, correct, documented, make, wrong

from fedtrees.audit import answered

SITES_SIZES = (60, 70, 80)
EDGES3 = {f"x{j}": [-5.0, 0.0, 5.0] for j in range(3)}


def _recorded(model: Any, data: Any = None, **fit: Any) -> Any:
    from fedtrees.audit import recording

    X, y, groups = blobs(SITES_SIZES) if data is None else data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with recording() as ledgers:
            model.fit(X, y, groups, **fit)
    return ledgers[-1]


def _site(client: str) -> Any:
    """The referee's copy of a site's rows (never the server's)."""
    from fedtrees.federation import ClientData

    X, y, groups = blobs(SITES_SIZES)
    rows = groups == client
    return ClientData.build(client, X[rows], y[rows])


def _server_stream(seed: int, stream: int, client: str, *more: int) -> Any:
    from fedtrees._random import client_key, keyed_rng

    return keyed_rng(seed, stream, client_key(client), *more)


def _judge(recovered: np.ndarray, truth: np.ndarray, what: str) -> Verdict:
    hits = int(np.isclose(recovered, truth, rtol=0.0, atol=1e-6).sum())
    if hits:
        return Verdict(
            LEAK, f"the server recovered {hits} of {truth.size} exact {what}"
        )
    return correct(f"no exact {what} among {truth.size} recovered by the server")


@case("server-replay-FedGAClassifier", "dp-noise")
def replay_fedga() -> Verdict:
    from fedtrees.algorithms.fedga._payloads import InitRequest

    ledger = _recorded(make("FedGAClassifier", epsilon=1.0))
    recovered, truth = [], []
    for client, request, reply in answered(ledger, InitRequest):
        noise = _server_stream(request.seed, 13, client).laplace(0, 1 / request.epsilon)
        recovered.append(reply.noisy_size - noise)
        truth.append(float(_site(client).n_rows))
    return _judge(np.array(recovered), np.array(truth), "sizes")


@case("server-replay-FederatedID3Classifier", "dp-noise")
def replay_fedid3() -> Verdict:
    from fedtrees.algorithms.fedid3._handlers import count_level
    from fedtrees.algorithms.fedid3._payloads import LevelRequest

    model = make("FederatedID3Classifier", epsilon=2.0, max_depth=2, bin_edges=EDGES3)
    recovered, truth = [], []
    for client, request, reply in answered(_recorded(model), LevelRequest):
        stream = _server_stream(request.seed, 8, client, request.level)
        noise = stream.laplace(0, 1 / request.query_epsilon, reply.counts.shape)
        recovered.append((reply.counts - noise).ravel())
        exact = dataclasses.replace(request, epsilon=math.inf)
        truth.append(count_level(exact, _site(client)).counts.ravel())
    return _judge(np.concatenate(recovered), np.concatenate(truth), "counts")


def _root(request: Any, reply: Any) -> np.ndarray:
    tree = request.tree(reply)
    return np.asarray(tree.value[0] * tree.count[0])


@case("server-replay-DPForestClassifier", "dp-noise")
def replay_dp_forest() -> Verdict:
    from fedtrees.algorithms.dpforest._payloads import DPTreeRequest
    from fedtrees.learners import query_epsilon

    ledger = _recorded(make("DPForestClassifier", epsilon=1.0, max_depth=2))
    recovered, truth = [], []
    for client, request, reply in answered(ledger, DPTreeRequest):
        noisy = _root(request, reply)
        eps = query_epsilon(request.epsilon, request.max_depth, 3, request.budget)
        noise = _server_stream(request.seed, 6, client).laplace(0, 1 / eps, noisy.shape)
        kept = noisy > 0  # a count clipped at 0 hides its noise
        recovered.append((noisy - noise)[kept])
        codes = _site(client).label_codes(request.classes)
        truth.append(np.bincount(codes, minlength=2)[kept].astype(float))
    return _judge(np.concatenate(recovered), np.concatenate(truth), "root counts")


@case("same-id-other-rows-DPForestClassifier", "dp-noise")
def same_id_other_rows() -> Verdict:
    from fedtrees.algorithms.dpforest._payloads import DPTreeRequest

    noise = []
    for seed in (1, 2):
        X, y, _ = blobs((120,), seed=seed)
        model = make("DPForestClassifier", epsilon=10.0, max_depth=1)
        ledger = _recorded(model, (X, y, np.full(120, "a")))
        ((_, request, reply),) = answered(ledger, DPTreeRequest)
        noise.append(_root(request, reply) - np.bincount(y, minlength=2))
    if np.allclose(noise[0], noise[1], rtol=0.0, atol=1e-9):
        return Verdict(LEAK, "two sites 'a' with other rows drew the same noise")
    return correct("two sites 'a' with other rows drew other noise")


@case("no-request-names-a-sampler", "dp-noise")
def no_sampler_in_requests() -> Verdict:
    from fedtrees.federation import decode

    ledgers = [
        _recorded(make("FedGAClassifier", epsilon=1.0)),
        _recorded(make("FederatedID3Classifier", epsilon=2.0, bin_edges=EDGES3)),
        _recorded(make("DPForestClassifier")),
    ]
    for ledger in ledgers:
        for message in ledger.captured:
            payload = decode(message.data).payload
            if message.direction == "down" and payload is not None:
                names = [f.name for f in dataclasses.fields(payload)]
                if any("sampler" in name for name in names):
                    return wrong(
                        f"{payload.kind} names the sampler: the server's choice"
                    )
    if "sampler" in make("DPForestClassifier").get_params():
        return wrong("DPForestClassifier still takes a sampler (the server's object)")
    return correct("no request names a sampler; each site sets its own")


@case("ICDTAClassifier-no-dp-option", "dp-noise")
def icdta_no_dp() -> Verdict:
    params = make("ICDTAClassifier").get_params()
    if any("epsilon" in name or "noise" in name for name in params):
        return wrong("ICDTA has a DP option the server replay does not cover")
    return documented(
        "ICDTA4FL has no DP option (docs/icdta.md); Federated-ID3 is replayed"
    )


@case("DPForestClassifier-rows-outside-feature-ranges", "dp-noise")
def rows_outside_ranges() -> Verdict:
    X, y, groups = blobs(SITES_SIZES)
    X[groups == "c", 0] += 1000.0  # far beyond the declared (-60, 60)
    model = make("DPForestClassifier", epsilon=math.inf)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, y, groups)
    told = [str(w.message) for w in caught if "feature_ranges" in str(w.message)]
    if len(told) == 1 and "Client 'c'" in told[0] and "'x0'" in told[0]:
        return documented(
            "site 'c' clips x0 into the declared range and warns at the site"
        )
    return wrong(f"rows outside feature_ranges, told: {told!r}")
