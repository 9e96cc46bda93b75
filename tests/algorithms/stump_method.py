"""A test-only histogram method: a one-split stump on the engine (docs/histogram.md).

Round 1 agrees the grid (none when every column's edges are declared); round 2
asks the root's class counts and its bins over every feature, and the engine's
search picks the split. Secure aggregation masks both rounds. What is the
method's own: class counts as statistics, its request fields, its result.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import numpy as np

from fedtrees import federation as fed
from fedtrees._methods import Document, JobEntry, Method
from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms import histogram as hist
from fedtrees.algorithms._phased import PhasedStrategy, Step

STUMP = Method("tests.algorithms.stump_method", job=JobEntry("stump", Document.TOY))
"""The stump's registry entry: a ClientApp loads its handlers by its job's name."""


@fed.payload("stump.grid_reply")
class GridReply(fed.Payload):
    points: np.ndarray
    weights: np.ndarray
    counts: np.ndarray
    complete: np.ndarray


@fed.payload("stump.grid")
class GridRequest(fed.Payload):
    n_features: int
    max_bins: int
    columns: np.ndarray
    ranges: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    mask_round: int = -1
    cohort: np.ndarray = field(default_factory=fed.no_cohort)
    cohort_keys: np.ndarray = field(default_factory=fed.no_cohort_keys)

    def expected_reply(self) -> fed.ReplySpec:
        return hist.grid_reply_spec(self, GridReply)


@fed.payload("stump.root_reply")
class RootReply(fed.Payload):
    node_stats: np.ndarray
    bin_count: np.ndarray
    bin_code: np.ndarray
    bin_stats: np.ndarray


@fed.payload("stump.root")
class RootRequest(fed.Payload, hist.MaskedLevel):
    fit_id: int
    classes: np.ndarray
    pair_feature: np.ndarray
    feature_bins: np.ndarray
    grid_edges: np.ndarray
    grid_edge_ptr: np.ndarray
    mask_round: int = -1
    cohort: np.ndarray = field(default_factory=fed.no_cohort)
    cohort_keys: np.ndarray = field(default_factory=fed.no_cohort_keys)

    @property
    def wide_mask(self) -> bool:
        return False  # class counts fit one word

    def dense_layout(self) -> hist.DenseLayout:
        pairs, bins = self.pair_feature.astype(np.int64), self.feature_bins
        return hist.DenseLayout(pairs, bins.astype(np.int64), self.classes.size)

    def expected_reply(self) -> fed.ReplySpec:
        c, f = self.classes.size, self.pair_feature.size
        counts = partial(fed.Field.array, "f", nonnegative=True, weights=True)
        fields = hist.level_reply_fields(1, f, counts((1, c)), counts((None, c)))
        check = partial(hist.check_level_reply, pair_feature=self.pair_feature,
                        feature_bins=self.feature_bins, relative=False)  # fmt: skip
        return self.masked_reply_spec() or fed.ReplySpec(RootReply, fields, check=check)


@fed.handler("stump.grid", stateful=True)
def grid(r: GridRequest, data: fed.ClientData, state: fed.ClientState) -> fed.Payload:
    masked = fed.MaskFields.of(r) is not None
    X, skipped = hist.matrix_with_missing(data), hist.skipped_columns(r, data)
    s = hist.summarise_columns(r, X, skipped, data.weights, masked)
    if isinstance(s, hist.GridSketch):
        return GridReply(s.points, s.weights, s.counts, s.complete)
    return fed.masked_reply(r, data, state, s)


@fed.handler("stump.root", stateful=True)
def root(r: RootRequest, data: fed.ClientData, state: fed.ClientState) -> fed.Payload:
    agreed = hist.keep_grid(r, data, state, "stump.grid")
    if agreed is None:
        return fed.Resync("no grid kept")  # not reached: every request carries it
    codes = hist.bin_codes(hist.matrix_with_missing(data), agreed).T.copy()
    w = (np.ones(data.n_rows) if data.weights is None else data.weights)[None, :]
    labels = hist.RowStats.classes(data.label_codes(r.classes), r.classes.size)
    rows, node = hist.NodeRows.build(w), np.zeros(1, np.int64)
    pairs = r.pair_feature.astype(np.int64)
    stats, h = hist.client_histograms(rows, node, pairs, codes, w, labels)
    if fed.MaskFields.of(r) is None:
        return RootReply(stats, h.counts[None, :], h.codes, h.stats)
    return fed.masked_reply(r, data, state, r.dense_layout().dense(stats, h))


class Phase(enum.Enum):
    GRID = "grid"
    ROOT = "root"


@dataclass(frozen=True, eq=False)
class Stump:
    """The split: ``feature``, ``threshold`` (x <= it goes left), class counts."""

    feature: int
    threshold: float
    left: FloatArray
    right: FloatArray
    grid: hist.Grid


@dataclass(eq=False)
class StumpRun:
    """The server's state, complete from the start (``stump``: the last round's)."""

    info: fed.FederationInfo
    agreement: hist.GridAgreement
    masks: fed.MaskedRounds
    secure: bool
    grid: hist.Grid
    rounds: hist.LevelRounds
    criterion: str
    stump: Stump | None = None

    def plan(self, request: fed.Payload, length: int) -> fed.RoundPlan:
        clients = self.info.clients
        masked = self.masks.start(clients, length) if self.secure else None
        request = request if masked is None else replace(request, **masked.fields())
        return fed.RoundPlan(dict.fromkeys(clients, request), masked=masked)

    def total(self, replies: Mapping[str, fed.Payload], check: Callable) -> Any:
        """The masked sum, held to ``check(values, sites=, bound=)`` (declared weight)."""

        def bounded(values: FloatArray, sites: tuple[str, ...]) -> None:
            check(values, sites=len(sites), bound=self.info.declared_weight(sites))

        return self.masks.values(replies, bounded)

    def ask_grid(self) -> fed.RoundPlan:
        agreement = self.agreement
        return self.plan(GridRequest(**agreement.request_fields()), agreement.n_fine)

    def agree_grid(self, replies: Mapping[str, fed.Payload]) -> Phase:
        agreement = self.agreement
        self.grid = (
            agreement.agree_masked(self.total(replies, agreement.check_fine))
            if self.secure
            else agreement.agree([fed.as_reply(r, GridReply) for r in replies.values()])
        )
        return Phase.ROOT

    def _root(self) -> tuple[IntArray, hist.DenseLayout]:
        pairs = np.arange(self.grid.n_features)[None, :]
        return pairs, hist.DenseLayout(pairs, self.grid.n_bins, self.rounds.width)

    def ask_root(self) -> fed.RoundPlan:
        (pairs, layout), g = self._root(), self.grid
        classes = np.asarray(self.info.schema.classes, dtype=str)
        request = RootRequest(0, classes, pairs, g.n_bins, g.edges, g.edge_ptr)
        return self.plan(request, layout.length)

    def split_root(self, replies: Mapping[str, fed.Payload]) -> None:
        (pairs, layout), node, g = self._root(), np.zeros(1, np.int64), self.grid
        plan = self.rounds.plan(node, pairs, node - 1, np.zeros((1, layout.width)))
        if self.secure:
            counts = list(range(layout.width))
            check = partial(hist.check_pooled_level, layout, counts=counts)
            stats, bins = self.rounds.read(plan, layout, self.total(replies, check))
        else:
            got = [(node, fed.as_reply(r, RootReply)) for r in replies.values()]
            stats, bins = self.rounds.pooled(plan, got, 1)
        found = hist.search(
            bins(), pairs, g.is_categorical, stats, np.ones(1), self.criterion
        )
        feature, left = int(pairs[0, found.num_slot[0]]), found.num_left[0]
        threshold = float(g.threshold(np.array([feature]), found.num_bin)[0])
        self.stump = Stump(feature, threshold, left, stats[0] - left, g)


class StumpStrategy(PhasedStrategy[StumpRun, Phase]):
    """A one-split stump on pooled class counts (``criterion``: gini or entropy).

    ``grid``: ``max_bins``, ``bin_edges``, ``feature_ranges`` (docs/histogram.md).
    """

    first = Phase.GRID

    def __init__(self, criterion: str = "gini", secure: bool = False, **grid: Any):
        super().__init__()
        self.criterion, self.secure, self.grid = criterion, secure, grid

    @property
    def secure_aggregation(self) -> bool:
        return self.secure

    def begin(self, info: fed.FederationInfo) -> StumpRun:
        agreement = hist.GridAgreement.begin(
            info, owner="Stump", max_bins=self.grid.get("max_bins", 255),
            bin_edges=self.grid.get("bin_edges"), secure=self.secure,
            feature_ranges=self.grid.get("feature_ranges"),
        )  # fmt: skip
        grid = agreement.before() if agreement.needed else agreement.declared_only()
        masks, width = fed.MaskedRounds(info.public_keys), len(info.schema.classes)
        rounds = hist.LevelRounds.begin(width, -1, subtract=False)
        secure, criterion = self.secure, self.criterion
        return StumpRun(info, agreement, masks, secure, grid, rounds, criterion)

    def first_phase(self, state: StumpRun) -> Phase:
        return Phase.GRID if state.agreement.needed else Phase.ROOT

    def steps(self) -> Mapping[Phase, Step[StumpRun, Phase]]:
        grid = Step(StumpRun.ask_grid, StumpRun.agree_grid)
        return {
            Phase.GRID: grid,
            Phase.ROOT: Step(StumpRun.ask_root, StumpRun.split_root),
        }

    def result(self, state: StumpRun) -> Stump | None:
        return state.stump
