"""A toy protocol that exercises the whole runtime: class counts, then histograms.

Round 1: every client returns its class counts (in the agreed label order).
Rounds 2, 3, ...: every client returns the per-bin class counts of one feature for
the thresholds the server sends; after each round the server moves the
thresholds to the pooled histogram's equal-depth points (linear inside a bin), so
the bins adapt to the federation's data without any row leaving a client.

It is the reference protocol of the runtime tests: its result must be identical
over the in-process transport and over a real Flower deployment.

Examples
--------
>>> import numpy as np
>>> from fedtrees.federation import Federation
>>> rng = np.random.default_rng(0)
>>> X, y = rng.normal(size=(40, 2)), rng.integers(0, 2, 40)
>>> fed = Federation.from_groups(X, y, np.repeat(["a", "b"], 20))
>>> result = run_toy(fed, feature=0, n_bins=4, n_rounds=2).result
>>> result.class_counts.tolist(), len(result.histograms)
([19.0, 21.0], 2)
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fedtrees._typing import FloatArray
from fedtrees._validation import MAX_GRID, check_int, check_size, invalid
from fedtrees.algorithms._phased import PhasedStrategy, Step
from fedtrees.algorithms._requests import check_reply_cells, check_request_size
from fedtrees.federation import (
    MAX_ROUNDS,
    ClientData,
    Federation,
    FederationInfo,
    Field,
    InvalidField,
    Ledger,
    Payload,
    ReplySpec,
    RoundCallback,
    RoundPlan,
    RunResult,
    handler,
    payload,
)
from fedtrees.stats import check_increasing, class_counts_by_group

__all__ = [
    "HistogramReply",
    "HistogramRequest",
    "ToyCountsReply",
    "ToyCountsRequest",
    "ToyPhase",
    "ToyResult",
    "ToyState",
    "ToyStrategy",
    "run_toy",
]


@payload("toy.counts_reply")
class ToyCountsReply(Payload):
    """Class counts of a client, in the agreed label order."""

    counts: np.ndarray


@payload("toy.counts")
class ToyCountsRequest(Payload):
    """Ask for class counts; ``classes`` is the agreed label order."""

    classes: np.ndarray

    def expected_reply(self) -> ReplySpec:
        """One non-negative count per agreed class, within the declared rows."""
        shape = (self.classes.shape[0],)
        return ReplySpec(
            ToyCountsReply,
            {"counts": Field.array("f", shape, nonnegative=True, rows=True)},
            check=_whole_counts,
        )


@payload("toy.histogram_reply")
class HistogramReply(Payload):
    """Per-bin class counts, shape (n_thresholds + 1, n_classes)."""

    counts: np.ndarray


@payload("toy.histogram")
class HistogramRequest(Payload):
    """Ask for the class histogram of one feature for these thresholds."""

    feature: int
    thresholds: np.ndarray
    classes: np.ndarray

    def expected_reply(self) -> ReplySpec:
        """Non-negative whole counts for every bin and class, within the rows."""
        shape = (self.thresholds.shape[0] + 1, self.classes.shape[0])
        return ReplySpec(
            HistogramReply,
            {"counts": Field.array("f", shape, nonnegative=True, rows=True)},
            check=_whole_counts,
        )


def _whole_counts(reply: ToyCountsReply | HistogramReply) -> None:
    """Row counts are whole numbers (the toy protocol has no sample weights).

    A buggy client's inflated counts are refused by the declared row bound
    (field ``rows``); this is not a Byzantine defence.
    """
    if np.any(reply.counts != np.floor(reply.counts)):
        raise InvalidField("counts", "holds fractions; whole row counts expected")


@handler("toy.counts")
def count_classes(request: ToyCountsRequest, data: ClientData) -> ToyCountsReply:
    """Client: class counts of the local rows."""
    codes = data.label_codes(request.classes)
    group = np.zeros(codes.shape[0], dtype=np.int64)
    counts = class_counts_by_group(group, codes, 1, request.classes.shape[0])
    return ToyCountsReply(counts[0])


@handler("toy.histogram")
def histogram(request: HistogramRequest, data: ClientData) -> HistogramReply:
    """Client: class counts per bin of one feature (bin b: t_{b-1} < x <= t_b).

    ``feature`` must be a column of this client, and the (bins x classes)
    counts must fit one reply (checked before allocating).
    """
    n_features = len(data.feature_kinds)
    check_request_size(
        request.kind, "feature", request.feature, n_features - 1, "a column index"
    )
    shape = (request.thresholds.shape[0] + 1, request.classes.shape[0])
    check_reply_cells(request.kind, "thresholds", shape, "counts")
    x = data.finite_matrix()[:, request.feature]
    bins = np.searchsorted(request.thresholds, x, side="left")
    codes = data.label_codes(request.classes)
    n_bins, n_classes = request.thresholds.shape[0] + 1, request.classes.shape[0]
    return HistogramReply(class_counts_by_group(bins, codes, n_bins, n_classes))


@dataclass(frozen=True, eq=False)
class ToyResult:
    """Pooled class counts and the histogram of every round."""

    classes: tuple[str, ...]
    class_counts: FloatArray
    histograms: list[tuple[FloatArray, FloatArray]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-compatible document (exact floats)."""
        return {
            "classes": list(self.classes),
            "class_counts": self.class_counts.tolist(),
            "histograms": [
                {"thresholds": t.tolist(), "counts": c.tolist()}
                for t, c in self.histograms
            ],
        }


