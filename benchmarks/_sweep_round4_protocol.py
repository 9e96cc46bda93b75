"""Hostile round four, protocol families: FedGBDT, secure aggregation, Federation.

    python benchmarks/hostile_sweep.py --only round4-protocol/

- ``fedgbdt``: a site's loss weights of 1e300 (level and bagging replies), its
  huge but finite squared-error gradients or bagging leaves (which used to get
  an honest site blamed for an infinite loss), bagging that diverges on honest
  sites, honest targets near the agreed ``|y| <= 1e100`` and one beyond it.
- ``secure``: a survivor's garbage round keys, a random masked vector (start
  and level), a well-formed vector with a negative pooled count, a changed
  commitment, three sites and one dropout.
- ``federation``: a second secure fit while one runs on the same
  ``Federation``; two one after the other.

Each case's expected names follow the fix (docs/fedgbdt.md, "Plausibility
bounds"; docs/security.md, "Secure aggregation"): the lying site and field,
or the round and the sites of a masked sum, or the protocol.
"""

from __future__ import annotations

import dataclasses
import threading
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from _sweep_core import (
    RANGES,
    SIZES,
    Verdict,
    case,
    check,
    correct,
    data_for,
    make,
    secret_rows,
    wrong,
)

F = "round4-protocol"
FOUR = (*SIZES, 29)
"""Four sites, so that three survive a dropout."""
SECURE: dict[str, Any] = {"secure_aggregation": True, "feature_ranges": RANGES}
START, LEVEL = 1, 3
"""Round 1 masks the start (FedGBDT) or the grid (FedForest): mask round 0;
round 3 masks a level, whose keys every pair committed to the round before."""


def _only(kind: type, change: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def mutate(reply: Any) -> Any:
        return change(reply) if isinstance(reply, kind) else reply

    return mutate


def _fit(name: str, faults: tuple[Any, ...], sizes: tuple[int, ...] = SIZES,
         **params: Any) -> Any:  # fmt: skip
    """Fit ``name`` on :func:`data_for` sites with ``faults`` (rows are secrets)."""
    from fedtrees.federation import Federation

    X, y, groups = data_for(name, sizes=sizes)
    secret_rows(sizes)
    federation = Federation.from_groups(X, y, groups, faults=faults)
    return make(name, **params).fit_federation(federation)


def _fault(site: str, kind: type, change: Callable[[Any], Any], at: int | None = None
           ) -> Any:  # fmt: skip
    from fedtrees.federation import Fault

    return Fault(site, "mutate", round=at, mutate=_only(kind, change))


# -- fedgbdt -------------------------------------------------------------------------
def _loss_weight(value: float) -> Callable[[Any], Any]:
    """Weigh the validation loss by ``value`` (the same mean loss)."""

    def change(reply: Any) -> Any:
        loss = np.array(reply.loss, dtype=np.float64)
        if not loss.any() or loss[3] <= 0:
            return reply
        loss[2:] = [value * loss[2] / loss[3], value]
        return dataclasses.replace(reply, loss=loss)

    return change


@case("fedgbdt-loss-weight-1e300", F, ("'b'", "'loss'", "validation"))
def loss_weight() -> Verdict:
    from fedtrees.algorithms.fedgbdt._payloads import LevelReply

    _fit(
        "FedGBDTClassifier", (_fault("b", LevelReply, _loss_weight(1e300)),),
        n_estimators=20, early_stopping_rounds=2,
    )  # fmt: skip
    return wrong("a validation loss weighed by 1e300 decided early stopping")


@case("fedgbdt-bagging-loss-weight-1e300", F, ("'b'", "'loss'", "validation"))
def bagging_loss_weight() -> Verdict:
    from fedtrees.algorithms.fedgbdt._payloads import LocalReply

    _fit(
        "FedGBDTClassifier", (_fault("b", LocalReply, _loss_weight(1e300)),),
        protocol="bagging", n_estimators=6, early_stopping_rounds=2,
    )  # fmt: skip
    return wrong("a bagging site's validation loss weighed by 1e300 was accepted")


def _gradients_times(factor: float) -> Callable[[Any], Any]:
    def change(reply: Any) -> Any:
        node, bins = np.array(reply.node_gh), np.array(reply.bin_stats)
        node[:, 0] *= factor
        bins[:, 0] *= factor
        return dataclasses.replace(reply, node_gh=node, bin_stats=bins)

    return change


@case("fedgbdt-squared-error-gradients-x1e150", F, ("'b'", "node_gh"))
def huge_gradients() -> Verdict:
    from fedtrees.algorithms.fedgbdt._payloads import LevelReply

    fault = _fault("b", LevelReply, _gradients_times(1e150), at=LEVEL)
    _fit("FedGBDTRegressor", (fault,))
    return wrong("huge but finite gradients were accepted")


@case("fedgbdt-bagging-leaves-x1e150", F, ("'b'", "d_value"))
def huge_leaves() -> Verdict:
    from fedtrees.algorithms.fedgbdt._payloads import LocalReply

    def change(reply: Any) -> Any:
        return dataclasses.replace(reply, d_value=np.asarray(reply.d_value) * 1e150)

    _fit("FedGBDTRegressor", (_fault("b", LocalReply, change),), protocol="bagging")
    return wrong("huge but finite bagging leaves were accepted")


@case(
    "fedgbdt-bagging-diverges-on-honest-sites",
    F,
    ("protocol='bagging'", "diverged", "learning_rate"),
)
def bagging_diverges() -> Verdict:
    from fedtrees import FedGBDTRegressor

    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 3))
    y = X[:, 0] + 0.1 * rng.normal(size=400)
    groups = np.repeat(list("abcdefghij"), 40)
    FedGBDTRegressor(
        protocol="bagging", n_estimators=200, max_depth=2, learning_rate=1.0,
        reg_lambda=0.0, random_state=0,
    ).fit(X, y, groups)  # fmt: skip
    return wrong("a diverging bagging model was fitted without a word")


