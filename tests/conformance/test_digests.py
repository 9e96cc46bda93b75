"""Refactors keep every model bit for bit: digests of each entry's outputs, pinned.

The conformance entries (and the secure and ``"uniform"`` histogram fits, which the
registry does not hold) are fitted with seed 0 and the sites' noise seed; the
SHA-256 of what each model says on the held-out rows (float64 bytes) and the
ledger's byte totals are compared with the values recorded before the histogram
engine took over whole rounds (issue 38). A structural change that alters one
bit of a model, or one byte on the wire, fails here, naming the entry.

The pins hold on one platform (x86-64, the pinned numpy/numba of the lock): a
different floating-point library may change the last bit of a sum. Run this
module with ``FEDTREES_WRITE_DIGESTS=<file>`` to write fresh values there after an
intended change, and say why in the commit.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np
import pytest

from fedtrees.algorithms import (
    FedForestClassifier,
    FedForestRegressor,
    FedGBDTClassifier,
    FedGBDTRegressor,
)
from tests.conformance import checks
from tests.conformance.registry import EDGES, ENTRIES, RANGES, Entry, _forest, _gbdt

EXTRA: tuple[Entry, ...] = (
    Entry(
        "FedForestClassifier-hist-secure",
        lambda seed: _forest(FedForestClassifier, "hist")(seed).set_params(
            secure_aggregation=True, feature_ranges=RANGES
        ),
    ),
    Entry(
        "FedForestRegressor-hist-edges",
        lambda seed: _forest(FedForestRegressor, "hist")(seed).set_params(
            bin_edges=EDGES
        ),
        regression=True,
    ),
    Entry(
        "FedForestClassifier-uniform",
        _forest(FedForestClassifier, "uniform"),
    ),
    Entry(
        "FedGBDTClassifier-secure",
        lambda seed: _gbdt(FedGBDTClassifier)(seed).set_params(
            secure_aggregation=True, feature_ranges=RANGES
        ),
    ),
    Entry(
        "FedGBDTRegressor-secure-edges",
        lambda seed: _gbdt(FedGBDTRegressor)(seed).set_params(
            secure_aggregation=True, bin_edges=EDGES
        ),
        regression=True,
    ),
)

DIGESTS: dict[str, tuple[str, int, int]] = {
    "DPForestClassifier": (
        "55e598ae7eb3342efc675295e1ff3708b3163c8d415cdf05b9e220272c34b585",
        2721,
        5145,
    ),
    "FedAvgClassifier": (
        "e8d38628edb0d89a95b52503238ca484143e2dddba6b287577ee830b8c877593",
        6387,
        4592,
    ),
    "FedForestClassifier-hist": (
        "437193b9c7424a19a3ca65b6173354e94b77c66d3b9a279597f43752c6a5cea6",
        20118,
        11111,
    ),
    "FedForestClassifier-hist-secure": (
        "04e293886ecc8e7d38eb8051ac796ef71bafad21148f5c752e759bd91a6a3988",
        21636,
        124457,
    ),
    "FedForestClassifier-params": (
        "cf90ac31693c03138fc50ffd4f5d6cf281e9dcc1a7614742e474e21d431ad07c",
        28353,
        20620,
    ),
    "FedForestClassifier-quantile": (
        "3cf0d4db8334147bcbdbaa4f5585837624edc6c6855f444cf215fc466738d1e0",
        29934,
        15018,
    ),
    "FedForestClassifier-uniform": (
        "28d29ae4890bdc994c9cdbd5a413bc698269beb83709b57508db10dea856df29",
        22536,
        10148,
    ),
    "FedForestRegressor-hist": (
        "bdb6708cf01a6c053ec1798af61d3e049f0dd89e23d83cb6ee61536b8b808132",
        20214,
        26212,
    ),
    "FedForestRegressor-hist-edges": (
        "44892b21288c7ca00d75664cb12707bb70fedf522f9ec479d7bbc49317f56263",
        15108,
        13690,
    ),
    "FedForestRegressor-quantile": (
        "1b34512502d369033bfab0bbd60e00daea05a9ecc86c5212d8e1ffdb4fb8bab3",
        34394,
        46205,
    ),
    "FedGAClassifier": (
        "b1c64e6382a70ae70cbfa695527825dd4bcfea309681b339aa1488a12b600a6f",
        11934,
        10469,
    ),
    "FedGARegressor": (
        "cb842331958d92e4e5e518c8b9ca542414908aa16b03d17c790393b2cef1f568",
        10101,
        8888,
    ),
    "FedGBDTClassifier": (
        "c28f46a7035ea01b328d390f696818af411511d16c14e423e5351a19bad59357",
        33111,
        28238,
    ),
    "FedGBDTClassifier-secure": (
        "ddba7562973bfe852ba659cd6e668aa69e7ed4e9ab3a365ce3a88fbb866f40eb",
        35265,
        126023,
    ),
    "FedGBDTRegressor": (
        "3d2ee3f95d3e9c5751dde2c3f89b8e114cefddc922e9e936e5daa2cdb6058c68",
        33081,
        28770,
    ),
    "FedGBDTRegressor-secure-edges": (
        "e57eaec0e4c537e5633e027ddb33db82d38867edf5e095fd9e2b24ad6c813d59",
        33357,
        23318,
    ),
    "FederatedID3Classifier": (
        "46904ffdb42a5460d4313bf9d3bd53a23c17ead89dcf5612c5494c51b3d84f34",
        12522,
        33431,
    ),
    "FederatedID3Classifier-epsilon": (
        "4e55df3272147c1da34bcc57b7e49e14983a02b1c03afeec4fa5528e2517d42d",
        11364,
        5975,
    ),
    "ICDTAClassifier": (
        "0aca21d8b636a979f8288128061a556b2a879bc74e55e02a34a5906e2cc865f7",
        49059,
        38640,
    ),
    "LocalEnsembleClassifier": (
        "3685df4a697f253d9d52f686747454d9a5696a29623fbc0c56d653be70606122",
        2721,
        9592,
    ),
    "LocalEnsembleRegressor": (
        "da031d29272dae01d4234ad6fd298d4520654abf8fc4e1f81609c0432a2b8e80",
        2697,
        9680,
    ),
    "LocalModelsClassifier": (
        "105dd0cfdb9fdbe6eb2dbd8aa6dbee72a1ba79228b7c783fc49f2582eb27ede7",
        2721,
        9592,
    ),
    "LocalModelsRegressor": (
        "8b6b9d1047dc5cdd9403004621d4001b0ef33ecb5da8ace44fc8fabcc9ce31ba",
        2697,
        9680,
    ),
    "SyntheticDataClassifier": (
        "677181ce39b418954922a070b22d14c4dbe3d2d859ee9fba1fad96f83e9e7e80",
        3363,
        6083,
    ),
}
"""entry name -> (sha256 of the held-out outputs, bytes down, bytes up)."""


def _digest(entry: Entry) -> tuple[str, int, int]:
    model, ledger, _ = checks.fit(entry)
    out = np.ascontiguousarray(checks.outputs(entry, model), dtype=np.float64)
    return hashlib.sha256(out.tobytes()).hexdigest(), ledger.bytes_down, ledger.bytes_up


@pytest.mark.parametrize("entry", [*ENTRIES, *EXTRA], ids=lambda e: e.name)
def test_the_model_and_its_bytes_are_the_pinned_ones(entry: Entry) -> None:
    got = _digest(entry)
    out = os.environ.get("FEDTREES_WRITE_DIGESTS")
    if out:  # record fresh pins (see the module docstring)
        with open(out, "a", encoding="utf-8") as f:
            f.write(f"    {entry.name!r}: {got!r},\n")
        return
    assert entry.name in DIGESTS, f"no pinned digest for {entry.name}"
    assert got == DIGESTS[entry.name], f"{entry.name} changed: {got}"
