"""What the server knows bounds every FedGBDT statistic (docs/fedgbdt.md).

A reply that passes its form and its per-row bounds (``|g| <= w``,
``h <= w/4``, a logloss of at most ``-log(1e-16)`` per unit of weight:
:mod:`._payloads`) can still hold sums that no site's rows give. The server
knows, from the start round, each site's *prior*: the weight of its training
rows and of its validation rows (held out for early stopping) and, for
squared error, their moments, hence their *spread* ``L = Σw·(y − m)²`` about
the agreed starting score m; and it knows the trees it grew, hence how far a
row's raw prediction can be from m: the model's *reach* R, the sum over the
finished iterations of their largest ``|leaf value|``. For rows of weight W
and spread L:

- **loss weights**: a report weighs its training and validation losses by
  the weights of the same rows in the site's start reply (a site cannot weigh
  its losses by more than its rows);
- **losses** (squared error): ``Σw·(raw − y)² <= (sqrt(W)·R + sqrt(L))²``
  (Minkowski, as ``raw − y = (raw − m) + (m − y)``); logloss: at most
  ``-log(1e-16)`` per unit of weight (:func:`._payloads.check_losses`);
- **gradients** (squared error): a node's ``|Σw·(raw − y)| <= W·R +
  sqrt(W·L)`` (Cauchy-Schwarz), every node's weight at most the training
  rows';
- **leaves** (bagging and cyclic, squared error): a site's leaf
  ``−η·G/(H+λ)``, its hessian H the node's weight C (its ``cover``), is at
  most ``η·(C·R_j + sqrt(C·L))/(C + λ)`` in magnitude, R_j the reach of the
  global model and of the site's own earlier trees of the round (logloss
  leaves: :mod:`._payloads`).

Plain replies are checked per site against that site's prior (the round
loop's check, so a failure names the site and the field); under secure
aggregation the pooled sums against the pooled prior (the cohort only
shrinks, so its sums stay within the start's). Every bound holds for any rows,
rounding allowed: an honest site is never refused, and a site that lies
within them is not caught (this is not a Byzantine defence, docs/security.md).

**The server's own sums.** A node's ``G²`` (in its gains) is at most
``W·(sqrt(W)·R + sqrt(L))²`` over the pooled rows, and so is every site's
loss sum once ``W >= 1``. The server refuses, right after the start round,
targets whose pooled ``W·L`` passes :data:`SCALE_LIMIT` (naming ``y`` and
``sample_weight``), and stops a fit whose model's reach would take that bound
past it (naming the protocol; bagging overshoots the residual when many sites
each fit all of it): no site is blamed for an infinite loss the server's own
model caused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

import numpy as np

from fedtrees._typing import FloatArray
from fedtrees.algorithms.fedgbdt._config import BoostConfig
from fedtrees.algorithms.fedgbdt._decisions import KIND_LEAF, Decisions
from fedtrees.algorithms.fedgbdt._payloads import LocalReply
from fedtrees.exceptions import ValidationError
from fedtrees.federation import RTOL, InvalidField, check_at_most

__all__ = [
    "SCALE_LIMIT",
    "Prior",
    "check_gradients",
    "check_leaves",
    "check_reach",
    "check_report",
    "check_site_scale",
    "check_target_scale",
    "leaf_reach",
    "loss_bound",
]

SCALE_LIMIT: Final = 2.0**1016
"""Largest ``W·(sqrt(W)·R + sqrt(L))²`` (about 7e305): a node's ``G²`` and a
site's loss sum stay finite float64, with room to add a few hundred of them."""
SLACK: Final = 1e-6
"""Relative allowance on a bound (the sites' float sums)."""


@dataclass(frozen=True)
class Prior:
    """What a start reply says of a site's rows (or the pooled rows of a cohort).

    ``train`` and ``held``: the weight of the training and of the validation
    rows; ``train_spread`` and ``held_spread``: an upper bound of their
    ``Σw·(y − m)²`` about the starting score m (squared error; 0 otherwise).
    """

    train: float
    held: float
    train_spread: float = 0.0
    held_spread: float = 0.0

    @classmethod
    def of(
        cls,
        prior: FloatArray,
        held_prior: FloatArray,
        objective: str,
        margin: FloatArray,
        atol: float = 0.0,
    ) -> Prior:
        """Read a training and a validation prior (class counts, or moments).

        ``atol``: the rounding of a masked sum, per entry.
        """
        if objective != "squared_error":
            return cls(float(np.sum(prior)), float(np.sum(held_prior)))
        m = float(margin[0])
        return cls(
            float(prior[0]),
            float(held_prior[0]),
            _spread(prior, m, atol),
            _spread(held_prior, m, atol),
        )

    def __add__(self, other: Prior) -> Prior:
        return Prior(
            self.train + other.train,
            self.held + other.held,
            self.train_spread + other.train_spread,
            self.held_spread + other.held_spread,
        )

    @property
    def weight(self) -> float:
        """The weight of every row (training and validation)."""
        return self.train + self.held

    @property
    def spread(self) -> float:
        """The spread of every row (training and validation)."""
        return self.train_spread + self.held_spread


