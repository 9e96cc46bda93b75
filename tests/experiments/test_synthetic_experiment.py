"""The one-shot synthetic-data experiment: quick CLI run, splits, FedAvg reading."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from fedtrees.algorithms import FedAvgClassifier
from fedtrees.cli import app
from fedtrees.exceptions import ValidationError
from fedtrees.experiments import SyntheticDataConfig, run_synthetic_data
from fedtrees.experiments._synthetic_data import (
    load_source,
    make_split,
    min_max_scaled,
)
from fedtrees.experiments.synthetic import fedavg_to_target, n_steps

# The file names are the titles' heads: the same for one repeat (--quick) and many.
ACCURACY_CSV = "synthetic_test_accuracy.csv"
ABLATION_CSV = "synthetic_ablations_of_the_paper_variant.csv"


def _small(**change: object) -> SyntheticDataConfig:
    """The 4 hotels, one variant, no ablation: about a second."""
    base = dataclasses.replace(
        SyntheticDataConfig.quick(),
        datasets=("iot-hotels",),
        variants=("paper",),
        ablation_datasets=(),
    )
    return dataclasses.replace(base, **change)


def test_quick_run_writes_tables_csv_plots_and_the_majority_rate(
    tmp_path: Path,
    readable_plots: list[str],
    readable_tables: list[str],
) -> None:
    out = CliRunner().invoke(
        app, ["experiment", "synthetic", "--quick", "--out", str(tmp_path)]
    )

    assert out.exit_code == 0, out.output
    names = {p.name for p in tmp_path.iterdir()}
    datasets = ("census", "iot-200", "iot-hotels")
    assert {"synthetic.md", "synthetic_raw.csv", ACCURACY_CSV, ABLATION_CSV} <= names
    assert {f"synthetic_accuracy_{d}.png" for d in datasets} <= names
    assert {f"synthetic_fedavg_curve_{d}.png" for d in datasets} <= names
    ablations = ("fill", "p_max", "samples_per_path", "client_max_depth")
    assert {f"synthetic_ablation_{p}.png" for p in ablations} <= names
    raw = pd.read_csv(tmp_path / "synthetic_raw.csv")
    assert len(raw) == n_steps(SyntheticDataConfig.quick()) + 2 * 3  # FedAvg x3
    assert raw["accuracy"].between(0, 1).all()
    assert raw["majority"].between(0.5, 1).all()  # on every row, every method
    accuracy = pd.read_csv(tmp_path / ACCURACY_CSV, index_col=0)
    assert len(accuracy) == 9  # 3 settings x 3 variants
    assert accuracy["majority class"].between(50, 100).all()
    ablation = pd.read_csv(tmp_path / ABLATION_CSV, index_col=0)
    for dataset in ("census", "iot-200"):
        assert ablation[f"{dataset}: majority class"].between(50, 100).all()
    markdown = (tmp_path / "synthetic.md").read_text()
    for figure in ("75.43", "85.62", "84.4", "34.47", "689.4", "321.75", "33091.2"):
        assert figure in markdown  # the paper's figures beside ours
    assert "fill = outside (paper)" in markdown
    assert "pooled" in markdown.lower()  # the min-max shortcut is said


def test_ablation_default_is_the_paper_variant_fit() -> None:
    config = dataclasses.replace(
        _small(datasets=("iot-200",), ablation_datasets=("iot-200",)),
        ablation_fill=("outside",),
        ablation_p_max=(),
        ablation_samples_per_path=(),
        ablation_client_max_depth=(),
    )

    raw = run_synthetic_data(config).raw

    trees = raw[raw["method"] == "global tree"].set_index("study")
    assert trees.loc["ablation", "accuracy"] == trees.loc["main", "accuracy"]


def test_same_config_gives_the_same_raw_results() -> None:
    first, second = run_synthetic_data(_small()).raw, run_synthetic_data(_small()).raw

    timed = ["seconds", "client_seconds"]
    pd.testing.assert_frame_equal(first.drop(columns=timed), second.drop(columns=timed))


def test_fedavg_read_at_a_target_equals_a_run_stopped_there() -> None:
    split = make_split(load_source("iot-200", 1200, 0), 10, 0, 0)

    def fedavg(target: float) -> FedAvgClassifier:
        model = FedAvgClassifier(
            (12, 12),
            n_rounds=6,
            local_epochs=2,
            batch_size=16,
            stop_at_score=target,
            random_state=3,
        )
        return model.fit(
            split.X, split.y, groups=split.groups, eval_set=(split.X_test, split.y_test)
        )

    shared = fedavg(1.0)  # never reached: all 6 rounds
    target = float(np.sort(shared.score_curve_)[2])  # reached in some round
    direct = fedavg(target)

    read = fedavg_to_target(shared, target)
    assert read["reached"]
    assert read["rounds"] == direct.n_rounds_
    assert read["accuracy"] == direct.score_curve_[-1]
    assert read["bytes_per_client"] == direct.bytes_per_client_
    assert fedavg_to_target(shared, 1.0)["rounds"] == 6
    assert not fedavg_to_target(shared, 1.0)["reached"]


def test_census_tests_on_the_official_file_and_deals_the_train_file_iid() -> None:
    source = load_source("census", None, 0)

    first, second = make_split(source, 200, 0, 0), make_split(source, 200, 0, 1)

    assert len(first.y) == 30162
    assert len(first.y_test) == 15060
    assert first.majority == pytest.approx(11360 / 15060)
    sizes = pd.Series(first.groups).value_counts()
    assert len(sizes) == 200
    assert set(sizes) == {150, 151}
    assert not np.array_equal(first.groups, second.groups)  # a new deal per repeat
    assert np.array_equal(first.y_test, second.y_test)  # the same test file


def test_iot_settings_split_75_25_and_keep_the_hotels_as_clients() -> None:
    pooled = make_split(load_source("iot-200", None, 0), 200, 0, 0)
    hotels = make_split(load_source("iot-hotels", None, 0), 200, 0, 0)

    assert len(pooled.y_test) / (len(pooled.y) + len(pooled.y_test)) == pytest.approx(
        0.25, abs=1e-3
    )
    assert pd.Series(pooled.groups).nunique() == 200
    assert sorted(set(hotels.groups)) == ["F1", "F2", "F3", "F4"]
    assert len(hotels.y) + len(hotels.y_test) == 37580


def test_min_max_scaling_uses_the_training_rows_range() -> None:
    split = make_split(load_source("iot-200", 800, 0), 10, 0, 0)

    scaled = min_max_scaled(split)

    assert np.allclose(scaled.X.min(), 0.0)
    assert np.allclose(scaled.X.max(), 1.0)
    low, high = split.X.min(), split.X.max()
    expected = (split.X_test - low) / (high - low).replace(0, 1)
    assert np.allclose(scaled.X_test, expected)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"datasets": ("mnist",)}, "datasets"),
        ({"datasets": ()}, "datasets"),
        ({"variants": ("greedy",)}, "variants"),
        ({"ablation_fill": ("zeros",)}, "ablation_fill"),
        ({"ablation_p_max": (1.5,)}, "ablation_p_max"),
        ({"ablation_samples_per_path": (0,)}, "ablation_samples_per_path"),
        ({"ablation_client_max_depth": (0,)}, "ablation_client_max_depth"),
        ({"n_clients": 1}, "n_clients"),
        ({"n_repeats": 0}, "n_repeats"),
        ({"fedavg_max_rounds": 0}, "fedavg_max_rounds"),
        ({"fedavg_batch_size": 0}, "fedavg_batch_size"),
        ({"max_rows": 10}, "max_rows"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bad_configuration_values_name_the_field(change: dict, field: str) -> None:
    config = dataclasses.replace(SyntheticDataConfig.quick(), **change)
    with pytest.raises(ValidationError, match=f"'{field}' parameter"):
        config.validated()


def test_config_file_and_repeats_override_fields(tmp_path: Path) -> None:
    toml = tmp_path / "synthetic.toml"
    toml.write_text(
        'datasets = ["iot-hotels"]\nvariants = ["uniform"]\nablation_datasets = []\n'
    )

    out = CliRunner().invoke(
        app,
        [
            "experiment",
            "synthetic",
            "--quick",
            "--out",
            str(tmp_path),
            "--config",
            str(toml),
            "--repeats",
            "2",
        ],
    )

    assert out.exit_code == 0, out.output
    raw = pd.read_csv(tmp_path / "synthetic_raw.csv")
    assert set(raw["dataset"]) == {"iot-hotels"}
    assert set(raw["repeat"]) == {0, 1}
    assert set(raw.loc[raw["method"] == "global tree", "variant"]) == {"uniform"}
