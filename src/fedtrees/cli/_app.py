"""``fedtrees`` commands: ``demo`` and ``datasets``."""

from __future__ import annotations

import pandas as pd
import typer
from rich.console import Console

from fedtrees import datasets
from fedtrees.cli._experiment import experiment_app
from fedtrees.cli._flower import flower_app
from fedtrees.cli._render import rich_table
from fedtrees.experiments import run_demo

__all__ = ["app"]

app = typer.Typer(
    name="fedtrees",
    help="Federated decision trees and forests across data silos.",
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(flower_app)
app.add_typer(experiment_app)


@app.command()
def demo(
    trees: int = typer.Option(50, min=1, help="Trees of every forest."),
    seed: int = typer.Option(0, min=0, help="random_state of the models."),
) -> None:
    """Four hospitals: FedForest vs each hospital alone vs pooling the rows."""
    console = Console()
    console.print(
        "Heart disease at four hospitals (FLamby split). FedForest trains one forest "
        "across all four; no patient row leaves its hospital."
    )
    result = run_demo(n_estimators=trees, random_state=seed, verbose=True)
    console.print(rich_table(result.sites, "The four hospitals"))
    console.print(
        rich_table(
            result.accuracy,
            f"Accuracy on each hospital's test patients ({trees} trees per forest)",
        )
    )
    console.print(
        rich_table(result.communication, "What travelled (rounds, KiB)", digits=1)
    )
    console.print(
        "Local learning (X): hospital X's own forest. Centralized RF pools every "
        "row in one place: the reference a federation aims for. Reproduce the full "
        "comparison with: fedtrees experiment fedforest-heart"
    )


@app.command("datasets")
def list_datasets() -> None:
    """List the datasets bundled with fedtrees."""
    rows = []
    for name in datasets.BUNDLED:
        data = datasets.load(name)
        clients = data.clients.nunique() if data.clients is not None else "-"
        rows.append((name, data.n_samples, data.n_features, len(data.classes), clients))
    frame = pd.DataFrame(
        rows, columns=["dataset", "rows", "features", "classes", "clients"]
    ).set_index("dataset")
    Console().print(
        rich_table(frame, "Bundled datasets (load with fedtrees.datasets.load)")
    )
