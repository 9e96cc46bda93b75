"""Secure aggregation, the server's side: a run's masked rounds, checked.

The protocol (keys, masks, fixed point, commitments) is
:mod:`fedtrees.federation._secure`; this module is what the server does with
it. A strategy starts a :class:`MaskedRound` for every masked round
(:meth:`MaskedRounds.start`) and reads the round's sum back
(:meth:`MaskedRounds.values`); the round loop runs the round, asks the
survivors for their round keys with a site that did not answer, and checks
what it can (docs/security.md, "Secure aggregation"):

- **Commitments.** Every masked reply carries the site's commitments to its
  round keys of this mask round and the next. Both sites of every pair that
  answered must commit to the same two keys: they derive them from the public
  keys agreed at the start, so a pair that disagrees would not cancel its
  masks, and the round fails naming both (:meth:`MaskedRound.total`). From the
  second masked round on, a site's commitment for this round must also equal
  the one both sites of the pair sent the round before: a site that changed
  its key is refused by name (:meth:`MaskedRound.check_reply`).
- **Reveals.** A survivor's round key with a dropped site must match the
  survivor's commitment of this round — and so, from the second masked round
  on, the dropped site's commitment of the round before as well — or the
  survivor is refused by name before its key touches the sum
  (:meth:`MaskedRound.check_reveal`).
- **The sum.** The strategy's bounds on the unmasked sum (counts
  non-negative and within the rows the sites declared, hessians non-negative,
  bins adding up to their node, ...): a sum that breaks one is refused with a
  :class:`~fedtrees.exceptions.MaskedSumError` naming the round, its kind and
  the sites that took part (:meth:`MaskedRounds.values`) — a sum cannot name
  the site that sent a wrong vector.

The server keeps no site's vector.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from fedtrees._typing import FloatArray
from fedtrees.exceptions import LocalProtocolError, MaskedSumError, ValidationError
from fedtrees.federation._checks import InvalidField, as_reply
from fedtrees.federation._payload import Payload
from fedtrees.federation._secure import (
    KEY_BYTES,
    MIN_COHORT,
    MaskedReply,
    RevealReply,
    RevealRequest,
    commitment,
    from_fixed,
    mask_words,
    words_of,
)

__all__ = ["MaskedRound", "MaskedRounds", "SumCheck"]

Pair = tuple[str, str]
SumCheck = Callable[[FloatArray, tuple[str, ...]], None]
"""A strategy's check of a masked round's sum: ``(values, sites)``; raises
:class:`~fedtrees.federation.InvalidField` when the sum is impossible."""


def _pair(a: str, b: str) -> Pair:
    return (a, b) if a < b else (b, a)


@dataclass(eq=False)
class MaskedRound:
    """One masked round on the server: its cohort, its length, what was revealed.

    The strategy builds it with the round's requests (:meth:`fields` go into
    each request) and sets it on the round's plan; the round loop names its
    round (:meth:`opened`), checks every masked reply's commitments
    (:meth:`check_reply`), asks the survivors for their round keys with any
    site of the cohort that did not answer (:meth:`reveal_request`), checks
    and keeps them (:meth:`check_reveal`, :meth:`keep_reveals`); the strategy
    reads the sum with :meth:`total`. It keeps no site's vector.
    """

    mask_round: int
    cohort: tuple[str, ...]
    keys: Mapping[str, bytes]
    length: int
    """Words of the masked vector (:func:`words_of`)."""
    wide: bool = False
    """Two words per value (regression statistics)."""
    revealed: dict[Pair, bytes] = field(default_factory=dict)
    expected: Mapping[Pair, bytes] = field(default_factory=dict)
    """Each pair's commitment to its key of this mask round, as both of its
    sites sent it the round before (empty in the first masked round)."""
    round: int = -1
    """The round loop's round (set by :meth:`opened`; -1 outside a run)."""
    kind: str = ""
    """The round's request kind (set by :meth:`opened`)."""
    summed: tuple[str, ...] = ()
    """The sites whose vectors the last :meth:`total` added."""

    @classmethod
    def start(
        cls, mask_round: int, cohort: Sequence[str], keys: Mapping[str, bytes],
        length: int, *, wide: bool = False,
        expected: Mapping[Pair, bytes] | None = None,
    ) -> MaskedRound:  # fmt: skip
        """Start a masked round of the sorted ``cohort`` (refused below MIN_COHORT).

        Raises
        ------
        ValidationError
            Fewer than :data:`MIN_COHORT` sites.
        """
        sites = tuple(sorted(cohort))
        if len(sites) < MIN_COHORT:
            raise ValidationError(
                f"Secure aggregation needs at least {MIN_COHORT} sites in every "
                f"masked round; {len(sites)} remain ({list(sites)}). A sum of two "
                "would reveal each site's statistics to the other."
            )
        keys_of = {c: keys[c] for c in sites}
        known = {} if expected is None else dict(expected)
        return cls(
            mask_round, sites, keys_of, words_of(length, wide), wide, expected=known
        )

    def opened(self, round_: int, kind: str) -> None:
        """Note the round loop's round and request kind (for the errors)."""
        self.round, self.kind = round_, kind

    def fields(self) -> dict[str, Any]:
        """Return the request fields of this round's masking."""
        return {
            "mask_round": self.mask_round,
            "cohort": np.asarray(self.cohort, dtype=str),
            "cohort_keys": self._key_matrix(),
        }

    def _key_matrix(self) -> npt.NDArray[np.uint8]:
        return np.frombuffer(
            b"".join(self.keys[c] for c in self.cohort), dtype=np.uint8
        ).reshape(len(self.cohort), KEY_BYTES)

    def dropped(self, answered: Sequence[str]) -> list[str]:
        """Return the cohort's sites that did not answer."""
        present = set(answered)
        return [c for c in self.cohort if c not in present]

    def reveal_request(self, dropped: Sequence[str]) -> RevealRequest:
        """Ask a survivor for its round keys with the ``dropped`` sites."""
        return RevealRequest(
            self.mask_round,
            np.asarray(self.cohort, dtype=str),
            self._key_matrix(),
            np.asarray(list(dropped), dtype=str),
        )

    # -- the checks ----------------------------------------------------------------
    def check_reply(self, client: str, reply: Payload) -> None:
        """Refuse a site whose commitment differs from its pair's of the round before.

        Raises
        ------
        InvalidField
            Field ``commitments``: a pair's commitment to this round's key is
            not the one both of its sites sent in the previous mask round.
        """
        if not isinstance(reply, MaskedReply) or client not in self.cohort:
            return  # the reply's spec refuses other kinds; total() refuses strangers
        mine = np.asarray(reply.commitments)[0]
        for k, peer in enumerate(self.cohort):
            want = self.expected.get(_pair(client, peer))
            if peer != client and want is not None and mine[k].tobytes() != want:
                raise InvalidField(
                    "commitments",
                    f"to its round key with site {peer!r} differ from the one both "
                    f"sites committed to in mask round {self.mask_round - 1}: it "
                    "no longer masks with the key agreed from their public keys",
                )

    def check_reveal(
        self, survivor: str, dropped: Sequence[str], reveal: Payload, masked: Payload
    ) -> None:
        """Refuse a revealed round key that does not match the survivor's commitment.

        ``masked`` is the survivor's masked reply of this round; its commitments
        were checked against both sites' of the round before
        (:meth:`check_reply`) where there was one.

        Raises
        ------
        InvalidField
            Field ``round_keys``, naming the dropped site.
        """
        keys = np.asarray(as_reply(reveal, RevealReply).round_keys, np.uint8)
        committed = np.asarray(as_reply(masked, MaskedReply).commitments)[0]
        for i, d in enumerate(dropped):
            at = self.cohort.index(d)
            if commitment(keys[i].tobytes()) != committed[at].tobytes():
                both = (
                    f" (the one both sites sent in mask round {self.mask_round - 1})"
                    if _pair(survivor, d) in self.expected
                    else ""
                )
                raise InvalidField(
                    "round_keys",
                    f"holds a round key with the dropped site {d!r} that does not "
                    f"match the commitment to it that site {survivor!r} sent with "
                    f"its vector{both}",
                )

    def keep_reveals(
        self, dropped: Sequence[str], replies: Mapping[str, RevealReply]
    ) -> None:
        """Keep each survivor's round keys with the dropped sites."""
        for survivor, reply in replies.items():
            for i, d in enumerate(dropped):
                self.revealed[(survivor, d)] = np.asarray(
                    reply.round_keys[i], dtype=np.uint8
                ).tobytes()

    def _check_pairs(self, replies: Mapping[str, MaskedReply]) -> None:
        """Refuse the round when two answering sites commit to different pair keys."""
        sites = [c for c in self.cohort if c in replies]
        if len(sites) < 2:
            return
        cols = [self.cohort.index(c) for c in sites]
        table = np.stack([np.asarray(replies[c].commitments)[:, cols] for c in sites])
        same = np.all(table == table.transpose(2, 1, 0, 3), axis=-1)  # (n, 2, n)
        bad = np.argwhere(~same)
        if bad.size:
            a, row, b = (int(v) for v in bad[0])
            first, second = sorted((sites[a], sites[b]))
            raise MaskedSumError(
                self.round,
                self.kind,
                (first, second),
                "commitments",
                f"of sites {first!r} and {second!r} to their pair's key of mask "
                f"round {self.mask_round + row} differ: one of them does not hold "
                "the key agreed from their public keys, so their masks would not "
                "cancel",
            )

    def next_commitments(self, replies: Mapping[str, MaskedReply]) -> dict[Pair, bytes]:
        """Return every answering pair's agreed commitment to its next round's key."""
        sites = [c for c in self.cohort if c in replies]
        at = {c: k for k, c in enumerate(self.cohort)}
        out: dict[Pair, bytes] = {}
        for a, i in enumerate(sites):
            row = np.asarray(replies[i].commitments)[1]
            for j in sites[a + 1 :]:
                out[(i, j)] = row[at[j]].tobytes()
        return out

    def refused(self, exc: InvalidField) -> MaskedSumError:
        """Return the error of an impossible sum (the strategy's check failed)."""
        return MaskedSumError(
            self.round, self.kind, self.summed or self.cohort, exc.field, exc.reason
        )

    # -- the sum -------------------------------------------------------------------
    def values(self, replies: Mapping[str, MaskedReply]) -> FloatArray:
        """Return the answering sites' sum of values (:meth:`total`, read back)."""
        return from_fixed(self.total(replies), wide=self.wide)

    def total(self, replies: Mapping[str, MaskedReply]) -> npt.NDArray[np.uint64]:
        """Return the answering sites' sum (mod 2^64), the dropped masks removed.

        Raises
        ------
        ValidationError
            Fewer than :data:`MIN_COHORT` answered, or a survivor's round key
            with a dropped site is missing (the round loop asks for them).
        MaskedSumError
            Two answering sites committed to different keys for their pair.
        """
        answered = sorted(replies)
        strangers = sorted(set(answered) - set(self.cohort))
        if strangers:
            raise ValidationError(
                f"Secure aggregation: {strangers} answered masked round "
                f"{self.mask_round} outside its cohort."
            )
        if len(answered) < MIN_COHORT:
            raise ValidationError(
                f"Secure aggregation: {len(answered)} sites answered masked round "
                f"{self.mask_round}; a masked sum needs at least {MIN_COHORT}."
            )
        self.summed = tuple(answered)
        self._check_pairs(replies)
        total = np.zeros(self.length, dtype=np.uint64)
        for client in answered:
            total += np.asarray(replies[client].masked, dtype=np.uint64)
        dropped = self.dropped(answered)
        for survivor in answered:
            for d in dropped:
                key = self.revealed.get((survivor, d))
                if key is None:
                    raise ValidationError(
                        f"Secure aggregation: site {survivor!r} did not reveal its "
                        f"round key with the dropped site {d!r}."
                    )
                mask = mask_words(key, self.length)
                if survivor < d:
                    total -= mask
                else:
                    total += mask
        return total


