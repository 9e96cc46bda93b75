"""One round for a level whose every node has one client (issue 13).

**Decision** (beyond the paper): a level where every open node may hold rows of
one active client only takes **one** round, ``fedforest.sketch_evaluate``,
instead of a sketch and an evaluation: every level of a one-client federation
(``fit`` without ``groups``) or of one client per tree (``client_fraction``),
and levels whose nodes each lie inside one client's rows (learned from the
previous sketch, or known below a split on the client indicator). Each node's
pooled sketch is then its one client's sketch, so that client computes the
candidates the server would send it (:func:`._candidates.own_candidates`) and
returns their bins with the sketch. The server derives the candidates from the
sketches as before and re-indexes the bins into the evaluation's layout
(:class:`._sketching.FoldedStep`): what travels is what the two rounds would
carry, and the forest is the same bit for bit (tested). AvgImp keeps its rounds
(its evaluation sends gains, not bins).

:class:`FoldPolicy` is what the request builder (:mod:`._requests`) consults:
a step's :class:`._steps.Ask` offers a :class:`._steps.Fold`, and the policy
says whether this round takes it. ``ForestConfig.fold=False`` switches it off
(tests compare the two).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fedtrees._typing import IntArray
from fedtrees.algorithms.fedforest._steps import Ask

__all__ = ["FoldPolicy"]


@dataclass(frozen=True)
class FoldPolicy:
    """Whether a round folds: where its every asked node has one active client."""

    enabled: bool = True

    def folds(self, ask: Ask, active_rows: Sequence[IntArray]) -> bool:
        """Whether ``ask`` takes its fold, given each active client's node positions.

        It can where the nodes each active client is asked about
        (``active_rows``) are asked of no other: no position appears twice.
        """
        if not self.enabled or ask.fold is None:
            return False
        every = np.concatenate(active_rows) if active_rows else np.zeros(0, np.int64)
        return bool(np.unique(every).shape[0] == every.shape[0])
