"""CSV sites whose categories differ, through Flower's ClientApp, in this process.

The same three CSV sites as ``tests/federation/test_agreement.py`` (a rare value
in two columns, each at one site only), served by the real ClientApp with a
``Context`` per node (``ClientAppGrid``): the agreement takes the union with no
declaration and the job's model equals the in-process one from the same files,
though a site forgets its state (the agreement is kept); with the run's or a
site's opt-out, the undeclared column is refused by name, never its values. The
real deployment is ``tests/integration/test_flower_csv.py``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("flwr")

from flwr.supercore.task_identity import TaskIdentity

from fedtrees.algorithms import run_job
from fedtrees.exceptions import RemoteProtocolError
from fedtrees.federation import Federation, Ledger
from fedtrees.federation.flower import FlowerTransport
from tests.federation.flower.test_client_app_jobs import ClientAppGrid
from tests.federation.test_agreement import (
    RARE_COLOUR,
    RARE_WORKCLASS,
    sites_of,
    write_sites,
)

PARAMS = {"n_estimators": 2, "max_depth": 2, "max_bins": 8, "random_state": 3}


@pytest.fixture
def site_files(tmp_path: Path) -> dict[str, Path]:
    return write_sites(tmp_path)


def over_client_apps(
    files: Mapping[str, Path],
    monkeypatch: pytest.MonkeyPatch,
    *,
    node_config: Mapping[str, Mapping[str, Any]] | None = None,
    run_config: Mapping[str, Any] | None = None,
    federation: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], Ledger]:
    """Run FedGBDT over the ClientApps of the CSV sites: its document and ledger."""
    for name, value in {"_task_id": 1, "_run_id": 1, "_node_id": 0}.items():
        monkeypatch.setattr(TaskIdentity, name, value)  # as inside a ServerApp
    configs = {
        site: {"client-id": site, "data-path": str(path), "cache-dir": ""}
        | dict((node_config or {}).get(site, {}))
        for site, path in files.items()
    }
    grid = ClientAppGrid(configs, "fedgbdt")
    for context in grid.contexts.values():
        context.run_config.update(run_config or {})
    transport = FlowerTransport(grid, min_clients=len(files))  # type: ignore[arg-type]
    document, ledger = run_job(
        "fedgbdt", Federation(transport, **(federation or {})), PARAMS
    )
    return dict(json.loads(json.dumps(document))), ledger


def test_csv_sites_agree_on_the_union_over_the_client_app_as_in_process(
    site_files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # c forgets its run state before rounds 2 and 3: the model must not change,
    # so its agreed coding survived (a cache would have been rebuilt; the coding
    # cannot be: it is kept).
    forget = {"c": {"forget-state-at": "2,3"}}
    over_flower, ledger = over_client_apps(site_files, monkeypatch, node_config=forget)
    in_process, expected_ledger = run_job(
        "fedgbdt", Federation.from_clients(sites_of(site_files)), PARAMS
    )
    expected = json.loads(json.dumps(in_process))
    assert over_flower["trees"] == expected["trees"]
    assert over_flower["categories"] == expected["categories"]
    work = over_flower["feature_names"].index("workclass")
    assert RARE_WORKCLASS in over_flower["categories"][work]
    kinds = [(e.round, e.kind) for e in ledger.entries]
    assert kinds.count((0, "federation.categories")) == 3  # the second step
    assert ledger.summary() == expected_ledger.summary()  # the same bytes


def test_the_run_config_opt_out_refuses_by_column_and_site_not_value(
    site_files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(RemoteProtocolError, match="column 'workclass'") as caught:
        over_client_apps(
            site_files,
            monkeypatch,
            run_config={"require-declared-categories": True},
            federation={"require_declared_categories": True},
        )
    text = str(caught.value)
    assert "Client 'a'" in text
    assert "require_declared_categories" in text
    assert "job.toml" in text
    assert "fedtrees flower categories" in text
    assert RARE_WORKCLASS not in text
    assert "Private" not in text


def test_a_site_that_reports_no_names_needs_the_run_to_declare_them(
    site_files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    quiet = {"b": {"report-categories": False}}
    with pytest.raises(
        RemoteProtocolError, match=r"Client 'b'.*column 'workclass'.*report-categories"
    ) as caught:
        over_client_apps(site_files, monkeypatch, node_config=quiet)
    assert "Private" not in str(caught.value)

    union = {
        "workclass": ["Never-worked", "Private", "Self-emp", "State-gov"],
        "colour": ["blue", "red", RARE_COLOUR],
    }
    declared, _ = over_client_apps(
        site_files,
        monkeypatch,
        node_config=quiet,
        run_config={"categories": json.dumps(union)},
        federation={"categories": union},
    )
    expected, _ = run_job(
        "fedgbdt", Federation.from_clients(sites_of(site_files)), PARAMS
    )
    assert declared["trees"] == json.loads(json.dumps(expected))["trees"]
