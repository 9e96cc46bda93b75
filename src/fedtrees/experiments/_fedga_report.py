"""The FedGA-Tree experiment's tables, plots and notes (paper 000, Figs. 3, 4, 8).

Δ of a (reading, dataset, method) is the mean of the raw rows' ``delta`` =
``(score / score_local − 1)·100`` over clients and splits (Eq. 3; equal N per
split, so it is also the mean of the per-split Δ). The IQR is the 25th and 75th
percentiles of those ``Δ_i``; a client is improved when its score is strictly
better than its local tree's (F1 higher, MSE lower). Δ macro-F1 and Δ accuracy
are Eq. 3 on the macro-F1 and the accuracy of the same predictions (both
readings record them), so the paper's binary-F1 reading can be read beside what
it does to the other two. The headlines average the per-dataset figures over
the classification datasets, and again over the two-class ones only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import numpy as np
import pandas as pd

from fedtrees.experiments._report import Plot, Report

__all__ = ["HEADLINE", "HEADLINE_BINARY", "MAIN", "PAPER", "build_report"]

PAPER: Final = pd.DataFrame(
    {"paper Δ F1 (%)": [5.58, -2.58], "paper improved (%)": [75.0, 31.0]},
    index=pd.Index(["FedGA", "IBM tree"], name="method"),
)
"""The paper's headline over its 14 classification datasets (N = 20, c = 100 %)."""

MAIN: Final = "Δ per dataset vs the local trees (main run)"
HEADLINE: Final = "Headline: both readings, mean over classification datasets"
HEADLINE_BINARY: Final = "Headline over the two-class datasets only"
_RELATIVE: Final = {"macro_f1": "Δ macro-F1 (%)", "accuracy": "Δ accuracy (%)"}
_ABSOLUTE: Final = {"macro_f1": "macro-F1", "accuracy": "accuracy"}


def _improved(raw: pd.DataFrame) -> pd.Series:
    higher = raw["task"] == "classification"
    return (raw["score"] > raw["score_local"]).where(
        higher, raw["score"] < raw["score_local"]
    )


def _relative(group: pd.DataFrame, column: str) -> float:
    """Mean Eq. 3 of ``column`` against its local twin (NaN where absent)."""
    if column not in group or group[column].isna().all():
        return np.nan
    local = group[f"{column}_local"].to_numpy(np.float64)
    mine = group[column].to_numpy(np.float64)
    ok = local > 0
    return float(np.mean((mine[ok] / local[ok] - 1.0) * 100.0)) if ok.any() else np.nan


def _summary(group: pd.DataFrame) -> pd.Series:
    delta = group["delta"].dropna().to_numpy()
    q25, q75 = np.percentile(delta, [25.0, 75.0]) if delta.size else (np.nan, np.nan)
    values = {
        "metric": group["metric"].iloc[0],
        "score": group["score"].mean(),
        "local score": group["score_local"].mean(),
        "Δ (%)": float(np.mean(delta)) if delta.size else np.nan,
        "IQR low": float(q25),
        "IQR high": float(q75),
        "improved (%)": 100.0 * group["improved"].mean(),
    }
    for column, name in _RELATIVE.items():
        values[name] = _relative(group, column)
        values[_ABSOLUTE[column]] = group[column].mean() if column in group else np.nan
    values["rows"] = len(group)
    return pd.Series(values)


