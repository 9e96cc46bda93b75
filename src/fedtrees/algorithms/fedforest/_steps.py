"""The interfaces every kind of FedForest round follows; two steps all modes share.

A fit is a sequence of rounds; each round is one :class:`._phase.Phase`, answered by one
:class:`Step`: :meth:`Step.ask` says what to request (an :class:`Ask`, built
without touching any state) and :meth:`Step.absorb` folds the validated replies
into the run's state and returns the next phase. A :class:`CandidateMode` (one
per ``candidates=`` value) owns the steps of a level; the strategy
(:mod:`._strategy`) only moves from step to step. Two steps are the same for
every mode and live here: the leaf statistics that AvgImp's last children lack
(:class:`LeafStatsStep`) and the held-out score of the diagnostics
(:class:`ScoreStep`, docs/fedforest.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from fedtrees._typing import IntArray
from fedtrees.algorithms.fedforest._payloads import (
    LeafStatsReply,
    LeafStatsRequest,
    LevelFields,
    ScoreReply,
    ScoreRequest,
)
from fedtrees.algorithms.fedforest._phase import Got, Phase, final_phase
from fedtrees.federation import as_reply

if TYPE_CHECKING:
    from fedtrees.algorithms.fedforest._state import LevelState

__all__ = [
    "Ask",
    "CandidateMode",
    "Fields",
    "Fold",
    "LeafStatsStep",
    "ScoreStep",
    "Step",
    "fixed",
]


Fields = Callable[[int, IntArray, bool], tuple[dict[str, Any], object | None]]
"""A round's fields for one client: ``(client index, its node positions, full)``
-> the request's own fields, and what the client was sent that the step needs
back when the replies come (its bins' layout), or None."""


@dataclass(frozen=True)
class Fold:
    """The round a request becomes where every asked node has one client.

    See :mod:`._fold` (**Decision**): ``phase`` absorbs the folded round and
    ``request`` is sent instead.
    """

    phase: Phase
    request: type[LevelFields]


@dataclass(frozen=True, eq=False)
class Ask:
    """What a step asks of the clients in one round.

    ``request`` is the request class; ``pairs`` the features every node
    considers (-1 padding), ``nodes`` the node ids asked about (None: the open
    level); ``fields`` gives each client's own fields. ``per_client``: the
    fields differ between clients asked about the same nodes (their own
    candidates), so requests are never shared. ``fold``: the round it becomes
    where every asked node has one client (:mod:`._fold`). ``masked``: the
    length of the round's masked vector under secure aggregation (None: plain),
    ``masked_wide`` whether its values take two words each; the request
    builder starts the masked round and adds its fields. ``preamble``: the
    round comes before the forest's first (the class counts): its requests are
    in full form and so is the forest's next request.
    """

    request: type[LevelFields]
    pairs: IntArray
    nodes: IntArray | None
    fields: Fields
    per_client: bool = False
    fold: Fold | None = None
    masked: int | None = None
    masked_wide: bool = False
    preamble: bool = False


class Step(Protocol):
    """One kind of round: what it asks, and how its replies move the fit on."""

    def ask(self, state: LevelState) -> Ask:
        """Return the round's request; builds no state and changes nothing."""
        ...

    def absorb(self, state: LevelState, got: Sequence[Got]) -> Phase:
        """Fold the replies (sorted by client) into ``state``; return the next phase."""
        ...


class CandidateMode(Protocol):
    """How candidate thresholds are found (one per ``candidates=``; docs/fedforest.md).

    ``setup``: the phases run once before the first level (a mode that needs
    none has ``()``); ``first``: the phase that starts every level.
    """

    @property
    def setup(self) -> tuple[Phase, ...]:
        """Phases run once, before the first level."""
        ...

    @property
    def first(self) -> Phase:
        """The phase that starts every level."""
        ...

    def begin(self, state: LevelState) -> None:
        """Prepare for the fit (the schema is known): before any other call."""
        ...

    def steps(self) -> Mapping[Phase, Step]:
        """Return the mode's steps, by the phase they answer."""
        ...

    def expected_rounds(self, n_clients: int) -> int:
        """Upper bound of the rounds after the agreement (for progress bars)."""
        ...


def fixed(**values: Any) -> Fields:
    """Request fields that are the same whatever nodes a client is asked about."""
    return lambda k, rows, full: (dict(values), None)


class LeafStatsStep:
    """Ask the statistics of the leaves that lack them (AvgImp's last children)."""

    def ask(self, state: LevelState) -> Ask:
        """Ask every client about the leaves of unknown statistics."""
        nodes = state.growth.unknown_leaves()
        empty = np.full((nodes.shape[0], 1), -1, dtype=np.int64)
        return Ask(LeafStatsRequest, empty, nodes, fixed())

    def absorb(self, state: LevelState, got: Sequence[Got]) -> Phase:
        """Pool the leaves' statistics; the fit ends (or scores)."""
        g = state.growth
        nodes = g.unknown_leaves()
        pooled = np.zeros((nodes.shape[0], g.width))
        for _, asked, reply in got:
            pooled[asked] += as_reply(reply, LeafStatsReply).node_stats.astype(float)
        g.set_stats(nodes, pooled)
        return final_phase(state.config)


class ScoreStep:
    """Score the finished forest on the clients' held-out rows (docs/fedforest.md)."""

    def ask(self, state: LevelState) -> Ask:
        """Send every node's value; no node is asked about."""
        empty = np.full((0, 1), -1, dtype=np.int64)
        values = state.growth.node_values()
        return Ask(
            ScoreRequest, empty, np.zeros(0, np.int64), fixed(node_values=values)
        )

    def absorb(self, state: LevelState, got: Sequence[Got]) -> Phase:
        """Keep the scores; the fit is done."""
        state.scores = tuple(as_reply(reply, ScoreReply) for _, _, reply in got)
        return Phase.DONE
