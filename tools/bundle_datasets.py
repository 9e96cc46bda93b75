"""Rebuild the compressed dataset copies shipped inside fedtrees.

Usage: python tools/bundle_datasets.py SOURCE_DATA_FOLDER

SOURCE_DATA_FOLDER is the verified data folder (with SHA256SUMS). Each bundled file
is an xz-compressed, byte-identical copy; MANIFEST.json records the original
sha256 so tests can check the decompressed bytes.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import shutil
import sys
from pathlib import Path

FILES = {
    "heart_disease": [
        "processed.cleveland.data",
        "processed.hungarian.data",
        "processed.switzerland.data",
        "processed.va.data",
    ],
    "adult": ["adult.data", "adult.test"],
    "nursery": ["nursery.data"],
    "car": ["car.data"],
    "credit_default_taiwan": ["UCI_Credit_Card.csv"],
    "hotel_ac_iot": ["F1_Equal.npy", "F2_Equal.npy", "F3_Equal.npy", "F4_Equal.npy"],
}
TARGET = Path(__file__).resolve().parents[1] / "src" / "fedtrees" / "datasets" / "_data"


def main(source: Path) -> None:
    """Compress every listed file of ``source`` into the package data folder."""
    sums = dict(
        reversed(line.split(maxsplit=1))
        for line in (source / "SHA256SUMS").read_text().splitlines()
        if line.strip()
    )
    manifest = {}
    for folder, names in FILES.items():
        (TARGET / folder).mkdir(parents=True, exist_ok=True)
        for name in names:
            relative = f"{folder}/{name}"
            raw = (source / relative).read_bytes()
            digest = hashlib.sha256(raw).hexdigest()
            if sums[relative] != digest:
                raise SystemExit(f"checksum mismatch for {relative}")
            packed = lzma.compress(raw, preset=9 | lzma.PRESET_EXTREME)
            (TARGET / folder / f"{name}.xz").write_bytes(packed)
            manifest[relative] = {"sha256": digest, "bytes": len(raw)}
    shutil.copy(
        source / "hotel_ac_iot" / "LICENSE", TARGET / "hotel_ac_iot" / "LICENSE"
    )
    (TARGET / "MANIFEST.json").write_text(json.dumps(manifest, indent=2) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
