"""Real Flower processes on 127.0.0.1: the same result as in process, and clean failures."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fedtrees
from fedtrees import datasets
from fedtrees.algorithms import run_job
from fedtrees.exceptions import ClientDropoutWarning
from fedtrees.federation import Fault, Federation
from tests.integration.deployment import ROUND_TIMEOUT, Deployment

pytestmark = pytest.mark.flower

SITES = ("Cleveland", "Hungary", "Long Beach VA")
HEART_EDGES = {
    "age": [45.0, 55.0, 65.0],
    "trestbps": [120.0, 140.0],
    "chol": [200.0, 250.0],
    "thalach": [120.0, 150.0],
    "oldpeak": [0.5, 1.5],
    **{c: [0.5] for c in ("sex", "fbs", "exang", "cp_2", "cp_3", "cp_4")},
    **{c: [0.5] for c in ("restecg_1", "restecg_2")},
}
# The sites' secret noise seed (docs/security.md): every SuperNode's node config
# holds it and the in-process sites the same, so the DP jobs draw the same noise.
NOISE_SEED = "9d2b7e4a1c6f0385b7e2d9a4c1f6083e"


@pytest.fixture(scope="module")
def site_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("sites")
    heart = datasets.load("heart_disease", flamby=True).train()
    files = {}
    for site in SITES:
        rows = (heart.clients == site).to_numpy()
        files[site.replace(" ", "-")] = datasets.save_client_file(
            folder / f"{site}.npz", heart.X[rows].reset_index(drop=True), heart.y[rows]
        )
    return files


def _in_process(
    files: dict[str, Path], job: str, params: dict[str, object]
) -> dict[str, object]:
    clients = {name: datasets.load_client_file(path) for name, path in files.items()}
    federation = Federation.from_clients(clients, noise_seed=int(NOISE_SEED, 16))
    document, _ = run_job(job, federation, params)
    return json.loads(json.dumps(document))


@pytest.fixture(scope="module")
def tls_deployment(
    site_files: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    # Cleveland forgets its per-run state before rounds 2 and 4, as a restarted
    # site would: stateful protocols must resync it and give the same result.
    forget = {"Cleveland": {"forget-state-at": "2,4"}}
    node_config = {
        site: {"noise-seed": NOISE_SEED, **forget.get(site, {})} for site in site_files
    }
    # SuperNode authentication: the three sites' keys are registered; a fourth
    # SuperNode, with a key of its own that nobody registered, must be refused.
    with Deployment(
        tmp_path_factory.mktemp("tls"),
        site_files,
        tls=True,
        node_config=node_config,
        supernode_auth=True,
        strangers={"Stranger": site_files["Cleveland"]},
    ) as d:
        yield d


def _run_over_flower(
    deployment: Deployment, out: Path, job: str, params: dict[str, object]
) -> dict[str, object]:
    config = (
        f"job='{job}' output-path='{out}' min-clients=3 "
        f"round-timeout={ROUND_TIMEOUT} params='{json.dumps(params)}'"
    )
    status = deployment.wait(deployment.submit(config), output=out)
    assert status["status"] == "finished:completed", status
    return dict(json.loads(out.read_text()))


def test_toy_protocol_gives_the_same_result_over_flower_with_tls(
    tls_deployment: Deployment, site_files: dict[str, Path], tmp_path: Path
) -> None:
    params = {"feature": 0, "n_bins": 4, "n_rounds": 1, "initial": [45.0, 55.0, 65.0]}
    out = tmp_path / "result.json"

    over_flower = _run_over_flower(tls_deployment, out, "toy", params)

    assert over_flower == _in_process(site_files, "toy", params)  # result and bytes
    assert over_flower["communication"]["rounds"] == 3  # type: ignore[index]
    ledger = out.with_suffix(".ledger.csv").read_text().splitlines()
    assert ledger[0].startswith("round,client,kind,bytes_down,bytes_up")
    assert len(ledger) == 1 + 3 * 3  # the three registered sites, not the stranger
    assert not any(",Stranger," in line for line in ledger)


@pytest.mark.hostile("clear_error")
def test_an_unregistered_supernode_is_refused_by_the_superlink(
    tls_deployment: Deployment, site_files: dict[str, Path]
) -> None:
    # Flower 1.41 and 1.42: the SuperLink answers its activation with 412 "Failed to
    # activate SuperNode" and the SuperNode exits (code 305 in its log).
    refusal = tls_deployment.refusal("Stranger")
    assert not refusal.startswith("exit code 0\n"), refusal
    assert "Failed to activate SuperNode" in refusal, refusal
    registered = [tls_deployment.nodes[site] for site in site_files]
    assert all(node.poll() is None for node in registered)  # still serving


@pytest.mark.slow  # ~100 s; the docs' recipe test checks the same equality by default
def test_fedforest_grows_the_same_forest_over_flower(
    tls_deployment: Deployment, site_files: dict[str, Path], tmp_path: Path
) -> None:
    params = {"n_estimators": 4, "max_depth": 2, "candidates": "quantile",
              "n_quantiles": 8, "random_state": 7}  # fmt: skip

    over_flower = _run_over_flower(
        tls_deployment, tmp_path / "forest.json", "fedforest", params
    )

    expected = _in_process(site_files, "fedforest", params)
    assert over_flower["trees"] == expected["trees"]  # same splits, values, counts
    assert over_flower["communication"]["rounds"] == 1 + 2 * 2  # type: ignore[index]
    # Cleveland lost its state before rounds 2 and 4: it asked for a resync and
    # was sent the full forest, in the same round (two exchanges there).
    ledger = (tmp_path / "forest.ledger.csv").read_text().splitlines()[1:]
    cleveland = [line.split(",")[0] for line in ledger if ",Cleveland," in line]
    assert sorted(cleveland) == ["0", "1", "2", "2", "3", "4", "4"]
    flower_bytes = over_flower["communication"]["bytes_down"]  # type: ignore[index]
    assert flower_bytes > expected["communication"]["bytes_down"]  # type: ignore[index]

    # One site per tree: every level folds its sketch and evaluation into one
    # round (fedforest.sketch_evaluate), over Flower as in process.
    alone = {**params, "client_fraction": 0.34, "max_depth": 3}
    folded = _run_over_flower(
        tls_deployment, tmp_path / "alone.json", "fedforest", alone
    )
    assert folded["trees"] == _in_process(site_files, "fedforest", alone)["trees"]
    assert folded["communication"]["rounds"] == 1 + 3  # type: ignore[index]
    kinds = (tmp_path / "alone.ledger.csv").read_text()
    assert "fedforest.sketch_evaluate" in kinds
    assert "fedforest.evaluate" not in kinds


@pytest.mark.slow  # ~75 s; the docs' recipe test grows a hist forest by default
def test_fedforest_hist_grows_the_same_forest_over_flower(
    tls_deployment: Deployment, site_files: dict[str, Path], tmp_path: Path
) -> None:
    # The grid round, then one histogram round per level. Cleveland forgets its
    # state (its binned columns and row partition) before levels 0 and 2.
    params = {"n_estimators": 3, "max_depth": 3, "candidates": "hist",
              "max_bins": 16, "random_state": 7}  # fmt: skip

    over_flower = _run_over_flower(
        tls_deployment, tmp_path / "hist.json", "fedforest", params
    )

    expected = _in_process(site_files, "fedforest", params)
    assert over_flower["trees"] == expected["trees"]
    assert over_flower["communication"]["rounds"] == 1 + 1 + 3  # type: ignore[index]
    ledger = (tmp_path / "hist.ledger.csv").read_text().splitlines()[1:]
    kinds = {line.split(",")[2] for line in ledger}
    assert kinds == {"federation.schema", "fedforest.grid", "fedforest.histogram"}
    cleveland = [line.split(",")[0] for line in ledger if ",Cleveland," in line]
    assert sorted(cleveland) == ["0", "1", "2", "2", "3", "4", "4"]  # resynced


ONE_SHOT_JOBS = {
    "icdta": {"base": "cart", "max_depth": 3, "random_state": 3},
    "federated-id3": {
        "epsilon": 2.0,
        "max_depth": 2,
        "binary": True,
        "bin_edges": HEART_EDGES,  # declared: DP refuses the sketch round
        "random_state": 3,
    },
    "synthetic": {"global_max_depth": 4, "samples_per_path": 20, "random_state": 3},
}


@pytest.mark.parametrize(
    "job",
    [
        "icdta",  # one method of the one-shot family by default, the others slow
        pytest.param("federated-id3", marks=pytest.mark.slow),
        pytest.param("synthetic", marks=pytest.mark.slow),
    ],
)
def test_one_shot_tree_methods_give_the_same_trees_over_flower(
    tls_deployment: Deployment, site_files: dict[str, Path], tmp_path: Path, job: str
) -> None:
    params = ONE_SHOT_JOBS[job]
    over_flower = _run_over_flower(
        tls_deployment, tmp_path / f"{job}.json", job, params
    )

    expected = _in_process(site_files, job, params)
    assert over_flower["tree"] == expected["tree"], job  # same splits and noise
    assert over_flower == expected, job  # kept trees, spends and ledger totals


def test_fedgbdt_boosts_the_same_model_over_flower(
    tls_deployment: Deployment, site_files: dict[str, Path], tmp_path: Path
) -> None:
    # The start round (1), one histogram round per level (2, 3), the last report
    # (4). Cleveland forgets its per-run state (codes, raw scores) before rounds 2
    # and 4. Round 2's request carries the grid (every site's first level), so it
    # rebuilds from that; at round 4 it asks for a resync (two exchanges there).
    params = {"n_estimators": 1, "max_depth": 2, "max_bins": 16, "random_state": 7}

    over_flower = _run_over_flower(
        tls_deployment, tmp_path / "gbdt.json", "fedgbdt", params
    )

    expected = _in_process(site_files, "fedgbdt", params)
    assert over_flower["trees"] == expected["trees"]  # same splits, same weights
    # The written document loads as the estimator fit grows in process.
    model = fedtrees.load(tmp_path / "gbdt.json")
    sites = [datasets.load_client_file(path) for path in site_files.values()]
    X = pd.concat([site[0] for site in sites], ignore_index=True)
    y = np.concatenate([site[1] for site in sites])
    groups = np.repeat(list(site_files), [len(site[1]) for site in sites])
    fitted = fedtrees.FedGBDTClassifier(**params).fit(X, y, groups=groups)
    np.testing.assert_array_equal(model.predict_proba(X), fitted.predict_proba(X))
    assert model.score(X, y) == fitted.score(X, y)
    assert over_flower["base_margin"] == expected["base_margin"]
    assert over_flower["evals_result"] == expected["evals_result"]
    rounds = over_flower["communication"]["rounds"]  # type: ignore[index]
    assert rounds == expected["communication"]["rounds"]  # type: ignore[index]
    ledger = (tmp_path / "gbdt.ledger.csv").read_text().splitlines()[1:]
    cleveland = [line.split(",")[0] for line in ledger if ",Cleveland," in line]
    assert sorted({r for r in cleveland if cleveland.count(r) > 1}) == ["4"]


@pytest.mark.slow  # 7 Flower rounds, about 80 s: run with `pytest -m slow`; the
# same job through the ClientApp in process runs by default
# (tests/federation/flower/test_client_app_jobs.py)
def test_fedga_evolves_the_same_structures_and_trees_over_flower(
    tls_deployment: Deployment, site_files: dict[str, Path], tmp_path: Path
) -> None:
    params = {
        "n_generations": 2,
        "population_size": 6,
        "depth_range": [2, 4],
        "cv_folds": 3,
        "random_state": 3,
    }
    over_flower = _run_over_flower(
        tls_deployment, tmp_path / "fedga.json", "fedga", params
    )

    expected = _in_process(site_files, "fedga", params)
    assert over_flower["structures"] == expected["structures"]  # same evolution
    # The sites' personal trees, kept in context.state and sent in the last round.
    assert sorted(over_flower["trees"]) == sorted(site_files)  # type: ignore[call-overload]
    assert over_flower["trees"] == expected["trees"]
    assert over_flower == expected  # history, spends and ledger totals
    assert over_flower["communication"]["rounds"] == 1 + 3 + 2 + 1  # type: ignore[index]


@pytest.mark.slow  # its own deployment, and a minute for Flower to see the kill
def test_fedforest_hist_continues_past_a_killed_supernode_as_in_process(
    site_files: dict[str, Path], tmp_path: Path
) -> None:
    # on_dropout="continue": Hungary is killed mid-run; its first unanswered round
    # is a dropout, and the forest equals the in-process run where it drops there.
    params = {"n_estimators": 3, "max_depth": 5, "candidates": "hist",
              "max_bins": 16, "on_dropout": "continue", "random_state": 7}  # fmt: skip
    out = tmp_path / "hist.json"
    config = (
        f"job='fedforest' output-path='{out}' min-clients=3 "
        f"round-timeout={ROUND_TIMEOUT} params='{json.dumps(params)}'"
    )
    with Deployment(tmp_path, site_files, tls=False) as deployment:
        run_id = deployment.submit(config)
        deployment.wait_for_log(run_id, "fedtrees round 2 ")
        deployment.kill("Hungary")
        status = deployment.wait(run_id, output=out)
    assert status["status"] == "finished:completed", status
    over_flower = json.loads(out.read_text())

    ledger = pd.read_csv(out.with_suffix(".ledger.csv"))  # columns by name
    hungary = ledger[ledger["client"] == "Hungary"]
    [dropped] = hungary.loc[hungary["status"] != "ok", "round"].tolist()
    assert dropped >= 2  # killed after round 2 began, before the run ended
    assert hungary["round"].max() == dropped  # never asked again
    clients = {
        name: datasets.load_client_file(path) for name, path in site_files.items()
    }
    fed = Federation.from_clients(
        clients, faults=(Fault("Hungary", "drop", round=dropped),)
    )
    with pytest.warns(ClientDropoutWarning, match="Client 'Hungary'"):
        document, _ = run_job("fedforest", fed, params)
    expected = json.loads(json.dumps(document))
    assert over_flower["trees"] == expected["trees"]
    assert over_flower["communication"]["rounds"] == expected["communication"]["rounds"]


@pytest.mark.slow  # its own deployment, and a minute for Flower to see the kill
def test_a_killed_supernode_fails_the_run_clearly_before_the_round_timeout(
    site_files: dict[str, Path], tmp_path: Path
) -> None:
    params = {"n_bins": 3, "n_rounds": 40}
    config = (
        f"job='toy' output-path='{tmp_path / 'r.json'}' min-clients=3 "
        f"round-timeout={ROUND_TIMEOUT} params='{json.dumps(params)}'"
    )
    with Deployment(tmp_path, site_files, tls=False) as deployment:
        run_id = deployment.submit(config)
        deployment.wait_for_log(run_id, "fedtrees round 2 ")
        deployment.kill("Hungary")
        killed = time.monotonic()
        status = deployment.wait(run_id)
        elapsed = time.monotonic() - killed
    assert status["status"] == "finished:failed", status
    details = str(status.get("status-details"))
    assert "Client 'Hungary'" in details, details
    assert "round" in details
    # Its heartbeats stopped: Flower reports it offline within about a minute
    # (two missed 30 s heartbeats), not after the round's timeout.
    assert elapsed < ROUND_TIMEOUT
    assert not (tmp_path / "r.json").exists()


@pytest.mark.slow  # its own TLS deployment: about 1 min
def test_secure_fedforest_grows_the_same_forest_over_flower(
    site_files: dict[str, Path], tmp_path: Path
) -> None:
    # Secure aggregation: each SuperNode keeps its private X25519 key, drawn at
    # the agreement, in its context.state (a new ClientApp process per message)
    # and masks every level's dense histograms with it. No site forgets its
    # state here: one that did would lose its key and drop out.
    params = {"n_estimators": 3, "max_depth": 3, "candidates": "hist",
              "max_bins": 16, "secure_aggregation": True,
              "bin_edges": HEART_EDGES, "random_state": 7}  # fmt: skip
    out = tmp_path / "secure.json"

    with Deployment(tmp_path / "deploy", site_files, tls=True) as deployment:
        over_flower = _run_over_flower(deployment, out, "fedforest", params)

    expected = _in_process(site_files, "fedforest", params)
    assert over_flower["trees"] == expected["trees"]  # bit for bit: whole counts
    assert over_flower == expected  # ledger totals: masked sizes do not vary
    communication = over_flower["communication"]
    assert communication["rounds"] == 1 + 3  # type: ignore[index]
    assert communication["masked_rounds"] == 3  # type: ignore[index]
    ledger = pd.read_csv(out.with_suffix(".ledger.csv"))
    assert set(ledger["status"]) == {"ok"}
    assert ledger["masked"].tolist() == (ledger["round"] >= 1).tolist()
    assert set(ledger["kind"]) == {"federation.schema", "fedforest.histogram"}
