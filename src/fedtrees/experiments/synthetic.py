"""One-shot synthetic data (paper 003): the global tree vs FedAvg.

Protocol. Settings ``"census"`` (adult, one-hot inside the estimator, ``?`` rows
dropped, the official test file, the training rows dealt IID to ``n_clients``
= 200 clients; global depth 7), ``"iot-200"`` (hotel IoT pooled, split 75/25,
the training rows dealt to 200 clients; depth 4) and ``"iot-hotels"`` (the four
hotels as the natural clients; depth 4); see :mod:`._synthetic_data`. For every
setting and repeat (the paper averages 15 runs; ``n_repeats``, mean ± sd):

- the global tree of :class:`~fedtrees.SyntheticDataClassifier` for every
  variant: ``"paper"`` (the decisions of docs/synthetic.md: ``fill="outside"``,
  ``p_max=0.5``), ``"authors"`` (the authors' notebooks: min-max scaled numeric
  features, fill −100000 / 500000, flip schedule 0.55 / 0.65 / 0.85,
  ``class_weight="balanced"``, ``min_samples_split=10``, ``min_samples_leaf=5``)
  and ``"uniform"`` (``fill="uniform"``, beyond the paper);
- FedAvg of an MLP [12, 12] (:class:`~fedtrees.FedAvgClassifier`, learning rate
  0.01, 10 local epochs per round), run until its test accuracy reaches the
  tree's (capped at ``fedavg_max_rounds``): rounds, bytes and client compute;
- a centralized scikit-learn tree (entropy, the same depth) on the pooled
  one-hot training rows, and the test set's majority-class rate beside every
  accuracy.

Ablations of the ``"paper"`` variant on ``ablation_datasets`` vary ``fill``
(``"authors"`` = the constants on unscaled features), ``p_max``,
``samples_per_path`` and ``client_max_depth``, one at a time.

**Decision (one FedAvg run per setting and repeat):** FedAvg runs once with
``stop_at_score`` = the best variant's tree accuracy, and each variant's figures
are read at the first round whose score reaches its own tree's accuracy
(:func:`fedavg_to_target`); the curve up to a round does not depend on the target.

**Decision (FedAvg's optimizer):** plain minibatch SGD with batch
``fedavg_batch_size`` = 16 (the authors take one full-batch Adam step per local
epoch, which our FedAvg does not offer). Rounds to a target scale with the
batch: on census / iot-200, to 83 % / 85 %, batch 4 took 4 / 4 rounds, batch 8
took 8 / 7 and batch 16 took 16 / 14 (seed 0, measured).

**Decision (seeds):** the subsample, the splits, the deals and every
estimator's ``random_state`` are keyed from ``seed``, the setting and the repeat
(:func:`fedtrees._random.keyed_rng`); all variants and ablations of a repeat
share the tree seed, so an ablation's default setting is the ``"paper"`` fit.

Raw rows (one per fit; ``study`` "main" or "ablation"): ``dataset``, ``repeat``,
``variant``, ``method`` ("global tree", "FedAvg", "centralized tree"),
``parameter`` / ``value`` (ablations), ``accuracy``, ``majority``; trees:
``synthetic_accuracy``, ``synthetic_rows``, ``flipped_share``,
``vote_majority_share``, ``tree_bytes_up``, ``tree_bytes`` (down + up),
``client_seconds``; FedAvg: ``target``, ``rounds``, ``reached``,
``bytes_per_client``, ``client_seconds``, ``curve`` (the run's scores); every
fit: ``seconds`` (wall). The report is :mod:`._synthetic_report`.

Duration of the full default run on 2 cores: 619 s (10.3 min) measured; about
half of it the ablations (census at client depth 5: a million synthetic rows),
a quarter the FedAvg runs (16 rounds to the IoT trees, about 1 s a round).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import pandas as pd

from fedtrees._random import keyed_rng
from fedtrees._validation import check_choice, check_float, check_int, invalid
from fedtrees.algorithms import (
    MAX_SAMPLES_PER_PATH,
    MAX_TREE_DEPTH,
    check_size,
)
from fedtrees.algorithms.fedavg import MAX_BATCH_SIZE
from fedtrees.experiments._report import Progress, Report
from fedtrees.experiments._synthetic_data import (
    DATASETS,
    GLOBAL_DEPTH,
    SEED_BOUND,
    Split,
    load_source,
    make_split,
    min_max_scaled,
)
from fedtrees.experiments._synthetic_fits import (
    cached_tree,
    centralized_row,
    fedavg_rows,
    fedavg_to_target,
)
from fedtrees.experiments._synthetic_report import synthetic_report
from fedtrees.federation import MAX_ROUNDS

__all__ = [
    "DATASETS",
    "VARIANTS",
    "SyntheticDataConfig",
    "fedavg_to_target",
    "n_steps",
    "run_synthetic_data",
    "variant_params",
]

VARIANTS: Final = ("paper", "authors", "uniform")
AUTHORS_FILL: Final = (-100000.0, 500000.0)
AUTHORS_SCHEDULE: Final = (0.55, 0.65, 0.85)
FILLS: Final[dict[str, Any]] = {
    "outside": "outside",
    "uniform": "uniform",
    "authors": AUTHORS_FILL,
}
"""Ablation names of ``fill`` and the estimator's values."""
_FIT, _FEDAVG, _CENTRAL = 4, 5, 6  # keyed random streams (data: 1-3)
_OWNER: Final = "SyntheticDataConfig"


