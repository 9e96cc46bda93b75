"""The ICDTA4FL server strategy (docs/icdta.md; messages in :mod:`._payloads`).

Phases after the agreement: ``sketch`` (ID3 with undeclared numeric columns),
``fit`` (client trees up), ``evaluate`` (all trees down, the others' scores up),
the server's step 3–5 (:func:`tree_scores`, the filters, :func:`aggregate`,
:func:`build_global_tree`), and ``global`` (the tree and the rules down, each
client's score of the tree up). Pure computation: the round loop moves messages.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms._discretize import Binning, BinningRound, unbinned_fields
from fedtrees.algorithms._packed import rebuild_packed
from fedtrees.algorithms._phased import PhasedStrategy, Step
from fedtrees.algorithms.icdta._filter import TreeFilter, tree_scores
from fedtrees.algorithms.icdta._global import Gain, build_global_tree
from fedtrees.algorithms.icdta._payloads import (
    EvaluateRequest,
    FitRequest,
    GlobalReply,
    GlobalRequest,
    ScoresReply,
)
from fedtrees.algorithms.icdta._rules import Base, Merge, RuleSet, aggregate
from fedtrees.exceptions import RuleLimitExceeded
from fedtrees.federation import FederationInfo, Payload, RoundPlan, as_reply
from fedtrees.learners import default_max_depth
from fedtrees.tree import NodeStats, Tree, TreeBuilder, pack_trees

__all__ = [
    "CART_DEPTH",
    "ICDTAPhase",
    "ICDTAResult",
    "ICDTASettings",
    "ICDTAState",
    "ICDTAStrategy",
]

CART_DEPTH: Final = 5
"""The paper's depth of the clients' CART trees (Sec. 4.3)."""


@dataclass(frozen=True)
class ICDTASettings:
    """The validated parameters of one ICDTA4FL run."""

    base: Base
    metric: str
    filters: tuple[TreeFilter, ...]
    merge: Merge
    rule_gain: Gain
    max_rules: int
    max_depth: int | None
    seed: int
    n_bins: int
    bin_edges: object
    owner: str


@dataclass(frozen=True, eq=False)
class ICDTAResult:
    """What the server holds at the end (trees keep labels as codes)."""

    client_trees: dict[str, Tree]
    score_matrix: FloatArray
    kept: list[str]
    filter: str
    rules: RuleSet
    tree: Tree
    global_scores: dict[str, float]
    binning: Binning | None
    max_depth: int


class ICDTAPhase(enum.Enum):
    """The rounds of ICDTA4FL after the agreement (docs/icdta.md), in order."""

    SKETCH = "sketch"
    """ID3's undeclared numeric columns: pooled sketches give their bins."""
    FIT = "fit"
    """Step 1: every client trains its tree and sends it."""
    EVALUATE = "evaluate"
    """Step 2: all trees down, each client's scores of the others' trees up;
    then the server's steps 3-5 (scores, filter, rules, global tree)."""
    GLOBAL = "global"
    """Step 6: the global tree and the rules down, each client's score up."""


@dataclass(eq=False)
class ICDTAState:
    """The server's state, complete from the agreement.

    ``binning`` is None under ``base="cart"`` (raw values); under ID3 it is
    the binning so far: the declared edges, and one bin (``"all"``) for each
    numeric column the sketch round has yet to cut. ``rules`` and ``tree``
    hold no rule and a root leaf until step 5 builds them.
    """

    settings: ICDTASettings
    info: FederationInfo
    max_depth: int
    sketch: BinningRound
    binning: Binning | None
    sketch_round: bool
    """Whether the fit opens with the sketch round (ID3, numeric columns to bin)."""
    rules: RuleSet
    tree: Tree
    trees: dict[str, Tree] = field(default_factory=dict)
    rule_sets: dict[str, RuleSet] = field(default_factory=dict)
    scores: FloatArray = field(default_factory=lambda: np.zeros((0, 0)))
    kept: list[str] = field(default_factory=list)
    filter: str = ""
    global_scores: dict[str, float] = field(default_factory=dict)


