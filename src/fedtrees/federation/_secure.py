"""Secure aggregation: the server learns the sum of the sites' vectors, nothing else.

Pairwise masking over Z_2^64 (Bonawitz et al. 2017, without double masking;
docs/security.md, "Secure aggregation"), step by step:

1. **Keys, at the agreement** (round 0, ``run(..., secure=True)``): every site
   draws a fresh X25519 key pair (:func:`new_key`), keeps the private key in
   its per-run state and sends the public key (:func:`check_public_keys`
   refuses one that is not a valid X25519 public key, and two sites with the
   same key).
2. **A masked round** (:class:`~fedtrees.federation.MaskedRound`): the
   request names the round's ``mask_round`` (never used twice in a run), its
   cohort (the sites asked, sorted) and their public keys. Each pair (i, j)
   of the cohort agrees a shared secret; from it and the mask round, HKDF
   derives a round key and ChaCha20's key stream expands it into a mask
   ``m_ij`` of the vector's length (:func:`round_key`, :func:`mask_words`).
   Site i sends ``y_i = x_i + Σ_{j>i} m_ij − Σ_{j<i} m_ji (mod 2^64)``
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
4. **Commitments** (:func:`commitment`): with its masked vector a site sends,
   for every other site of the cohort, a SHA-256 commitment to their round
   key of this mask round and one to their key of the next: the server
   checks that both sites of a pair commit to the same keys (they derived
   them from the public keys agreed at the start) and, from the second
   masked round on, that each site still commits to the key both committed
   to the round before.
5. **Dropout** (:meth:`~fedtrees.federation.MaskedRound.reveal_request`, handler
   ``federation.reveal``): when a site of the cohort does not answer, every
   survivor reveals its round keys with the dropped sites — never its own
   vector, never a key of another round — and the server checks each against
   the survivor's commitment (so, from the second masked round on, against
   the dropped site's word too) before it removes those masks
   (:meth:`~fedtrees.federation.MaskedRound.total`). **Decision**: no double
   masking, so a server that lies about a dropout can unmask that site (the
   semi-honest model, docs/security.md). A masked sum needs at least
   :data:`MIN_COHORT` sites: of two, each would learn the other's vector from
   the sum.

The server's side (:class:`MaskedRound`, :class:`MaskedRounds`) is
:mod:`fedtrees.federation._secure_sum`.

Keys are drawn by the operating system's generator, never from
``random_state``: a seeded key would let anyone who knows the seed unmask.
The model does not depend on them; the masked messages differ from run to run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

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
from fedtrees.exceptions import ValidationError
from fedtrees.federation._checks import InvalidField
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
    "PublicKeyError",
    "RevealReply",
    "RevealRequest",
    "SiteKey",
    "check_cohort",
    "check_public_keys",
    "commitment",
    "commitments",
    "from_fixed",
    "keep_new_key",
    "mask_words",
    "masked_reply",
    "masked_spec",
    "masked_vector",
    "no_cohort",
    "no_cohort_keys",
    "no_commitments",
    "pair_keys",
    "require_key",
    "round_key",
    "rounding_bound",
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

_COMMITMENT_LABEL: Final = b"fedtrees round key commitment\x00"
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


def rounding_bound(sites: int, terms: int = 1) -> float:
    """Return the most the sum of ``terms`` pooled entries can be off by rounding.

    Every site rounds every value to the nearest ``2^-32`` (:func:`to_fixed`):
    at most ``2^-33`` per site and entry, so ``terms · sites · 2^-33``. Whole
    counts are exact.

    Examples
    --------
    >>> rounding_bound(4, 2) == 8 * 2.0**-33
    True
    """
    return float(terms) * float(sites) * 2.0 ** -(FRACTION_BITS + 1)


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


def pair_keys(
    me: str,
    private: X25519PrivateKey,
    cohort: Mapping[str, bytes],
    mask_round: int,
    secrets: dict[bytes, bytes] | None = None,
) -> dict[str, bytes]:
    """Return this site's round keys of ``mask_round`` with every other cohort site.

    ``secrets``: the shared secrets by peer key, kept between rounds (filled
    here; the exchange is most of a round key's cost).
    """
    kept = {} if secrets is None else secrets
    keys = {}
    for peer, public in cohort.items():
        if peer == me:
            continue
        if public not in kept:
            kept[public] = shared_secret(private, public)
        keys[peer] = derive_round_key(kept[public], (me, peer), mask_round)
    return keys


def masked_vector(
    words: npt.NDArray[np.uint64],
    me: str,
    private: X25519PrivateKey,
    cohort: Mapping[str, bytes],
    mask_round: int,
    secrets: dict[bytes, bytes] | None = None,
) -> npt.NDArray[np.uint64]:
    """Return ``x + Σ_{j>me} m_{me,j} − Σ_{j<me} m_{j,me}`` (mod 2^64).

    ``secrets``: as in :func:`pair_keys`.
    """
    return _apply_masks(words, me, pair_keys(me, private, cohort, mask_round, secrets))


def _apply_masks(
    words: npt.NDArray[np.uint64], me: str, keys: Mapping[str, bytes]
) -> npt.NDArray[np.uint64]:
    """Add this site's masks of its round ``keys`` (peer -> key) to ``words``."""
    y = np.array(words, dtype=np.uint64)
    buf = mask_buffer(y.size)
    for peer, key in keys.items():
        mask = mask_words(key, y.size, buf)
        if me < peer:
            y += mask
        else:
            y -= mask
    return y


def commitment(key: bytes) -> bytes:
    """Return the commitment to a round key: SHA-256 of a label and the key.

    Binding (a site cannot later reveal another key that matches it) and
    hiding (a round key is 256 uniform bits; the digest tells nothing of it).

    Examples
    --------
    >>> len(commitment(bytes(32)))
    32
    """
    digest = hashes.Hash(hashes.SHA256())
    digest.update(_COMMITMENT_LABEL + key)
    return digest.finalize()


def commitments(
    me: str,
    private: X25519PrivateKey,
    cohort: Mapping[str, bytes],
    mask_round: int,
    secrets: dict[bytes, bytes] | None = None,
) -> npt.NDArray[np.uint8]:
    """Return this site's commitments to its round keys of this round and the next.

    Shape ``(2, K, 32)`` for the K sites of ``cohort`` in its order: row 0 the
    commitments to the keys of ``mask_round``, row 1 to those of
    ``mask_round + 1``; this site's own entries are zeros. ``secrets``: as in
    :func:`pair_keys`.
    """
    now = pair_keys(me, private, cohort, mask_round, secrets)
    then = pair_keys(me, private, cohort, mask_round + 1, secrets)
    return _commitments(list(cohort), now, then)


def _commitments(
    sites: Sequence[str], now: Mapping[str, bytes], then: Mapping[str, bytes]
) -> npt.NDArray[np.uint8]:
    """Return :func:`commitments` from the round keys of this round and the next."""
    at = {site: k for k, site in enumerate(sites)}
    out = np.zeros((2, len(sites), KEY_BYTES), np.uint8)
    for row, keys in enumerate((now, then)):
        for peer, key in keys.items():
            out[row, at[peer]] = np.frombuffer(commitment(key), np.uint8)
    return out


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
    """A site's masked vector and its commitments to its round keys.

    ``masked``: words of Z_2^64 (uniform to anyone but the sum);
    ``commitments``: :func:`commitments`, shape ``(2, K, 32)``.
    """

    masked: np.ndarray
    commitments: np.ndarray = field(default_factory=lambda: no_commitments(0))


def no_commitments(sites: int) -> npt.NDArray[np.uint8]:
    """Return zero commitments for ``sites`` sites (the default: none)."""
    return np.zeros((2, sites, KEY_BYTES), np.uint8)


def masked_spec(length: int, *, sites: int, wide: bool = False) -> ReplySpec:
    """Expect the masked vector of ``length`` values (:func:`words_of` words).

    With the commitments of a cohort of ``sites`` sites (:func:`commitments`).
    """

    def check(reply: MaskedReply) -> None:
        for name, dtype in (("masked", np.uint64), ("commitments", np.uint8)):
            got = getattr(reply, name).dtype
            if got != dtype:
                raise InvalidField(name, f"has dtype {got}; {np.dtype(dtype)} expected")

    words = words_of(length, wide)
    return ReplySpec(
        MaskedReply,
        {
            "masked": Field.array("u", (words,)),
            "commitments": Field.array("u", (2, sites, KEY_BYTES)),
        },
        check=check,
    )


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

    The reply also carries the site's commitments to its round keys of this
    mask round and the next (:func:`commitments`).

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
    me, number = data.client_id, fields.mask_round
    now = pair_keys(me, private, keys, number, secrets)
    then = pair_keys(me, private, keys, number + 1, secrets)
    y = _apply_masks(words, me, now)
    state.put(KEY_STATE, SiteKey(kept.private_key, number))
    return MaskedReply(y, _commitments(list(keys), now, then))


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
