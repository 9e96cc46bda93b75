"""``fedtrees experiment fedgbdt``: the label-skew comparison, quick and small."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from fedtrees.cli import app
from fedtrees.exceptions import ValidationError
from fedtrees.experiments import FedGBDTConfig, run_fedgbdt

GAP = "fedgbdt_accuracy_gap_to_pooled_xgboost.csv"


def test_quick_run_writes_tables_and_plots_and_fedgbdt_tracks_pooled_xgboost(
    tmp_path: Path, readable_plots: list[str], readable_tables: list[str]
) -> None:
    out = CliRunner().invoke(
        app, ["experiment", "fedgbdt", "--quick", "--out", str(tmp_path)]
    )

    assert out.exit_code == 0, out.output
    files = {p.name for p in tmp_path.iterdir()}
    assert {"fedgbdt.md", "fedgbdt_accuracy_credit_default.png",
            "fedgbdt_accuracy_heart.png", GAP} <= files  # fmt: skip
    assert readable_plots == ["accuracy_credit_default", "accuracy_heart"]
    gap = pd.read_csv(tmp_path / GAP, index_col=0)
    skewed = "credit_default alpha=0.1"
    # The pooled model, whatever the skew; the baselines lose most under skew.
    assert gap.loc["FedGBDT"].abs().max() < 1.0, gap
    assert gap.loc["Bagging (Flower-style)", skewed] < -1.0, gap
    assert gap.loc["Cyclic (Flower-style)", skewed] < -1.0, gap
    rounds = pd.read_csv(tmp_path / "fedgbdt_rounds.csv", index_col=0)
    # the agreement, the start, one round per level, the last report
    assert rounds.loc["FedGBDT"].tolist() == [1 + 1 + 10 * 3 + 1] * 3
    assert "Pooled XGBoost" not in rounds.index  # no messages, no row
    assert "nan" not in out.output.lower()


def test_bad_configuration_values_name_the_field() -> None:
    quick = FedGBDTConfig.quick()
    with pytest.raises(ValidationError, match="'datasets' parameter"):
        run_fedgbdt(dataclasses.replace(quick, datasets=("mnist",)))
    with pytest.raises(ValidationError, match="'alphas' parameter"):
        run_fedgbdt(dataclasses.replace(quick, alphas=(0.0,)))
    with pytest.raises(ValidationError, match="'n_clients' parameter"):
        run_fedgbdt(dataclasses.replace(quick, n_clients=1))