class ICDTAStrategy(PhasedStrategy[ICDTAState, ICDTAPhase]):
    """Server side of ICDTA4FL: the rounds of :class:`ICDTAPhase`, in order.

    (The sketch round, when ID3 has undeclared numeric columns,) the client
    trees, their scores with steps 3-5 at the server, the global tree.
    """

    first = ICDTAPhase.FIT

    def __init__(self, settings: ICDTASettings) -> None:
        super().__init__()
        self.settings = settings

    def begin(self, info: FederationInfo) -> ICDTAState:
        """Resolve the depth and the binning; no rule and a root leaf yet."""
        s = self.settings
        f, n_classes = info.schema.n_features, len(info.schema.classes)
        default = default_max_depth(f) if s.base == "id3" else CART_DEPTH
        sketch = BinningRound(s.bin_edges, s.n_bins, True, s.owner)
        binning = sketch.start(info.schema) if s.base == "id3" else None
        return ICDTAState(
            s,
            info,
            default if s.max_depth is None else s.max_depth,
            sketch,
            binning,
            binning is not None and sketch.pending,
            _no_rules(s.base, f, n_classes),
            _root_leaf(f, n_classes),
        )

    def first_phase(self, state: ICDTAState) -> ICDTAPhase:
        """Return the sketch round when ID3 has numeric columns to bin, else the fit."""
        return ICDTAPhase.SKETCH if state.sketch_round else ICDTAPhase.FIT

    def steps(self) -> Mapping[ICDTAPhase, Step[ICDTAState, ICDTAPhase]]:
        """Return the table: sketch, fit, evaluate, global."""
        return {
            ICDTAPhase.SKETCH: Step(_ask_sketch, _absorb_sketch),
            ICDTAPhase.FIT: Step(_ask_fit, _absorb_fit),
            ICDTAPhase.EVALUATE: Step(_ask_evaluate, _absorb_evaluate),
            ICDTAPhase.GLOBAL: Step(_ask_global, _absorb_global),
        }

    def result(self, state: ICDTAState) -> ICDTAResult:
        """Return the client trees, scores, kept trees, rules and global tree."""
        st = state
        return ICDTAResult(
            st.trees,
            st.scores,
            st.kept,
            st.filter,
            st.rules,
            st.tree,
            st.global_scores,
            st.binning,
            st.max_depth,
        )

    def expected_rounds(self) -> int:
        """Three rounds, plus the sketch round when numeric columns need bins."""
        return 3 + int(self.state.sketch_round)

    def round_metrics(self, round: int) -> dict[str, float]:
        """Trees received, trees kept, aggregated rules so far."""
        st = self.state
        return {
            "trees": float(len(st.trees)),
            "kept": float(len(st.kept)),
            "rules": float(len(st.rules)),
        }


# -- the steps -------------------------------------------------------------------
def _ask_sketch(st: ICDTAState) -> RoundPlan:
    return RoundPlan.broadcast(st.sketch.request(), st.info.clients)


def _absorb_sketch(st: ICDTAState, replies: Mapping[str, Payload]) -> ICDTAPhase:
    st.binning = st.sketch.absorb([replies[c] for c in sorted(replies)])
    return ICDTAPhase.FIT


def _ask_fit(st: ICDTAState) -> RoundPlan:
    request = FitRequest(
        **_common(st, st.settings),
        max_depth=st.max_depth,
        seed=st.settings.seed,
    )
    return RoundPlan.broadcast(request, st.info.clients)


def _absorb_fit(st: ICDTAState, replies: Mapping[str, Payload]) -> ICDTAPhase:
    schema = st.info.schema
    codes = np.arange(len(schema.classes))
    st.trees = {
        c: rebuild_packed(replies[c], n_features=schema.n_features, classes=codes)[0]
        for c in sorted(replies)
    }
    return ICDTAPhase.EVALUATE


