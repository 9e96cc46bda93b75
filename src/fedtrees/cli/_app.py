"""``fedtrees`` commands: ``demo`` and ``datasets``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import pandas as pd
import typer
from rich.console import Console, RenderableType

from fedtrees import datasets
from fedtrees.cli._experiment import experiment_app
from fedtrees.cli._flower import flower_app
from fedtrees.cli._render import rich_table
from fedtrees.cli._typer import App

if TYPE_CHECKING:
    from fedtrees.experiments import DemoResult

__all__ = ["app"]

app = App(
    name="fedtrees",
    help="Federated decision trees and forests across data silos.",
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(flower_app)
app.add_typer(experiment_app)


def _print_version(value: bool) -> None:
    if value:
        from fedtrees import __version__

        typer.echo(f"fedtrees {__version__}")
        raise typer.Exit()


@app.callback()
def options(
    version: bool = typer.Option(
        False,
        "--version",
        help="Print the version and exit.",
        callback=_print_version,
        is_eager=True,
    ),
) -> None:
    """Federated decision trees and forests across data silos."""


@app.command()
def demo(
    trees: int = typer.Option(50, min=1, help="Trees of every forest."),
    depth: int = typer.Option(6, min=1, help="max_depth of every tree."),
    seed: int = typer.Option(0, min=0, help="random_state of the models."),
) -> None:
    """Four hospitals: FedForest vs each hospital alone vs pooling the rows."""
    console = Console()
    console.print(
        "Heart disease at four hospitals (FLamby split). FedForest trains one forest "
        "across all four; no patient row leaves its hospital."
    )
    from fedtrees.experiments import run_demo

    result = run_demo(
        n_estimators=trees, max_depth=depth, random_state=seed, verbose=True
    )
    for line in demo_report(result, trees):
        console.print(line)


def demo_report(result: DemoResult, trees: int) -> list[RenderableType]:
    """Return the demo's tables and legends in print order (each fits 80 columns)."""
    kib = result.communication.loc["total", ["KiB down", "KiB up"]].sum()
    return [
        rich_table(
            result.sites, "The four hospitals (positives: patients with heart disease)"
        ),
        rich_table(
            result.accuracy,
            f"Accuracy ({trees} trees per forest, max_depth {result.max_depth})",
        ),
        "FedForest: one forest across the four hospitals. Own hospital: each "
        "patient scored by their own hospital's forest. Pooled RF: scikit-learn's "
        "random forest on all training rows in one place, the reference a "
        "federation aims for.",
        rich_table(
            result.communication,
            f"What FedForest sent: {result.rounds} rounds, {kib / 1024:.1f} MiB",
            digits=1,
        ),
        "Bytes are the encoded messages (the codec's output) of every round, all "
        "four hospitals. Once, each hospital summarises every feature and the "
        "server agrees a grid of at most 255 bins per feature. Then one round per "
        "depth level: down, the splits made since the last round, the open nodes "
        "and their features; up, the class counts in every non-empty bin of every "
        "open node's features. No patient row travels.",
        "Every local model on every hospital, more methods and repeats: "
        "fedtrees experiment fedforest-heart",
    ]


DATASET_LOADS: Final = (
    ("heart_disease", {}),
    ("heart_disease", {"flamby": True}),
    *((name, {}) for name in datasets.BUNDLED if name != "heart_disease"),
)
"""The listing's rows: a bundled dataset and the options it is loaded with."""


@app.command("datasets")
def list_datasets() -> None:
    """List the datasets bundled with fedtrees (heart disease in both preparations)."""
    rows = []
    for name, options in DATASET_LOADS:
        data = datasets.load(name, **options)
        clients = data.clients.nunique() if data.clients is not None else "-"
        label = " ".join([name, *(f"{k}={v}" for k, v in options.items())])
        sizes = (data.n_samples, data.n_features, len(data.classes), clients)
        rows.append((label, *sizes))
    frame = pd.DataFrame(
        rows, columns=["load(...)", "rows", "features", "classes", "clients"]
    ).set_index("load(...)")
    console = Console()
    console.print(rich_table(frame, "Bundled datasets: fedtrees.datasets.load(...)"))
    console.print(
        "heart_disease: the four UCI hospital files as published (target num "
        "0-4). flamby=True: FLamby's preparation, used by the demo and the "
        "paper experiment (slope, ca, thal and rows with a missing value "
        "dropped, cp and restecg one-hot, target num > 0, FLamby's train/test "
        "split)."
    )
