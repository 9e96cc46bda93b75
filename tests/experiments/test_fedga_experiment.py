"""The FedGA-Tree experiment: a quick run through the command line, files written."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from fedtrees.cli import app
from fedtrees.exceptions import ValidationError
from fedtrees.experiments import FedGAConfig, Report, run_fedga

MAIN = "Δ per dataset vs the local trees (main run)"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    empty = tmp_path_factory.mktemp("no_fedga_data")  # abalone: skipped
    return run_fedga(FedGAConfig.quick(str(empty)))


def test_quick_cli_run_writes_tables_and_plots(
    tmp_path: Path,
    readable_plots: list[str],
    readable_tables: list[str],
) -> None:
    empty = tmp_path / "data"
    empty.mkdir()
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        ["experiment", "fedga", "--quick", "--data", str(empty), "--out", str(out)],
    )
    assert result.exit_code == 0, result.output
    names = {p.name for p in out.iterdir()}
    assert {
        "fedga.md",
        "fedga_raw.csv",
        "fedga_delta_classification.png",
        "fedga_improved.png",
        "fedga_decision_nodes.png",
        "fedga_edit_distance.png",
    } <= names
    markdown = (out / "fedga.md").read_text()
    assert "5.58" in markdown  # the paper's headline beside ours
    assert "-2.58" in markdown
    assert "Skipped abalone" in markdown  # absent data: a note, no crash
    raw = pd.read_csv(out / "fedga_raw.csv")
    assert set(raw["method"]) == {"FedGA", "centralized", "IBM tree"}
    assert raw["score"].between(0, 1).all()


def test_delta_is_the_formula_on_the_raw_rows(report: Report) -> None:
    raw = report.raw[report.raw["study"] == "main"]
    table = report.tables[MAIN]
    for (dataset, method), rows in raw.groupby(["dataset", "method"]):
        expected = np.mean((rows["score"] / rows["score_local"] - 1.0) * 100.0)
        improved = np.mean(rows["score"] > rows["score_local"])
        line = table.loc[f"{dataset} / {method}"]
        assert line["Δ (%)"] == pytest.approx(expected, abs=0.005)
        assert line["improved (%)"] == pytest.approx(100 * improved, abs=0.05)


def test_structures_and_sweep_are_reported(report: Report) -> None:
    fedga = report.raw[report.raw["method"] == "FedGA"]
    assert fedga["edit_distance"].between(0, 1).all()
    assert (fedga["decision_nodes"] >= 1).all()
    sweep = report.tables["Sweeps: FedGA over N and c"]
    assert list(sweep.index) == ["nursery / 5 / 1.0"]
    headline = report.tables[
        "Headline: mean over classification datasets, beside the paper"
    ]
    assert headline.loc["classification / FedGA", "paper Δ F1 (%)"] == 5.58


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"classification": ("mnist",)}, "classification"),
        ({"regression": ("nursery",)}, "regression"),
        ({"n_clients": 1}, "n_clients"),
        ({"sweep_fractions": (0.0,)}, "client_fraction"),
        ({"depth_range": (5, 2)}, "depth_range"),
    ],
)
def test_bad_configuration_values_name_the_field(change: dict, field: str) -> None:
    config = dataclasses.replace(FedGAConfig.quick(), **change)
    with pytest.raises(ValidationError, match=field):
        config.validated()