class MaskedRounds:
    """A run's masked rounds on the server: each numbered once, the current one kept.

    A strategy starts one per masked round (:meth:`start`) and reads the
    current round's sum from its replies (:meth:`values`), which also keeps
    the pairs' agreed commitments to the next round's keys.

    Examples
    --------
    >>> rounds = MaskedRounds({})
    >>> rounds.values({})
    Traceback (most recent call last):
    ...
    fedtrees.exceptions.LocalProtocolError: A masked reply to a plain round.
    """

    def __init__(self, keys: Mapping[str, bytes]) -> None:
        self.keys = keys
        self.started = 0
        self.current: MaskedRound | None = None
        self._agreed: dict[Pair, bytes] = {}
        self._agreed_round = -1

    def start(
        self, cohort: Sequence[str], length: int, *, wide: bool = False
    ) -> MaskedRound:
        """Start the next masked round of ``cohort`` (:meth:`MaskedRound.start`)."""
        expected = self._agreed if self._agreed_round == self.started else {}
        self.current = MaskedRound.start(
            self.started, cohort, self.keys, length, wide=wide, expected=expected
        )
        self.started += 1
        return self.current

    def plain(self) -> None:
        """Note that the current round is not masked."""
        self.current = None

    def values(
        self, replies: Mapping[str, Payload], check: SumCheck | None = None
    ) -> FloatArray:
        """Return the current round's sum of values, read from the masked replies.

        ``check(values, sites)``: the strategy's bounds on the sum (module
        docstring); an :class:`~fedtrees.federation.InvalidField` it raises
        becomes a :class:`~fedtrees.exceptions.MaskedSumError`.

        Raises
        ------
        LocalProtocolError
            If the current round is not masked.
        InvalidField
            If a reply is not a masked vector.
        MaskedSumError
            The sum breaks ``check``, or two sites' commitments disagree.
        """
        current = self.current
        if current is None:
            raise LocalProtocolError("A masked reply to a plain round.")
        got = {c: as_reply(r, MaskedReply) for c, r in replies.items()}
        summed = current.values(got)
        if check is not None:
            try:
                check(summed, current.summed)
            except InvalidField as exc:
                raise current.refused(exc) from exc
        self._agreed = current.next_commitments(got)
        self._agreed_round = current.mask_round + 1
        return summed
