"""Secure aggregation against wrong vectors, wrong keys, few survivors, two fits.

Round four of the hostile cases (issue 37) found that garbage round keys from a
survivor, or a random masked vector, gave a model built from impossible sums
(or an "Invalid Tree" naming neither round nor site); that with 3 sites and
one dropout a survivor was blamed; and that two secure fits on one
``Federation`` overwrote each other's keys. Now (docs/security.md, "Secure
aggregation"): a survivor's revealed keys are checked against the commitments
the sites sent with their vectors; a pooled sum that no honest sites can give
fails naming the round and the sites that took part (a sum cannot name one);
a round that too few sites survive names the dropped site; a federation runs
one fit at a time.
"""

from __future__ import annotations

import dataclasses
import threading
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from fedtrees import (
    FedForestClassifier,
    FedForestRegressor,
    FedGBDTClassifier,
    FedGBDTRegressor,
)
from fedtrees.exceptions import (
    ClientDropoutWarning,
    FedTreesError,
    RemoteProtocolError,
    ValidationError,
)
from fedtrees.federation import (
    Fault,
    Federation,
    MaskedReply,
    Payload,
    RevealReply,
    RoundEnv,
    recording,
    to_fixed,
)

SITES = ("a", "b", "c", "d")
N_FEATURES = 3
RANGES = [(-6.0, 6.0)] * N_FEATURES
ESTIMATORS: dict[str, Callable[..., Any]] = {
    "FedForestClassifier": lambda **p: FedForestClassifier(
        n_estimators=2, max_depth=3, candidates="hist", **p
    ),
    "FedForestRegressor": lambda **p: FedForestRegressor(
        n_estimators=2, max_depth=3, candidates="hist", **p
    ),
    "FedGBDTClassifier": lambda **p: FedGBDTClassifier(
        n_estimators=3, max_depth=2, **p
    ),
    "FedGBDTRegressor": lambda **p: FedGBDTRegressor(n_estimators=3, max_depth=2, **p),
}
# Round 1 masks the grid (FedForest) or the start (FedGBDT): mask round 0, where
# only the survivor's own commitment stands; round 3 masks a level, whose keys
# both sites of every pair committed to in the round before.
START, LEVEL = 1, 3
MASKED_SUM = r"the masked sum of sites \['.*cannot name the site"


def _model(name: str, **params: Any) -> Any:
    return ESTIMATORS[name](
        secure_aggregation=True, feature_ranges=RANGES, random_state=0, **params
    )


def _data(name: str, sites: tuple[str, ...] = SITES, rows: int = 40) -> tuple:
    rng = np.random.default_rng(7)
    X = rng.normal(size=(len(sites) * rows, N_FEATURES))
    score = X[:, 0] - X[:, 1] + 0.3 * rng.normal(size=X.shape[0])
    y = score if name.endswith("Regressor") else (score > 0).astype(int)
    return X, y, np.repeat(sites, rows)


def _federation(name: str, *faults: Fault, sites: tuple[str, ...] = SITES) -> Any:
    X, y, groups = _data(name, sites)
    return Federation.from_groups(X, y, groups, faults=faults)


def _only(kind: type[Payload], change: Callable[[Any], Any]) -> Callable[..., Any]:
    def mutate(reply: Payload) -> Payload:
        return change(reply) if isinstance(reply, kind) else reply

    return mutate


# -- a survivor reveals keys that are not the ones it masked with -------------------
def _garbage_keys(reply: RevealReply) -> RevealReply:
    keys = np.random.default_rng(5).integers(0, 256, reply.round_keys.shape)
    return dataclasses.replace(reply, round_keys=keys.astype(np.uint8))


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("name", list(ESTIMATORS))
@pytest.mark.parametrize("at", [START, LEVEL], ids=["mask-round-0", "level"])
def test_garbage_reveal_keys_are_refused_naming_the_survivor(
    name: str, at: int
) -> None:
    # d drops after masking; a reveals random bytes as its round key with d. It
    # used to remove the wrong mask: a model from impossible sums, or "Invalid
    # Tree" with no round and no site.
    faults = (
        Fault("d", "drop", round=at),
        Fault("a", "mutate", round=at, mutate=_only(RevealReply, _garbage_keys)),
    )
    with (
        pytest.warns(ClientDropoutWarning, match="Client 'd'"),
        pytest.raises(RemoteProtocolError, match=r"'federation\.reveal'") as info,
    ):
        _model(name, on_dropout="continue").fit_federation(_federation(name, *faults))
    error = info.value
    assert (error.client, error.round, error.kind, error.field) == (
        "a", at, "federation.reveal", "round_keys",
    )  # fmt: skip
    assert (
        "round key with the dropped site 'd' that does not match the commitment to it "
        "that site 'a' sent with its vector"
    ) in str(error)
    both = "(the one both sites sent in mask round" in str(error)
    assert both == (at == LEVEL)  # the dropped site's own word, from mask round 1