class ToyPhase(enum.Enum):
    """The toy protocol's rounds, in order."""

    COUNTS = "counts"
    """Round 1: every client's class counts."""
    HISTOGRAM = "histogram"
    """Rounds 2, 3, ...: one feature's per-bin class counts; thresholds move."""


@dataclass(eq=False)
class ToyState:
    """The server's state, complete from the agreement."""

    clients: tuple[str, ...]
    classes: np.ndarray
    feature: int
    n_bins: int
    n_rounds: int
    thresholds: FloatArray
    """The thresholds of the next histogram round."""
    class_counts: FloatArray = field(default_factory=lambda: np.zeros(0))
    histograms: list[tuple[FloatArray, FloatArray]] = field(default_factory=list)


class ToyStrategy(PhasedStrategy[ToyState, ToyPhase]):
    """Server side of the toy protocol (pure computation, no transport).

    Rounds: :attr:`ToyPhase.COUNTS` once, then :attr:`ToyPhase.HISTOGRAM`
    ``n_rounds`` times.
    """

    first = ToyPhase.COUNTS

    def __init__(
        self,
        feature: int,
        n_bins: int,
        n_rounds: int,
        initial: Sequence[float] | FloatArray,
    ):
        super().__init__()
        self.feature, self.n_bins, self.n_rounds = feature, n_bins, n_rounds
        self.initial = np.asarray(initial, dtype=np.float64)

    def begin(self, info: FederationInfo) -> ToyState:
        """Check the feature index; the clients, agreed classes, first thresholds."""
        if not 0 <= self.feature < info.schema.n_features:
            raise invalid(
                "feature",
                "run_toy",
                f"a column index in [0, {info.schema.n_features})",
                self.feature,
            )
        classes = np.asarray(info.schema.classes, dtype=str)
        return ToyState(
            info.clients,
            classes,
            self.feature,
            self.n_bins,
            self.n_rounds,
            self.initial,
        )

    def steps(self) -> Mapping[ToyPhase, Step[ToyState, ToyPhase]]:
        """Return the table: the class counts, then the histograms."""
        return {
            ToyPhase.COUNTS: Step(_ask_counts, _absorb_counts),
            ToyPhase.HISTOGRAM: Step(_ask_histogram, _absorb_histogram),
        }

    def result(self, state: ToyState) -> ToyResult:
        """Return the pooled counts and histograms."""
        return ToyResult(
            tuple(state.classes.tolist()), state.class_counts, list(state.histograms)
        )

    def expected_rounds(self) -> int:
        """Total rounds after the agreement."""
        return 1 + self.n_rounds

    def round_metrics(self, round: int) -> dict[str, float]:
        """Rows seen in the round's pooled statistics."""
        st = self.state
        if not st.histograms:
            return {"rows": float(st.class_counts.sum())}
        return {"rows": float(st.histograms[-1][1].sum())}

    # -- read by the runtime tests ------------------------------------------------
    @property
    def class_counts(self) -> FloatArray:
        """The pooled class counts (after round 1)."""
        return self.state.class_counts

    @property
    def thresholds(self) -> FloatArray:
        """The thresholds of the next histogram round."""
        return self.state.thresholds

    @property
    def histograms(self) -> list[tuple[FloatArray, FloatArray]]:
        """The pooled histogram of every histogram round so far."""
        return self.state.histograms


