"""A site's own noise source for its differentially private releases.

**The rule** (docs/security.md): DP noise at a site never depends on anything the
server sends or knows. The request's seed, the site's id and the round are all known
to the server: a generator keyed by them alone lets the server draw the same noise
and subtract it, and the release protects nothing. So every DP draw at a site comes
from the site's :class:`SiteNoise`:

- by default, from the operating system's entropy, fresh for every release (a DP
  fit is then not reproducible by ``random_state`` alone);
- or, if the site set a secret ``seed``, from a generator keyed by that secret and
  the release (:func:`release_key`): the same secret, data and request give the
  same noise, so the site's operator can reproduce a run; the server, without the
  secret, cannot.

The sampler (numpy or OpenDP's, :mod:`fedtrees.privacy`) is the site's setting too;
no request names it.

**Decision (what a seeded release is keyed by):** the secret, through HMAC-SHA256,
of the site's id, a digest of the site's rows (:func:`data_digest`) and the whole
encoded request. Binding the whole request means two requests that differ in any
field (another ε, another structure, another level) draw independent noise: the
same noise on two different queries would give the server the exact difference of
their answers (and the same uniforms at two scales, the noise itself). Binding the
rows means a request replayed after the site's data changed draws new noise: the
same noise on the old and new rows would give the exact difference of their counts.
Only the same request on the same rows repeats its noise, and then its answer, which
tells the server nothing new (and is charged to the site's budget again).

``federation`` imports nothing from ``privacy`` (the layers of the architecture): the
sampler's names live in :mod:`fedtrees._typing`, and the mechanisms take the
generator this module gives.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

import numpy as np
import pandas as pd

from fedtrees._typing import SAMPLERS, FloatArray, Sampler
from fedtrees._validation import check_choice, is_integral
from fedtrees.exceptions import ValidationError
from fedtrees.federation._codec import Envelope, encode
from fedtrees.federation._payload import Payload

__all__ = ["SiteNoise", "check_noise", "data_digest", "release_key"]

_DOMAIN: Final = b"fedtrees.site-noise.v1"
"""Separates these keys from any other use of a site's secret."""


@dataclass(frozen=True)
class SiteNoise:
    """Where a site's DP noise comes from: its sampler and, optionally, its secret.

    Parameters
    ----------
    sampler : {"numpy", "opendp"}, default "numpy"
        The Laplace noise source (:mod:`fedtrees.privacy`).
    seed : int >= 0, optional
        The site's secret noise seed. None (default): fresh operating-system
        entropy for every release. Given: a release's noise is keyed by it
        (module docstring), so the site can reproduce a run. It never travels and
        is never printed (``repr`` hides it). Against a real server it must be a
        secret of at least 128 random bits (a guessable seed can be tried: the
        right guess turns noisy counts into whole numbers); a simulation, which
        plays every site, may use any int. OpenDP's sampler cannot be seeded.

    Examples
    --------
    >>> noise = SiteNoise(seed=12345)
    >>> noise
    SiteNoise(sampler='numpy', seeded=True)
    >>> a = noise.generator(b"release").random()
    >>> bool(a == noise.generator(b"release").random())
    True
    >>> bool(a == noise.generator(b"another release").random())
    False
    """

    sampler: Sampler = "numpy"
    seed: int | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        seed = check_noise(self.sampler, self.seed, "SiteNoise", ("sampler", "seed"))
        object.__setattr__(self, "seed", seed)

    def __repr__(self) -> str:
        return f"SiteNoise(sampler={self.sampler!r}, seeded={self.seed is not None})"

    def generator(self, release: bytes) -> np.random.Generator:
        """Return the generator of one release (``release``: :func:`release_key`).

        Fresh operating-system entropy without a seed; else a generator keyed by
        HMAC-SHA256(seed, release), so only the holder of the seed can draw it.
        """
        if self.seed is None:
            return np.random.default_rng()
        secret = self.seed.to_bytes(max(1, (self.seed.bit_length() + 7) // 8), "big")
        digest = hmac.new(secret, _DOMAIN + release, hashlib.sha256).digest()
        return np.random.default_rng(int.from_bytes(digest, "big"))


def check_noise(
    sampler: object, seed: object, owner: str, names: tuple[str, str]
) -> int | None:
    """Validate a site's noise settings; return the seed as an int (or None).

    ``names`` are the settings' names as ``owner`` calls them (sampler, seed).

    Raises
    ------
    ValidationError
        Naming ``owner`` and the setting; a seed's value is never shown (it is
        the site's secret, and a site's error may travel to the server).
    """
    sampler_name, seed_name = names
    check_choice(sampler, sampler_name, owner, SAMPLERS)
    if seed is None:
        return None
    if not is_integral(seed) or seed < 0:
        got = "a negative int" if is_integral(seed) else f"a {type(seed).__name__}"
        raise ValidationError(
            f"The {seed_name!r} parameter of {owner} must be an int >= 0 or None. "
            f"Got {got} instead (its value is not shown: it is the site's secret)."
        )
    if sampler == "opendp":
        raise ValidationError(
            f"The {seed_name!r} parameter of {owner} must be None (not set) with "
            f"{sampler_name}='opendp': OpenDP's sampler draws from the operating "
            f"system and cannot be seeded. Use {sampler_name}='numpy' to reproduce "
            "a site's noise."
        )
    return int(seed)


def release_key(
    site: str,
    rows: bytes,
    declared: Mapping[str, tuple[str, ...]],
    request: Payload,
) -> bytes:
    """Describe one release: the site's id, its rows, its coding, the whole request.

    ``rows`` is :func:`data_digest`; ``declared`` the run's declared categories
    (they set the codes the site counts). The request is described by its
    encoding (the codec is exact and canonical: the same payload always gives
    the same bytes, in process and on Flower).
    """
    encoded = encode(Envelope("request", 0, "", request.kind, request))
    parts = (
        site.encode(),
        rows,
        repr(sorted(declared.items())).encode(),
        hashlib.sha256(encoded).digest(),
    )
    return b"".join(len(p).to_bytes(8, "big") + p for p in parts)


def data_digest(X: pd.DataFrame, y: pd.Series, weights: FloatArray | None) -> bytes:
    """SHA-256 of a site's rows: column names and dtypes, values, labels, weights.

    Rows hash through pandas (a 64-bit hash per row, values rather than codes for
    categorical columns), so a changed, added or removed row changes the digest.
    """
    h = hashlib.sha256()
    h.update(repr([(str(c), str(X[c].dtype)) for c in X.columns]).encode())
    h.update(pd.util.hash_pandas_object(X, index=False).to_numpy().tobytes())
    h.update(pd.util.hash_pandas_object(y, index=False).to_numpy().tobytes())
    h.update(b"-" if weights is None else np.ascontiguousarray(weights).tobytes())
    return h.digest()
