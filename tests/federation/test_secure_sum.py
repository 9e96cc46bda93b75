"""The server's side of secure aggregation: commitments, reveals, checked sums.

Every masked reply carries its site's commitments (SHA-256) to its round keys
of this mask round and the next; the server checks that both sites of a pair
commit to the same keys, that a site keeps the commitment both sent the round
before, that a survivor's revealed key matches its commitment, and runs the
strategy's bounds on the sum (docs/security.md, "Secure aggregation").
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fedtrees.exceptions import MaskedSumError
from fedtrees.federation import (
    InvalidField,
    MaskedReply,
    MaskedRounds,
    from_fixed,
)
from fedtrees.federation._secure import commitment, reveal, round_key
from tests.federation.test_secure import FIVE, SITES, Cohort, _request


def _replies(cohort: Cohort, request: object, length: int) -> dict[str, MaskedReply]:
    return {s: cohort.reply(s, request, np.ones(length)) for s in cohort.data}


# -- what a site commits to ----------------------------------------------------------
def test_both_sites_of_every_pair_commit_to_their_round_keys_of_now_and_next() -> None:
    cohort = Cohort.of(SITES)
    replies = _replies(cohort, _request(cohort.start(6, 3)), 3)
    for i, a in enumerate(SITES):
        table = replies[a].commitments
        assert table.shape == (2, len(SITES), 32)
        assert table.dtype == np.uint8
        assert not table[:, i].any()  # its own entries are zeros
        for j, b in enumerate(SITES):
            if a == b:
                continue
            assert np.array_equal(table[:, j], replies[b].commitments[:, i])
            for row, number in enumerate((6, 7)):
                key = round_key(cohort.private(a), cohort.keys[b], (a, b), number)
                assert table[row, j].tobytes() == commitment(key)


def test_a_commitment_binds_the_key_and_hides_it() -> None:
    key = bytes(range(32))
    assert commitment(key) != commitment(bytes(range(1, 33)))
    assert commitment(key) != key  # the digest, not the key
    assert len({commitment(bytes([k]) + bytes(31)) for k in range(256)}) == 256


# -- the server's checks -------------------------------------------------------------
def test_rounds_keep_each_pairs_agreed_commitment_for_the_next_round() -> None:
    cohort = Cohort.of(SITES)
    rounds = MaskedRounds(cohort.keys)
    first = rounds.start(SITES, 2)
    assert first.expected == {}
    rounds.values(_replies(cohort, _request(first), 2))
    second = rounds.start(SITES, 2)
    assert sorted(second.expected) == [
        (a, b) for i, a in enumerate(SITES) for b in SITES[i + 1 :]
    ]
    replies = _replies(cohort, _request(second), 2)
    for site, reply in replies.items():
        second.check_reply(site, reply)  # honest: each keeps its commitment
    assert np.array_equal(rounds.values(replies), np.full(2, 4.0))


def test_a_site_that_changes_its_commitment_is_refused_by_name() -> None:
    cohort = Cohort.of(SITES)
    rounds = MaskedRounds(cohort.keys)
    rounds.values(_replies(cohort, _request(rounds.start(SITES, 2)), 2))
    second = rounds.start(SITES, 2)
    honest = _replies(cohort, _request(second), 2)["b"]
    table = honest.commitments.copy()
    table[0, SITES.index("d"), 5] ^= 0x80
    with pytest.raises(
        InvalidField,
        match=r"commitments: to its round key with site 'd' differ from the one both "
        r"sites committed to in mask round 0",
    ):
        second.check_reply("b", dataclasses.replace(honest, commitments=table))


def test_a_pair_whose_commitments_differ_fails_the_sum_naming_both() -> None:
    cohort = Cohort.of(SITES)
    masked_round = cohort.start(0, 2)
    masked_round.opened(4, "doc.level")
    replies = _replies(cohort, _request(masked_round), 2)
    table = replies["c"].commitments.copy()
    table[1, SITES.index("a"), 0] ^= 1  # the next round's key
    replies["c"] = dataclasses.replace(replies["c"], commitments=table)
    with pytest.raises(MaskedSumError, match="field 'commitments'") as info:
        masked_round.total(replies)
    assert info.value.sites == ("a", "c")
    assert (info.value.round, info.value.kind) == (4, "doc.level")
    assert "of sites 'a' and 'c' to their pair's key of mask round 1 differ" in str(
        info.value
    )


@pytest.mark.parametrize("agreed", [False, True], ids=["first", "second"])
def test_a_revealed_key_must_match_the_survivors_commitment(agreed: bool) -> None:
    cohort = Cohort.of(FIVE)
    rounds = MaskedRounds(cohort.keys)
    if agreed:  # a round before, where both sites of every pair committed
        rounds.values(_replies(cohort, _request(rounds.start(FIVE, 3)), 3))
    masked_round = rounds.start(FIVE, 3)
    replies = _replies(cohort, _request(masked_round), 3)
    del replies["e"]
    ask = masked_round.reveal_request(["e"])
    answer = reveal(ask, cohort.data["a"], cohort.states["a"])
    masked_round.check_reveal("a", ["e"], answer, replies["a"])  # honest
    wrong = dataclasses.replace(answer, round_keys=answer.round_keys ^ np.uint8(1))
    whose = (
        r"its vector \(the one both sites sent in mask round 0\)$"
        if agreed
        else "its vector$"
    )
    with pytest.raises(InvalidField, match=rf"round_keys: .*site 'e' .*{whose}"):
        masked_round.check_reveal("a", ["e"], wrong, replies["a"])
    # Another round's key of the same pair is refused too.
    other = round_key(cohort.private("a"), cohort.keys["e"], ("a", "e"), 99)
    stale = dataclasses.replace(answer, round_keys=np.frombuffer(other, np.uint8)[None])
    with pytest.raises(InvalidField, match="round_keys"):
        masked_round.check_reveal("a", ["e"], stale, replies["a"])


def test_the_strategys_check_turns_an_impossible_sum_into_a_masked_sum_error() -> None:
    cohort = Cohort.of(SITES)
    rounds = MaskedRounds(cohort.keys)
    masked_round = rounds.start(SITES, 2)
    masked_round.opened(7, "doc.level")
    replies = _replies(cohort, _request(masked_round), 2)
    seen: list[tuple[np.ndarray, tuple[str, ...]]] = []

    def check(total: np.ndarray, sites: tuple[str, ...]) -> None:
        seen.append((total.copy(), sites))
        raise InvalidField("node_stats", "holds a negative weighted count")

    with pytest.raises(MaskedSumError, match="Round 7") as info:
        rounds.values(replies, check)
    assert np.array_equal(seen[0][0], np.full(2, 4.0))
    assert seen[0][1] == tuple(SITES)
    assert str(info.value) == (
        "Round 7, 'doc.level', the masked sum of sites ['a', 'b', 'c', 'd']: field "
        "'node_stats' holds a negative weighted count. A masked sum cannot name the "
        "site that sent a wrong vector or key: one of these did "
        "(docs/security.md, 'Secure aggregation')."
    )


def test_the_sum_is_unchanged_by_the_commitments() -> None:
    cohort = Cohort.of(FIVE)
    masked_round = cohort.start(3, 5)
    values = {s: np.arange(5.0) + k for k, s in enumerate(FIVE)}
    request = _request(masked_round)
    replies = {s: cohort.reply(s, request, values[s]) for s in FIVE}
    total = from_fixed(masked_round.total(replies))
    assert np.array_equal(total, sum(values.values(), np.zeros(5)))