@dataclass(frozen=True)
class SyntheticDataConfig:
    """What to run; the defaults are the full experiment (docs/synthetic.md)."""

    datasets: tuple[str, ...] = DATASETS
    variants: tuple[str, ...] = VARIANTS
    n_clients: int = 200
    n_repeats: int = 5
    fedavg_max_rounds: int = 100
    fedavg_batch_size: int = 16
    ablation_datasets: tuple[str, ...] = ("census", "iot-200")
    ablation_fill: tuple[str, ...] = ("outside", "uniform", "authors")
    ablation_p_max: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75)
    ablation_samples_per_path: tuple[int, ...] = (10, 50, 100, 200)
    ablation_client_max_depth: tuple[int, ...] = (2, 3, 4, 5)
    max_rows: int | None = None
    seed: int = 0

    @classmethod
    def quick(cls) -> SyntheticDataConfig:
        """Return a CI-sized run: 2000 rows, 20 clients, 1 repeat, small grids."""
        return cls(
            n_clients=20,
            n_repeats=1,
            fedavg_max_rounds=5,
            ablation_fill=("outside", "uniform"),
            ablation_p_max=(0.0, 0.5),
            ablation_samples_per_path=(10, 100),
            ablation_client_max_depth=(2, 3),
            max_rows=2000,
        )

    def ablation_settings(self) -> list[tuple[str, Any]]:
        """Every (parameter, value) of the ablations, in order."""
        return [
            *(("fill", v) for v in self.ablation_fill),
            *(("p_max", float(v)) for v in self.ablation_p_max),
            *(("samples_per_path", v) for v in self.ablation_samples_per_path),
            *(("client_max_depth", v) for v in self.ablation_client_max_depth),
        ]

    def validated(self) -> SyntheticDataConfig:
        """Return self if every field is in range (errors name the field)."""
        _check_subset(self.datasets, "datasets", DATASETS, empty=False)
        _check_subset(self.variants, "variants", VARIANTS, empty=False)
        _check_subset(self.ablation_datasets, "ablation_datasets", DATASETS)
        _check_subset(self.ablation_fill, "ablation_fill", tuple(FILLS))
        check_int(self.n_clients, "n_clients", _OWNER, min_value=2)
        check_int(self.n_repeats, "n_repeats", _OWNER, min_value=1)
        check_int(
            self.fedavg_max_rounds,
            "fedavg_max_rounds",
            _OWNER,
            min_value=1,
            max_value=MAX_ROUNDS - 1,
        )
        check_int(
            self.fedavg_batch_size,
            "fedavg_batch_size",
            _OWNER,
            min_value=1,
            max_value=MAX_BATCH_SIZE,
        )
        check_int(self.seed, "seed", _OWNER, min_value=0)
        if self.max_rows is not None:
            check_int(self.max_rows, "max_rows", _OWNER, min_value=2 * self.n_clients)
        for p in self.ablation_p_max:
            check_float(p, "ablation_p_max", _OWNER, min_value=0.0, max_value=1.0)
        for m in self.ablation_samples_per_path:
            check_size(m, "ablation_samples_per_path", _OWNER, 1, MAX_SAMPLES_PER_PATH)
        for d in self.ablation_client_max_depth:
            check_int(
                d,
                "ablation_client_max_depth",
                _OWNER,
                min_value=1,
                max_value=MAX_TREE_DEPTH,
            )
        return self


def _check_subset(
    values: tuple[str, ...], name: str, choices: tuple[str, ...], empty: bool = True
) -> None:
    if not values and not empty:
        raise invalid(name, _OWNER, f"a non-empty subset of {choices}", values)
    for value in values:
        check_choice(value, name, _OWNER, choices)


def n_steps(config: SyntheticDataConfig) -> int:
    """Return the number of fits the run makes (for a progress bar).

    Per setting and repeat: one global tree per variant, one FedAvg, one
    centralized tree; per ablation setting and repeat one global tree (the
    default settings reuse the ``"paper"`` fit). The full default run has 225
    steps; on 2 cores it took 619 s.

    Examples
    --------
    >>> n_steps(SyntheticDataConfig())
    225
    """
    c = config
    main = len(c.datasets) * (len(c.variants) + 2)
    ablation = len(c.ablation_datasets) * len(c.ablation_settings())
    return (main + ablation) * c.n_repeats


