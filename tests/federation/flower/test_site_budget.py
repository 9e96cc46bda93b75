"""A SuperNode's privacy budget: node config keys, and the ClientApp's charges.

The ClientApp is called directly (no SuperLink, no processes), as in
``test_apps.py``; the in-process cases are in ``tests/hostile/test_site_budget.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("flwr")

from fedtrees.algorithms.dpforest._payloads import DPTreeReply, DPTreeRequest
from fedtrees.datasets import load_site_data, save_client_file
from fedtrees.exceptions import ValidationError
from fedtrees.federation import BudgetFile, Envelope, decode, encode
from fedtrees.federation.flower import make_client_app
from fedtrees.federation.flower._site import site_budget
from fedtrees.federation.flower._wire import pack, unpack
from tests.federation.flower.test_apps import _context, _message


@pytest.fixture
def site_file(tmp_path: Path) -> Path:
    X = pd.DataFrame({"age": [40.0, 50.0, 60.0]})
    return save_client_file(tmp_path / "site.npz", X, ["no", "yes", "yes"])


def _dp_request(epsilon: float) -> bytes:
    request = DPTreeRequest(
        epsilon=epsilon,
        max_depth=1,
        budget="paper",
        score="average",
        ranges=np.array([[0.0, 100.0]]),
        classes=np.array(["no", "yes"]),
        seed=0,
    )
    return encode(Envelope("request", 1, "Cleveland", request.kind, request))


def _ask(config: dict[str, object], epsilon: float) -> Envelope:
    app = make_client_app(load_site_data)
    reply = app(
        _message(pack(_dp_request(epsilon)), "query.fedtrees"), _context(config)
    )
    return decode(unpack(reply.content))


@pytest.mark.parametrize("total", [2, 2.5, "2.5"])
def test_the_node_config_declares_the_site_budget(
    tmp_path: Path, total: object
) -> None:
    ledger = tmp_path / "ledger.json"
    config = {"privacy-budget": total, "privacy-ledger": str(ledger)}
    budget = site_budget(config, "Cleveland", 42)
    assert budget is not None
    assert (budget.site, budget.epsilon, budget.run) == (
        "Cleveland",
        float(total),
        "42",
    )
    assert isinstance(budget.store, BudgetFile)
    assert budget.store.path == ledger
    assert site_budget({"client-id": "Cleveland"}, "Cleveland", 42) is None


@pytest.mark.hostile("clear_error")
@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ({"privacy-budget": 2.0}, "gives privacy-budget without privacy-ledger"),
        ({"privacy-ledger": "/l.json"}, "gives privacy-ledger without privacy-budget"),
        ({"privacy-budget": "lots", "privacy-ledger": "/l.json"}, "Got 'lots'"),
        ({"privacy-budget": 0, "privacy-ledger": "/l.json"}, "finite number > 0"),
        ({"privacy-budget": -1.0, "privacy-ledger": "/l.json"}, "Got -1.0"),
        ({"privacy-budget": "inf", "privacy-ledger": "/l.json"}, "Got 'inf'"),
        ({"privacy-budget": "nan", "privacy-ledger": "/l.json"}, "Got 'nan'"),
        ({"privacy-budget": True, "privacy-ledger": "/l.json"}, "Got True"),
        ({"privacy-budget": 2.0, "privacy-ledger": "l.json"}, "absolute path"),
        ({"privacy-budget": 2.0, "privacy-ledger": ""}, "absolute path"),
        ({"privacy-budget": 2.0, "privacy-ledger": 3}, "Got 3 instead"),
    ],
)
def test_a_malformed_budget_declaration_refuses_every_request(
    site_file: Path, entries: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        site_budget(entries, "Cleveland", 1)
    config = {"client-id": "Cleveland", "data-path": str(site_file), **entries}
    envelope = _ask(config, 1.0)
    assert envelope.type == "error"
    assert message in str(envelope.error)


@pytest.mark.hostile("clear_error")
def test_the_client_app_charges_every_dp_request_to_the_site_ledger(
    site_file: Path, tmp_path: Path
) -> None:
    """Each message is a new process on Flower: only the ledger file remembers."""
    ledger = tmp_path / "ledger.json"
    config = {
        "client-id": "Cleveland",
        "data-path": str(site_file),
        "privacy-budget": 1.5,
        "privacy-ledger": str(ledger),
    }
    first = _ask(config, 1.0)
    assert first.type == "reply"
    assert isinstance(first.payload, DPTreeReply)
    refused = _ask(config, 1.0)  # the same job again
    assert refused.type == "error"
    assert (
        "PrivacyBudgetExceeded: Site 'Cleveland' privacy budget: total epsilon=1.5, "
        "spent 1 over 1 release(s)" in str(refused.error)
    )
    charges = BudgetFile(ledger).charges("Cleveland")
    assert [(c.epsilon, c.request, c.run) for c in charges] == [
        (1.0, "dpforest.tree: one DP tree", "1")
    ]
    assert _ask(config, 0.5).type == "reply"  # what is left may still be spent
    assert BudgetFile(ledger).charges("Cleveland")[-1].epsilon == 0.5
    assert _ask({**config, "privacy-budget": 10.0}, 1.0).type == "reply"  # raised


def test_the_supernode_command_passes_the_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from fedtrees.cli import app

    started: list[list[str]] = []
    monkeypatch.setattr(os, "execvpe", lambda _, command, env: started.append(command))
    monkeypatch.chdir(tmp_path)
    site = ["--client-id", "a", "--data", "a.npz", "--insecure", "--no-site-worker"]
    budget = ["--privacy-budget", "3", "--privacy-ledger", "ledger.json"]
    command = ["flower", "supernode", "--superlink", "h:1", *site]
    out = CliRunner().invoke(app, [*command, *budget])
    assert out.exit_code == 0, out.output
    config = started[0][started[0].index("--node-config") + 1]
    ledger = str((tmp_path / "ledger.json").resolve())
    assert f'privacy-budget="3.0" privacy-ledger="{ledger}"' in config
    refused = CliRunner().invoke(app, [*command, "--privacy-budget", "3"])
    assert refused.exit_code != 0
    assert "--privacy-ledger" in refused.output  # the flag, not the node config key
    assert "node config" not in refused.output
    assert len(started) == 1
