from __future__ import annotations

import numpy as np
from typer.testing import CliRunner

from fedtrees.cli import app
from fedtrees.experiments import run_demo

HOSPITALS = ["Cleveland", "Hungary", "Switzerland", "Long Beach VA"]


def test_run_demo_compares_fedforest_local_models_and_centralized() -> None:
    result = run_demo(n_estimators=5, random_state=0)
    assert result.sites.index.tolist() == HOSPITALS
    assert result.sites["train rows"].tolist() == [199, 172, 30, 85]
    assert result.sites["test rows"].tolist() == [104, 89, 16, 45]
    assert result.sites["positives"].tolist() == [139, 98, 45, 101]
    assert result.accuracy.index.tolist() == [
        "FedForest quantiles",
        *(f"Local learning ({h})" for h in sorted(HOSPITALS)),
        "Centralized RF (pooled rows)",
    ]
    assert list(result.accuracy.columns) == [*HOSPITALS, "mean of sites", "pooled"]
    values = result.accuracy.to_numpy()
    assert np.all((values >= 0) & (values <= 1))
    assert result.communication.index.tolist() == ["FedForest quantiles"]
    # Deterministic for a seed.
    assert result.accuracy.equals(run_demo(n_estimators=5, random_state=0).accuracy)


def test_demo_command_prints_the_comparison() -> None:
    out = CliRunner().invoke(app, ["demo", "--trees", "3"])
    assert out.exit_code == 0, out.output
    for name in HOSPITALS:
        assert name in out.output
    assert "FedForest quantiles" in out.output
    assert "Centralized RF" in out.output


def test_datasets_command_lists_bundled_data() -> None:
    out = CliRunner().invoke(app, ["datasets"])
    assert out.exit_code == 0, out.output
    for name in (
        "heart_disease",
        "adult",
        "nursery",
        "car",
        "credit_default",
        "hotel_ac_iot",
    ):
        assert name in out.output


def test_bad_option_is_reported_by_the_cli() -> None:
    out = CliRunner().invoke(app, ["demo", "--trees", "0"])
    assert out.exit_code != 0
    assert "trees" in out.output
