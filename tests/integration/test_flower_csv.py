"""Three CSV sites whose categories differ, over real Flower processes (issue 42).

A rare ``workclass`` at one site and a rare ``colour`` at another: with no
declaration the run agrees on the union and grows the model the in-process
federation grows from the same files; with ``require-declared-categories`` it
fails naming the column and the site, never the value. The sites were registered
by name (TLS, SuperNode authentication), and ``fedtrees flower sites`` lists
them online by those names. The same protocol path runs by default in
``tests/federation/flower/test_csv_agreement.py`` (the real ClientApp, in
process) and ``tests/federation/test_agreement.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from fedtrees.algorithms import run_job
from fedtrees.federation import Federation
from fedtrees.federation.flower import list_sites
from tests.federation.test_agreement import RARE_WORKCLASS, sites_of, write_sites
from tests.integration.deployment import CONNECTION, ROUND_TIMEOUT, Deployment

# One deployment (about 30 s to start) and two short runs (5 Flower rounds, then
# one refused at the agreement): more than 30 s of a core, so `slow`.
pytestmark = [pytest.mark.flower, pytest.mark.slow]

PARAMS = {"n_estimators": 1, "max_depth": 2, "max_bins": 8, "random_state": 3}


@pytest.fixture(scope="module")
def csv_sites(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_sites(tmp_path_factory.mktemp("csv-sites"))


@pytest.fixture(scope="module")
def deployment(
    csv_sites: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    with Deployment(
        tmp_path_factory.mktemp("csv"), csv_sites, tls=True, supernode_auth=True
    ) as d:
        yield d


def _submit(deployment: Deployment, out: Path, extra: str = "") -> dict[str, object]:
    config = (
        f"job='fedgbdt' output-path='{out}' min-clients=3 "
        f"round-timeout={ROUND_TIMEOUT} params='{json.dumps(PARAMS)}' {extra}"
    )
    return deployment.wait(deployment.submit(config), output=out)


def test_csv_sites_agree_on_the_union_over_flower_as_in_process(
    deployment: Deployment, csv_sites: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "gbdt.json"
    status = _submit(deployment, out)
    assert status["status"] == "finished:completed", status

    over_flower = json.loads(out.read_text())
    expected, _ = run_job(
        "fedgbdt", Federation.from_clients(sites_of(csv_sites)), PARAMS
    )
    expected = json.loads(json.dumps(expected))
    assert over_flower["trees"] == expected["trees"]
    assert over_flower["categories"] == expected["categories"]
    ledger = out.with_suffix(".ledger.csv").read_text()
    assert ledger.count(",federation.categories,") == 3  # every site was told

    named = {
        s.name: s.status for s in list_sites(CONNECTION, deployment.env["FLWR_HOME"])
    }
    assert named == dict.fromkeys(csv_sites, "online")  # register's names, online


def test_the_opt_out_fails_the_run_naming_the_column_not_the_value(
    deployment: Deployment, tmp_path: Path
) -> None:
    out = tmp_path / "refused.json"
    status = _submit(deployment, out, "require-declared-categories=true")
    assert status["status"] == "finished:failed", status
    details = str(status.get("status-details", "")) + deployment.logs(
        str(status.get("run-id", ""))
    )
    assert "column 'workclass'" in details, details
    assert RARE_WORKCLASS not in details, details
    assert not out.exists()
