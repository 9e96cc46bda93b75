"""What the server knows of the sites' rows in one FedGBDT fit, and its checks.

:class:`Known` keeps the start round's priors (each site's, and pooled) and the
model's reach as iterations finish, and builds each round's check of the
sites' replies from them; the bounds themselves are :mod:`._bounds`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from fedtrees.algorithms.fedgbdt._bounds import (
    Prior,
    check_gradients,
    check_leaves,
    check_reach,
    check_report,
    check_site_scale,
    check_target_scale,
)
from fedtrees.algorithms.fedgbdt._config import BoostConfig
from fedtrees.algorithms.fedgbdt._payloads import LevelReply, LocalReply, StartReply
from fedtrees.federation import Payload

__all__ = ["Check", "Known"]


Check = Callable[[str, Payload, Payload], None]
"""A round's check of each reply: ``(client, request, reply)``."""


@dataclass
class Known:
    """What the server knows of the sites' rows in one fit (module docstring).

    Filled by the start round (:meth:`started`) and by every finished
    iteration (:meth:`moved`); it builds the rounds' reply checks.
    """

    objective: str
    protocol: str
    scale_pos_weight: float = 1.0
    """The factor of the positive rows' g and h (binary logloss)."""
    priors: dict[str, Prior] = field(default_factory=dict)
    """Each site's prior (plain runs; empty under secure aggregation)."""
    pooled: Prior = field(default_factory=lambda: Prior(0.0, 0.0))
    """The pooled prior of the sites that answered the start round."""
    starters: tuple[str, ...] = ()
    reach: float = 0.0
    """How far the finished iterations move a prediction (squared error)."""
    iterations: int = 0

    @property
    def regression(self) -> bool:
        """Whether the objective is squared error (the spread matters)."""
        return self.objective == "squared_error"

    def started(
        self, sites: tuple[str, ...], pooled: Prior, priors: Mapping[str, Prior]
    ) -> None:
        """Keep the start round's priors; refuse targets the sums cannot hold.

        Raises
        ------
        ValidationError
            The pooled targets are too large (:func:`check_target_scale`).
        """
        self.starters, self.pooled, self.priors = sites, pooled, dict(priors)
        if self.regression:
            check_target_scale(pooled, "FedGBDTRegressor")

    def moved(self, by: float) -> None:
        """Note a finished iteration whose leaves move a prediction by up to ``by``.

        Raises
        ------
        ValidationError
            The model moves predictions too far (:func:`check_reach`).
        """
        self.iterations += 1
        if self.regression:
            self.reach += by
            check_reach(
                self.pooled, self.reach, self.iterations, self.protocol,
                "FedGBDTRegressor",
            )  # fmt: skip

    def start_check(self) -> Check:
        """Return the start round's check: a site's spread alone within the limit."""
        regression = self.regression

        def check(client: str, request: Payload, reply: Payload) -> None:
            if regression and isinstance(reply, StartReply):
                check_site_scale(reply.prior, reply.held_prior)

        return check

    def level_check(self, report: bool) -> Check:
        """Return a level round's check of each site's sums and losses."""
        reach, objective, priors = self.reach, self.objective, self.priors

        def check(client: str, request: Payload, reply: Payload) -> None:
            prior = priors.get(client)
            if prior is None or not isinstance(reply, LevelReply):
                return  # the reply's spec refused another kind
            check_gradients("node_gh", reply.node_stats, prior, reach, objective)
            bins = np.asarray(reply.bin_stats, np.float64)
            check_gradients("bin_stats", bins, prior, reach, objective)
            if report:
                check_report(reply.loss, prior, objective, reach)

        return check

    def local_check(self, config: BoostConfig) -> Check:
        """Return a baseline round's check of each site's trees and losses."""
        reach, priors = self.reach, self.priors

        def check(client: str, request: Payload, reply: Payload) -> None:
            prior = priors.get(client)
            if prior is None or not isinstance(reply, LocalReply):
                return  # the reply's spec refused another kind
            check_report(reply.loss, prior, config.objective, reach)
            if config.objective == "squared_error":
                check_leaves(reply, prior, reach, config)

        return check
