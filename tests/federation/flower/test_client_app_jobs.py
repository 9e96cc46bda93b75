"""A job through Flower's ClientApp and the FlowerTransport, in this process.

A Grid stand-in hands every message to the real ClientApp of its node, with a
``Context`` per node whose ``state`` persists between messages as a SuperNode's
does (the ClientApp encodes the kept client state into it after each message and
decodes it before the next). No SuperLink and no processes: the wire, the
state record and ``forget-state-at`` are Flower's path, at in-process speed.
Secure aggregation's private keys live there too: a site that forgets its state
loses its key and drops out.
The real deployments are in ``tests/integration/test_flower.py``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
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
from fedtrees.exceptions import ClientDropoutWarning
from fedtrees.federation import Fault, Federation, Ledger
from fedtrees.federation.flower import FlowerTransport, make_client_app
from fedtrees.federation.flower._clientapp import STATE_RECORD
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

    def __init__(
        self,
        node_configs: Mapping[str, Mapping[str, Any]],
        job: str,
        load_handlers: Callable[[str], None] | None = None,
    ) -> None:
        """``load_handlers(job)``: the ClientApp's loader (default: the registry's)."""
        self.app = make_client_app(load_site_data, load_handlers or _load_handlers)
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


# The sites' secret noise seed (docs/security.md): each node's config holds it, and
# the in-process sites the same, so the DP jobs' noise is the same on both paths.
NOISE_SEED = "6a0c4f2e9b8d7c1a5e3f0b2d4c6a8e1f"


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
    document, _, _ = _run_client_apps(files, job, params, monkeypatch, forget)
    return document


def _run_client_apps(
    files: Mapping[str, Path],
    job: str,
    params: Mapping[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    forget: Mapping[str, str],
) -> tuple[dict[str, Any], Ledger, ClientAppGrid]:
    """The job's document, its ledger and the grid (each node's Context)."""
    for name, value in {"_task_id": 1, "_run_id": 1, "_node_id": 0}.items():
        monkeypatch.setattr(TaskIdentity, name, value)  # as inside a ServerApp
    configs = {
        site: {
            "client-id": site,
            "data-path": str(path),
            "cache-dir": "",
            "noise-seed": NOISE_SEED,
        }
        | ({"forget-state-at": forget[site]} if site in forget else {})
        for site, path in files.items()
    }
    grid = ClientAppGrid(configs, job)
    transport = FlowerTransport(grid, min_clients=len(files))  # type: ignore[arg-type]
    document, ledger = run_job(job, Federation(transport), params)
    return dict(json.loads(json.dumps(document))), ledger, grid


def _in_process(
    files: Mapping[str, Path], job: str, params: Mapping[str, Any]
) -> dict[str, Any]:
    document, _ = _in_process_with_ledger(files, job, params)
    return document


def _in_process_with_ledger(
    files: Mapping[str, Path],
    job: str,
    params: Mapping[str, Any],
    faults: Sequence[Fault] = (),
) -> tuple[dict[str, Any], Ledger]:
    clients = {site: load_client_file(path) for site, path in files.items()}
    federation = Federation.from_clients(
        clients, faults=tuple(faults), noise_seed=int(NOISE_SEED, 16)
    )
    document, ledger = run_job(job, federation, params)
    return dict(json.loads(json.dumps(document))), ledger


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


# -- secure aggregation: the key in context.state ---------------------------------------
COLUMNS = ("age", "chol", "bp")
EDGES = {c: [-1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5] for c in COLUMNS}
RANGES = {c: [-4.0, 4.0] for c in COLUMNS}


@pytest.fixture
def four_sites(tmp_path: Path) -> dict[str, Path]:
    """Four sites of different sizes and class mixes, a few missing values."""
    rng = np.random.default_rng(1)
    files = {}
    sizes = {"Cleveland": 70, "Hungary": 90, "Switzerland": 40, "Long-Beach": 55}
    for k, (site, n) in enumerate(sizes.items()):
        X = pd.DataFrame(rng.normal(0.2 * k, 1.0, size=(n, 3)), columns=COLUMNS)
        y = np.where(X["age"] + 0.5 * X["chol"] > 0.3 * k, "sick", "healthy")
        X = X.mask(rng.random(X.shape) < 0.05)
        files[site] = save_client_file(tmp_path / f"{site}.npz", X, y)
    return files


def _entries(ledger: Ledger) -> list[tuple[Any, ...]]:
    """Who was asked what in which round, the bytes, and whether it was masked."""
    frame = ledger.to_frame()
    columns = ["round", "client", "kind", "bytes_down", "bytes_up", "status", "masked"]
    return sorted(map(tuple, frame[columns].itertuples(index=False)))


def _keys_kept(grid: ClientAppGrid) -> dict[str, bool]:
    """Whether each node's context.state still holds its secure-aggregation key."""
    kept = {}
    for context in grid.contexts.values():
        record = context.state.get(STATE_RECORD)
        assert record is not None
        kept[str(context.node_config["client-id"])] = "federation.secure_key" in record
    return kept