# -- a wrong masked vector: the sum is impossible, and no site can be named ---------
def _random_vector(reply: MaskedReply) -> MaskedReply:
    words = np.random.default_rng(9).integers(
        0, np.iinfo(np.uint64).max, reply.masked.shape, dtype=np.uint64,
        endpoint=True,
    )  # fmt: skip
    return dataclasses.replace(reply, masked=words)


def _assert_masked_sum_error(error: BaseException, round_: int, field: str) -> None:
    assert type(error).__name__ == "MaskedSumError", repr(error)
    assert isinstance(error, FedTreesError)
    assert (error.round, error.sites, error.field) == (round_, SITES, field)  # type: ignore[attr-defined]
    assert f"Round {round_}, " in str(error)
    assert "the masked sum of sites ['a', 'b', 'c', 'd']" in str(error)
    assert "cannot name the site" in str(error)


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("name", list(ESTIMATORS))
@pytest.mark.parametrize("at", [START, LEVEL], ids=["start", "level"])
def test_a_random_masked_vector_fails_naming_the_round_and_its_sites(
    name: str, at: int
) -> None:
    fault = Fault("b", "mutate", round=at, mutate=_only(MaskedReply, _random_vector))
    with pytest.raises(FedTreesError, match=MASKED_SUM) as info:
        _model(name).fit_federation(_federation(name, fault))
    error = info.value
    assert type(error).__name__ == "MaskedSumError", repr(error)
    assert error.round == at  # type: ignore[attr-defined]
    assert error.sites == SITES  # type: ignore[attr-defined]
    assert "cannot name the site" in str(error)


def _shifted(delta: Callable[[int], np.ndarray], wide: bool) -> Callable[..., Any]:
    """Add a plain vector to a site's masked one: it lands in the sum as it is."""

    def shift(reply: MaskedReply) -> MaskedReply:
        words = words_of_length(reply.masked.shape[0], wide)
        plain = to_fixed(delta(words), len(SITES), "a lie", wide=wide)
        return dataclasses.replace(reply, masked=reply.masked + plain)

    return shift


def words_of_length(n_words: int, wide: bool) -> int:
    return n_words // 2 if wide else n_words


def _prior_delta(
    fine_columns: int, value: float, at: int
) -> Callable[[int], np.ndarray]:
    def delta(n: int) -> np.ndarray:
        out = np.zeros(n)
        out[fine_columns * 1024 + at] = value
        return out

    return delta


@pytest.mark.hostile("clear_error")
def test_a_start_sum_with_a_negative_class_count_is_refused() -> None:
    # Site b sends a well-formed vector whose class count is 10^6 too low: the
    # pooled count is negative, which no sites' rows give.
    change = _shifted(_prior_delta(N_FEATURES, -1e6, 0), wide=False)
    fault = Fault("b", "mutate", round=START, mutate=_only(MaskedReply, change))
    name = "FedGBDTClassifier"
    with pytest.raises(FedTreesError, match=MASKED_SUM) as info:
        _model(name).fit_federation(_federation(name, fault))
    _assert_masked_sum_error(info.value, START, "prior")
    assert "negative class count" in str(info.value)


@pytest.mark.hostile("clear_error")
def test_a_grid_sum_heavier_than_the_declared_rows_is_refused() -> None:
    # Site c adds 10^8 to one fine bin: more weight than the sites declared.
    def delta(n: int) -> np.ndarray:
        out = np.zeros(n)
        out[17] = 1e8
        return out

    change = _shifted(delta, wide=False)
    fault = Fault("c", "mutate", round=START, mutate=_only(MaskedReply, change))
    name = "FedForestClassifier"
    with pytest.raises(FedTreesError, match=MASKED_SUM) as info:
        _model(name).fit_federation(_federation(name, fault))
    _assert_masked_sum_error(info.value, START, "fine_histograms")
    assert "more than the 256.0 the sites declared" in str(info.value)


# -- commitments: both sites of a pair commit to the same keys ----------------------
def _flip_commitment(peer: int) -> Callable[[MaskedReply], MaskedReply]:
    def flip(reply: MaskedReply) -> MaskedReply:
        committed = np.array(reply.commitments)
        committed[0, peer, 0] ^= 1
        return dataclasses.replace(reply, commitments=committed)

    return flip