@case("fedgbdt-honest-targets-2^300-with-weights", F)
def honest_huge_targets() -> Verdict:
    X, y, groups = data_for("FedGBDTRegressor")
    weights = np.random.default_rng(1).uniform(0.05, 3.0, y.shape[0])
    predictions = []
    for scale in (2.0**10, 2.0**300):  # a power of two scales every sum exactly
        for protocol in ("histogram", "bagging", "cyclic"):
            model = make(
                "FedGBDTRegressor", protocol=protocol, early_stopping_rounds=2
            ).fit(X, y * scale, groups, sample_weight=weights)
            predictions.append(model.predict(X) / scale)
    same = all(np.array_equal(predictions[k], predictions[k + 3]) for k in range(3))
    return check(
        same, "the same trees at 2^10 and 2^300, no site blamed",
        "the predictions do not scale with the targets",
    )  # fmt: skip


@case("fedgbdt-site-target-beyond-the-agreed-range", F, ("'c'", r"\|y\| <= 1e\+100"))
def site_target_beyond_range() -> Verdict:
    from fedtrees.federation import Federation

    X, y, groups = data_for("FedGBDTRegressor")
    sites = {g: (X[groups == g], y[groups == g]) for g in ("a", "b", "c")}
    sites["c"] = (sites["c"][0], sites["c"][1] * 1e160)
    make("FedGBDTRegressor").fit_federation(Federation.from_clients(sites))
    return wrong("a site's targets of 1e160 were accepted")


# -- secure aggregation --------------------------------------------------------------
def _garbage_keys(reply: Any) -> Any:
    keys = np.random.default_rng(5).integers(0, 256, reply.round_keys.shape)
    return dataclasses.replace(reply, round_keys=keys.astype(np.uint8))


def _register_garbage_keys(name: str, at: int) -> None:
    @case(f"secure-{name}-garbage-reveal-keys-round-{at}", F, ("'a'", "round_keys"))
    def run() -> Verdict:
        from fedtrees.federation import Fault, RevealReply

        faults = (Fault("d", "drop", round=at), _fault("a", RevealReply, _garbage_keys))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _fit(name, faults, FOUR, **SECURE, on_dropout="continue")
        return wrong("a survivor's garbage round keys were used")


def _random_vector(reply: Any) -> Any:
    words = np.random.default_rng(9).integers(
        0, np.iinfo(np.uint64).max, reply.masked.shape, dtype=np.uint64, endpoint=True
    )
    return dataclasses.replace(reply, masked=words)