@pytest.mark.parametrize("grid", ["bin_edges", "feature_ranges"])
def test_secure_fedforest_grows_the_same_forest_through_the_client_app(
    four_sites: dict[str, Path], monkeypatch: pytest.MonkeyPatch, grid: str
) -> None:
    # Round 0 the agreement (each site keeps its private key in context.state);
    # with feature_ranges, round 1 sums the fine histograms of the grid; then one
    # masked histogram round per level. Each masked reply is read back from the
    # key the ClientApp decoded from context.state.
    declared = {"bin_edges": EDGES, "feature_ranges": RANGES}[grid]
    params = {"n_estimators": 3, "max_depth": 3, "candidates": "hist",
              "max_bins": 8, "secure_aggregation": True, grid: declared,
              "random_state": 7}  # fmt: skip

    over_flower, ledger, client_apps = _run_client_apps(
        four_sites, "fedforest", params, monkeypatch, forget={}
    )

    expected, in_process = _in_process_with_ledger(four_sites, "fedforest", params)
    assert over_flower["trees"] == expected["trees"]  # bit for bit: whole counts
    assert over_flower == expected  # the rest of the document, ledger totals
    # Message by message the same sizes: a masked vector has the same layout at
    # every site and in both runs (its words differ from run to run, not its size).
    assert _entries(ledger) == _entries(in_process)
    grid_rounds = 1 if grid == "feature_ranges" else 0
    masked = set(range(1, 1 + grid_rounds + params["max_depth"]))
    assert ledger.masked_rounds == masked
    assert over_flower["communication"]["masked_rounds"] == len(masked)
    frame = ledger.to_frame()
    assert frame["masked"].tolist() == (frame["round"] >= 1).tolist()
    assert set(frame["status"]) == {"ok"}
    assert _keys_kept(client_apps) == dict.fromkeys(four_sites, True)


def test_secure_fedgbdt_boosts_the_same_model_through_the_client_app(
    four_sites: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Gradient and hessian sums travel in fixed point (units of 2^-32) in both
    # runs alike, and the masks cancel exactly in Z_2^64: the same bits.
    params = {"n_estimators": 2, "max_depth": 2, "max_bins": 8,
              "secure_aggregation": True, "bin_edges": EDGES,
              "random_state": 7}  # fmt: skip

    over_flower, ledger, client_apps = _run_client_apps(
        four_sites, "fedgbdt", params, monkeypatch, forget={}
    )

    expected, in_process = _in_process_with_ledger(four_sites, "fedgbdt", params)
    assert over_flower["trees"] == expected["trees"]  # same splits, same weights
    assert over_flower["base_margin"] == expected["base_margin"]
    assert over_flower["evals_result"] == expected["evals_result"]
    assert over_flower == expected
    assert _entries(ledger) == _entries(in_process)
    # Every round after the agreement is masked: the start, the levels, the losses.
    rounds = over_flower["communication"]["rounds"]
    assert ledger.masked_rounds == set(range(1, rounds))
    assert over_flower["communication"]["masked_rounds"] == rounds - 1
    assert _keys_kept(client_apps) == dict.fromkeys(four_sites, True)


def test_a_site_that_forgets_its_state_loses_its_key_and_drops_out(
    four_sites: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Hungary's private key, drawn at the agreement, lives in its context.state:
    # it masks round 1 with it. Before round 2 it forgets its state, as a
    # restarted site would, and with it the key: it cannot mask and, with
    # on_dropout="continue", leaves the run there. The survivors reveal their
    # round keys with it (federation.reveal) and the run goes on without it.
    params = {"n_estimators": 3, "max_depth": 3, "candidates": "hist",
              "max_bins": 8, "secure_aggregation": True, "bin_edges": EDGES,
              "on_dropout": "continue", "random_state": 7}  # fmt: skip

    with pytest.warns(ClientDropoutWarning, match="Hungary' lost its secure-agg"):
        over_flower, ledger, client_apps = _run_client_apps(
            four_sites, "fedforest", params, monkeypatch, forget={"Hungary": "2"}
        )

    frame = ledger.to_frame()
    hungary = frame[frame["client"] == "Hungary"]
    assert set(hungary["round"]) == {0, 1, 2}  # not asked after round 2
    assert (hungary["round"] == 2).sum() == 1  # refused at once: no resync asked
    assert hungary[hungary["round"] == 1]["masked"].all()  # masked with its key
    reveals = frame[frame["kind"] == "federation.reveal"]
    assert set(reveals["round"]) == {2}
    assert sorted(reveals["client"]) == sorted(set(four_sites) - {"Hungary"})
    assert over_flower["communication"]["rounds"] == 1 + params["max_depth"]
    assert _keys_kept(client_apps) == {site: site != "Hungary" for site in four_sites}
    # The forest of a run in which Hungary drops out at round 2.
    with pytest.warns(ClientDropoutWarning, match="Client 'Hungary'"):
        expected, _ = _in_process_with_ledger(
            four_sites,
            "fedforest",
            params,
            faults=(Fault("Hungary", "drop", round=2),),
        )
    assert over_flower["trees"] == expected["trees"]
