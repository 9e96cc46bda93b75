"""Secure aggregation: the server learns the sum of the sites' vectors, nothing else.

Pairwise masking over Z_2^64 (Bonawitz et al. 2017, without double masking;
docs/security.md, "Secure aggregation"), step by step:

1. **Keys, at the agreement** (round 0, ``run(..., secure=True)``): every site
   draws a fresh X25519 key pair (:func:`new_key`), keeps the private key in
   its per-run state and sends the public key (:func:`check_public_keys`
   refuses one that is not a valid X25519 public key, and two sites with the
   same key).
2. **A masked round** (:class:`MaskedRound`): the request names the round's
   ``mask_round`` (never used twice in a run), its cohort (the sites asked,
   sorted) and their public keys. Each pair (i, j) of the cohort agrees a
   shared secret; from it and the mask round, HKDF derives a round key and
   ChaCha20's key stream expands it into a mask ``m_ij`` of the vector's
   length (:func:`round_key`, :func:`mask_words`). Site i sends
   ``y_i = x_i + Σ_{j>i} m_ij − Σ_{j<i} m_ji (mod 2^64)``
   (:func:`masked_vector`); the masks cancel in the sum.
3. **Fixed point** (:func:`to_fixed`, :func:`from_fixed`): a vector of float
   statistics travels as integers in units of ``2^-32``. Whole counts are
   exact; any other value is rounded to the nearest unit (error at most
   ``2^-33`` per site and entry). A site refuses a value whose magnitude,
   times the cohort size, could overflow the sum (:data:`FIXED_LIMIT`): in
   one word per value, ``|value| < 2^30 / K`` for K sites, enough for counts
   and classification gradients. **Decision**: regression statistics (moments
   Σy, Σy², squared-error gradients) travel *wide*, two words per value — the
   whole part, and the fraction's 32 bits in a word of its own whose sum
   cannot carry out of 64 bits — so ``|value| < 2^62 / K`` at the same
   resolution, for twice the bytes.
4. **Dropout** (:meth:`MaskedRound.reveal_request`, handler
   ``federation.reveal``): when a site of the cohort does not answer, every
   survivor reveals its round keys with the dropped sites — never its own
   vector, never a key of another round — and the server removes those
   masks (:meth:`MaskedRound.total`). **Decision**: no double masking, so a
   server that lies about a dropout can unmask that site (the semi-honest
   model, docs/security.md). A masked sum needs at least :data:`MIN_COHORT`
   sites: of two, each would learn the other's vector from the sum.

Keys are drawn by the operating system's generator, never from
``random_state``: a seeded key would let anyone who knows the seed unmask.
The model does not depend on them; the masked messages differ from run to run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
import numpy.typing as npt
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import (
    X25519PrivateKey,
    X25519PublicKey,
)
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from fedtrees._typing import FloatArray
from fedtrees.exceptions import LocalProtocolError, ValidationError
from fedtrees.federation._checks import InvalidField, as_reply
from fedtrees.federation._client import handler
from fedtrees.federation._data import ClientData
from fedtrees.federation._payload import Field, Payload, ReplySpec, payload
from fedtrees.federation._state import ClientState

__all__ = [
    "FIXED_LIMIT",
    "FRACTION_BITS",
    "KEY_BYTES",
    "MIN_COHORT",
    "MaskFields",
    "MaskedReply",
    "MaskedRound",
    "MaskedRounds",
    "PublicKeyError",
    "RevealReply",
    "RevealRequest",
    "SiteKey",
    "check_cohort",
    "check_public_keys",
    "from_fixed",
    "keep_new_key",
    "mask_words",
    "masked_reply",
    "masked_spec",
    "masked_vector",
    "no_cohort",
    "no_cohort_keys",
    "require_key",
    "round_key",
    "to_fixed",
    "words_of",
]

KEY_BYTES: Final = 32
"""Length of an X25519 key and of a round key, in bytes."""
MIN_COHORT: Final = 3
"""Fewest sites in a masked sum (of two, each learns the other's vector)."""
FRACTION_BITS: Final = 32
"""Fixed point: a statistic travels in units of ``2^-32``."""
FIXED_LIMIT: Final = 2.0**62
"""Largest sum magnitude in units: a site's entries stay below this over the cohort
size, so the sum stays below ``2^62 < 2^63`` (no wrap when it is read as signed)."""
KEY_STATE: Final = "federation.secure_key"
SECRETS_MEMO: Final = "federation.secure_secrets"
"""The memo of a site's shared secrets: its private key -> peer's key -> secret."""

_FIELD_PRIME: Final = 2**255 - 19  # X25519's field: a canonical u is below it
_NONCE: Final = bytes(16)  # each round key is used for one stream only
_STREAM_SLACK: Final = 64  # update_into wants room for a block beyond the data
_MOST_SHARED_ZEROS: Final = 1 << 26  # 64 MiB of zeros kept to encrypt
_ZEROS: list[bytes] = [b""]
_WORD: Final = np.dtype("<u8")


# -- fixed point -----------------------------------------------------------------------
def to_fixed(
    values: npt.ArrayLike, cohort: int, what: str, *, wide: bool = False
) -> npt.NDArray[np.uint64]:
    """Return ``values`` in units of ``2^-32``, as words of Z_2^64 (two's complement).

    ``wide``: two words per value (module docstring): first every value's
    whole part ``floor(value)``, then every value's fraction in units of
    ``2^-32`` (at most ``2^32``).

    Raises
    ------
    ValidationError
        A value that is not finite, or of a magnitude that could overflow the
        sum of ``cohort`` sites, naming ``what``.

    Examples
    --------
    >>> words = to_fixed([3.0, -0.5], 3, "counts")
    >>> from_fixed(words).tolist()
    [3.0, -0.5]
    >>> from_fixed(to_fixed([1e15, -2.25], 3, "moments", wide=True), wide=True).tolist()
    [1000000000000000.0, -2.25]
    """
    x = np.asarray(values, dtype=np.float64).ravel()
    limit = FIXED_LIMIT / max(cohort, 1)
    largest = limit if wide else np.ldexp(limit, -FRACTION_BITS)
    bound = largest - 1.0 if wide else largest  # wide: the whole part, floor(x)
    if not np.all(np.isfinite(x)) or np.any(np.abs(x) >= bound):
        raise ValidationError(
            f"Secure aggregation: {what} holds a value beyond the fixed-point range "
            f"(|value| < {largest:.4g} with {cohort} sites, in units of "
            f"2^-{FRACTION_BITS}); scale the target or the weights down."
        )
    if not wide:
        return np.rint(np.ldexp(x, FRACTION_BITS)).astype(np.int64).view(np.uint64)
    whole = np.floor(x)
    fraction = np.rint(np.ldexp(x - whole, FRACTION_BITS))  # exact: 0 <= x - whole < 1
    return np.concatenate([
        whole.astype(np.int64).view(np.uint64), fraction.astype(np.uint64)
    ])  # fmt: skip


def from_fixed(words: npt.NDArray[np.uint64], *, wide: bool = False) -> FloatArray:
    """Read a (summed) fixed-point vector back as float64 (exact for whole counts)."""
    w = np.ascontiguousarray(words, dtype=np.uint64)
    if not wide:
        out: FloatArray = np.ldexp(w.view(np.int64).astype(np.float64), -FRACTION_BITS)
        return out
    half = w.shape[0] // 2
    whole = w[:half].view(np.int64).astype(np.float64)
    wide_out: FloatArray = whole + np.ldexp(w[half:].astype(np.float64), -FRACTION_BITS)
    return wide_out


def words_of(length: int, wide: bool) -> int:
    """Return the words of a vector of ``length`` values (two each when wide)."""
    return 2 * length if wide else length


# -- keys and masks --------------------------------------------------------------------
@payload("federation.secure_key")
class SiteKey(Payload):
    """A site's private key of the run (kept in its per-run state, never sent)."""

    private_key: np.ndarray
    last_round: int = -1
    """The last mask round this key masked: a round is never masked twice."""


def new_key() -> X25519PrivateKey:
    """Draw a fresh key pair (the operating system's generator)."""
    return X25519PrivateKey.generate()


def keep_new_key(state: ClientState) -> npt.NDArray[np.uint8]:
    """Draw a key pair, keep the private key for the run; return the public key."""
    private = new_key()
    raw = private.private_bytes_raw()
    state.put(KEY_STATE, SiteKey(np.frombuffer(raw, dtype=np.uint8).copy()))
    public = private.public_key().public_bytes_raw()
    return np.frombuffer(public, dtype=np.uint8).copy()


def check_cohort(clients: Sequence[str], owner: str) -> None:
    """Refuse a secure run of fewer than :data:`MIN_COHORT` clients.

    Raises
    ------
    ValidationError
        Naming the clients and ``secure_aggregation``.
    """
    if len(clients) < MIN_COHORT:
        raise ValidationError(
            f"{owner}: secure_aggregation=True needs at least {MIN_COHORT} sites; "
            f"this federation has {len(clients)} ({list(clients)}). The sum of two "
            "sites' statistics would reveal each one's to the other."
        )


def check_public_keys(keys: Mapping[str, npt.ArrayLike]) -> dict[str, bytes]:
    """Return each site's public key as bytes, refusing a bad one by name.

    A key must be 32 bytes, the canonical encoding of a u-coordinate (below
    ``2^255 - 19``: X25519 ignores the top bit and reduces, so another spelling
    of a key would pass for a different key), that X25519 accepts and that do
    not give an all-zero shared secret (a low-order point, which would make every mask
    with that site public); two sites may not share a key.

    Raises
    ------
    PublicKeyError
        Field ``public_key``, naming the site (and the other site for a
        shared key); ``exc.client`` is the site whose key is refused.
    """
    out: dict[str, bytes] = {}
    seen: dict[bytes, str] = {}
    probe = new_key()
    for client, value in sorted(keys.items()):
        raw = np.asarray(value)
        if raw.dtype != np.uint8 or raw.shape != (KEY_BYTES,):
            raise PublicKeyError(client, f"must be {KEY_BYTES} bytes (uint8)")
        key = raw.tobytes()
        u = int.from_bytes(key, "little")
        if u >= _FIELD_PRIME:  # the top bit set, or u >= p: another spelling
            raise PublicKeyError(client, "is not a canonical X25519 public key (u < p)")
        try:
            probe.exchange(X25519PublicKey.from_public_bytes(key))
        except ValueError as exc:
            raise PublicKeyError(client, "is not a valid X25519 public key") from exc
        if key in seen:
            raise PublicKeyError(client, f"is the same as site {seen[key]!r}'s")
        seen[key] = client
        out[client] = key
    return out


class PublicKeyError(InvalidField):
    """A site's public key refused (:func:`check_public_keys`): ``client`` names it."""

    def __init__(self, client: str, reason: str) -> None:
        super().__init__("public_key", reason)
        self.client = client


def round_key(
    private: X25519PrivateKey, peer: bytes, pair: tuple[str, str], mask_round: int
) -> bytes:
    """Return the round key of a pair (its ids sorted) for one mask round.

    HKDF-SHA256 of the pair's X25519 shared secret, bound to both ids and the
    round: a revealed round key opens that pair's mask of that round only.
    """
    return derive_round_key(shared_secret(private, peer), pair, mask_round)


def shared_secret(private: X25519PrivateKey, peer: bytes) -> bytes:
    """Return the X25519 shared secret of this site and a peer's public key."""
    return private.exchange(X25519PublicKey.from_public_bytes(peer))


def derive_round_key(shared: bytes, pair: tuple[str, str], mask_round: int) -> bytes:
    """Return a pair's round key from its shared secret (:func:`round_key`)."""
    first, second = sorted(pair)
    info = b"fedtrees mask\x00%s\x00%s\x00%d" % (
        first.encode(),
        second.encode(),
        mask_round,
    )
    return HKDF(
        algorithm=hashes.SHA256(), length=KEY_BYTES, salt=None, info=info
    ).derive(shared)


def mask_words(
    key: bytes, n: int, out: bytearray | None = None
) -> npt.NDArray[np.uint64]:
    """Expand a round key into ``n`` words of Z_2^64 (ChaCha20's key stream).

    ``out``: a buffer of at least :func:`mask_buffer` bytes to write into
    (the result is a view of it, valid until the buffer is used again); the key
    stream is encrypted zeros, written in place (measured: 8x faster than a
    new buffer per mask for a million words).
    """
    size = 8 * n
    buf = mask_buffer(n) if out is None else out
    stream = Cipher(algorithms.ChaCha20(key, _NONCE), mode=None).encryptor()
    stream.update_into(_zeros(size), buf)
    return np.frombuffer(buf, dtype=_WORD, count=n)


def mask_buffer(n: int) -> bytearray:
    """Return a buffer that :func:`mask_words` can write ``n`` words into."""
    return bytearray(8 * n + _STREAM_SLACK)


def _zeros(size: int) -> memoryview:
    """Return ``size`` zero bytes: a shared read-only block (grown, up to a limit)."""
    if size > _MOST_SHARED_ZEROS:
        return memoryview(bytes(size))
    block = _ZEROS[0]
    if len(block) < size:
        block = bytes(max(size, 2 * len(block)))
        _ZEROS[0] = block  # immutable: threads may share any version of it
    return memoryview(block)[:size]


def masked_vector(
    words: npt.NDArray[np.uint64],
    me: str,
    private: X25519PrivateKey,
    cohort: Mapping[str, bytes],
    mask_round: int,
    secrets: dict[bytes, bytes] | None = None,
) -> npt.NDArray[np.uint64]:
    """Return ``x + Σ_{j>me} m_{me,j} − Σ_{j<me} m_{j,me}`` (mod 2^64).

    ``secrets``: the shared secrets by peer key, kept between rounds (filled
    here; the exchange is most of a round key's cost).
    """
    y = np.array(words, dtype=np.uint64)
    buf = mask_buffer(y.size)
    kept = {} if secrets is None else secrets
    for peer, public in cohort.items():
        if peer == me:
            continue
        if public not in kept:
            kept[public] = shared_secret(private, public)
        key = derive_round_key(kept[public], (me, peer), mask_round)
        mask = mask_words(key, y.size, buf)
        if me < peer:
            y += mask
        else:
            y -= mask
    return y


def no_cohort() -> np.ndarray:
    """Return a plain request's cohort (no masking): the default of ``cohort``."""
    return np.zeros(0, dtype="<U1")


def no_cohort_keys() -> np.ndarray:
    """Return a plain request's cohort keys: the default of ``cohort_keys``."""
    return np.zeros((0, KEY_BYTES), np.uint8)


# -- the messages ----------------------------------------------------------------------
@dataclass(frozen=True)
class MaskFields:
    """What a masked request says about its masking (fields of the request)."""

    mask_round: int
    cohort: np.ndarray
    cohort_keys: np.ndarray

    @classmethod
    def of(cls, request: object) -> MaskFields | None:
        """Return the request's masking, or None for a plain request."""
        mask_round = getattr(request, "mask_round", -1)
        if not isinstance(mask_round, int) or mask_round < 0:
            return None
        return cls(
            mask_round,
            np.asarray(getattr(request, "cohort", ())),
            np.asarray(getattr(request, "cohort_keys", ())),
        )

    def keys(self) -> dict[str, bytes]:
        """Return the cohort's public keys by site (checked against the ids)."""
        ids = self.cohort.reshape(-1).tolist()
        keys = np.asarray(self.cohort_keys)
        if keys.dtype != np.uint8 or keys.shape != (len(ids), KEY_BYTES):
            raise InvalidField("cohort_keys", "must hold one 32-byte key per site")
        if len(set(ids)) != len(ids) or ids != sorted(ids):
            raise InvalidField("cohort", "must name distinct sites, sorted")
        return {str(c): keys[i].tobytes() for i, c in enumerate(ids)}


@payload("federation.masked_reply")
class MaskedReply(Payload):
    """A site's masked vector: words of Z_2^64 (uniform to anyone but the sum)."""

    masked: np.ndarray


def masked_spec(length: int, *, wide: bool = False) -> ReplySpec:
    """Expect the masked vector of ``length`` values (:func:`words_of` words)."""

    def check(reply: MaskedReply) -> None:
        if reply.masked.dtype != np.uint64:
            raise InvalidField(
                "masked", f"has dtype {reply.masked.dtype}; uint64 expected"
            )

    words = words_of(length, wide)
    return ReplySpec(MaskedReply, {"masked": Field.array("u", (words,))}, check=check)


@payload("federation.reveal_reply")
class RevealReply(Payload):
    """A survivor's round keys with the dropped sites, in their order."""

    round_keys: np.ndarray


@payload("federation.reveal")
class RevealRequest(Payload):
    """Reveal your round keys of ``mask_round`` with the ``dropped`` sites."""

    mask_round: int
    cohort: np.ndarray
    cohort_keys: np.ndarray
    dropped: np.ndarray

    def expected_reply(self) -> ReplySpec:
        """One 32-byte round key per dropped site."""
        n = int(np.asarray(self.dropped).reshape(-1).shape[0])
        return ReplySpec(
            RevealReply,
            {"round_keys": Field.array("u", (n, KEY_BYTES), low=0, high=255)},
        )


# -- the site's side -------------------------------------------------------------------
def require_key(request: object, data: ClientData, state: ClientState) -> None:
    """Refuse a masked request at once when the site lost its key (before a resync).

    Its state cannot be rebuilt: asking for the rest of it would only delay the
    same refusal by one exchange.

    Raises
    ------
    ValidationError
        The request is masked and the site holds no key.
    """
    if MaskFields.of(request) is not None:
        _kept_key(data, state)


def _kept_key(data: ClientData, state: ClientState) -> SiteKey:
    kept = state.get(KEY_STATE, SiteKey)
    if kept is None:
        raise ValidationError(
            f"Client {data.client_id!r} lost its secure-aggregation key (its per-run "
            "state); it cannot mask and leaves the run."
        )
    return kept


def _site_key(
    data: ClientData, state: ClientState, fields: MaskFields
) -> tuple[SiteKey, X25519PrivateKey, dict[str, bytes]]:
    """Return the site's kept and private key and the cohort's keys, checked."""
    kept = _kept_key(data, state)
    me = data.client_id
    private = X25519PrivateKey.from_private_bytes(kept.private_key.tobytes())
    keys = fields.keys()
    mine = private.public_key().public_bytes_raw()
    if keys.get(me) != mine:
        raise InvalidField("cohort_keys", f"do not hold client {me!r}'s key")
    if len(keys) < MIN_COHORT:
        raise InvalidField(
            "cohort", f"names {len(keys)} sites; a masked sum needs {MIN_COHORT}"
        )
    return kept, private, keys


def masked_reply(
    request: object,
    data: ClientData,
    state: ClientState,
    values: FloatArray,
    *,
    wide: bool = False,
) -> MaskedReply:
    """Mask a site's statistics for its request's round (fixed point, then masks).

    ``wide``: two words per value (regression statistics, module docstring).

    Raises
    ------
    InvalidField
        A request that is not masked, names a cohort without this site's key,
        of fewer than :data:`MIN_COHORT` sites, or a mask round already used.
    ValidationError
        The site lost its key, or a value is beyond the fixed-point range.
    """
    fields = MaskFields.of(request)
    if fields is None:
        raise InvalidField("mask_round", "is missing: this round is masked")
    kept, private, keys = _site_key(data, state, fields)
    if fields.mask_round <= kept.last_round:
        raise InvalidField(
            "mask_round",
            f"is {fields.mask_round}; this site already masked round "
            f"{kept.last_round} (a mask is never used twice)",
        )
    words = to_fixed(values, len(keys), "a statistic", wide=wide)
    memo = state.memo.setdefault(SECRETS_MEMO, {})  # a new run: a new key
    secrets = memo.setdefault(kept.private_key.tobytes(), {})
    y = masked_vector(words, data.client_id, private, keys, fields.mask_round, secrets)
    state.put(KEY_STATE, SiteKey(kept.private_key, fields.mask_round))
    return MaskedReply(y)


@handler("federation.reveal", stateful=True)
def reveal(request: RevealRequest, data: ClientData, state: ClientState) -> RevealReply:
    """Reveal this site's round keys with the dropped sites (never its vector).

    Refused when this site is among the dropped, a dropped site is not in the
    cohort, or fewer than :data:`MIN_COHORT` sites would remain in the sum.
    """
    fields = MaskFields(request.mask_round, request.cohort, request.cohort_keys)
    kept, private, keys = _site_key(data, state, fields)
    dropped = [str(d) for d in np.asarray(request.dropped).reshape(-1).tolist()]
    me = data.client_id
    if (
        me in dropped
        or not set(dropped) <= set(keys)
        or len(set(dropped)) != len(dropped)
    ):
        raise InvalidField("dropped", "must name distinct other sites of the cohort")
    if len(keys) - len(dropped) < MIN_COHORT:
        raise InvalidField(
            "dropped",
            f"leave {len(keys) - len(dropped)} sites in the sum; "
            f"at least {MIN_COHORT} are needed",
        )
    if kept.last_round != request.mask_round:
        raise InvalidField(
            "mask_round",
            f"is {request.mask_round}; this site reveals keys of the round it "
            "masked last only",
        )
    found = [
        np.frombuffer(
            round_key(private, keys[d], (me, d), request.mask_round), np.uint8
        )
        for d in dropped
    ]
    return RevealReply(np.stack(found) if found else np.zeros((0, KEY_BYTES), np.uint8))


# -- the server's side -----------------------------------------------------------------
@dataclass(eq=False)
class MaskedRound:
    """One masked round on the server: its cohort, its length, what was revealed.

    The strategy builds it with the round's requests (:meth:`fields` go into
    each request) and sets it on the round's plan; the round loop asks the
    survivors for their round keys with any site of the cohort that did not
    answer (:meth:`reveal_request`, :meth:`keep_reveals`); the strategy reads
    the sum with :meth:`total`. It keeps no site's vector.
    """

    mask_round: int
    cohort: tuple[str, ...]
    keys: Mapping[str, bytes]
    length: int
    """Words of the masked vector (:func:`words_of`)."""
    wide: bool = False
    """Two words per value (regression statistics)."""
    revealed: dict[tuple[str, str], bytes] = field(default_factory=dict)

    @classmethod
    def start(
        cls, mask_round: int, cohort: Sequence[str], keys: Mapping[str, bytes],
        length: int, *, wide: bool = False,
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
        return cls(mask_round, sites, keys_of, words_of(length, wide), wide)

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
        return [c for c in self.cohort if c not in set(answered)]

    def reveal_request(self, dropped: Sequence[str]) -> RevealRequest:
        """Ask a survivor for its round keys with the ``dropped`` sites."""
        return RevealRequest(
            self.mask_round,
            np.asarray(self.cohort, dtype=str),
            self._key_matrix(),
            np.asarray(list(dropped), dtype=str),
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
        total = np.zeros(self.length, dtype=np.uint64)
        for client in answered:
            total += np.asarray(replies[client].masked, dtype=np.uint64)
        for survivor in answered:
            for d in self.dropped(answered):
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
    current round's sum from its replies (:meth:`values`).

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

    def start(
        self, cohort: Sequence[str], length: int, *, wide: bool = False
    ) -> MaskedRound:
        """Start the next masked round of ``cohort`` (:meth:`MaskedRound.start`)."""
        self.current = MaskedRound.start(
            self.started, cohort, self.keys, length, wide=wide
        )
        self.started += 1
        return self.current

    def plain(self) -> None:
        """Note that the current round is not masked."""
        self.current = None

    def values(self, replies: Mapping[str, Payload]) -> FloatArray:
        """Return the current round's sum of values, read from the masked replies.

        Raises
        ------
        LocalProtocolError
            If the current round is not masked.
        InvalidField
            If a reply is not a masked vector.
        """
        if self.current is None:
            raise LocalProtocolError("A masked reply to a plain round.")
        got = {c: as_reply(r, MaskedReply) for c, r in replies.items()}
        return self.current.values(got)
