"""The server's state of one FedGBDT fit, and the start round that fills it.

:class:`BoostRun` is complete from :meth:`BoostRun.begin` (the agreed
:class:`~fedtrees.federation.FederationInfo`): the engine's grid agreement
(docs/histogram.md), the first iteration's roots, the sites' priors to come.
The start round (:func:`ask_start`, :func:`agree_start`) agrees the grid and
the starting raw prediction (docs/fedgbdt.md); the baselines
(:mod:`._baselines`) share it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from fedtrees._random import keyed_rng
from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms.fedgbdt._bounds import Prior
from fedtrees.algorithms.fedgbdt._config import BoostConfig, with_classes
from fedtrees.algorithms.fedgbdt._decisions import Decisions
from fedtrees.algorithms.fedgbdt._grow import Iteration
from fedtrees.algorithms.fedgbdt._known import Known
from fedtrees.algorithms.fedgbdt._loss import LOSSES, Loss, metric_name, prior_margin
from fedtrees.algorithms.fedgbdt._payloads import (
    StartReply,
    StartRequest,
    prior_width,
    wide_statistics,
)
from fedtrees.algorithms.fedgbdt._pooled import PooledStart, start_sum_check
from fedtrees.algorithms.histogram import Grid, GridAgreement, LevelRounds
from fedtrees.federation import (
    FederationInfo,
    MaskedRound,
    MaskedRounds,
    Payload,
    RoundPlan,
    as_reply,
    check_cohort,
    rounding_bound,
)

__all__ = ["BoostRun", "agree_start", "ask_start"]

_COLUMNS = 3  # feature draws (generator key)
_HINT = (
    "use FedForestClassifier/FedForestRegressor(candidates='quantile'), "
    "which has no such limit"
)


@dataclass
class _Progress:
    """Losses reported so far (one entry per finished iteration)."""

    train: list[float] = field(default_factory=list)
    valid: list[float] = field(default_factory=list)


@dataclass(eq=False)
class BoostRun:
    """The server's state of one FedGBDT fit, complete from :meth:`begin`.

    ``grid`` is the agreement's grid before the start round
    (:meth:`GridAgreement.before`) and the agreed one after; ``current`` is
    the iteration being grown (the last one during the report).
    """

    config: BoostConfig
    fit_id: int
    info: FederationInfo
    agreement: GridAgreement
    grid: Grid
    known: Known
    """The sites' start priors and the model's reach (:mod:`._bounds`)."""
    masks: MaskedRounds
    active: list[str]
    margin: FloatArray
    current: Iteration
    rounds: LevelRounds
    """The engine's level rounds: the parents kept for subtraction."""
    decisions: Decisions = field(default_factory=Decisions.empty)
    held: dict[str, int] = field(default_factory=dict)
    """Per client, the decisions it holds (its last answered request's)."""
    iterations: list[Iteration] = field(default_factory=list)
    progress: _Progress = field(default_factory=_Progress)
    stopped: bool = False
    best_iteration: int = 0
    tree_rounds: int = 0
    """Rounds of trees absorbed (the baselines count theirs)."""

    @classmethod
    def begin(cls, config: BoostConfig, fit_id: int, info: FederationInfo) -> BoostRun:
        """Check the declared edges (and ranges); the first iteration's roots.

        Raises
        ------
        ValidationError
            Declared edges or ranges that do not fit the schema, naming them.
        """
        config = with_classes(config, len(info.schema.classes), "FedGBDT")
        if config.secure_aggregation:
            check_cohort(info.clients, "FedGBDT")
        agreement = GridAgreement.begin(
            info, owner="FedGBDT", max_bins=config.max_bins,
            bin_edges=config.bin_edges, feature_ranges=config.feature_ranges,
            secure=config.secure_aggregation,
        )  # fmt: skip
        return cls(
            config, fit_id, info, agreement, agreement.before(),
            Known(config.objective, config.protocol, config.scale_pos_weight),
            MaskedRounds(info.public_keys), list(info.clients),
            np.zeros(config.n_trees_per_iteration),
            Iteration.start(0, config.n_trees_per_iteration, config.max_depth),
            LevelRounds.begin(3, 2, config.subtract),
        )  # fmt: skip

    @property
    def objective(self) -> str:
        """The objective's name."""
        return str(self.config.objective)

    @property
    def prior_width(self) -> int:
        """Entries of one prior (:func:`._payloads.prior_width`)."""
        return prior_width(self.objective, len(self.info.schema.classes))

    @property
    def metric(self) -> str:
        """XGBoost's name of the recorded metric."""
        return self.config.eval_metric or metric_name(self.config.objective)

    @property
    def loss(self) -> Loss:
        """The objective with the fit's positive-row factor and metric."""
        c = self.config
        return LOSSES[c.objective].scaled(c.scale_pos_weight, c.eval_metric or "")

    def answered(self, replies: Mapping[str, Payload]) -> bool:
        """Keep the clients that answered; return whether one dropped out."""
        dropped = any(c not in replies for c in self.active)
        self.active = [c for c in self.active if c in replies]
        return dropped

    def mask(self, length: int) -> MaskedRound | None:
        """Start a masked round of the active clients (secure aggregation only)."""
        if not self.config.secure_aggregation:
            return None
        wide = wide_statistics(self.config.objective)
        return self.masks.start(self.active, length, wide=wide)

    def features(self, iteration: int) -> IntArray:
        """Each tree's features (``colsample_bytree``), drawn by the server."""
        n_features = self.grid.n_bins.shape[0]
        k = self.config.n_trees_per_iteration
        take = max(1, int(self.config.colsample_bytree * n_features))
        if take >= n_features:
            return np.tile(np.arange(n_features), (k, 1))
        return np.stack([
            np.sort(keyed_rng(self.config.seed, _COLUMNS, iteration, tree).choice(
                n_features, take, replace=False))
            for tree in range(k)
        ]).astype(np.int64)  # fmt: skip

    def model_fields(self, client: str, full: bool) -> dict[str, Any]:
        """Return the fields every request shares: the fit, the model's delta, the grid.

        The decisions after the client's version (all of them when ``full``);
        the grid's edges in the client's first request and in full ones.
        """
        base = 0 if full else self.held.get(client, 0)
        send_grid = full or base == 0
        c = self.config
        return {
            "fit_id": self.fit_id,
            "seed": c.seed,
            "objective": c.objective,
            "classes": np.asarray(self.info.schema.classes, dtype=str),
            "holdout": c.holdout,
            "n_trees": c.n_trees_per_iteration,
            "base": base,
            "full": full,
            "margin": self.margin,
            **self.decisions.after(base).as_fields(),
            "feature_bins": self.grid.n_bins,
            "grid_edges": self.grid.edges if send_grid else np.zeros(0),
            "grid_edge_ptr": self.grid.edge_ptr if send_grid else np.zeros(0, np.int64),
            "scale_pos_weight": c.scale_pos_weight,
            "metric": c.eval_metric or "",
        }


