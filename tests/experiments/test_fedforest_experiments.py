"""The FedForest experiments: quick runs through the command line, files written."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from fedtrees.cli import app
from fedtrees.exceptions import ValidationError
from fedtrees.experiments import (
    HeartConfig,
    SyntheticConfig,
    run_fedforest_heart,
    run_fedforest_synthetic,
)
from fedtrees.experiments.fedforest_synthetic import fisher_codes


def test_synthetic_quick_run_writes_tables_csv_markdown_and_plots(
    tmp_path: Path,
    readable_plots: list[str],
    readable_tables: list[str],
) -> None:
    out = CliRunner().invoke(
        app, ["experiment", "fedforest-synthetic", "--quick", "--out", str(tmp_path)]
    )

    assert out.exit_code == 0, out.output
    assert "Test MSE, main settings" in out.output
    names = {p.name for p in tmp_path.iterdir()}
    assert {
        "fedforest_synthetic.md",
        "fedforest_synthetic_raw.csv",
        "fedforest_synthetic_main.png",
        "fedforest_synthetic_disjoint.png",
        "fedforest_synthetic_overlapping.png",
    } <= names
    raw = pd.read_csv(tmp_path / "fedforest_synthetic_raw.csv")
    assert set(raw.scenario) == {
        "homogeneous",
        "covariate_shift",
        "outcome_shift",
        "disjoint δ=0",
        "disjoint δ=5",
        "overlapping δ=0",
        "overlapping δ=5",
    }
    assert raw.mse.gt(0).all()
    assert (tmp_path / "fedforest_synthetic_main.png").read_bytes()[:4] == b"\x89PNG"


def test_synthetic_runs_h_methods_only_where_clients_differ_in_outcome() -> None:
    config = dataclasses.replace(
        SyntheticConfig.quick(),
        n_estimators=3,
        max_depth=3,
        deltas=(5.0,),
        settings=("outcome_shift",),
    )
    report = run_fedforest_synthetic(config)
    main = report.tables["Test MSE, main settings"]
    disjoint = report.tables["Test MSE, D.1.1 disjoint supports"]

    assert "FedForest quantiles (X,H)" in main.index
    assert "FedForest quantiles (X,H)" not in disjoint.index
    mse = report.raw.set_index(["scenario", "method"]).mse
    # Outcome shift: only models that may split on the client see the offsets b_k.
    assert (
        mse["outcome_shift", "FedForest quantiles (X,H)"]
        < 0.5 * mse["outcome_shift", "FedForest quantiles (X)"]
    )


def test_fisher_codes_rank_clients_by_mean_response() -> None:
    groups = np.array([0, 0, 1, 1, 2, 2])
    y = np.array([5.0, 5.0, -1.0, -1.0, 2.0, 2.0])
    assert fisher_codes(groups, y).tolist() == [2.0, 0.0, 1.0]


def test_heart_quick_run_reports_sites_mean_pooled_and_flamby(
    tmp_path: Path,
    readable_plots: list[str],
    readable_tables: list[str],
) -> None:
    out = CliRunner().invoke(
        app, ["experiment", "fedforest-heart", "--quick", "--out", str(tmp_path)]
    )

    assert out.exit_code == 0, out.output
    assert "FedAvg logistic regression (FLamby)" in out.output
    table = pd.read_csv(tmp_path / "fedforest_heart_accuracy.csv", index_col=0)
    assert list(table.columns) == [
        "Cleveland",
        "Hungary",
        "Switzerland",
        "Long Beach VA",
        "mean of sites",
        "pooled",
    ]
    assert table.loc["FedForest quantiles", "pooled"] > 0.7
    assert {"fedforest_heart_accuracy.png", "fedforest_heart_sites.png"} <= {
        p.name for p in tmp_path.iterdir()
    }
    assert readable_plots == ["accuracy", "sites"]  # both checked for overlaps
    # One repeat: no column of sd zeros, no NaN rows, rounds as integers.
    assert "sd over repeats" not in out.output
    assert "nan" not in out.output.lower()
    cost = pd.read_csv(tmp_path / "fedforest_heart_communication.csv", index_col=0)
    assert cost.loc["FedForest quantiles", "rounds"] == 35
    assert "Centralized RF (pooled rows)" not in cost.index
    assert re.search(r"FedForest quantiles +│ +35 │", out.output), out.output
    assert "35.0" not in out.output
    markdown = (tmp_path / "fedforest_heart.md").read_text()
    assert "| FedForest quantiles | 35 |" in markdown
    assert "No messages, so no communication row: Local learning" in markdown
    # FLamby's published figures and our own pooled forest, each labelled as such
    reference = pd.read_csv(
        tmp_path / "fedforest_heart_reference_accuracies.csv", index_col=0
    )
    labels = list(reference.index)
    assert sum(label.endswith("(FLamby)") for label in labels) == 4
    assert [label for label in labels if "RF" in label] == [
        "Pooled scikit-learn RF, 100 trees (ours, not FLamby's: docs/fedforest.md)"
    ]
    assert "Published (FLamby)" not in out.output


def test_heart_mean_of_sites_is_the_mean_of_the_four_sites() -> None:
    config = HeartConfig(n_repeats=1, n_estimators=3, methods=("centralized",))
    table = run_fedforest_heart(config).tables["Accuracy (mean over repeats)"]
    row = table.loc["Centralized RF (pooled rows)"]
    sites = row[["Cleveland", "Hungary", "Switzerland", "Long Beach VA"]]
    assert row["mean of sites"] == pytest.approx(sites.mean(), abs=1e-3)


def test_config_file_overrides_fields_and_unknown_keys_are_named(
    tmp_path: Path,
) -> None:
    good = tmp_path / "good.toml"
    good.write_text('n_estimators = 2\nmethods = ["centralized"]\n')
    bad = tmp_path / "bad.toml"
    bad.write_text("n_trees = 2\n")
    run = CliRunner().invoke
    base = ["experiment", "fedforest-heart", "--quick", "--out", str(tmp_path)]

    ok = run(app, [*base, "--config", str(good)])
    wrong = run(app, [*base, "--config", str(bad)])

    assert ok.exit_code == 0, ok.output
    assert "Centralized RF" in ok.output
    assert "FedForest quantiles" not in ok.output
    assert wrong.exit_code != 0
    assert "n_trees" in wrong.output


def test_bad_configuration_values_name_the_field() -> None:
    with pytest.raises(ValidationError, match="'n_draws' parameter"):
        run_fedforest_synthetic(SyntheticConfig(n_draws=0))
    with pytest.raises(ValidationError, match="'methods' parameter"):
        run_fedforest_heart(HeartConfig(methods=("xgboost",)))