def variant_params(variant: str, depth: int) -> dict[str, Any]:
    """Return the estimator parameters of a variant (``depth``: the global tree's).

    Examples
    --------
    >>> variant_params("authors", 4)["flip_schedule"]
    (0.55, 0.65, 0.85)
    """
    params: dict[str, Any] = {  # every ablated setting named: fits are cached by it
        "global_max_depth": depth,
        "fill": "outside",
        "p_max": 0.5,
        "samples_per_path": 100,
        "client_max_depth": 3,
    }
    if variant == "uniform":
        params["fill"] = "uniform"
    elif variant == "authors":
        params |= {
            "fill": AUTHORS_FILL,
            "flip_schedule": AUTHORS_SCHEDULE,
            "class_weight": "balanced",
            "min_samples_split": 10,
            "min_samples_leaf": 5,
        }
    return params


def _seed(config: SyntheticDataConfig, stream: int, split: Split) -> int:
    rng = keyed_rng(config.seed, stream, DATASETS.index(split.name), split.repeat)
    return int(rng.integers(SEED_BOUND))


# -- studies ----------------------------------------------------------------------
Tick = Callable[[str], None]


def _main_rows(
    config: SyntheticDataConfig,
    split: Split,
    cache: dict[str, dict[str, Any]],
    tick: Tick,
) -> list[dict[str, Any]]:
    """Every variant's tree, the FedAvg run to them, the centralized tree."""
    depth, seed = GLOBAL_DEPTH[split.name], _seed(config, _FIT, split)
    scaled = min_max_scaled(split) if "authors" in config.variants else split
    rows: list[dict[str, Any]] = []
    for variant in config.variants:
        data = scaled if variant == "authors" else split
        params = variant_params(variant, depth)
        tree = cached_tree(cache, data, params, seed)
        rows.append({"variant": variant, "method": "global tree", **tree})
        tick(f"{split.name} #{split.repeat} tree {variant}")
    targets = {row["variant"]: row["accuracy"] for row in rows}
    rows += fedavg_rows(
        split,
        targets,
        max_rounds=config.fedavg_max_rounds,
        batch_size=config.fedavg_batch_size,
        seed=_seed(config, _FEDAVG, split),
    )
    tick(f"{split.name} #{split.repeat} FedAvg")
    rows.append(centralized_row(split, depth, _seed(config, _CENTRAL, split)))
    tick(f"{split.name} #{split.repeat} centralized tree")
    keys = {"study": "main", "dataset": split.name, "repeat": split.repeat}
    return [{**keys, **row} for row in rows]


def _ablation_rows(
    config: SyntheticDataConfig,
    split: Split,
    cache: dict[str, dict[str, Any]],
    tick: Tick,
) -> list[dict[str, Any]]:
    """Fit the ``"paper"`` variant with one setting changed at a time."""
    base, seed = (
        variant_params("paper", GLOBAL_DEPTH[split.name]),
        _seed(config, _FIT, split),
    )
    rows = []
    for parameter, value in config.ablation_settings():
        setting = FILLS[value] if parameter == "fill" else value
        tree = cached_tree(cache, split, base | {parameter: setting}, seed)
        rows.append(
            {
                "study": "ablation",
                "dataset": split.name,
                "repeat": split.repeat,
                "variant": "paper",
                "method": "global tree",
                "parameter": parameter,
                "value": str(value),
                **tree,
            }
        )
        tick(f"{split.name} #{split.repeat} {parameter}={value}")
    return rows


def run_synthetic_data(
    config: SyntheticDataConfig | None = None, progress: Progress | None = None
) -> Report:
    """Run every setting, variant, baseline and ablation ``n_repeats`` times; no I/O.

    Examples
    --------
    >>> config = dataclasses.replace(
    ...     SyntheticDataConfig.quick(), datasets=("iot-hotels",),
    ...     variants=("paper",), ablation_datasets=())
    >>> report = run_synthetic_data(config)
    >>> sorted(set(report.raw["method"]))
    ['FedAvg', 'centralized tree', 'global tree']
    """
    config = (config or SyntheticDataConfig()).validated()
    start = time.perf_counter()
    tick: Tick = progress if progress is not None else (lambda label: None)
    rows: list[dict[str, Any]] = []
    for name in dict.fromkeys((*config.datasets, *config.ablation_datasets)):
        source = load_source(name, config.max_rows, config.seed)
        for repeat in range(config.n_repeats):
            split = make_split(source, config.n_clients, config.seed, repeat)
            cache: dict[str, dict[str, Any]] = {}
            if name in config.datasets:
                rows += _main_rows(config, split, cache, tick)
            if name in config.ablation_datasets:
                rows += _ablation_rows(config, split, cache, tick)
    seconds = time.perf_counter() - start
    return synthetic_report(pd.DataFrame(rows), dataclasses.asdict(config), seconds)