def _spread(moments: FloatArray, m: float, atol: float) -> float:
    """Return an upper bound of ``Σw·(y − m)²`` from ``(Σw, Σw·y, Σw·y²)``.

    ``Σw·y² − 2m·Σw·y + m²·Σw``, plus its cancellation's rounding (relative to
    the terms' sizes) and ``atol`` per moment (a masked sum's rounding).
    """
    w, s1, s2 = (float(v) for v in np.asarray(moments, np.float64)[:3])
    value = s2 - 2.0 * m * s1 + m * m * w
    size = abs(s2) + 2.0 * abs(m * s1) + m * m * abs(w)
    return max(value, 0.0) + 1e-9 * size + atol * (1.0 + 2.0 * abs(m) + m * m)


def loss_bound(weight: float, spread: float, reach: float) -> float:
    """Return the most ``Σw·(raw − y)²`` of rows of ``weight`` and ``spread``.

    ``(sqrt(W)·R + sqrt(L))²`` when every raw prediction is within ``reach``
    of the starting score.

    Examples
    --------
    >>> loss_bound(4.0, 9.0, 0.5)
    16.0
    """
    root = math.sqrt(max(weight, 0.0)) * reach + math.sqrt(max(spread, 0.0))
    return root * root


def leaf_reach(values: FloatArray) -> float:
    """Return how far some leaves move a prediction: their largest ``|value|``."""
    v = np.abs(np.asarray(values, np.float64))
    return float(v.max()) if v.size else 0.0


def check_report(
    loss: FloatArray,
    prior: Prior,
    objective: str,
    reach: float,
    *,
    exact: bool = True,
    atol: float = 0.0,
) -> None:
    """Require a loss report the rows of ``prior`` can give (module docstring).

    ``loss``: Σ training loss, Σ training weight, Σ validation loss, Σ
    validation weight. ``exact``: the weights must equal the prior's (one
    site, or the start's cohort), else be at most them.

    Raises
    ------
    InvalidField
        Field ``loss``.
    """
    values = np.asarray(loss, np.float64)
    for at, want, what in ((1, prior.train, "training"), (3, prior.held, "validation")):
        got = float(values[at])
        allowed = RTOL * max(abs(got), abs(want)) + 2.0 * atol
        if not got <= want + allowed or (exact and got < want - allowed):
            same = (
                f"but its {what} rows weigh {want!r} in its start reply (the same rows)"
                if exact
                else f"more than the {want!r} its sites' {what} rows weigh in "
                "their start replies"
            )
            raise InvalidField("loss", f"weighs its {what} loss by {got!r}, {same}")
    if objective != "squared_error":
        return
    for at, weight, spread, what in (
        (0, prior.train, prior.train_spread, "training"),
        (2, prior.held, prior.held_spread, "validation"),
    ):
        most = loss_bound(weight, spread, reach)
        if not values[at] <= most * (1.0 + SLACK) + 2.0 * atol:
            raise InvalidField(
                "loss",
                f"holds a {what} squared error of {float(values[at])!r}, more than "
                f"the {most!r} that rows of weight {weight!r} and target spread "
                f"Σw·(y - m)² = {spread!r} can give under a model that moves a "
                f"prediction by at most {reach!r}",
            )


def check_gradients(
    name: str,
    stats: FloatArray,
    prior: Prior,
    reach: float,
    objective: str,
    *,
    atol: float = 0.0,
) -> None:
    """Require node (or bin) sums ``(Σg, Σh, Σw)`` the training rows can give.

    Every weight at most the training rows'; for squared error ``|Σg| <=
    W·R + sqrt(W·L)`` (module docstring).

    Raises
    ------
    InvalidField
        Field ``name``.
    """
    w = np.asarray(stats[:, 2], np.float64)
    check_at_most(
        name, w, np.asarray(prior.train), "a weight vs the training rows'", atol=atol
    )
    if objective != "squared_error":
        return
    upper = np.maximum(w, 0.0) + atol
    most = upper * reach + np.sqrt(upper * prior.train_spread)
    check_at_most(
        name,
        np.abs(stats[:, 0]),
        most * (1.0 + SLACK),
        "|Σg| vs W·R + sqrt(W·Σw(y - m)²)",
        atol=2.0 * atol,
    )


