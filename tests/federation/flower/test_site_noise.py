"""A SuperNode's DP noise source: node config keys, and the ClientApp's draws.

The ClientApp is called directly (no SuperLink, no processes), as in
``test_site_budget.py``. The rule (docs/security.md): a site's noise comes from
its node config — fresh entropy, or its own secret — never from the run config,
which the server writes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("flwr")

from flwr.app import Context, RecordDict

from fedtrees.algorithms.dpforest._handlers import grow_tree
from fedtrees.algorithms.dpforest._payloads import DPTreeReply, DPTreeRequest
from fedtrees.datasets import load_site_data, save_client_file
from fedtrees.exceptions import ValidationError
from fedtrees.federation import ClientData, Envelope, SiteNoise, decode, encode
from fedtrees.federation.flower import make_client_app
from fedtrees.federation.flower._noise import site_noise
from fedtrees.federation.flower._wire import pack, unpack
from tests.federation.flower.test_apps import _message

SECRET = "5f1c0e9a7b3d42c68e1f0a9b7c6d5e4f"  # 32 hex digits: 128 bits


@pytest.fixture
def site_file(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"age": rng.uniform(30, 80, 60)})
    return save_client_file(tmp_path / "site.npz", X, np.where(X["age"] > 55, "y", "n"))


def _request() -> DPTreeRequest:
    return DPTreeRequest(
        epsilon=1.0,
        max_depth=2,
        budget="paper",
        score="average",
        ranges=np.array([[0.0, 100.0]]),
        classes=np.array(["n", "y"]),
        seed=0,
    )


def _ask(node_config: dict[str, object], run_config: dict[str, object]) -> Envelope:
    request = _request()
    data = encode(Envelope("request", 1, "Cleveland", request.kind, request))
    context = Context(
        run_id=1,
        node_id=2,
        node_config=node_config,
        state=RecordDict(),
        run_config=run_config,  # type: ignore[arg-type]
    )
    reply = make_client_app(load_site_data)(
        _message(pack(data), "query.fedtrees"), context
    )
    return decode(unpack(reply.content))


def _counts(envelope: Envelope) -> np.ndarray:
    assert envelope.type == "reply", envelope.error
    assert isinstance(envelope.payload, DPTreeReply)
    return envelope.payload.count


def _config(site_file: Path, **entries: object) -> dict[str, object]:
    return {
        "client-id": "Cleveland",
        "data-path": str(site_file),
        "cache-dir": "",
    } | entries


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        ({}, SiteNoise()),
        ({"noise-seed": SECRET}, SiteNoise(seed=int(SECRET, 16))),
        ({"noise-seed": SECRET.upper() * 2}, SiteNoise(seed=int(SECRET * 2, 16))),
        ({"noise-sampler": "opendp"}, SiteNoise("opendp")),
        (
            {"noise-sampler": "numpy", "noise-seed": SECRET},
            SiteNoise(seed=int(SECRET, 16)),
        ),
    ],
)
def test_the_node_config_declares_the_site_noise(
    entries: dict[str, object], expected: SiteNoise
) -> None:
    assert site_noise({"client-id": "Cleveland", **entries}) == expected


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ({"noise-seed": SECRET[:31]}, "at least 32 hex digits.*Got 31 hex digits"),
        ({"noise-seed": SECRET[:30] + "zz"}, "Got a string holding characters"),
        ({"noise-seed": 12345678901234}, "Got a value of type int"),
        ({"noise-seed": ""}, "Got a string holding"),
        ({"noise-sampler": "torch"}, "'noise-sampler'.*Got 'torch'"),
        ({"noise-sampler": "opendp", "noise-seed": SECRET}, "cannot be seeded"),
    ],
)
def test_a_malformed_noise_declaration_refuses_every_request_without_the_secret(
    site_file: Path, entries: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        site_noise(entries)
    envelope = _ask(_config(site_file, **entries), {})
    assert envelope.type == "error"
    assert message.split(".*")[-1] in envelope.error
    for value in entries.values():  # the secret, or a near miss, never travels
        if isinstance(value, str) and len(value) > 8:
            assert value not in envelope.error


@pytest.mark.hostile("correct")
def test_a_site_secret_reproduces_its_noise_over_the_client_app(
    site_file: Path,
) -> None:
    seeded = _config(site_file, **{"noise-seed": SECRET})
    first, again = _counts(_ask(seeded, {})), _counts(_ask(seeded, {}))
    other = _counts(_ask(_config(site_file, **{"noise-seed": SECRET[::-1]}), {}))
    fresh = [_counts(_ask(_config(site_file), {})) for _ in range(2)]

    np.testing.assert_array_equal(first, again)  # the operator reproduces a run
    assert not np.array_equal(first[:1], other[:1])
    assert not np.array_equal(fresh[0][:1], fresh[1][:1])  # fresh entropy
    # The same noise as the in-process site holding the same secret.
    X, y = load_site_data(str(site_file), None, cache_dir=None, run_id=1)
    data = ClientData.build("Cleveland", X, y, noise=SiteNoise(seed=int(SECRET, 16)))
    np.testing.assert_array_equal(grow_tree(_request(), data).count, first)


@pytest.mark.hostile("correct")
def test_the_run_config_cannot_set_a_site_noise(site_file: Path) -> None:
    # The server writes the run config: a seed there is not the site's secret.
    chosen = {"noise-seed": SECRET, "noise-sampler": "numpy"}
    replies = [_counts(_ask(_config(site_file), chosen)) for _ in range(2)]

    assert not np.array_equal(replies[0][:1], replies[1][:1])


def test_the_supernode_command_passes_the_noise_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from typer.testing import CliRunner

    from fedtrees.cli import app

    started: list[list[str]] = []
    monkeypatch.setattr(os, "execvpe", lambda _, command, env: started.append(command))
    monkeypatch.chdir(tmp_path)
    site = ["--client-id", "a", "--data", "a.npz", "--insecure", "--no-site-worker"]
    command = ["flower", "supernode", "--superlink", "h:1", *site]
    out = CliRunner().invoke(app, [*command, "--noise-seed", SECRET])
    assert out.exit_code == 0, out.output
    config = started[0][started[0].index("--node-config") + 1]
    assert f'noise-seed="{SECRET}"' in config
    for bad, flag in (
        (["--noise-seed", SECRET[:20]], "--noise-seed"),
        (["--noise-seed", SECRET, "--noise-sampler", "opendp"], "--noise-seed"),
        (["--noise-sampler", "torch"], "--noise-sampler"),
    ):
        refused = CliRunner().invoke(app, [*command, *bad])
        assert refused.exit_code != 0
        assert flag in refused.output  # the flag, not the node config key
        assert SECRET[:20] not in refused.output
    assert len(started) == 1