def _register_random_vector(name: str, at: int) -> None:
    names = (f"Round {at}", r"masked sum of sites \['a', 'b', 'c'\]", "cannot name")

    @case(f"secure-{name}-random-masked-vector-round-{at}", F, names)
    def run() -> Verdict:
        from fedtrees.federation import MaskedReply

        _fit(name, (_fault("b", MaskedReply, _random_vector, at),), **SECURE)
        return wrong("a random masked vector gave a model")


for _name in ("FedForestClassifier", "FedForestRegressor", "FedGBDTClassifier",
              "FedGBDTRegressor"):  # fmt: skip
    for _at in (START, LEVEL):
        _register_garbage_keys(_name, _at)
        _register_random_vector(_name, _at)


@case("secure-negative-pooled-class-count", F, ("Round 1", "'prior'", "negative"))
def negative_count() -> Verdict:
    from fedtrees.federation import MaskedReply, to_fixed

    def lie(reply: Any) -> Any:  # a well-formed vector, its count 10^6 too low
        delta = np.zeros(reply.masked.shape[0])
        delta[3 * 1024] = -1e6  # the first class count, after 3 fine histograms
        return dataclasses.replace(reply, masked=reply.masked + to_fixed(delta, 3, "x"))

    _fit("FedGBDTClassifier", (_fault("b", MaskedReply, lie, START),), **SECURE)
    return wrong("a negative pooled class count gave a model")


@case("secure-changed-commitment", F, ("'b'", "commitments", "committed to in mask"))
def changed_commitment() -> Verdict:
    from fedtrees.federation import MaskedReply

    def flip(reply: Any) -> Any:
        table = np.array(reply.commitments)
        table[0, 2, 0] ^= 1
        return dataclasses.replace(reply, commitments=table)

    _fit("FedForestRegressor", (_fault("b", MaskedReply, flip, LEVEL),), **SECURE)
    return wrong("a changed commitment was accepted")


@case("secure-three-sites-one-dropout", F, ("'c'", "fewer than the 3"))
def three_sites_one_dropout() -> Verdict:
    from fedtrees.federation import Fault

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _fit(
            "FedGBDTRegressor", (Fault("c", "drop", round=LEVEL),), **SECURE,
            on_dropout="continue",
        )  # fmt: skip
    return wrong("a masked sum of two sites was formed")


# -- federation ----------------------------------------------------------------------
@case("federation-second-concurrent-secure-fit", F, ("already running", "Federation"))
def concurrent_fits() -> Verdict:
    from fedtrees.federation import Federation

    name = "FedGBDTClassifier"
    X, y, groups = data_for(name)
    fed = Federation.from_groups(X, y, groups)
    in_round, tried = threading.Event(), threading.Event()
    first: dict[str, Any] = {}

    def hold(env: Any) -> None:
        if env.round == 2:
            in_round.set()
            tried.wait(60.0)

    def fit_first() -> None:
        try:
            first["model"] = make(name, **SECURE).fit_federation(fed, callbacks=[hold])
        except Exception as exc:  # judged below
            first["error"] = exc
        finally:
            in_round.set()

    thread = threading.Thread(target=fit_first)
    thread.start()
    in_round.wait(60.0)
    try:
        make(name, **SECURE).fit_federation(fed)
        second: Exception | None = None
    except Exception as exc:  # the refusal, judged by its names
        second = exc
    finally:
        tried.set()
        thread.join(60.0)
    if "error" in first:
        return wrong(f"the first fit failed: {first['error']}"[:200])
    alone = make(name, **SECURE).fit(X, y, groups)
    if not np.array_equal(first["model"].predict_proba(X), alone.predict_proba(X)):
        return wrong("the first fit's model differs from a fit alone")
    if second is None:
        return wrong("two secure fits ran at once on one federation")
    raise second


@case("federation-secure-fits-one-after-the-other", F)
def sequential_fits() -> Verdict:
    from fedtrees.federation import Federation

    name = "FedForestClassifier"
    X, y, groups = data_for(name)
    fed = Federation.from_groups(X, y, groups)
    one = make(name, **SECURE).fit_federation(fed).predict(X)
    two = make(name, **SECURE).fit_federation(fed).predict(X)
    alone = make(name, **SECURE).fit(X, y, groups).predict(X)
    if np.array_equal(one, alone) and np.array_equal(two, alone):
        return correct("each equals a fit alone")
    return wrong("a second fit on the same federation gave another model")
