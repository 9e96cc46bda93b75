"""What the experiments print and draw: readable plots, honest one-repeat tables."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest
from rich.console import Console

from fedtrees.cli._render import print_table, rich_table
from fedtrees.exceptions import ValidationError
from fedtrees.experiments import DPForestConfig, run_dpforest
from fedtrees.experiments._report import Plot, mean_sd_table, pivot_sd
from fedtrees.experiments.fedforest_heart import communication
from fedtrees.experiments.results import markdown_table, render_plot
from tests.experiments._figures import cut_short, misleading, unreadable

matplotlib.use("Agg")

HEART_METHODS = [
    "FedForest quantiles",
    "FedForest AvgImp",
    "Federated Histogram",
    "Local learning (Cleveland)",
    "Local learning (Hungary)",
    "Local learning (Long Beach VA)",
    "Local learning (Switzerland)",
    "Local ensembling",
    "Centralized RF (pooled rows)",
    "FedAvg LR (FLamby: lr 1e-4)",
    "FedAvg LR (lr 0.01)",
    "FedAvg MLP, 16 hidden (lr 0.01)",
]


def _heart_like(n_series: int = 2) -> Plot:
    rng = np.random.default_rng(0)
    values = pd.DataFrame(
        rng.uniform(0.3, 0.9, size=(len(HEART_METHODS), n_series)),
        index=pd.Index(HEART_METHODS, name="method"),
        columns=[f"series {i}" for i in range(n_series)],
    )
    return Plot("accuracy", "12 methods", "bars", values, "method", "accuracy")


def _close(figure: object) -> None:
    import matplotlib.pyplot as plt

    plt.close(figure)  # type: ignore[arg-type]


def test_twelve_long_method_names_are_drawn_without_overlap() -> None:
    figure = render_plot(_heart_like())
    try:
        assert unreadable(figure) == []
        # Horizontal bars: the method names are the y tick labels, top to bottom.
        names = [t.get_text() for t in figure.axes[0].get_yticklabels()]
        assert names == HEART_METHODS
    finally:
        _close(figure)


def test_the_check_finds_the_old_upright_labels_overlapping() -> None:
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(9, 5))  # the old heart accuracy plot
    _heart_like().values.plot.bar(ax=axes, rot=0)
    try:
        problems = unreadable(figure)
    finally:
        _close(figure)
    assert "tick labels 'FedForest quantiles' and 'FedForest AvgImp' overlap" in (
        problems
    )


def test_more_than_ten_series_get_distinct_colours() -> None:
    figure = render_plot(_heart_like(n_series=12))
    try:
        bars = figure.axes[0].containers
        colours = {tuple(container.patches[0].get_facecolor()) for container in bars}
        assert len(colours) == 12
    finally:
        _close(figure)


def test_one_draw_has_no_spread_and_no_zero_sd() -> None:
    raw = pd.DataFrame(
        {"m": ["a", "a", "b"], "s": ["x", "x", "x"], "v": [1.0, 3.0, 0.25]}
    )
    table = mean_sd_table(raw, rows="m", columns="s", value="v")
    sd = pivot_sd(raw, rows="m", columns="s", value="v")

    assert table.loc["a", "x"] == "2.000 ± 1.414"
    assert table.loc["b", "x"] == "0.250"  # one draw: no "± 0.000"
    assert np.isnan(sd.loc["b", "x"])


def test_communication_drops_methods_without_messages_and_keeps_rounds_integer() -> (
    None
):
    raw = pd.DataFrame(
        {
            "method": ["FedForest", "FedForest", "Centralized RF"],
            "rounds": [35.0, 35.0, np.nan],
            "kib": [2147.3, 2147.3, np.nan],
        }
    )
    cost, silent = communication(raw)

    assert list(cost.index) == ["FedForest"]
    assert cost["rounds"].dtype.kind == "i"
    assert silent == ["Centralized RF"]
    assert "| FedForest | 35 | 2147 |" in markdown_table(cost)  # whole KiB
    console = Console(width=80, record=True)
    console.print(rich_table(cost, "cost"))
    text = console.export_text()
    assert " 35 " in text
    assert "35.000" not in text
    assert "nan" not in text.lower()


def test_hotel_ranges_from_the_data_are_a_sentence_not_a_table() -> None:
    config = dataclasses.replace(
        DPForestConfig.quick("hotel_ac_iot"),
        epsilons=(100.0,),
        depths=(3,),
        memorization_n=(10,),
        split_scores=("average",),
    )
    report = run_dpforest(config)

    assert not any("declared ranges" in name for name in report.tables)
    assert any(
        "no share of test values inside them is reported" in n for n in report.notes
    )
    # One repeat: the accuracy cell is a value, not "v (v, v)".
    cell = report.tables["Accuracy (one repeat)"].iloc[0, 0]
    assert "(" not in cell
    for plot in report.plots:
        figure = render_plot(plot)
        try:
            assert unreadable(figure) == [], plot.name
        finally:
            _close(figure)


@pytest.mark.parametrize("kind", ["bars", "lines"])
def test_a_single_series_has_no_legend(kind: str) -> None:
    values = pd.DataFrame({"only": [1.0, 2.0]}, index=pd.Index([1, 2], name="k"))
    figure = render_plot(Plot("p", "t", kind, values, "k", "v"))  # type: ignore[arg-type]
    try:
        assert figure.axes[0].get_legend() is None
    finally:
        _close(figure)


def test_counts_averaged_over_folds_print_as_integers_in_console_and_markdown() -> None:
    frame = pd.DataFrame(
        {"rounds": [4.0, 12.0], "accuracy": [1.0, 0.0], "depth": [6.0, 6.5]},
        index=pd.Index(["icdta", "fedid3"], name="method"),
    )
    markdown = markdown_table(frame)
    assert "| icdta | 4 | 1.000 | 6.000 |" in markdown
    console = Console(width=80, record=True)
    console.print(rich_table(frame, "t"))
    text = console.export_text()
    assert " 4 " in text
    assert "4.000" not in text
    assert "12.000" not in text
    assert "1.000" in text  # proportions keep their digits
    assert "6.500" in text  # and so do means that are not whole


def _wide() -> pd.DataFrame:
    """Like the synthetic experiment's accuracy table: 10 long headers, ± cells."""
    rng = np.random.default_rng(0)
    columns = [f"measure {i}: accuracy of the tree (%)" for i in range(10)]
    index = [f"{d} / {v}" for d in ("census", "iot-200") for v in ("paper", "authors")]
    values = rng.uniform(50, 100, size=(len(index), len(columns)))
    cells = [[f"{v:.2f} ± {v / 40:.2f}" for v in row] for row in values]
    return pd.DataFrame(cells, index=pd.Index(index, name="dataset / variant"),
                        columns=columns)  # fmt: skip


