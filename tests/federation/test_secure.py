"""Secure aggregation: pairwise masks over Z_2^64, fixed point, dropout recovery.

The keys are drawn by the operating system's generator by design (never seeded),
so every masked vector here is random; only the statistics use fixed seeds. The
statistical tests use thresholds loose enough that a correct implementation fails
them by chance less than once in a million runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import (
    X25519PrivateKey,
    X25519PublicKey,
)
from scipy import stats

from fedtrees.exceptions import ValidationError
from fedtrees.federation import (
    MIN_COHORT,
    ClientData,
    ClientState,
    InvalidField,
    MaskedReply,
    MaskedRound,
    RevealReply,
    check_public_keys,
    check_reply,
    from_fixed,
    masked_reply,
    masked_spec,
    to_fixed,
)
from fedtrees.federation._client import dispatch
from fedtrees.federation._codec import Envelope, decode, encode
from fedtrees.federation._secure import (
    FIXED_LIMIT,
    FRACTION_BITS,
    KEY_STATE,
    SiteKey,
    keep_new_key,
    mask_words,
    new_key,
    reveal,
    round_key,
)

UNIT = 2.0**-FRACTION_BITS
HALF_UNIT = 2.0 ** -(FRACTION_BITS + 1)
# Uniformity: 128 bit z-scores (|z| >= 6 has odds 2e-9 each) and five p-values,
# so a correct implementation fails by chance with odds below 1e-6 per run.
Z_MAX = 6.0
P_MIN = 1e-7


@dataclass
class Cohort:
    """Sites with their data, state and public keys, and the server's round."""

    data: dict[str, ClientData]
    states: dict[str, ClientState]
    public: dict[str, np.ndarray]
    keys: dict[str, bytes]

    @classmethod
    def of(cls, sites: list[str]) -> Cohort:
        states = {s: ClientState() for s in sites}
        public = {s: keep_new_key(states[s]) for s in sites}
        data = {
            s: ClientData.build(s, np.zeros((3, 1)), np.array([0, 1, 0])) for s in sites
        }
        return cls(data, states, public, check_public_keys(public))

    def start(self, mask_round: int, length: int) -> MaskedRound:
        return MaskedRound.start(mask_round, sorted(self.data), self.keys, length)

    def reply(self, site: str, request: object, values: np.ndarray) -> MaskedReply:
        return masked_reply(request, self.data[site], self.states[site], values)

    def private(self, site: str) -> X25519PrivateKey:
        kept = self.states[site].get(KEY_STATE, SiteKey)
        assert kept is not None
        return X25519PrivateKey.from_private_bytes(kept.private_key.tobytes())


def _request(masked_round: MaskedRound) -> SimpleNamespace:
    return SimpleNamespace(**masked_round.fields())


def _request_of(mask_round: int, cohort: list[str], keys: list[np.ndarray]) -> object:
    return SimpleNamespace(
        mask_round=mask_round,
        cohort=np.asarray(cohort, dtype=str),
        cohort_keys=np.stack(keys).astype(np.uint8),
    )


SITES = ["a", "b", "c", "d"]


# -- 1. the masks cancel -----------------------------------------------------------
@pytest.mark.parametrize("length", [0, 1, 7, 1000])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_masks_cancel_exactly_for_counts(seed: int, length: int) -> None:
    rng = np.random.default_rng(seed)
    cohort = Cohort.of(SITES)
    masked_round = cohort.start(3 * seed + 1, length)
    request = _request(masked_round)
    counts = {s: rng.integers(0, 10**6, length).astype(np.float64) for s in SITES}
    replies = {s: cohort.reply(s, request, counts[s]) for s in SITES}
    for s in SITES:
        assert replies[s].masked.dtype == np.uint64
        assert replies[s].masked.shape == (length,)
        if length:  # masked: a reply equal to the plain words has odds 2^-64
            assert not np.array_equal(replies[s].masked, to_fixed(counts[s], 4, "x"))
    total = from_fixed(masked_round.total(replies))
    assert np.array_equal(total, sum(counts.values(), np.zeros(length)))


