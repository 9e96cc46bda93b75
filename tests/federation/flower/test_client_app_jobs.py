"""A job through Flower's ClientApp and the FlowerTransport, in this process.

A Grid stand-in hands every message to the real ClientApp of its node, with a
``Context`` per node whose ``state`` persists between messages as a SuperNode's
does (the ClientApp encodes the kept client state into it after each message and
decodes it before the next). No SuperLink and no processes: the wire, the
state record and ``forget-state-at`` are Flower's path, at in-process speed.
The real deployments are in ``tests/integration/test_flower.py``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("flwr")

from flwr.app import Context, Message, Metadata, RecordDict
from flwr.supercore.task_identity import TaskIdentity

from fedtrees.algorithms import run_job
from fedtrees.algorithms.fedga import _handlers as fedga_handlers
from fedtrees.datasets import load_client_file, load_site_data, save_client_file
from fedtrees.federation import Federation
from fedtrees.federation.flower import FlowerTransport, make_client_app
from fedtrees.tree import Tree


@dataclass
class _Reply:
    """What FlowerTransport reads of a Flower reply."""

    reply_to: str
    content: RecordDict

    @property
    def metadata(self) -> object:
        return type("Metadata", (), {"reply_to_message_id": self.reply_to})()

    def has_error(self) -> bool:
        return False


class ClientAppGrid:
    """A Grid whose nodes answer at once with the ClientApp, each in its Context."""

    def __init__(self, node_configs: Mapping[str, Mapping[str, Any]], job: str) -> None:
        self.app = make_client_app(load_site_data, _load_handlers)
        self.contexts = {
            i + 1: Context(
                run_id=1,
                node_id=i + 1,
                node_config=dict(config),
                state=RecordDict(),
                run_config={"job": job},
            )  # type: ignore[arg-type]
            for i, config in enumerate(node_configs.values())
        }
        self.replies: dict[str, _Reply] = {}
        self.pushed = 0

    def get_node_ids(self) -> list[int]:
        return list(self.contexts)

    def push_messages(self, messages: Sequence[Message]) -> list[str]:
        ids = []
        for message in messages:
            self.pushed += 1
            message_id = f"m{self.pushed}"
            node = message.metadata.dst_node_id
            incoming = Message(
                message.content,
                metadata=Metadata(
                    run_id=1,
                    message_id=message_id,
                    src_node_id=0,
                    dst_node_id=node,
                    reply_to_message_id="",
                    group_id="",
                    created_at=time.time(),
                    ttl=60.0,
                    message_type=message.metadata.message_type,
                ),
            )
            reply = self.app(incoming, self.contexts[node])
            self.replies[message_id] = _Reply(message_id, reply.content)
            ids.append(message_id)
        return ids

    def pull_messages(self, message_ids: Sequence[str]) -> list[_Reply]:
        return [self.replies.pop(i) for i in message_ids if i in self.replies]


def _load_handlers(job: str) -> None:
    from fedtrees.algorithms._handlers import load_handlers

    load_handlers(job)


@pytest.fixture
def site_files(tmp_path: Path) -> dict[str, Path]:
    rng = np.random.default_rng(0)
    files = {}
    for site, n in (("Cleveland", 70), ("Hungary", 90)):
        X = pd.DataFrame(rng.normal(size=(n, 3)), columns=["age", "chol", "bp"])
        y = np.where(X["age"] + 0.5 * X["chol"] > 0, "sick", "healthy")
        files[site] = save_client_file(tmp_path / f"{site}.npz", X, y)
    return files


def _over_client_apps(
    files: Mapping[str, Path],
    job: str,
    params: Mapping[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    forget: Mapping[str, str],
) -> dict[str, Any]:
    for name, value in {"_task_id": 1, "_run_id": 1, "_node_id": 0}.items():
        monkeypatch.setattr(TaskIdentity, name, value)  # as inside a ServerApp
    configs = {
        site: {"client-id": site, "data-path": str(path), "cache-dir": ""}
        | ({"forget-state-at": forget[site]} if site in forget else {})
        for site, path in files.items()
    }
    grid = ClientAppGrid(configs, job)
    transport = FlowerTransport(grid, min_clients=len(files))  # type: ignore[arg-type]
    document, _ = run_job(job, Federation(transport), params)
    return dict(json.loads(json.dumps(document)))


def _in_process(
    files: Mapping[str, Path], job: str, params: Mapping[str, Any]
) -> dict[str, Any]:
    clients = {site: load_client_file(path) for site, path in files.items()}
    document, _ = run_job(job, Federation.from_clients(clients), params)
    return dict(json.loads(json.dumps(document)))


def test_fedga_sends_the_same_personal_trees_through_the_client_app(
    site_files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Rounds: 0 agreement, 1 init, 2 local, 3-4 generations, 5 final (each site
    # fits and keeps its tree in context.state), 6 the trees. Hungary forgets
    # its state before round 6: it fits its tree again from the request.
    params = {"n_generations": 2, "population_size": 6, "depth_range": [2, 4],
              "cv_folds": 3, "random_state": 3}  # fmt: skip
    fits: list[str] = []
    fit = fedga_handlers.personal_tree
    monkeypatch.setattr(
        fedga_handlers,
        "personal_tree",
        lambda data, *a, **k: fits.append(data.client_id) or fit(data, *a, **k),
    )

    over_flower = _over_client_apps(
        site_files, "fedga", params, monkeypatch, forget={"Hungary": "6"}
    )

    # Cleveland's tree came back from context.state; Hungary fitted its own again.
    assert sorted(fits) == ["Cleveland", "Hungary", "Hungary"]
    expected = _in_process(site_files, "fedga", params)
    assert sorted(over_flower["trees"]) == ["Cleveland", "Hungary"]
    assert over_flower["trees"] == expected["trees"]  # to_dict() documents
    assert over_flower == expected  # structures, history, spends, ledger totals
    assert over_flower["communication"]["rounds"] == 1 + 3 + 2 + 1
    for document in over_flower["trees"].values():
        assert Tree.from_dict(document).feature_names == ("age", "chol", "bp")