def _printed(frame: pd.DataFrame, width: int = 80) -> str:
    console = Console(width=width, record=True, file=io.StringIO())
    print_table(console, frame, "Test accuracy (%)")
    return console.export_text()


def test_a_wide_table_is_cut_into_column_groups_that_fit_80_columns() -> None:
    frame = _wide()
    old = Console(width=80, record=True, file=io.StringIO())
    old.print(rich_table(frame, "Test accuracy (%)"))  # one table, squeezed
    squeezed = old.export_text()
    assert not all(value in squeezed for value in frame.to_numpy().ravel())

    text = _printed(frame)

    assert cut_short(text, 80) == []
    for value in frame.to_numpy().ravel():
        assert value in text  # every cell whole, on one line
    groups = text.count(f" of {frame.shape[1]})")  # "(columns i-j of 10)"
    assert 2 <= groups < frame.shape[1]
    assert text.count("census / authors") == groups  # the index in every group


def test_a_narrow_table_prints_as_one_table() -> None:
    frame = _wide().iloc[:, :3]
    text = _printed(frame, width=140)
    assert "columns" not in text
    assert cut_short(text, 140) == []
    assert "measure 2: accuracy of the tree (%)" in text  # headers whole if they fit


def test_a_table_of_sentences_wraps_its_cells_instead_of_cutting_them() -> None:
    sentence = "local trees: mean 0.53 (0.39-0.63); paper about 0.55, best 0.62-0.63"
    frame = pd.DataFrame(
        {"e=1": ["-", "0.35"], "e=10": ["0.65 (paper 0.70)", "0.19"]},
        index=pd.Index([sentence, "d=10 (authors' scripts)"], name="reference"),
    )
    text = _printed(frame, width=60)
    assert cut_short(text, 60) == []
    assert "best 0.62-0.63" in text