def _ask_evaluate(st: ICDTAState) -> RoundPlan:
    owners = list(st.trees)
    packed = pack_trees([st.trees[c] for c in owners])
    common = {
        **_common(st, st.settings),
        **packed,
        "owners": np.asarray(owners, dtype=str),
    }
    return RoundPlan(
        {c: EvaluateRequest(**common, recipient=i) for i, c in enumerate(owners)}
    )


def _absorb_evaluate(st: ICDTAState, replies: Mapping[str, Payload]) -> ICDTAPhase:
    """Run steps 3-5: trees' scores, the first filter whose rules fit, the tree."""
    owners = list(st.trees)
    matrix = np.stack([as_reply(replies[c], ScoresReply).scores for c in owners])
    st.scores = matrix
    s = st.settings
    scores = tree_scores(matrix)
    for i, tree_filter in enumerate(s.filters):
        st.kept = tree_filter.kept_or_raise(scores, owners, s.owner)
        try:
            _aggregate_rules(st)
        except RuleLimitExceeded:
            if i + 1 == len(s.filters):
                raise
            continue  # the next, stricter filter keeps fewer trees
        st.filter = tree_filter.text
        break
    return ICDTAPhase.GLOBAL


def _aggregate_rules(st: ICDTAState) -> None:
    s = st.settings
    rule_sets = [_rules_of(st, c, s.base) for c in st.kept]
    st.rules = aggregate(
        rule_sets, merge=s.merge, max_rules=s.max_rules, names=list(st.kept)
    )
    st.tree = build_global_tree(
        st.rules,
        max_depth=st.max_depth,
        classes=np.arange(len(st.info.schema.classes)),
        gain=s.rule_gain,
    )


def _ask_global(st: ICDTAState) -> RoundPlan:
    packed: dict[str, Any] = pack_trees([st.tree])
    request = GlobalRequest(
        **_common(st, st.settings),
        **packed,
        rule_values=_compact(st.rules.values),
        rule_low=st.rules.low,
        rule_high=st.rules.high,
        rule_proba=st.rules.proba,
    )
    return RoundPlan.broadcast(request, st.info.clients)


def _absorb_global(st: ICDTAState, replies: Mapping[str, Payload]) -> None:
    st.global_scores = {
        c: as_reply(replies[c], GlobalReply).score for c in sorted(replies)
    }
    return


def _common(st: ICDTAState, s: ICDTASettings) -> dict[str, Any]:
    """Return the fields of every request: codes' layout, classes, base, metric."""
    fields = (
        st.binning.fields()
        if st.binning is not None
        else unbinned_fields(st.info.schema.n_features)
    )
    classes = np.asarray(st.info.schema.classes, dtype=str)
    return {**fields, "classes": classes, "base": s.base, "metric": s.metric}


def _rules_of(st: ICDTAState, client: str, base: Base) -> RuleSet:
    """Client's tree as rules, made once (a stricter filter reuses them)."""
    if client not in st.rule_sets:
        st.rule_sets[client] = RuleSet.from_tree(st.trees[client], base)
    return st.rule_sets[client]


def _no_rules(base: Base, n_features: int, n_classes: int) -> RuleSet:
    """Return a rule set without rules (before step 4)."""
    return RuleSet(
        base,
        values=np.zeros((0, n_features), dtype=np.int64),
        low=np.zeros((0, n_features)),
        high=np.zeros((0, n_features)),
        proba=np.zeros((0, n_classes)),
        n_features=n_features,
    )


def _root_leaf(n_features: int, n_classes: int) -> Tree:
    """Return a tree of one leaf, uniform over the classes (before step 5)."""
    builder = TreeBuilder(n_features=n_features, classes=np.arange(n_classes))
    builder.add_root(NodeStats.from_class_counts(np.zeros(n_classes)))
    return builder.build()


def _compact(codes: IntArray) -> np.ndarray:
    """Codes (-1: none) in the smallest signed integer type that holds them."""
    top = int(codes.max(initial=0))
    for dtype in (np.int8, np.int16, np.int32):
        if top <= np.iinfo(dtype).max:
            return codes.astype(dtype)
    return codes
