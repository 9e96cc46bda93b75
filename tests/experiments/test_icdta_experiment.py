"""The ICDTA4FL experiment: quick run through the command line, fallbacks, config."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import accuracy_score, f1_score
from typer.testing import CliRunner

from fedtrees.cli import app
from fedtrees.exceptions import ValidationError
from fedtrees.experiments import ICDTAConfig, run_icdta
from fedtrees.experiments._icdta_data import load_rows, make_cell
from fedtrees.experiments.icdta import client_scores, n_steps

METHODS = {
    "Baseline (ID3)",
    "ICDTA4FL-ID3",
    "Federated-ID3",
    "Federated-ID3 ε=1",
    "Baseline (CART)",
    "ICDTA4FL-CART",
}


def _small(**change: object) -> ICDTAConfig:
    """Car only, IID, 2 folds: a second or less."""
    base = dataclasses.replace(
        ICDTAConfig.quick(), datasets=("car",), partitions=("iid",), n_clients=(5,)
    )
    return dataclasses.replace(base, **change)


def test_quick_run_writes_tables_raw_csv_markdown_and_plots(
    tmp_path: Path,
    readable_plots: list[str],
    readable_tables: list[str],
) -> None:
    out = CliRunner().invoke(
        app, ["experiment", "icdta", "--quick", "--out", str(tmp_path)]
    )

    assert out.exit_code == 0, out.output
    names = {p.name for p in tmp_path.iterdir()}
    assert {
        "icdta.md",
        "icdta_raw.csv",
        "icdta_shape.csv",
        "icdta_icdta4fl_filter_used.csv",
        "icdta_communication_and_time_per_fit.csv",
        "icdta_accuracy_iid_car.png",
        "icdta_f1_non-iid_nursery.png",
    } <= names
    assert sum(n.startswith("icdta_table_") for n in names) == 4  # Tables 2-5
    raw = pd.read_csv(tmp_path / "icdta_raw.csv")
    assert set(raw["method"]) == METHODS
    assert len(raw) == n_steps(ICDTAConfig.quick()) * len(METHODS)
    assert raw["accuracy"].between(0, 1).all()
    assert raw["f1"].between(0, 1).all()
    markdown = (tmp_path / "icdta.md").read_text()
    assert "(paper 91.75)" in markdown  # Table 2, K=5, ICDTA4FL-ID3, Nursery Acc
    assert "(paper 86.04)" in markdown  # Table 4, K=2, ICDTA4FL-CART, Car Acc
    assert "ICDTA4FL-ID3 > Federated-ID3: paper" in markdown
    assert "Shape departs (" in markdown or "agree with the paper's" in markdown


def test_rule_explosion_falls_back_to_a_stricter_filter_and_is_recorded() -> None:
    config = _small(methods=("icdta-id3",), max_rules=60)

    report = run_icdta(config)

    fits = report.raw[report.raw["method"] == "ICDTA4FL-ID3"]
    assert (fits["filter"] != "mean").all()  # the mean filter's product is > 60
    assert (fits["rules"] <= 60).all()
    assert (fits["attempts"] > 1).all()
    assert report.raw["accuracy"].between(0, 1).all()
    table = report.tables["ICDTA4FL filter used (fits per filter)"]
    assert table.loc["car / ICDTA4FL-ID3", "settings with a fallback"] == "iid K=5"


def test_a_run_completes_when_no_filter_fits_and_reports_it() -> None:
    report = run_icdta(_small(methods=("icdta-cart",), max_rules=1))

    assert set(report.raw["filter"]) == {"exceeded"}
    assert report.raw["accuracy"].isna().all()
    table = report.tables["ICDTA4FL filter used (fits per filter)"]
    assert table.loc["car / ICDTA4FL-CART", "exceeded"] == 2  # both folds
    assert any("Rule explosion" in note for note in report.notes)


def test_same_config_gives_the_same_raw_results() -> None:
    config = _small(partitions=("non-iid",), n_clients=(2, 5))

    first, second = run_icdta(config).raw, run_icdta(config).raw

    pd.testing.assert_frame_equal(
        first.drop(columns="seconds"), second.drop(columns="seconds")
    )


def test_client_scores_equal_scikit_learn_per_client() -> None:
    rng = np.random.default_rng(0)
    clients = np.repeat(["a", "b", "c"], [30, 7, 13])
    truth = rng.choice(["x", "y", "z", "w"], size=50, p=[0.5, 0.3, 0.15, 0.05])
    predicted = np.where(rng.random(50) < 0.6, truth, rng.choice(["x", "y"], 50))

    accuracy, f1 = client_scores(truth, predicted, clients)

    for i, client in enumerate(["a", "b", "c"]):
        mine = clients == client
        assert accuracy[i] == pytest.approx(
            accuracy_score(truth[mine], predicted[mine])
        )
        expected = f1_score(
            truth[mine], predicted[mine], average="macro", zero_division=0
        )
        assert f1[i] == pytest.approx(expected)


def test_non_iid_cells_give_every_client_min_rows_even_where_dirichlet_cannot() -> None:
    config = dataclasses.replace(ICDTAConfig(), n_folds=10)
    data = load_rows(config, "car")

    cell = make_cell(config, data, "car", "non-iid", 50)  # 1000 draws fail here

    assert cell.keys["floored"]
    assert cell.keys["min_client_rows"] >= config.min_rows
    rows = np.concatenate([np.concatenate(folds[0]) for folds in cell.folds])
    assert np.array_equal(np.sort(rows), np.arange(len(data[1])))


def test_clients_too_small_for_the_folds_name_the_setting() -> None:
    config = _small(max_rows=40, n_folds=10, n_clients=(5,))

    with pytest.raises(ValidationError, match="'n_clients' parameter"):
        run_icdta(config)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"datasets": ("iris",)}, "datasets"),
        ({"datasets": ()}, "datasets"),
        ({"n_clients": (1,)}, "n_clients"),
        ({"partitions": ("skewed",)}, "partitions"),
        ({"n_folds": 1}, "n_folds"),
        ({"epsilons": (0.0,)}, "epsilons"),
        ({"methods": ("xgboost",)}, "methods"),
        ({"methods": ("fedid3-dp",)}, "methods"),
        ({"filter_fallbacks": ("best",)}, "filter_fallbacks"),
        ({"max_rules": 0}, "max_rules"),
        ({"dirichlet_alpha": 0.0}, "dirichlet_alpha"),
        ({"min_rows": 1}, "min_rows"),
        ({"seed": -1}, "seed"),
        ({"max_rows": 0}, "max_rows"),
    ],
)
def test_bad_configuration_values_name_the_field(change: dict, field: str) -> None:
    config = dataclasses.replace(ICDTAConfig.quick(), **change)
    with pytest.raises(ValidationError, match=f"'{field}' parameter"):
        config.validated()


def test_config_file_overrides_fields(tmp_path: Path) -> None:
    toml = tmp_path / "icdta.toml"
    toml.write_text(
        'datasets = ["car"]\npartitions = ["iid"]\nn_clients = [2]\n'
        'methods = ["icdta-cart"]\n'
    )

    out = CliRunner().invoke(
        app,
        [
            "experiment",
            "icdta",
            "--quick",
            "--out",
            str(tmp_path),
            "--config",
            str(toml),
        ],
    )

    assert out.exit_code == 0, out.output
    raw = pd.read_csv(tmp_path / "icdta_raw.csv")
    assert set(raw["method"]) == {"Baseline (CART)", "ICDTA4FL-CART"}
    assert set(raw["dataset"]) == {"car"}
    assert set(raw["n_clients"]) == {2}