# -- the steps ---------------------------------------------------------------------
def _ask_counts(st: ToyState) -> RoundPlan:
    return RoundPlan.broadcast(ToyCountsRequest(st.classes), st.clients)


def _absorb_counts(st: ToyState, replies: Mapping[str, Payload]) -> ToyPhase | None:
    st.class_counts = _pooled(replies)
    return ToyPhase.HISTOGRAM if st.n_rounds > 0 else None


def _ask_histogram(st: ToyState) -> RoundPlan:
    request = HistogramRequest(st.feature, st.thresholds, st.classes)
    return RoundPlan.broadcast(request, st.clients)


def _absorb_histogram(st: ToyState, replies: Mapping[str, Payload]) -> ToyPhase | None:
    counts = _pooled(replies)
    st.histograms.append((st.thresholds, counts))
    st.thresholds = equal_depth(st.thresholds, counts.sum(axis=1), st.n_bins)
    return ToyPhase.HISTOGRAM if len(st.histograms) < st.n_rounds else None


def _pooled(replies: Mapping[str, Payload]) -> FloatArray:
    """Sum the client counts (in client-id order)."""
    total = sum(_counts(replies[c]) for c in sorted(replies))
    return np.asarray(total, dtype=np.float64)


def _counts(reply: Payload) -> FloatArray:
    assert isinstance(reply, ToyCountsReply | HistogramReply)  # validated by the loop
    counts: FloatArray = reply.counts
    return counts


def equal_depth(thresholds: FloatArray, counts: FloatArray, n_bins: int) -> FloatArray:
    """Return new thresholds at the pooled equal-depth points of a histogram.

    The two open outer bins are treated as one threshold-gap wide.
    """
    edges = np.concatenate(
        [
            [thresholds[0] - _gap(thresholds)],
            thresholds,
            [thresholds[-1] + _gap(thresholds)],
        ]
    )
    cumulative = np.concatenate([[0.0], np.cumsum(counts)])
    targets = cumulative[-1] * np.arange(1, n_bins) / n_bins
    new = np.interp(targets, cumulative, edges)
    return np.unique(new) if np.unique(new).shape[0] == new.shape[0] else thresholds


def _gap(thresholds: FloatArray) -> float:
    return float(np.ptp(thresholds)) / max(thresholds.shape[0] - 1, 1) or 1.0


def run_toy(
    federation: Federation,
    *,
    feature: int = 0,
    n_bins: int = 8,
    n_rounds: int = 3,
    initial: Sequence[float] | None = None,
    timeout: float = 60.0,
    callbacks: Sequence[RoundCallback] = (),
    ledger: Ledger | None = None,
) -> RunResult:
    """Run the toy protocol on ``federation`` (``initial``: first thresholds).

    ``initial`` is a non-empty list of at most ``MAX_GRID - 1`` finite, strictly
    increasing numbers (default: ``n_bins - 1`` points evenly over [-2, 2]).

    Raises
    ------
    ValidationError
        Naming the parameter (``feature``, ``n_bins``, ``n_rounds``,
        ``initial``) and what it must be.
    """
    n_bins = check_size(n_bins, "n_bins", "run_toy", 2, MAX_GRID)
    n_rounds = check_int(
        n_rounds, "n_rounds", "run_toy", min_value=0, max_value=MAX_ROUNDS - 1
    )
    start = (
        np.linspace(-2.0, 2.0, n_bins - 1)
        if initial is None
        else check_increasing(initial, "initial", "run_toy")
    )
    strategy = ToyStrategy(
        check_int(feature, "feature", "run_toy", min_value=0), n_bins, n_rounds, start
    )
    return federation.run(
        strategy,
        task="classification",
        timeout=timeout,
        callbacks=callbacks,
        ledger=ledger,
    )
