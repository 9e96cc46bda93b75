"""A Flower site's noise source, from its node config (docs/flower.md).

``noise-sampler`` ("numpy", the default, or "opendp") and ``noise-seed``, the
site's secret: at least 32 hexadecimal digits (128 bits), as
``python -c "import secrets; print(secrets.token_hex(16))"`` prints. Without a seed
every DP release draws fresh operating-system entropy; with one, the site keys each
release's noise by it (:class:`~fedtrees.federation.SiteNoise`), so its operator can
reproduce a run and the server cannot. Only the node config sets them: the run
config comes from the server, and nothing the server sends may choose a site's
noise.

**Decision (a real secret):** a short seed could be guessed — the right guess turns
a site's noisy counts into whole numbers — so a Flower site's seed must hold at
least 128 bits, written in hex (a node config integer holds only 64). A malformed
entry refuses every request with an error naming the key and never showing the
value: the error travels to the server.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from fedtrees.exceptions import ValidationError
from fedtrees.federation._noise import SiteNoise, check_noise

__all__ = ["MIN_SEED_HEX_DIGITS", "NOISE_SAMPLER_KEY", "NOISE_SEED_KEY", "site_noise"]

NOISE_SEED_KEY: Final = "noise-seed"
"""The node config entry holding the site's secret noise seed (hex)."""
NOISE_SAMPLER_KEY: Final = "noise-sampler"
"""The node config entry naming the site's Laplace sampler."""
MIN_SEED_HEX_DIGITS: Final = 32
"""A seed's fewest hex digits: 128 bits."""
_HEX: Final = re.compile(r"[0-9a-fA-F]+")
_HOW: Final = "python -c 'import secrets; print(secrets.token_hex(16))' prints one"


def site_noise(node_config: Mapping[str, Any]) -> SiteNoise:
    """Return the site's noise source its node config declares.

    Raises
    ------
    ValidationError
        Naming the entry and what it must be (a seed's value is never shown).

    Examples
    --------
    >>> site_noise({"client-id": "a"})
    SiteNoise(sampler='numpy', seeded=False)
    >>> site_noise({"noise-seed": "0123456789abcdef" * 2})
    SiteNoise(sampler='numpy', seeded=True)
    """
    sampler = node_config.get(NOISE_SAMPLER_KEY, "numpy")
    seed = _secret(node_config.get(NOISE_SEED_KEY))
    owner = "the node config"
    return SiteNoise(
        sampler, check_noise(sampler, seed, owner, (NOISE_SAMPLER_KEY, NOISE_SEED_KEY))
    )


def _secret(value: object) -> int | None:
    """Return the seed as an int; refuse anything but >= 32 hex digits."""
    if value is None:
        return None
    if isinstance(value, str) and _HEX.fullmatch(value):
        if len(value) >= MIN_SEED_HEX_DIGITS:
            return int(value, 16)
        got = f"{len(value)} hex digits"
    else:
        got = (
            "a string holding characters other than hex digits"
            if isinstance(value, str)
            else f"a value of type {type(value).__name__}"
        )
    raise ValidationError(
        f"The node config's {NOISE_SEED_KEY} must be the site's secret noise seed: "
        f"at least {MIN_SEED_HEX_DIGITS} hex digits (128 bits) in a string ({_HOW}: "
        f"--node-config '{NOISE_SEED_KEY}=\"<the digits>\"'). Got {got} instead (its "
        "value is not shown: it is the site's secret)."
    )
