from __future__ import annotations

import numpy as np
from typer.testing import CliRunner

from fedtrees.cli import app
from fedtrees.experiments import run_demo

HOSPITALS = ["Cleveland", "Hungary", "Switzerland", "Long Beach VA"]


def test_run_demo_scores_every_tree_on_every_hospital() -> None:
    result = run_demo(max_depth=3, random_state=0)
    assert result.sites.index.tolist() == HOSPITALS
    assert result.sites["train rows"].tolist() == [199, 172, 30, 85]
    assert result.sites["test rows"].tolist() == [104, 89, 16, 45]
    assert result.sites["positives"].tolist() == [139, 98, 45, 101]
    assert result.accuracy.shape == (4, 4)
    assert np.all((result.accuracy.to_numpy() >= 0) & (result.accuracy.to_numpy() <= 1))
    # Deterministic for a seed.
    assert result.accuracy.equals(run_demo(max_depth=3, random_state=0).accuracy)


def test_demo_command_prints_both_tables() -> None:
    out = CliRunner().invoke(app, ["demo", "--max-depth", "2"])
    assert out.exit_code == 0, out.output
    for name in HOSPITALS:
        assert name in out.output
    assert "Accuracy of each hospital's own tree" in out.output


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
    out = CliRunner().invoke(app, ["demo", "--max-depth", "0"])
    assert out.exit_code != 0
    assert "max-depth" in out.output