@pytest.mark.hostile("clear_error")
def test_a_commitment_that_its_pair_does_not_share_fails_the_first_round() -> None:
    fault = Fault(
        "b", "mutate", round=START, mutate=_only(MaskedReply, _flip_commitment(2))
    )
    name = "FedGBDTRegressor"
    with pytest.raises(FedTreesError, match=MASKED_SUM) as info:
        _model(name).fit_federation(_federation(name, fault))
    error = info.value
    assert type(error).__name__ == "MaskedSumError", repr(error)
    assert error.sites == ("b", "c")  # type: ignore[attr-defined]
    assert "of sites 'b' and 'c' to their pair's key of mask round 0 differ" in str(
        error
    )


@pytest.mark.hostile("clear_error")
def test_a_commitment_other_than_the_one_of_the_round_before_names_its_site() -> None:
    fault = Fault(
        "b", "mutate", round=LEVEL, mutate=_only(MaskedReply, _flip_commitment(2))
    )
    name = "FedForestRegressor"
    with pytest.raises(RemoteProtocolError, match="field 'commitments'") as info:
        _model(name).fit_federation(_federation(name, fault))
    assert (info.value.client, info.value.round, info.value.field) == (
        "b", LEVEL, "commitments",
    )  # fmt: skip
    assert "with site 'c' differ from the one both sites committed to" in str(
        info.value
    )


# -- three sites, one dropout: the dropped site is named, no survivor is asked -----
@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("name", ["FedForestClassifier", "FedGBDTRegressor"])
@pytest.mark.parametrize("at", [START, LEVEL], ids=["start", "level"])
def test_three_sites_and_one_dropout_names_the_dropped_site(name: str, at: int) -> None:
    three = ("a", "b", "c")
    fed = _federation(name, Fault("c", "drop", round=at), sites=three)
    model = _model(name, on_dropout="continue")
    with (
        warnings.catch_warnings(),
        recording() as ledgers,
    ):
        warnings.simplefilter("ignore", ClientDropoutWarning)
        with pytest.raises(RemoteProtocolError, match="fewer than the 3") as info:
            model.fit_federation(fed)
    assert (info.value.client, info.value.round) == ("c", at)  # not a survivor
    assert "only 2 sites remain in the masked sum (['a', 'b'])" in str(info.value)
    kinds = {m.kind for m in ledgers[0].captured}
    assert "federation.reveal" not in kinds  # no survivor reveals a key


# -- two fits on one federation ------------------------------------------------------
@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize("second", ["FedGBDTClassifier", "FedForestClassifier"])
def test_a_second_concurrent_fit_on_one_federation_is_refused(second: str) -> None:
    name = "FedGBDTClassifier"
    fed = _federation(name)
    in_round, tried = threading.Event(), threading.Event()
    first: dict[str, Any] = {}

    def hold(env: RoundEnv) -> None:
        if env.round == 2:  # the first fit is between its masked rounds
            in_round.set()
            assert tried.wait(60.0)  # a timeout only catches a hang

    def fit_first() -> None:
        try:
            first["model"] = _model(name).fit_federation(fed, callbacks=[hold])
        except BaseException as exc:  # reported by the main thread
            first["error"] = exc
        finally:
            in_round.set()

    thread = threading.Thread(target=fit_first)
    thread.start()
    try:
        assert in_round.wait(120.0)
        with pytest.raises(
            ValidationError,
            match=r"Federation: this federation \(InProcessTransport of 4 sites\) is "
            r"already running a fit; a federation runs one fit at a time",
        ):
            _model(second).fit_federation(fed)
    finally:
        tried.set()
        thread.join(120.0)
    assert "error" not in first, first.get("error")
    # The first fit went on with its own keys: the model of a fit alone.
    X, _, _ = _data(name)
    alone = _model(name).fit_federation(_federation(name))
    np.testing.assert_array_equal(
        first["model"].predict_proba(X), alone.predict_proba(X)
    )


@pytest.mark.hostile("correct")
def test_two_secure_fits_one_after_the_other_on_one_federation_are_each_right() -> None:
    name = "FedForestClassifier"
    fed = _federation(name)
    X, _, _ = _data(name)
    one = _model(name).fit_federation(fed).predict_proba(X)
    two = _model(name).fit_federation(fed).predict_proba(X)
    alone = _model(name).fit_federation(_federation(name)).predict_proba(X)
    np.testing.assert_array_equal(one, alone)
    np.testing.assert_array_equal(two, alone)
