"""The FedGA-Tree experiment: a quick run through the command line, files written.

The quick run holds both protocol readings (the paper's binary F1, G, IBM noise;
ours) on nursery (5 classes) and adult (two classes, the bundled binary set).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import f1_score
from typer.testing import CliRunner

from fedtrees.cli import app
from fedtrees.exceptions import ValidationError
from fedtrees.experiments import FedGAConfig, Report, fedga, run_fedga
from fedtrees.experiments._fedga_data import load_problem
from fedtrees.experiments._fedga_fits import Scorer
from fedtrees.experiments._fedga_report import HEADLINE, HEADLINE_BINARY, MAIN
from fedtrees.experiments.fedga import run_settings
from tests.experiments.conftest import check_plots, check_tables


@dataclasses.dataclass
class QuickRun:
    """The one quick run of this module, through the command line."""

    report: Report  # what ``run_fedga`` returned to the command
    out: Path  # the folder the command wrote
    output: str  # what it printed
    plots: list[str]  # the figures drawn and the tables printed, and what is
    tables: list[str]  # unreadable in them (tests/experiments/conftest.py)
    problems: list[str]


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> QuickRun:
    """Run ``fedtrees experiment fedga --quick`` once; keep its files and its report.

    The tests of the written files and of the report's numbers read this one run
    (the longest part of the module) instead of each making their own.
    """
    empty = tmp_path_factory.mktemp("no_fedga_data")  # abalone: skipped
    out = tmp_path_factory.mktemp("fedga") / "out"
    runs: list[tuple[FedGAConfig, Report]] = []
    plots: list[str] = []
    tables: list[str] = []
    problems: list[str] = []
    with pytest.MonkeyPatch.context() as monkeypatch:
        check_plots(monkeypatch, plots, problems)
        check_tables(monkeypatch, tables, problems)

        def kept(config: FedGAConfig, advance: Callable[[str], None]) -> Report:
            runs.append((config, run_fedga(config, advance)))
            return runs[-1][1]

        monkeypatch.setattr(fedga, "run_fedga", kept)
        result = CliRunner().invoke(
            app,
            ["experiment", "fedga", "--quick", "--data", str(empty), "--out", str(out)],
        )
    assert result.exit_code == 0, result.output
    ((config, report),) = runs
    assert config == FedGAConfig.quick(str(empty))  # the report of the quick run
    return QuickRun(report, out, result.output, plots, tables, problems)


@pytest.fixture(scope="module")
def report(quick_run: QuickRun) -> Report:
    return quick_run.report


def test_quick_cli_run_writes_tables_and_plots(quick_run: QuickRun) -> None:
    assert quick_run.plots, "no figure was rendered"
    assert quick_run.tables, "no table was printed"
    assert not quick_run.problems, "\n".join(quick_run.problems)
    out = quick_run.out
    names = {p.name for p in out.iterdir()}
    assert {
        "fedga.md",
        "fedga_raw.csv",
        "fedga_delta_classification.png",
        "fedga_improved.png",
        "fedga_delta_macro_f1.png",
        "fedga_delta_accuracy.png",
        "fedga_decision_nodes.png",
        "fedga_edit_distance.png",
    } <= names
    markdown = (out / "fedga.md").read_text()
    assert "5.58" in markdown  # the paper's headline beside ours
    assert "-2.58" in markdown
    assert "Skipped abalone" in markdown  # absent data: a note, no crash
    assert "The binary-F1 reading trades" in markdown
    raw = pd.read_csv(out / "fedga_raw.csv")
    assert set(raw["method"]) == {"FedGA", "centralized", "IBM tree"}
    assert set(raw["reading"]) == {"paper", "ours"}
    assert raw[["score", "macro_f1", "accuracy"]].stack().between(0, 1).all()


def test_each_reading_scores_with_its_own_f1(report: Report) -> None:
    raw = report.raw
    metric = raw.groupby(["reading", "dataset"])["metric"].agg(set).to_dict()
    assert metric == {
        ("paper", "adult"): {"binary F1"},
        ("paper", "nursery"): {"macro-F1"},  # five classes: macro in both readings
        ("ours", "adult"): {"macro-F1"},
        ("ours", "nursery"): {"macro-F1"},
    }
    macro = raw["metric"] == "macro-F1"
    np.testing.assert_allclose(raw.loc[macro, "score"], raw.loc[macro, "macro_f1"])
    np.testing.assert_allclose(
        raw.loc[macro, "score_local"], raw.loc[macro, "macro_f1_local"]
    )
    binary = ~macro
    assert not np.allclose(raw.loc[binary, "score"], raw.loc[binary, "macro_f1"])


def test_the_binary_reading_is_scikit_learns_f1_of_the_larger_label() -> None:
    adult = load_problem("adult", None)
    scorer = Scorer.of(adult, "binary")
    assert (scorer.average, scorer.positive) == ("binary", ">50K")
    rng = np.random.default_rng(0)
    truth, guess = adult.y[:500], rng.permutation(adult.y[:500])
    want = f1_score(truth, guess, pos_label=">50K")
    assert scorer(truth, guess) == pytest.approx(want, abs=1e-12)
    nursery = load_problem("nursery", None)
    assert Scorer.of(nursery, "binary").average == "macro"  # five classes


def test_each_reading_sets_its_protocol() -> None:
    config = FedGAConfig()
    unit = {"study": "main", "split": 2, "client_fraction": 1.0}
    paper = run_settings(config, {**unit, "reading": "paper"})
    ours = run_settings(config, {**unit, "reading": "ours"})
    assert (paper.n_generations, paper.f1_average, paper.ibm_noise) == (
        100,
        "binary",
        "honest_clients",
    )
    assert (ours.n_generations, ours.f1_average, ours.ibm_noise) == (
        50,
        "macro",
        "per_client",
    )
    assert paper.seed == ours.seed  # the same split, the same seeds


def test_delta_is_the_formula_on_the_raw_rows(report: Report) -> None:
    raw = report.raw[report.raw["study"] == "main"]
    table = report.tables[MAIN]
    for (reading, dataset, method), rows in raw.groupby(
        ["reading", "dataset", "method"]
    ):
        expected = np.mean((rows["score"] / rows["score_local"] - 1.0) * 100.0)
        improved = np.mean(rows["score"] > rows["score_local"])
        accuracy = np.mean((rows["accuracy"] / rows["accuracy_local"] - 1.0) * 100.0)
        line = table.loc[f"{reading} / {dataset} / {method}"]
        assert line["Δ (%)"] == pytest.approx(expected, abs=0.005)
        assert line["improved (%)"] == pytest.approx(100 * improved, abs=0.05)
        assert line["Δ accuracy (%)"] == pytest.approx(accuracy, abs=0.005)
        assert line["accuracy"] == pytest.approx(rows["accuracy"].mean(), abs=5e-5)


def test_the_headlines_hold_both_readings_beside_the_paper(report: Report) -> None:
    per = report.tables[MAIN]
    for title, datasets in (
        (HEADLINE, ["nursery", "adult"]),
        (HEADLINE_BINARY, ["adult"]),
    ):
        headline = report.tables[title]
        for reading in ("paper", "ours"):
            for method in ("FedGA", "IBM tree"):
                line = headline.loc[f"classification / {method} / {reading}"]
                rows = [f"{reading} / {d} / {method}" for d in datasets]
                assert line["datasets"] == len(datasets)
                assert line["Δ (%)"] == pytest.approx(
                    per.loc[rows, "Δ (%)"].mean(), abs=0.01
                )
        assert headline.loc["classification / FedGA / paper", "paper Δ F1 (%)"] == 5.58
        assert (
            headline.loc["classification / IBM tree / ours", "paper improved (%)"] == 31
        )


def test_structures_and_sweep_are_reported(report: Report) -> None:
    fedga = report.raw[report.raw["method"] == "FedGA"]
    assert fedga["edit_distance"].between(0, 1).all()
    assert (fedga["decision_nodes"] >= 1).all()
    sweep = report.tables["Sweeps: FedGA over N and c"]
    assert list(sweep.index) == ["ours / nursery / 4 / 1.0"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"classification": ("mnist",)}, "classification"),
        ({"regression": ("nursery",)}, "regression"),
        ({"n_clients": 1}, "n_clients"),
        ({"sweep_fractions": (0.0,)}, "client_fraction"),
        ({"depth_range": (5, 2)}, "depth_range"),
        ({"readings": ("paper", "theirs")}, "readings"),
        ({"readings": ()}, "readings"),
        ({"paper_generations": 0}, "paper_generations"),
        ({"max_rows": 10}, "max_rows"),
    ],
)
def test_bad_configuration_values_name_the_field(change: dict, field: str) -> None:
    config = dataclasses.replace(FedGAConfig.quick(), **change)
    with pytest.raises(ValidationError, match=field):
        config.validated()
