"""Federated-ID3 messages, client handler and server strategy (docs/icdta.md).

Truex et al. (2019)'s top-down federated ID3, the baseline of ICDTA4FL (paper
002) and, made binary, the "IBM tree" of FedGA-Tree (paper 000). The server
grows the tree level by level, all open nodes of a level in one round:

0. (numeric columns without declared edges; exact mode only) the federated
   discretization round of :mod:`fedtrees.algorithms._discretize`;
1. per level: the server sends the tree's *structure* so far (splits only, no
   counts: clients learn nothing pooled), the open nodes and the features each
   considers; every client routes its rows (codes) and answers, for every
   (open node, feature), its count of rows per (value, class)
   (:func:`fedtrees.learners.value_class_counts`);
2. the server sums the tables over clients and grows the tree
   (:class:`fedtrees.learners.Id3Growth`: ID3 information gain, or binary Gini
   splits) — exactly the step :func:`fedtrees.learners.fit_id3` runs on pooled
   rows, so with ``epsilon=None`` the federated tree equals the pooled one.

**Privacy (``epsilon`` set).** The plan has d levels (d = max_depth); a level's
budget is ε/d. The q features a node considers share it: each (node, feature)
table is a histogram (one row changes one cell by 1: sensitivity 1) released
with Laplace noise of ε' = ε/(d·q). The nodes of a level hold disjoint rows, so
by parallel composition a level costs q·ε' = ε/d, whatever its number of nodes.
Every count gets noise through the client's own :class:`PrivacyAccountant`; as
handlers are stateless, a level's accountant replays the levels before it
(honest-but-curious server) and the reply reports the cumulative spend, which the
server checks. A site that declared its own budget is charged each level's share
ε/d before the level's noise is drawn, and refuses exact (noise-free) levels
(:mod:`fedtrees.federation._budget`). **Decision (charging the plan, as the DP
forest):** levels the tree never reached are charged as well, so
``epsilon_spent_`` equals ε (the server's account; a site's budget is charged
only the levels it answered).
**Decision (noise):** each client adds its own noise (Truex et al.'s secure
aggregation, which lets the noise shrink with the number of honest clients, is
not implemented); the server clips pooled counts at 0 and treats a value or a
node whose pooled noisy count is below the standard deviation of the pooled
noise, ``sqrt(2·K·C)/(ε'·sqrt(r))``, as absent — post-processing, at no privacy
cost. The noise is each site's own (:class:`fedtrees.federation.SiteNoise`:
fresh operating-system entropy, or keyed by the site's secret and the whole
request), never by the request's seed, the site's id or the level alone.

**The honest-clients reading** (``noise="honest_clients"``, the "IBM tree" of
FedGA-Tree's experiment). Truex et al. (2019) let each of K parties add only a
share of the noise when at least t of them are honest: shares whose *variance*
is the required variance divided by t − 1, so that the noise of any t − 1
honest parties sums to the variance one central ε-DP release needs (FedGA-Tree,
Sec. II-C: "the required noise can be reduced by a factor of t − 1"). The
request carries that divisor, ``noise_reduction`` r = t − 1 (1 for the default
full noise): a client's Laplace scale is ``1/(ε'·sqrt(r))``. Truex et al. hide
each party's share inside threshold-encrypted sums; fedtrees does **not**
implement that secure computation here, so the server sees every client's
counts with the reduced noise, and one release of scale ``1/(ε'·sqrt(r))``
is ``ε'·sqrt(r)``-DP against it. **Decision (honest accounting):** a client is
charged what its releases cost against the server, ``ε·sqrt(r)`` for the plan
(:func:`release_epsilon`): its accountant, its reply's ``epsilon_spent`` and a
site's declared budget all count that, so a server that asks for a large r
pays for it in the site's budget.

Communication (K clients, S_l open nodes at level l, C classes): rounds
``1 + [1] + L`` for the L levels grown (L <= d). Per level and client, down: the
structure as a packed tree (``P(n, b)`` bytes, see ICDTA4FL), ``8·S_l`` open
ids, ``S_l·F`` allowed flags and the binning; up: ``8·C·Σ_s Σ_{f allowed} arity_f``
count bytes and 8 for the spend. No message has a row dimension.
"""

from __future__ import annotations

import math

import numpy as np

from fedtrees.algorithms._discretize import BinnedFields
from fedtrees.algorithms._packed import PackedTrees, class_codes, rebuild_packed
from fedtrees.algorithms._plausible import noisy_count_field
from fedtrees.algorithms._requests import field_error
from fedtrees.federation import (
    Field,
    InvalidField,
    Payload,
    ReplySpec,
    check_same_stats,
    payload,
)
from fedtrees.learners import Layout
from fedtrees.privacy import even_share
from fedtrees.tree import Tree

__all__ = ["LevelReply", "LevelRequest", "release_epsilon"]


def release_epsilon(epsilon: float, noise_reduction: float) -> float:
    """Return what a client's releases of a plan of ε cost against the server.

    Each client's noise variance is divided by ``noise_reduction`` r, so its
    Laplace scale by ``sqrt(r)``: every ε-share it spends costs ``sqrt(r)``
    times as much against a server that sees its counts (module docstring).
    r = 1 (full noise) gives ``epsilon`` itself, bit for bit.

    Examples
    --------
    >>> release_epsilon(1.0, 1.0), release_epsilon(1.0, 4.0)
    (1.0, 2.0)
    """
    return epsilon * math.sqrt(noise_reduction)