def _per_dataset(raw: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    table = raw.groupby(keys, sort=False)[list(raw.columns)].apply(_summary)
    assert isinstance(table, pd.DataFrame)
    rounding = {
        "score": 4, "local score": 4, "Δ (%)": 2, "IQR low": 2, "IQR high": 2,
        "improved (%)": 1, **dict.fromkeys(_RELATIVE.values(), 2),
        **dict.fromkeys(_ABSOLUTE.values(), 4),
    }  # fmt: skip
    return table.round(rounding)


def _headline(main: pd.DataFrame) -> pd.DataFrame:
    """Per (task, method, reading): the mean over datasets, the paper beside it."""
    keys = ["task", "method", "reading", "dataset"]
    per = _per_dataset(main, keys).reset_index()
    table = per.groupby(["task", "method", "reading"], sort=False).agg(
        datasets=("dataset", "nunique"),
        metric=("metric", lambda m: " / ".join(dict.fromkeys(m))),
        **{
            "Δ (%)": ("Δ (%)", "mean"),
            "improved (%)": ("improved (%)", "mean"),
            **{name: (name, "mean") for name in _RELATIVE.values()},
            **{name: (name, "mean") for name in _ABSOLUTE.values()},
        },
    )
    table = table.reset_index()
    paper = PAPER.reindex(table["method"]).reset_index(drop=True)
    clf = (table["task"] == "classification").to_numpy()
    for column in PAPER.columns:
        table[column] = np.where(clf, paper[column].to_numpy(), np.nan)
    table.index = table["task"] + " / " + table["method"] + " / " + table["reading"]
    return table.drop(columns=["task", "method", "reading"]).round(3)


def _structures(main: pd.DataFrame) -> pd.DataFrame:
    fedga = main[main["method"] == "FedGA"]
    table = fedga.groupby(["reading", "dataset"], sort=False).agg(
        depth=("depth", "mean"),
        **{
            "decision nodes (FedGA)": ("decision_nodes", "mean"),
            "decision nodes (local)": ("local_decision_nodes", "mean"),
            "edit distance to local": ("edit_distance", "mean"),
        },
    )
    return table.round(3)


def _flat(table: pd.DataFrame) -> pd.DataFrame:
    out = table.copy()
    out.index = [" / ".join(str(v) for v in key) for key in out.index]
    return out


def build_report(
    config: Mapping[str, object], raw: pd.DataFrame, skipped: Mapping[str, str]
) -> Report:
    """Tables, plots and notes of a run (``raw`` as :mod:`..fedga` documents)."""
    title = "FedGA-Tree personalized trees (paper 000, Sec. IV)"
    if raw.empty:
        return Report(
            name="fedga",
            title=title,
            config=config,
            tables={"Skipped datasets": _skipped(skipped)},
            raw=raw,
            notes=_notes(config, raw, skipped),
        )
    raw = raw.assign(improved=_improved(raw))
    main = raw[raw["study"] == "main"]
    sweep = raw[raw["study"] == "sweep"]
    tables: dict[str, pd.DataFrame] = {
        MAIN: _flat(_per_dataset(main, ["reading", "dataset", "method"])),
        HEADLINE: _headline(main),
    }
    binary = main[(main["task"] == "classification") & (main["n_classes"] == 2)]
    if not binary.empty:
        tables[HEADLINE_BINARY] = _headline(binary)
    tables["FedGA structures (decision nodes, edit distance)"] = _flat(
        _structures(main)
    )
    if not sweep.empty:
        keys = ["reading", "dataset", "n_clients", "client_fraction"]
        table = _per_dataset(sweep[sweep["method"] == "FedGA"], keys)
        tables["Sweeps: FedGA over N and c"] = _flat(table)
    if skipped:
        tables["Skipped datasets"] = _skipped(skipped)
    return Report(
        name="fedga",
        title=title,
        config=config,
        tables=tables,
        raw=raw,
        notes=_notes(config, main, skipped),
        plots=_plots(main, sweep, int(str(config["n_clients"]))),
    )


def _skipped(skipped: Mapping[str, str]) -> pd.DataFrame:
    return pd.DataFrame(
        {"reason": list(skipped.values())},
        index=pd.Index(list(skipped), name="dataset"),
    )


def _series(table: pd.DataFrame) -> pd.Series:
    """Return each row's series name: its method and reading, "FedGA (paper)"."""
    return table["method"] + " (" + table["reading"] + ")"


def _plots(main: pd.DataFrame, sweep: pd.DataFrame, n_clients: int) -> tuple[Plot, ...]:
    plots = []
    per = _per_dataset(main, ["task", "dataset", "method", "reading"]).reset_index()
    per = per.assign(series=_series(per))
    for task, part in per.groupby("task", sort=False):
        values = part.pivot_table(index="dataset", columns="series", values="Δ (%)")
        half = (part["IQR high"] - part["IQR low"]) / 2
        errors = part.assign(half=half).pivot_table(
            index="dataset", columns="series", values="half"
        )
        metric = "F1" if task == "classification" else "MSE"
        plots.append(
            Plot(
                f"delta_{task}",
                f"Δ {metric} vs local trees per dataset, by reading (cf. Figs. 3, 8)",
                "bars",
                values,
                "dataset",
                f"Δ {metric} (%)",
                errors=errors.reindex_like(values),
                errors_note="bars: ± half the IQR over clients",
            )
        )
    plots.append(
        Plot(
            "improved",
            "Share of clients improved over their local tree (cf. Figs. 3, 8)",
            "bars",
            per.pivot_table(index="dataset", columns="series", values="improved (%)"),
            "dataset",
            "clients improved (%)",
        )
    )
    plots += _side_effects(per)
    plots += _structure_plots(main)
    plots += _sweep_plots(main, sweep, n_clients)
    return tuple(plots)


def _side_effects(per: pd.DataFrame) -> list[Plot]:
    """Δ macro-F1 and Δ accuracy of FedGA per dataset, each reading."""
    fedga = per[(per["method"] == "FedGA") & (per["task"] == "classification")]
    if fedga.empty:
        return []
    return [
        Plot(
            f"delta_{column}",
            f"FedGA's {name[2:-4]} vs the local trees' under each reading",
            "bars",
            fedga.pivot_table(index="dataset", columns="series", values=name),
            "dataset",
            name,
        )
        for column, name in _RELATIVE.items()
    ]


def _structure_plots(main: pd.DataFrame) -> list[Plot]:
    structures = _structures(main).reset_index()
    nodes = structures.melt(
        id_vars=["reading", "dataset"],
        value_vars=["decision nodes (FedGA)", "decision nodes (local)"],
    )
    nodes["series"] = nodes["variable"].str[15:-1] + " (" + nodes["reading"] + ")"
    return [
        Plot(
            "decision_nodes",
            "FedGA's final vs the local structures: decision nodes (cf. Fig. 4)",
            "bars",
            nodes.pivot_table(index="dataset", columns="series", values="value"),
            "dataset",
            "decision nodes",
        ),
        Plot(
            "edit_distance",
            "Normalized edit distance, final vs local structure (cf. Fig. 4)",
            "bars",
            structures.pivot_table(
                index="dataset", columns="reading", values="edit distance to local"
            ),
            "dataset",
            "edit distance",
        ),
    ]


def _sweep_plots(main: pd.DataFrame, sweep: pd.DataFrame, n_clients: int) -> list[Plot]:
    # The main run's point (N, c as configured) joins both sweep lines.
    readings = set(sweep["reading"])
    point = main[
        main["dataset"].isin(sweep["dataset"]) & main["reading"].isin(readings)
    ]
    fedga = pd.concat([sweep, point])
    fedga = fedga[fedga["method"] == "FedGA"]
    plots = []
    for key, label, fixed in (
        ("n_clients", "N", fedga["client_fraction"] == 1.0),
        ("client_fraction", "c", fedga["n_clients"] == n_clients),
    ):
        part = fedga[fixed]
        if part[key].nunique() > 1:
            plots.append(
                Plot(
                    f"sweep_{key}",
                    f"FedGA Δ vs {label} (sweep)",
                    "lines",
                    part.pivot_table(index=key, columns="dataset", values="delta"),
                    label,
                    "Δ (%)",
                )
            )
    return plots


def _notes(
    config: Mapping[str, object], main: pd.DataFrame, skipped: Mapping[str, str]
) -> tuple[str, ...]:
    readings = [str(r) for r in _sequence(config.get("readings", ("ours",)))]
    generations = {
        r: config["paper_generations" if r == "paper" else "n_generations"]
        for r in readings
    }
    notes = [
        f"{config['n_splits']} random split(s) per dataset (the paper: 10 splits x "
        "10 runs). G: "
        + "; ".join(f"{r} reading {g}" for r, g in generations.items())
        + " (the paper's Table II: 100).",
        "Readings. paper: binary F1 (the positive class, the larger label as "
        "scikit-learn's LabelEncoder orders them) for FedGA's fitness and depth "
        "CV, the local and centralized trees' CV and the test score of every "
        "two-class dataset (macro-F1 for nursery's 5 classes); the IBM tree with "
        "Truex et al.'s honest-client noise reduction (each client's noise variance "
        "÷ (N - 1), which assumes a secure computation fedtrees does not run: each "
        "client's counts are then only ε·sqrt(N - 1)-DP against the server). ours: "
        "macro-F1 everywhere, every client adds the full noise.",
        "Δ_i = (score / score_local - 1)·100 with the client's CV-tuned local tree "
        "as reference, on the common test set; for MSE negative Δ is better (Eq. 3 "
        "is not sign-flipped). The centralized and IBM trees score the same on "
        "every client; their Δ_i differ through the local scores.",
        "Classification: numeric features in 5 quantile bins fitted on the training "
        "rows, the same bins for every method (the IBM tree gets the edges "
        "declared); categorical features (nursery, adult) as category codes.",
        "Sweeps fit FedGA and the local trees only (no centralized or IBM tree).",
    ]
    notes += _trade_off(main)
    for name, reason in skipped.items():
        notes.append(f"Skipped {name}: {reason}")
    return tuple(notes)


def _gains(row: pd.Series) -> str:
    """Δ of the reading's metric, then Δ macro-F1 (unless it is that) and Δ accuracy."""
    parts = [f"Δ {row['metric']} {row['Δ (%)']:+.2f} %"]
    if row["metric"] != "macro-F1":
        parts.append(f"Δ macro-F1 {row['Δ macro-F1 (%)']:+.2f} %")
    parts.append(f"Δ accuracy {row['Δ accuracy (%)']:+.2f} %")
    return ", ".join(parts)


def _sequence(value: object) -> tuple[object, ...]:
    return tuple(value) if isinstance(value, list | tuple) else (value,)


def _trade_off(main: pd.DataFrame) -> list[str]:
    """Return notes: the binary-F1 gain beside FedGA's macro-F1 and accuracy."""
    if main.empty:
        return []
    fedga = main[(main["method"] == "FedGA") & (main["n_classes"] == 2)]
    if fedga.empty:
        return []
    head = _headline(fedga)
    head.index = [str(i).rsplit(" / ", 1)[-1] for i in head.index]
    lines = [
        f"FedGA under the {reading} reading, over {int(row['datasets'])} two-class "
        f"dataset(s): {_gains(row)} against the clients' local trees (tuned for the "
        f"same F1); mean macro-F1 {row['macro-F1']:.4f}, accuracy "
        f"{row['accuracy']:.4f}."
        for reading, row in head.iterrows()
    ]
    if {"paper", "ours"} <= set(head.index):
        paper, ours = head.loc["paper"], head.loc["ours"]
        lines.append(
            "The binary-F1 reading trades: FedGA's macro-F1 "
            f"{paper['macro-F1'] - ours['macro-F1']:+.4f} and accuracy "
            f"{paper['accuracy'] - ours['accuracy']:+.4f} under the paper's "
            "reading against ours, on the same two-class datasets and splits."
        )
    return lines
