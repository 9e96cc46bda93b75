"""The ICDTA4FL server strategy (docs/icdta.md; messages in :mod:`._payloads`).

Phases after the agreement: ``sketch`` (ID3 with undeclared numeric columns),
``fit`` (client trees up), ``evaluate`` (all trees down, the others' scores up),
the server's step 3–5 (:func:`tree_scores`, the filters, :func:`aggregate`,
:func:`build_global_tree`), and ``global`` (the tree and the rules down, each
client's score of the tree up). Pure computation: the round loop moves messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms._discretize import Binning, BinningRound, unbinned_fields
from fedtrees.algorithms._packed import rebuild_packed
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
from fedtrees.federation import (
    FederationInfo,
    Payload,
    RoundPlan,
    ServerStrategy,
    as_reply,
)
from fedtrees.learners import default_max_depth
from fedtrees.tree import Tree, pack_trees

__all__ = ["CART_DEPTH", "ICDTAResult", "ICDTASettings", "ICDTAStrategy"]

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


@dataclass
class _State:
    """The server's state between rounds."""

    trees: dict[str, Tree] = field(default_factory=dict)
    rule_sets: dict[str, RuleSet] = field(default_factory=dict)
    scores: FloatArray = field(default_factory=lambda: np.zeros((0, 0)))
    kept: list[str] = field(default_factory=list)
    filter: str = ""
    rules: RuleSet | None = None
    tree: Tree | None = None
    global_scores: dict[str, float] = field(default_factory=dict)