@pytest.mark.parametrize("length", [0, 1, 7, 1000])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_masks_cancel_for_floats_up_to_rounding(seed: int, length: int) -> None:
    rng = np.random.default_rng(100 + seed)
    cohort = Cohort.of(SITES)
    masked_round = cohort.start(seed, length)
    request = _request(masked_round)
    values = {s: rng.normal(0.0, 100.0, length) for s in SITES}
    replies = {s: cohort.reply(s, request, values[s]) for s in SITES}
    total = from_fixed(masked_round.total(replies))
    # The sum of the rounded values, exactly (they are multiples of 2^-32 far
    # below 2^53 units, so the float sum is exact too).
    rounded = sum(
        (from_fixed(to_fixed(v, len(SITES), "x")) for v in values.values()),
        np.zeros(length),
    )
    assert np.array_equal(total, rounded)
    exact = np.sum(np.stack(list(values.values())), axis=0)
    assert np.all(np.abs(total - exact) <= len(SITES) * HALF_UNIT + 1e-12)


def test_masked_replies_differ_from_run_to_run() -> None:
    values = np.arange(16, dtype=np.float64)
    first, second = Cohort.of(SITES), Cohort.of(SITES)
    one = first.reply("a", _request(first.start(0, 16)), values)
    two = second.reply("a", _request(second.start(0, 16)), values)
    assert not np.array_equal(one.masked, two.masked)


# -- 2. fixed point ------------------------------------------------------------------
def test_fixed_point_round_trips_integers_and_units_exactly() -> None:
    rng = np.random.default_rng(7)
    whole = np.concatenate(
        [np.arange(-1000, 1001), rng.integers(-(2**28), 2**28, 500)]
    ).astype(np.float64)
    assert np.array_equal(from_fixed(to_fixed(whole, 2, "counts")), whole)
    units = rng.integers(-(2**50), 2**50, 1000).astype(np.float64) * UNIT
    assert np.array_equal(from_fixed(to_fixed(units, 4, "units")), units)
    assert np.array_equal(
        from_fixed(to_fixed([2.0**29, -(2.0**29)], 1, "largest")),
        [2.0**29, -(2.0**29)],
    )


def test_fixed_point_is_twos_complement() -> None:
    words = to_fixed([-1.0, -UNIT, 0.5], 3, "x")
    assert words.dtype == np.uint64
    assert words.tolist() == [2**64 - 2**32, 2**64 - 1, 2**31]
    assert from_fixed(words).tolist() == [-1.0, -UNIT, 0.5]


def test_fixed_point_rounds_to_nearest_unit() -> None:
    rng = np.random.default_rng(11)
    x = np.concatenate([rng.normal(0, 1e3, 5000), rng.uniform(-1e-6, 1e-6, 5000)])
    back = from_fixed(to_fixed(x, 4, "floats"))
    assert np.all(np.abs(back - x) <= HALF_UNIT)
    assert np.all(np.abs(back / UNIT - np.rint(back / UNIT)) == 0)  # whole units
    assert np.any(back != x)  # the test does exercise rounding


@pytest.mark.parametrize("cohort", [1, 3, 4, 10])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf, "limit", "-limit", "above"])
def test_fixed_point_refuses_a_value_out_of_range(cohort: int, bad: object) -> None:
    limit = np.ldexp(FIXED_LIMIT / cohort, -FRACTION_BITS)  # 2^30 / cohort
    assert limit == 2.0**30 / cohort
    value = {"limit": limit, "-limit": -limit, "above": 2 * limit}.get(str(bad), bad)
    what = "my weights holds a value beyond the fixed-point range"
    with pytest.raises(ValidationError, match=what):
        to_fixed([0.0, value, 1.0], cohort, "my weights")
    below = np.nextafter(limit, 0.0)
    assert from_fixed(to_fixed([below, -below], cohort, "x"))[0] == pytest.approx(
        below, abs=UNIT
    )