# -- the start: the grid agreement and the prior -------------------------------------
def ask_start(run: BoostRun) -> RoundPlan:
    """Ask every client's column summary (the engine's) and its priors."""
    request = StartRequest(
        run.fit_id, run.config.seed, run.config.objective,
        np.asarray(run.info.schema.classes, dtype=str), run.config.holdout,
        **run.agreement.request_fields(),
    )  # fmt: skip
    masked = run.mask(run.agreement.n_fine + 2 * request.prior_width)
    if masked is not None:
        request = replace(request, **masked.fields())
    return RoundPlan(
        dict.fromkeys(run.active, request),
        run.config.on_dropout,
        check=None if masked is not None else run.known.start_check(),
        masked=masked,
    )


def agree_start(run: BoostRun, replies: Mapping[str, Payload]) -> None:
    """Agree the grid and the starting margin: plain, or from the masked sum."""
    run.answered(replies)
    if run.config.secure_aggregation:
        check = start_sum_check(
            int(run.agreement.columns.sum()), run.prior_width, run.objective,
            run.info.weight_bounds,
        )  # fmt: skip
        total = run.masks.values(replies, check)
        start = PooledStart(total, int(run.agreement.columns.sum()), run.prior_width)
        _set_grid(run, run.agreement.agree_masked(total))
        _set_margin(run, start.prior)
        sites = run.masks.current.summed if run.masks.current else ()
        pooled = Prior.of(
            start.prior, start.held_prior, run.objective, run.margin,
            rounding_bound(len(sites)),
        )  # fmt: skip
        run.known.started(tuple(sites), pooled, {})
        return
    got = {c: as_reply(r, StartReply) for c, r in replies.items()}
    _set_grid(run, run.agreement.agree(list(got.values())))
    _set_margin(
        run, np.sum([np.asarray(r.prior, np.float64) for r in got.values()], axis=0)
    )
    priors = {
        c: Prior.of(r.prior, r.held_prior, run.objective, run.margin)
        for c, r in got.items()
    }
    run.known.started(tuple(sorted(got)), sum(priors.values(), Prior(0.0, 0.0)), priors)


def _set_grid(run: BoostRun, grid: Grid) -> None:
    """Set the agreed grid; refuse categorical columns the engine cannot code."""
    grid.check_categories("FedGBDT", list(run.info.schema.feature_names), _HINT)
    run.grid = grid


def _set_margin(run: BoostRun, pooled: FloatArray) -> None:
    """Set the starting margin from the pooled prior."""
    run.margin = prior_margin(
        run.config.objective, pooled, run.config.base_score,
        run.config.scale_pos_weight,
    )  # fmt: skip
