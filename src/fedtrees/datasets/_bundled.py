"""Access to the compressed dataset copies shipped inside the package.

Each file in ``_data/`` is an xz-compressed, byte-identical copy of a verified
original; ``MANIFEST.json`` holds the original's sha256 and size (provenance in
``_data/README.md``). Loading works offline.
"""

from __future__ import annotations

import hashlib
import io
import json
import lzma
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["bundled_bytes", "bundled_text", "manifest", "verify_bundled"]

_PACKAGE = "fedtrees.datasets"


@cache
def manifest() -> dict[str, dict[str, Any]]:
    """Relative path -> {"sha256", "bytes"} of every bundled original."""
    text = resources.files(_PACKAGE).joinpath("_data", "MANIFEST.json").read_text()
    result: dict[str, dict[str, Any]] = json.loads(text)
    return result


def bundled_bytes(relative: str) -> bytes:
    """Decompressed bytes of a bundled file, e.g. ``"car/car.data"``."""
    packed = resources.files(_PACKAGE).joinpath("_data", f"{relative}.xz").read_bytes()
    return lzma.decompress(packed)


def bundled_text(relative: str) -> io.StringIO:
    """Return a text stream over a bundled file (ASCII/UTF-8)."""
    return io.StringIO(bundled_bytes(relative).decode("utf-8"))


def verify_bundled(relative: str) -> bool:
    """Whether the decompressed file matches the original's sha256 and size."""
    raw = bundled_bytes(relative)
    entry = manifest()[relative]
    size_ok = len(raw) == int(entry["bytes"])
    return size_ok and hashlib.sha256(raw).hexdigest() == str(entry["sha256"])