def test_masked_reply_refuses_a_value_beyond_the_cohort_range() -> None:
    cohort = Cohort.of(SITES)
    request = _request(cohort.start(0, 2))
    with pytest.raises(ValidationError, match="fixed-point"):
        cohort.reply("a", request, np.array([0.0, 2.0**30 / len(SITES)]))
    with pytest.raises(ValidationError, match="fixed-point"):
        cohort.reply("a", request, np.array([np.nan, 0.0]))


# -- 3. a masked reply looks uniform -------------------------------------------------
def _bit_z_scores(words: np.ndarray) -> np.ndarray:
    n = words.size
    bits = (words[:, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)
    ones = bits.sum(axis=0).astype(np.float64)
    return (ones - n / 2) / np.sqrt(n / 4)


def test_masked_replies_are_indistinguishable_from_uniform() -> None:
    n = 20_000
    rng = np.random.default_rng(5)
    cohort = Cohort.of(["a", "b", "c"])
    masked_round = cohort.start(0, n)
    request = _request(masked_round)
    values = {
        "a": np.zeros(n),
        "b": rng.integers(0, 10**6, n).astype(np.float64),
        "c": rng.integers(0, 3, n).astype(np.float64),
    }
    replies = {s: cohort.reply(s, request, v) for s, v in values.items()}
    # Loose thresholds (Z_MAX, P_MIN): a uniform vector fails them with odds below
    # 1e-6 per run; an unmasked one fails them by far (the next test).
    for site in ("a", "b"):
        words = replies[site].masked
        z = _bit_z_scores(words)
        assert np.all(np.abs(z) < Z_MAX), (site, z)
        counts = np.bincount(words.view(np.uint8), minlength=256)
        assert stats.chisquare(counts).pvalue > P_MIN
        assert (
            stats.kstest(words.astype(np.float64) / 2.0**64, "uniform").pvalue > P_MIN
        )
    # The distribution does not change with the data: zeros vs real counts.
    zeros = replies["a"].masked.astype(np.float64) / 2.0**64
    data = replies["b"].masked.astype(np.float64) / 2.0**64
    assert stats.ks_2samp(zeros, data).pvalue > P_MIN
    # ...and the sum still comes out.
    total = from_fixed(masked_round.total(replies))
    assert np.array_equal(total, values["b"] + values["c"])


def test_the_uniformity_checks_catch_an_unmasked_vector() -> None:
    """The statistics above have power: plain fixed-point counts fail them all."""
    n = 20_000
    plain = to_fixed(np.random.default_rng(5).integers(0, 10**6, n), 3, "x")
    assert np.any(np.abs(_bit_z_scores(plain)) >= Z_MAX)
    counts = np.bincount(plain.view(np.uint8), minlength=256)
    assert stats.chisquare(counts).pvalue <= P_MIN
    uniform = np.random.default_rng(6).integers(0, 2**64, n, dtype=np.uint64)
    assert (
        stats.ks_2samp(plain / 2.0**64, uniform.astype(np.float64) / 2.0**64).pvalue
        <= P_MIN
    )


# -- 4. dropout recovery -------------------------------------------------------------
FIVE = ["a", "b", "c", "d", "e"]


@pytest.mark.parametrize("dropped", [["c"], ["a"], ["e"], ["a", "d"], ["b", "e"]])
def test_dropped_sites_masks_are_removed_with_revealed_keys(
    dropped: list[str],
) -> None:
    rng = np.random.default_rng(len(dropped))
    length = 50
    cohort = Cohort.of(FIVE)
    masked_round = cohort.start(2, length)
    request = _request(masked_round)
    counts = {s: rng.integers(0, 1000, length).astype(np.float64) for s in FIVE}
    survivors = [s for s in FIVE if s not in dropped]
    replies = {s: cohort.reply(s, request, counts[s]) for s in survivors}
    assert masked_round.dropped(list(replies)) == dropped

    with pytest.raises(ValidationError, match="did not reveal its round key"):
        masked_round.total(replies)

    ask = masked_round.reveal_request(dropped)
    reveals = {}
    for s in survivors:
        answer = reveal(ask, cohort.data[s], cohort.states[s])
        check_reply(ask.expected_reply(), answer)
        assert answer.round_keys.shape == (len(dropped), 32)
        reveals[s] = answer
    masked_round.keep_reveals(dropped, reveals)
    total = from_fixed(masked_round.total(replies))
    assert np.array_equal(total, sum((counts[s] for s in survivors), np.zeros(length)))


def test_a_revealed_key_opens_that_pair_and_round_only() -> None:
    cohort = Cohort.of(FIVE)
    masked_round = cohort.start(4, 3)
    ask = masked_round.reveal_request(["c"])
    with pytest.raises(InvalidField, match="masked last only"):  # not masked yet
        dispatch(ask, cohort.data["a"], cohort.states["a"])
    cohort.reply("a", _request(masked_round), np.ones(3))
    answer = dispatch(ask, cohort.data["a"], cohort.states["a"])  # registered
    assert isinstance(answer, RevealReply)
    key = answer.round_keys[0].tobytes()
    c = cohort.private("c")
    assert key == round_key(c, cohort.keys["a"], ("c", "a"), 4)
    assert key != round_key(c, cohort.keys["a"], ("c", "a"), 5)
    assert key != round_key(c, cohort.keys["b"], ("c", "b"), 4)


def test_total_refuses_a_reply_from_outside_the_cohort() -> None:
    cohort = Cohort.of(FIVE)
    masked_round = cohort.start(0, 2)
    request = _request(masked_round)
    replies = {s: cohort.reply(s, request, np.ones(2)) for s in FIVE}
    replies["zz"] = replies["a"]
    with pytest.raises(ValidationError, match="outside its cohort"):
        masked_round.total(replies)


def test_total_refuses_fewer_than_min_cohort_answers() -> None:
    cohort = Cohort.of(FIVE)
    masked_round = cohort.start(0, 2)
    request = _request(masked_round)
    replies = {s: cohort.reply(s, request, np.ones(2)) for s in ("a", "b")}
    with pytest.raises(ValidationError, match="2 sites answered"):
        masked_round.total(replies)


# -- 5. reveal refusals --------------------------------------------------------------
@pytest.mark.parametrize(
    ("sites", "dropped", "reason"),
    [
        (FIVE, ["a"], "distinct other sites"),  # its own key
        (FIVE, ["b", "a"], "distinct other sites"),
        (FIVE, ["z"], "distinct other sites"),  # not in the cohort
        (FIVE, ["b", "b"], "distinct other sites"),
        (FIVE, ["b", "c", "d"], "leave 2 sites in the sum"),
        (SITES, ["b", "c"], "leave 2 sites in the sum"),
    ],
)
def test_reveal_refuses(sites: list[str], dropped: list[str], reason: str) -> None:
    cohort = Cohort.of(sites)
    ask = cohort.start(1, 4).reveal_request(dropped)
    with pytest.raises(InvalidField, match=reason) as info:
        reveal(ask, cohort.data["a"], cohort.states["a"])
    assert info.value.field == "dropped"


def test_reveal_refuses_a_site_outside_the_cohort_or_without_key() -> None:
    cohort = Cohort.of(FIVE)
    ask = cohort.start(1, 4).reveal_request(["c"])
    outsider = Cohort.of(["x"])
    with pytest.raises(InvalidField) as info:
        reveal(ask, cohort.data["a"], outsider.states["x"])
    assert info.value.field == "cohort_keys"
    with pytest.raises(ValidationError, match="lost its secure-aggregation key"):
        reveal(ask, cohort.data["a"], ClientState())


# -- 6. site refusals ----------------------------------------------------------------
def test_masked_reply_refuses_a_cohort_of_two() -> None:
    cohort = Cohort.of(["a", "b"])
    request = _request_of(0, ["a", "b"], [cohort.public["a"], cohort.public["b"]])
    with pytest.raises(InvalidField, match="a masked sum needs 3") as info:
        cohort.reply("a", request, np.ones(2))
    assert info.value.field == "cohort"
    assert MIN_COHORT == 3


def test_masked_reply_refuses_cohort_keys_without_its_key() -> None:
    cohort = Cohort.of(SITES)
    stranger = keep_new_key(ClientState())
    keys = [cohort.public[s] for s in SITES[:-1]] + [stranger]
    with pytest.raises(InvalidField, match="'d'") as info:
        cohort.reply("d", _request_of(0, SITES, keys), np.ones(2))
    assert info.value.field == "cohort_keys"
    # one key short: the matrix does not match the cohort
    short = _request_of(0, SITES, [cohort.public[s] for s in SITES[:-1]])
    with pytest.raises(InvalidField) as info:
        cohort.reply("a", short, np.ones(2))
    assert info.value.field == "cohort_keys"


@pytest.mark.parametrize("order", [["b", "a", "c", "d"], ["a", "a", "c", "d"]])
def test_masked_reply_refuses_an_unsorted_or_repeated_cohort(order: list[str]) -> None:
    cohort = Cohort.of(SITES)
    request = _request_of(0, order, [cohort.public[s] for s in order])
    with pytest.raises(InvalidField, match="distinct sites, sorted") as info:
        cohort.reply("a", request, np.ones(2))
    assert info.value.field == "cohort"


def test_masked_reply_never_masks_a_round_twice() -> None:
    cohort = Cohort.of(SITES)
    rounds = {r: _request(cohort.start(r, 2)) for r in (2, 3, 4)}
    first = cohort.reply("a", rounds[3], np.ones(2))
    for used in (3, 2):
        with pytest.raises(InvalidField, match="already masked round 3") as info:
            cohort.reply("a", rounds[used], np.ones(2))
        assert info.value.field == "mask_round"
    later = cohort.reply("a", rounds[4], np.ones(2))
    assert not np.array_equal(first.masked, later.masked)
    # another site's state is its own
    cohort.reply("b", rounds[2], np.ones(2))


@pytest.mark.parametrize(
    "request_",
    [
        SimpleNamespace(),
        SimpleNamespace(mask_round=-1),
        SimpleNamespace(mask_round="1"),
    ],
)
def test_masked_reply_refuses_a_plain_request(request_: object) -> None:
    cohort = Cohort.of(SITES)
    with pytest.raises(InvalidField, match="is missing") as info:
        cohort.reply("a", request_, np.ones(2))
    assert info.value.field == "mask_round"


def test_masked_reply_refuses_a_site_that_lost_its_key() -> None:
    cohort = Cohort.of(SITES)
    request = _request(cohort.start(0, 2))
    with pytest.raises(ValidationError, match="lost its secure-aggregation key"):
        masked_reply(request, cohort.data["a"], ClientState(), np.ones(2))


# -- 7. check_public_keys ------------------------------------------------------------
_LOW_ORDER = {
    "zero": bytes(32),
    "one": bytes([1]) + bytes(31),
    "order 8": bytes.fromhex(
        "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800"
    ),
    "p (zero, not reduced)": (2**255 - 19).to_bytes(32, "little"),
}


@pytest.mark.parametrize(
    ("key", "reason"),
    [
        (np.zeros(31, np.uint8), "must be 32 bytes"),
        (np.zeros(33, np.uint8), "must be 32 bytes"),
        (np.ones((1, 32), np.uint8), "must be 32 bytes"),
        (np.arange(32, dtype=np.int64), "must be 32 bytes"),
        (np.arange(32, dtype=np.uint16), "must be 32 bytes"),
        *[
            (np.frombuffer(raw, np.uint8), "not a (valid|canonical) X25519 public")
            for raw in _LOW_ORDER.values()
        ],
    ],
    ids=lambda v: None if isinstance(v, np.ndarray) else str(v)[:12],
)
def test_check_public_keys_refuses_a_bad_key_by_name(
    key: np.ndarray, reason: str
) -> None:
    good = {s: keep_new_key(ClientState()) for s in ("a", "c")}
    with pytest.raises(InvalidField, match=reason) as info:
        check_public_keys({**good, "b": key})
    assert info.value.field == "public_key"
    assert getattr(info.value, "client", None) == "b"


def test_check_public_keys_refuses_a_shared_key_naming_the_other_site() -> None:
    key = keep_new_key(ClientState())
    other = keep_new_key(ClientState())
    with pytest.raises(InvalidField, match="same as site 'a'") as info:
        check_public_keys({"b": key.copy(), "a": key, "c": other})
    assert info.value.field == "public_key"
    assert getattr(info.value, "client", None) == "b"


def test_check_public_keys_refuses_the_same_key_in_another_encoding() -> None:
    key = keep_new_key(ClientState())
    alias = key.copy()
    alias[31] ^= 0x80
    probe = new_key()
    same = [
        probe.exchange(X25519PublicKey.from_public_bytes(k.tobytes()))
        for k in (key, alias)
    ]
    assert same[0] == same[1]  # the very same public key
    # refused as another spelling of a key (only canonical encodings pass)
    with pytest.raises(InvalidField, match="not a canonical X25519"):
        check_public_keys({"a": key, "b": alias, "c": keep_new_key(ClientState())})


def test_check_public_keys_accepts_distinct_fresh_keys() -> None:
    public = {s: keep_new_key(ClientState()) for s in ("c", "a", "b")}
    keys = check_public_keys(public)
    assert list(keys) == ["a", "b", "c"]
    assert all(keys[s] == public[s].tobytes() for s in public)
    assert len(set(keys.values())) == 3


def test_keep_new_key_keeps_the_private_key_of_its_public_key() -> None:
    state = ClientState()
    public = keep_new_key(state)
    assert public.dtype == np.uint8
    assert public.shape == (32,)
    kept = state.get(KEY_STATE, SiteKey)
    assert kept is not None
    assert kept.last_round == -1
    private = X25519PrivateKey.from_private_bytes(kept.private_key.tobytes())
    assert private.public_key().public_bytes_raw() == public.tobytes()
    assert not np.array_equal(keep_new_key(ClientState()), public)


# -- 8. round keys and masks ---------------------------------------------------------
def test_round_key_is_symmetric_and_bound_to_pair_and_round() -> None:
    cohort = Cohort.of(["a", "b", "c"])
    a, b, c = (cohort.private(s) for s in "abc")
    ka, kb, kc = (cohort.keys[s] for s in "abc")
    ab = round_key(a, kb, ("a", "b"), 7)
    assert len(ab) == 32
    assert ab == round_key(b, ka, ("b", "a"), 7)
    assert ab == round_key(a, kb, ("b", "a"), 7)
    assert ab != round_key(a, kb, ("a", "b"), 8)
    assert ab != round_key(a, kb, ("a", "x"), 7)  # the ids are bound too
    assert ab != round_key(a, kc, ("a", "c"), 7)
    assert round_key(b, kc, ("b", "c"), 7) == round_key(c, kb, ("c", "b"), 7)
    assert (
        len({ab, round_key(a, kc, ("a", "c"), 7), round_key(b, kc, ("b", "c"), 7)}) == 3
    )


def test_mask_words_are_a_deterministic_stream_of_the_key() -> None:
    key = bytes(range(32))
    other = bytes(range(1, 33))
    words = mask_words(key, 100)
    assert words.dtype == np.uint64
    assert words.shape == (100,)
    assert np.array_equal(words, mask_words(key, 100))
    assert np.array_equal(mask_words(key, 10), words[:10])
    assert mask_words(key, 0).shape == (0,)
    assert not np.any(words == mask_words(other, 100))
    assert len(np.unique(words)) == 100


# -- 9. the server's checks ----------------------------------------------------------
def test_masked_round_refuses_fewer_than_min_cohort_sites() -> None:
    cohort = Cohort.of(["a", "b"])
    with pytest.raises(ValidationError, match="at least 3 sites"):
        MaskedRound.start(0, ["a", "b"], cohort.keys, 4)


def test_masked_round_sorts_its_cohort() -> None:
    cohort = Cohort.of(["a", "b", "c"])
    masked_round = MaskedRound.start(0, ["c", "a", "b"], cohort.keys, 4)
    assert masked_round.cohort == ("a", "b", "c")
    fields = masked_round.fields()
    assert list(fields["cohort"]) == ["a", "b", "c"]  # type: ignore[call-overload]
    assert np.array_equal(
        fields["cohort_keys"], np.stack([cohort.public[s] for s in "abc"])
    )


@pytest.mark.parametrize(
    "masked",
    [
        np.zeros(5, np.uint64),
        np.zeros(3, np.uint64),
        np.zeros(4, np.float64),
        np.zeros(4, np.uint32),
        np.zeros((4, 1), np.uint64),
    ],
    ids=["long", "short", "float", "uint32", "2-D"],
)
def test_masked_spec_refuses_a_wrong_reply(masked: np.ndarray) -> None:
    with pytest.raises(InvalidField) as info:
        check_reply(masked_spec(4, sites=0), MaskedReply(masked))
    assert info.value.field == "masked"


def test_masked_spec_accepts_a_masked_reply_and_the_codec_carries_it() -> None:
    cohort = Cohort.of(SITES)
    reply = cohort.reply("a", _request(cohort.start(0, 4)), np.ones(4))
    check_reply(masked_spec(4, sites=len(SITES)), reply)
    back = decode(encode(Envelope("reply", 1, "a", reply.kind, reply))).payload
    assert isinstance(back, MaskedReply)
    check_reply(masked_spec(4, sites=len(SITES)), back)
    assert np.array_equal(back.masked, reply.masked)
    assert np.array_equal(back.commitments, reply.commitments)


# -- wide fixed point: two words a value ---------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_wide_fixed_point_sums_large_values_to_the_same_resolution(seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = {s: rng.normal(size=50) * 1e12 for s in FIVE}
    values["a"][:3] = [0.0, -1.0, 2.0**40 + 0.5]
    words = {s: to_fixed(v, 5, "moments", wide=True) for s, v in values.items()}
    assert all(w.shape == (100,) for w in words.values())
    total = np.zeros(100, np.uint64)
    for w in words.values():
        total += w
    want = sum(np.floor(v) + np.rint((v - np.floor(v)) * 2**32) / 2**32
               for v in values.values())  # fmt: skip
    np.testing.assert_allclose(from_fixed(total, wide=True), want, rtol=1e-14)
    back = from_fixed(to_fixed(values["a"], 5, "moments", wide=True), wide=True)
    assert (
        np.max(np.abs(back - values["a"]) / np.maximum(1, np.abs(values["a"]))) < 1e-15
    )
    assert back[2] == 2.0**40 + 0.5  # exact where the value is a multiple of 2^-32


def test_wide_fixed_point_refuses_only_beyond_two_to_the_62_over_k() -> None:
    to_fixed([2.0**62 / 4 - 2.0**20], 4, "moments", wide=True)
    with pytest.raises(ValidationError, match="fixed-point"):
        to_fixed([2.0**62 / 4], 4, "moments", wide=True)
    with pytest.raises(ValidationError, match="fixed-point"):
        to_fixed([1e10], 4, "moments")  # one word: 2^30 / 4


def test_a_wide_masked_round_sums_and_recovers_a_dropout() -> None:
    cohort = Cohort.of(FIVE)
    masked_round = MaskedRound.start(
        0, FIVE, {s: cohort.keys[s] for s in FIVE}, 6, wide=True
    )
    request = _request(masked_round)
    values = {s: np.arange(6.0) * 1e13 + i + 0.25 for i, s in enumerate(FIVE)}
    replies = {
        s: masked_reply(request, cohort.data[s], cohort.states[s], values[s], wide=True)
        for s in FIVE
        if s != "e"
    }
    assert all(r.masked.shape == (12,) for r in replies.values())
    ask = masked_round.reveal_request(["e"])
    masked_round.keep_reveals(
        ["e"], {s: reveal(ask, cohort.data[s], cohort.states[s]) for s in replies}
    )
    want = sum(values[s] for s in replies)
    assert np.array_equal(masked_round.values(replies), want)