class ICDTAStrategy(ServerStrategy):
    """Server side of ICDTA4FL (see the module docstring for the protocol)."""

    def __init__(self, settings: ICDTASettings) -> None:
        self.settings = settings
        self.info: FederationInfo | None = None
        self.binning: BinningRound | None = None
        self.max_depth = 1
        self.phase = ""
        self.rounds = 3
        self.state = _State()

    def start(self, info: FederationInfo) -> None:
        """Resolve the depth and the binning; the first phase follows from them."""
        s = self.settings
        self.info = info
        f = info.schema.n_features
        default = default_max_depth(f) if s.base == "id3" else CART_DEPTH
        self.max_depth = default if s.max_depth is None else s.max_depth
        if s.base == "id3":
            self.binning = BinningRound(s.bin_edges, s.n_bins, True, s.owner)
            self.binning.start(info.schema)
        self.phase = "sketch" if self.binning and self.binning.pending else "fit"
        self.rounds = 4 if self.phase == "sketch" else 3

    def expected_rounds(self) -> int:
        """Three rounds, plus the sketch round when numeric columns need bins."""
        return self.rounds

    def round_metrics(self, round: int) -> dict[str, float]:
        """Trees received, trees kept, aggregated rules so far."""
        st = self.state
        rules = 0.0 if st.rules is None else float(len(st.rules))
        return {
            "trees": float(len(st.trees)),
            "kept": float(len(st.kept)),
            "rules": rules,
        }

    def plan_round(self, round: int) -> RoundPlan | None:
        """Return the requests of the current phase (None when done)."""
        if self.phase == "done":
            return None
        if self.phase == "sketch":
            assert self.binning is not None
            return RoundPlan.broadcast(self.binning.request(), self._info().clients)
        return RoundPlan(getattr(self, f"_plan_{self.phase}")())

    def aggregate(self, round: int, replies: Mapping[str, Payload]) -> None:
        """Fold the validated replies of the current phase."""
        ordered = {c: replies[c] for c in sorted(replies)}
        getattr(self, f"_absorb_{self.phase}")(ordered)

    def finish(self) -> ICDTAResult:
        """Return the client trees, scores, kept trees, rules and global tree."""
        st = self.state
        assert st.rules is not None
        assert st.tree is not None
        return ICDTAResult(
            st.trees,
            st.scores,
            st.kept,
            st.filter,
            st.rules,
            st.tree,
            st.global_scores,
            None if self.binning is None else self.binning.binning,
            self.max_depth,
        )

    # -- phases ---------------------------------------------------------------------
    def _info(self) -> FederationInfo:
        assert self.info is not None
        return self.info

    def _common(self) -> dict[str, Any]:
        info, s = self._info(), self.settings
        binning = self.binning.binning if self.binning is not None else None
        fields = (
            binning.fields()
            if binning is not None
            else unbinned_fields(info.schema.n_features)
        )
        classes = np.asarray(info.schema.classes, dtype=str)
        return {**fields, "classes": classes, "base": s.base, "metric": s.metric}

    def _absorb_sketch(self, replies: Mapping[str, Payload]) -> None:
        assert self.binning is not None
        self.binning.absorb(list(replies.values()))
        self.phase = "fit"

    def _plan_fit(self) -> dict[str, Payload]:
        request = FitRequest(
            **self._common(), max_depth=self.max_depth, seed=self.settings.seed
        )
        return dict.fromkeys(self._info().clients, request)

    def _absorb_fit(self, replies: Mapping[str, Payload]) -> None:
        schema = self._info().schema
        codes = np.arange(len(schema.classes))
        self.state.trees = {
            c: rebuild_packed(r, n_features=schema.n_features, classes=codes)[0]
            for c, r in replies.items()
        }
        self.phase = "evaluate"

    def _plan_evaluate(self) -> dict[str, Payload]:
        owners = list(self.state.trees)
        packed = pack_trees([self.state.trees[c] for c in owners])
        common = {**self._common(), **packed, "owners": np.asarray(owners, dtype=str)}
        return {c: EvaluateRequest(**common, recipient=i) for i, c in enumerate(owners)}

    def _absorb_evaluate(self, replies: Mapping[str, Payload]) -> None:
        owners = list(self.state.trees)
        matrix = np.stack([as_reply(replies[c], ScoresReply).scores for c in owners])
        self.state.scores = matrix
        s = self.settings
        scores = tree_scores(matrix)
        for i, tree_filter in enumerate(s.filters):
            self.state.kept = tree_filter.kept_or_raise(scores, owners, s.owner)
            try:
                self._aggregate_rules()
            except RuleLimitExceeded:
                if i + 1 == len(s.filters):
                    raise
                continue  # the next, stricter filter keeps fewer trees
            self.state.filter = tree_filter.text
            break
        self.phase = "global"

    def _aggregate_rules(self) -> None:
        s, st = self.settings, self.state
        rule_sets = [self._rules_of(c) for c in st.kept]
        st.rules = aggregate(
            rule_sets, merge=s.merge, max_rules=s.max_rules, names=list(st.kept)
        )
        info = self._info()
        st.tree = build_global_tree(
            st.rules,
            max_depth=self.max_depth,
            classes=np.arange(len(info.schema.classes)),
            gain=s.rule_gain,
        )

    def _rules_of(self, client: str) -> RuleSet:
        """Client's tree as rules, made once (a stricter filter reuses them)."""
        if client not in self.state.rule_sets:
            tree = self.state.trees[client]
            self.state.rule_sets[client] = RuleSet.from_tree(tree, self.settings.base)
        return self.state.rule_sets[client]

    def _plan_global(self) -> dict[str, Payload]:
        st = self.state
        assert st.rules is not None
        assert st.tree is not None
        packed: dict[str, Any] = pack_trees([st.tree])
        request = GlobalRequest(
            **self._common(),
            **packed,
            rule_values=_compact(st.rules.values),
            rule_low=st.rules.low,
            rule_high=st.rules.high,
            rule_proba=st.rules.proba,
        )
        return dict.fromkeys(self._info().clients, request)

    def _absorb_global(self, replies: Mapping[str, Payload]) -> None:
        self.state.global_scores = {
            c: as_reply(r, GlobalReply).score for c, r in replies.items()
        }
        self.phase = "done"


def _compact(codes: IntArray) -> np.ndarray:
    """Codes (-1: none) in the smallest signed integer type that holds them."""
    top = int(codes.max(initial=0))
    for dtype in (np.int8, np.int16, np.int32):
        if top <= np.iinfo(dtype).max:
            return codes.astype(dtype)
    return codes
