"""The DP forest experiment: quick runs through the command line, files written."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from fedtrees.cli import app
from fedtrees.exceptions import ValidationError
from fedtrees.experiments import DPForestConfig, run_dpforest


def test_hugadb_quick_run_writes_tables_and_plots(
    tmp_path: Path,
    hugadb_path: Path,
    readable_plots: list[str],
    readable_tables: list[str],
) -> None:
    out = CliRunner().invoke(
        app,
        [
            "experiment",
            "dpforest-hugadb",
            "--data",
            str(hugadb_path),
            "--quick",
            "--out",
            str(tmp_path),
        ],
    )
    assert out.exit_code == 0, out.output
    names = {p.name for p in tmp_path.iterdir()}
    assert {
        "dpforest_hugadb.md",
        "dpforest_hugadb_raw.csv",
        "dpforest_hugadb_accuracy.png",
        "dpforest_hugadb_memorization.png",
        "dpforest_hugadb_local_trees.png",
    } <= names
    raw = pd.read_csv(tmp_path / "dpforest_hugadb_raw.csv")
    assert set(raw.epsilon) == {10.0, 1000.0}
    assert raw.accuracy.between(0, 1).all()
    markdown = (tmp_path / "dpforest_hugadb.md").read_text()
    assert "authors' scripts" in markdown  # the reference figures beside ours
    assert "EMG" in markdown  # range coverage by channel


def test_heart_and_hotel_runs_report_every_setting() -> None:
    for dataset in ("heart_disease", "hotel_ac_iot"):
        config = dataclasses.replace(
            DPForestConfig.quick(dataset),
            epsilons=(100.0,),
            depths=(3,),
            budgets=("paper", "parallel"),
            split_scores=("average", "weighted"),
            memorization_n=(10,),
        )
        report = run_dpforest(config)
        accuracy = report.tables["Accuracy (one repeat)"]
        assert len(accuracy) == 4  # 2 accountings x 2 split scores
        assert report.raw["memorization n=10"].between(0, 1).all()
    assert any("from-data" in note for note in report.notes)  # hotel: no ranges


def test_the_same_config_gives_the_same_tables() -> None:
    # The experiment plays every site: their secret noise seed comes from the
    # config's seed (the noise is the sites' own, never the estimator's seed).
    config = dataclasses.replace(
        DPForestConfig.quick("heart_disease"),
        epsilons=(1.0,),
        depths=(3,),
        memorization_n=(10,),
    )
    first, second = run_dpforest(config).raw, run_dpforest(config).raw
    pd.testing.assert_frame_equal(first, second)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"dataset": "mnist"}, "dataset"),
        ({"dataset": "hugadb", "data": ""}, "data"),
        ({"epsilons": (0.0,)}, "epsilons"),
        ({"depths": (0,)}, "depths"),
        ({"budgets": ("loose",)}, "budgets"),
    ],
)
def test_bad_configuration_values_name_the_field(change: dict, field: str) -> None:
    config = dataclasses.replace(DPForestConfig.quick("heart_disease"), **change)
    with pytest.raises(ValidationError, match=field):
        config.validated()