@payload("fedid3.counts")
class LevelReply(Payload):
    """The client's (value, class) counts of every pair; its cumulative ε."""

    counts: np.ndarray
    epsilon_spent: float


@payload("fedid3.level")
class LevelRequest(PackedTrees, BinnedFields):
    """Count your rows at the open nodes of this level (the structure so far).

    ``epsilon`` is the whole run's budget (inf: exact counts, no noise);
    ``n_levels`` is d, the planned depth; ``noise_reduction`` r >= 1 divides
    each client's noise variance (1: full noise; ``t - 1`` under the
    honest-clients reading), and the client is charged accordingly
    (:attr:`plan_epsilon`).
    """

    open_nodes: np.ndarray
    allowed: np.ndarray
    classes: np.ndarray
    level: int
    n_levels: int
    epsilon: float
    seed: int
    noise_reduction: float

    @property
    def plan_epsilon(self) -> float:
        """ε the whole plan costs a client against the server: ``ε·sqrt(r)``.

        Raises a :class:`~fedtrees.exceptions.ValidationError` naming
        ``noise_reduction`` unless it is a finite number >= 1 (the client checks
        it before it draws any noise or charges any budget).
        """
        r = self.noise_reduction
        if not (isinstance(r, float) and math.isfinite(r) and r >= 1.0):
            raise field_error(
                self.kind,
                "noise_reduction",
                "a finite number >= 1 (the factor dividing each client's noise "
                "variance)",
                repr(r),
            )
        return release_epsilon(self.epsilon, r)

    @property
    def layout(self) -> Layout:
        """Where each (open node, feature) table sits in the reply."""
        return Layout(
            self.open_nodes, self.allowed, self.arity, int(self.classes.shape[0])
        )

    @property
    def exact(self) -> bool:
        """Whether counts travel without noise."""
        return math.isinf(self.epsilon)

    @property
    def tables_per_node(self) -> int:
        """q: the tables a node releases, which share the level's budget."""
        return int(self.allowed.sum(axis=1).max(initial=1))

    @property
    def level_epsilon(self) -> float:
        """A level's cost: the largest float share with d shares within the plan."""
        return even_share(self.plan_epsilon, self.n_levels)

    @property
    def query_epsilon(self) -> float:
        """ε' of one (node, feature) table: ε / (d · q), never summing above ε."""
        return even_share(self.level_epsilon, self.tables_per_node)

    def spent_after(self) -> float:
        """Return the cumulative ε a client has spent after answering this level."""
        if self.exact:
            return math.inf
        return self.plan_epsilon * (self.level + 1) / self.n_levels

    def structure(self) -> Tree:
        """Rebuild the partial tree the rows are routed through."""
        (tree,) = rebuild_packed(
            self,
            n_features=int(self.binned.shape[0]),
            classes=class_codes(self.classes),
        )
        return tree

    def expected_reply(self) -> ReplySpec:
        """One count per cell of the layout; the spend of ``level + 1`` levels.

        Exact counts are row counts: each at most the client's declared row
        bound, and every considered feature's table of a node adds up to the
        same class counts (each row has one value). Noisy counts (Laplace of
        scale 1/ε') need not add up, but each is a count plus noise: within the
        row bound give or take the noise's reach
        (:func:`fedtrees.algorithms._plausible.noisy_count_field`).
        """
        counts = (
            Field.array("f", (self.layout.size,), nonnegative=True, rows=True)
            if self.exact
            else noisy_count_field(1.0 / self.query_epsilon, (self.layout.size,))
        )
        spent = Field.scalar(low=0.0, finite=False)
        return ReplySpec(
            LevelReply, {"counts": counts, "epsilon_spent": spent}, check=self._check
        )

    def _check(self, reply: LevelReply) -> None:
        self._spend(reply)
        if self.exact:
            self._check_tables(reply)

    def _check_tables(self, reply: LevelReply) -> None:
        """Every considered feature's table of a node holds the same class counts."""
        per_value = self.layout.dense(reply.counts).sum(axis=2)  # (n_open, F, C)
        allowed = np.asarray(self.allowed, dtype=bool)
        first = np.argmax(allowed, axis=1)
        want = per_value[np.arange(per_value.shape[0]), first][:, None, :]
        want = np.broadcast_to(want, per_value.shape)
        check_same_stats(
            "counts",
            np.where(allowed[..., None], per_value, want),
            want,
            "a feature's table of a node sums (per class)",
            False,
        )

    def _spend(self, reply: LevelReply) -> None:
        wanted = self.spent_after()
        same = (
            math.isinf(reply.epsilon_spent)
            if math.isinf(wanted)
            else math.isclose(reply.epsilon_spent, wanted, rel_tol=1e-9)
        )
        if not same:
            raise InvalidField(
                "epsilon_spent", f"{reply.epsilon_spent!r}; expected {wanted!r}"
            )
