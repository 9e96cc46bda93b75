"""``fedtrees`` commands: ``demo`` and ``datasets``."""

from __future__ import annotations

import pandas as pd
import typer
from rich.console import Console
from rich.table import Table

from fedtrees import datasets
from fedtrees.cli._flower import flower_app
from fedtrees.experiments import run_demo

__all__ = ["app"]

app = typer.Typer(
    name="fedtrees",
    help="Federated decision trees and forests across data silos.",
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(flower_app)


def _table(frame: pd.DataFrame, title: str, *, digits: int = 3) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column(str(frame.index.name or ""), style="bold")
    for column in frame.columns:
        table.add_column(str(column), justify="right")
    for label, row in frame.iterrows():
        cells = [f"{v:.{digits}f}" if isinstance(v, float) else str(v) for v in row]
        table.add_row(str(label), *cells)
    return table


@app.command()
def demo(
    max_depth: int = typer.Option(4, min=1, help="Depth of each hospital's tree."),
    seed: int = typer.Option(0, min=0, help="random_state of the trees."),
) -> None:
    """Four hospitals, one local tree each, scored on every hospital (heart disease)."""
    console = Console()
    result = run_demo(max_depth=max_depth, random_state=seed)
    console.print(_table(result.sites, "Heart disease: four hospitals (FLamby split)"))
    console.print(
        _table(
            result.accuracy,
            f"Accuracy of each hospital's own tree (depth {max_depth}) on every "
            "hospital's test patients",
        )
    )
    console.print(
        "A tree trained at one hospital transfers unevenly to the others; fedtrees "
        "trains one model across all four without moving a row."
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
        _table(frame, "Bundled datasets (load with fedtrees.datasets.load)")
    )
