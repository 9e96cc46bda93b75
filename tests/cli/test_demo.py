from __future__ import annotations

import re

import numpy as np
from typer.testing import CliRunner

from fedtrees.cli import app
from fedtrees.experiments import run_demo

HOSPITALS = ["Cleveland", "Hungary", "Switzerland", "Long Beach VA"]


def test_run_demo_compares_fedforest_own_hospitals_and_pooled_rf() -> None:
    result = run_demo(n_estimators=5, random_state=0)
    assert result.sites.index.tolist() == HOSPITALS
    assert result.sites.columns.tolist() == [
        "train rows",
        "train positives",
        "test rows",
        "test positives",
    ]
    assert result.sites["train rows"].tolist() == [199, 172, 30, 85]
    assert result.sites["test rows"].tolist() == [104, 89, 16, 45]
    # Positives split like the rows: train + test = all rows of the site.
    assert result.sites["train positives"].tolist() == [91, 65, 30, 66]
    assert result.sites["test positives"].tolist() == [48, 33, 15, 35]
    assert result.accuracy.index.tolist() == [
        *HOSPITALS,
        "mean of sites",
        "all test rows",
    ]
    assert result.accuracy.columns.tolist() == [
        "FedForest",
        "Own hospital",
        "Pooled RF",
    ]
    values = result.accuracy.to_numpy()
    assert np.all((values >= 0) & (values <= 1))
    assert np.allclose(result.accuracy.iloc[4], result.accuracy.iloc[:4].mean())
    # Deterministic for a seed.
    assert result.accuracy.equals(run_demo(n_estimators=5, random_state=0).accuracy)


def test_demo_trees_have_the_demo_depth_and_bytes_add_up() -> None:
    result = run_demo(n_estimators=3, max_depth=4, random_state=0)
    assert result.max_depth == 4
    assert result.rounds == 1 + 1 + 4  # agreement, the grid, one round per level
    table = result.communication
    assert table.index.tolist() == [
        "agreement",
        "bin grid (once)",
        "histograms",
        "total",
    ]
    assert table.loc["agreement", "messages"] == 4
    assert np.allclose(table.loc["total"], table.iloc[:-1].sum())


def _demo_output(*args: str) -> str:
    out = CliRunner().invoke(app, ["demo", *args], env={"COLUMNS": "80"})
    assert out.exit_code == 0, out.output
    return out.output


def test_demo_command_fits_80_columns_and_prints_integers() -> None:
    output = _demo_output("--trees", "3")
    for name in [*HOSPITALS, "FedForest", "Own hospital", "Pooled RF"]:
        assert name in output
    assert "…" not in output  # no truncated cell
    assert max(len(line) for line in output.splitlines()) <= 80
    assert "What FedForest sent: 8 rounds, " in output
    assert re.search(r"│ Cleveland +│ +199 │ +\d+ │ +104 │ +\d+ │", output)
    assert re.search(r"│ agreement +│ +4 │ +\d+\.\d │ +\d+\.\d │", output)
    assert "codec" in output  # says what the bytes are


def test_demo_command_shows_the_progress_one_line_per_level() -> None:
    output = _demo_output("--trees", "2", "--depth", "2")
    assert "FedForestClassifier round 1 fedforest.grid" in output
    assert "FedForestClassifier level 1: round 2" in output
    assert "FedForestClassifier level 2: round 3" in output
    assert "FedForestClassifier done: 4 rounds" in output


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


def test_datasets_command_lists_both_heart_disease_preparations() -> None:
    out = CliRunner().invoke(app, ["datasets"], env={"COLUMNS": "80"})
    assert out.exit_code == 0, out.output
    assert re.search(r"│ heart_disease +│ +920 │ +13 │ +5 │ +4 │", out.output)
    assert re.search(
        r"│ heart_disease flamby=True +│ +740 │ +13 │ +2 │ +4 │", out.output
    )
    assert "FLamby's preparation" in out.output


def test_bad_option_is_reported_by_the_cli() -> None:
    out = CliRunner().invoke(app, ["demo", "--trees", "0"])
    assert out.exit_code != 0
    assert "trees" in out.output