def test_a_remark_in_parentheses_moves_below_its_number_when_space_is_short() -> None:
    cells = [[f"{70 + i}.25 ± 1.5{i} (paper 8{i}.01)" for i in range(4)]] * 3
    frame = pd.DataFrame(
        cells,
        index=pd.Index([f"K={k} / ICDTA4FL-ID3" for k in (2, 5, 10)], name="method"),
        columns=["car Acc", "car F1", "nursery Acc", "nursery F1"],
    )
    text = _printed(frame)
    assert cut_short(text, 80) == []
    assert "70.25 ± 1.50 │" in text  # the number whole, the remark below it
    assert "(paper 80.01) │" in text
    assert text.count("(columns ") == 2  # two columns beside the index at 80


def _rounds_plot(errors: pd.DataFrame | None) -> Plot:
    # Two methods scoring the same in every round: one line lies on the other.
    rounds = pd.Index([1, 2, 3], name="round")
    values = pd.DataFrame({"FedGBDT": [0.7, 0.8, 0.9], "pooled": [0.7, 0.8, 0.9]})
    values.index = rounds
    if errors is not None:
        errors.index = rounds
    return Plot(
        "curve", "Accuracy by round", "lines", values, "round", "accuracy",
        errors=errors, errors_note="bars: sd over repeats",
    )  # fmt: skip


def test_equal_lines_differ_in_style_and_round_ticks_are_whole() -> None:
    figure = render_plot(_rounds_plot(None))
    try:
        assert unreadable(figure) == []
        assert misleading(figure, _rounds_plot(None)) == []
        styles = {
            (line.get_marker(), line.get_linestyle()) for line in figure.axes[0].lines
        }
        assert len(styles) == 2
        ticks = figure.axes[0].get_xticks()
        assert all(t == int(t) for t in ticks)
        assert figure.axes[0].get_title() == "Accuracy by round"  # no bars, no note
    finally:
        _close(figure)


def test_the_checks_find_half_rounds_hidden_lines_and_missing_bars() -> None:
    import matplotlib.pyplot as plt

    plot = _rounds_plot(None)
    figure, axes = plt.subplots()  # the old drawing: same marker, default ticks
    for column in plot.values.columns:
        axes.errorbar(plot.values.index, plot.values[column], marker="o")
    axes.set_title("Accuracy by round (bars: sd over repeats)")
    try:
        figure.draw_without_rendering()
        problems = misleading(figure, plot)
    finally:
        _close(figure)
    assert any("x tick 1.5" in p for p in problems)
    assert any("hides" in p for p in problems)
    assert any("promises error bars" in p for p in problems)


@pytest.mark.parametrize(
    ("spread", "note"), [(0.0, False), (np.nan, False), (0.05, True)]
)
def test_error_bars_are_named_in_the_title_only_when_drawn(
    spread: float, note: bool
) -> None:
    errors = pd.DataFrame({"FedGBDT": [spread] * 3, "pooled": [spread] * 3})
    plot = _rounds_plot(errors)
    figure = render_plot(plot)
    try:
        assert misleading(figure, plot) == []
        assert ("bars: sd over repeats" in figure.axes[0].get_title()) is note
    finally:
        _close(figure)


def test_a_tables_file_is_named_by_its_titles_head_and_never_shared(
    tmp_path: Path,
) -> None:
    from fedtrees.experiments._report import Report
    from fedtrees.experiments.results import write_report

    one = pd.DataFrame({"a": [1.0]})
    report = Report(
        name="demo",
        title="t",
        config={},
        tables={
            "Accuracy gap to Pooled XGBoost (points)": one,
            "Test accuracy (%), one repeat, majority-class rate beside": one,
            "Paper 003's figures (Tables 1-2, Sec. 4)": one,
        },
        raw=one,
    )
    names = {p.name for p in write_report(report, tmp_path)}
    assert {
        "demo_accuracy_gap_to_pooled_xgboost.csv",
        "demo_test_accuracy.csv",
        "demo_paper_003_figures.csv",
    } <= names
    clash = dataclasses.replace(
        report, tables={"Accuracy (mean)": one, "Accuracy: sd": one}
    )
    with pytest.raises(ValidationError, match=r"demo_accuracy\.csv"):
        write_report(clash, tmp_path / "again")