def check_leaves(
    reply: LocalReply, prior: Prior, reach: float, config: BoostConfig
) -> None:
    """Require a site's own trees (bagging, cyclic) its rows can grow (squared error).

    ``reply``: a ``fedgbdt.local_reply`` (decision columns and ``cover``, each
    decision's node weight), checked for form already; ``reach``: the global
    model's. Local tree j starts from the global model plus the site's trees
    before it, so its leaves are bounded with the reach of both.

    Raises
    ------
    InvalidField
        Field ``cover`` (beyond the training weight) or ``d_value``.
    """
    table = Decisions.from_fields(reply)
    cover = np.asarray(reply.cover, np.float64)
    check_at_most(
        "cover", cover, np.asarray(prior.train), "a node's weight vs the training rows'"
    )
    eta, lam = config.learning_rate, config.reg_lambda
    local = reach
    for number in np.unique(table.iteration).tolist():
        leaf = (table.iteration == number) & (table.kind == KIND_LEAF)
        c = np.maximum(cover[leaf], 0.0)
        grad = c * local + np.sqrt(c * prior.train_spread)
        with np.errstate(divide="ignore", invalid="ignore"):
            most = np.where(c > 0, eta * grad / np.maximum(c + lam, 1e-300), 0.0)
        values = table.value[leaf]
        check_at_most(
            "d_value",
            np.abs(values),
            most * (1.0 + SLACK),
            f"|a leaf weight| of local tree {number} vs η·(C·R + sqrt(C·L))/(C + λ)",
        )
        local += leaf_reach(values)


def _scale(prior: Prior, reach: float) -> float:
    """Return ``max(W, 1)·(sqrt(W)·R + sqrt(L))²`` of the pooled rows."""
    with np.errstate(over="ignore"):
        return max(prior.weight, 1.0) * loss_bound(prior.weight, prior.spread, reach)


def check_site_scale(prior: FloatArray, held_prior: FloatArray) -> None:
    """Refuse a site's start moments whose spread alone could overflow the sums.

    The spread about the site's own mean is at most its spread about any
    starting score, so a site beyond :data:`SCALE_LIMIT` here takes the pooled
    rows beyond it too (:func:`check_target_scale`): it is named at once.

    Raises
    ------
    InvalidField
        Field ``prior``.
    """
    weight, spread = 0.0, 0.0
    for moments in (prior, held_prior):
        w, s1, s2 = (float(v) for v in np.asarray(moments, np.float64)[:3])
        weight += w
        spread += max(s2 - s1 * s1 / w, 0.0) if w > 0 else 0.0
    if _scale(Prior(weight, 0.0, spread), 0.0) > SCALE_LIMIT:
        raise InvalidField(
            "prior",
            f"holds moments whose spread Σw·(y - mean)² = {spread:.4g} over a weight "
            f"of {weight:.4g} is beyond what the server's sums hold (their product "
            f"must stay below {SCALE_LIMIT:.4g}); rescale y or sample_weight",
        )


def check_target_scale(prior: Prior, owner: str) -> None:
    """Refuse targets whose pooled spread could overflow the server's sums.

    Raises
    ------
    ValidationError
        Naming ``y`` and ``sample_weight``.
    """
    if _scale(prior, 0.0) <= SCALE_LIMIT:
        return
    raise ValidationError(
        f"{owner}: the sites' targets are too large for the server's sums: over a "
        f"total weight of {prior.weight:.4g}, Σw·(y - m)² about the starting score "
        f"is {prior.spread:.4g}, so a node's gradient sum could reach "
        f"sqrt(W·Σw·(y - m)²) and its square (in the gains) pass {SCALE_LIMIT:.4g}. "
        "Rescale y (e.g. to unit variance) or sample_weight, and scale the "
        "predictions back."
    )


def check_reach(
    prior: Prior, reach: float, iterations: int, protocol: str, owner: str
) -> None:
    """Stop a fit whose model moves predictions too far for the sums to hold.

    Raises
    ------
    ValidationError
        Naming the protocol and what to change.
    """
    if _scale(prior, reach) <= SCALE_LIMIT:
        return
    hint = (
        "protocol='bagging' appends every site's trees, each fitted to the whole "
        "residual, so with many sites a round overshoots it: lower learning_rate "
        "(below about 2 / the number of sites) or use protocol='histogram'"
        if protocol == "bagging"
        else "rescale y, or lower learning_rate"
    )
    raise ValidationError(
        f"{owner} (protocol={protocol!r}): the model's predictions diverged: after "
        f"{iterations} iterations they may differ from the starting score by "
        f"{reach:.4g}, and the sites' losses (or the server's gradient sums) over "
        f"the rows' total weight of {prior.weight:.4g} could pass "
        f"{SCALE_LIMIT:.4g}: {hint}."
    )
