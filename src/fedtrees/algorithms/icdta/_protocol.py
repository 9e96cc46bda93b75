"""ICDTA4FL's messages, client handlers and server strategy (ALGORITHMS.md §3).

Algorithm 1 of the paper (002) on the round loop, after the agreement:

0. (``base="id3"`` with undeclared numeric columns) **sketch**: the federated
   discretization round of :mod:`fedtrees.algorithms._discretize`.
1. **fit** — every client trains its local tree (ID3: multiway, information
   gain, on category and bin codes; CART: scikit-learn, Gini, on raw values and
   category codes) and sends it: *client trees up*.
2. **evaluate** — the server sends ALL trees to every client (*all trees down*);
   client k scores every OTHER client's tree on its own training rows (accuracy
   or macro-F1) and returns the scores, NaN in its own slot (*scores up*). A
   reply that scores its own tree is refused.
3. server — tree scores, the filter, the rules of the kept trees, their
   Cartesian product (:mod:`._rules`) and the global tree (:mod:`._global`).
4. **global** — the server sends the global tree and the aggregated rules
   (*global tree and rules down*); each client scores the global tree on its rows
   and returns that score.

Communication (K clients, F features, C classes; every message also carries the
codec's header). Rounds: ``1 + [1] + 3``; messages ``K`` per round. A packed tree
of n nodes and b branch entries takes ``P(n, b) = n·(49 + 8C) + 8(n + 1) + 16b
+ 16`` array bytes. Up: ``P(tree_k)`` (fit), ``8K`` (scores), ``8`` (global score)
per client. Down per client: the binning (``F + 16F + 8 + 8E`` bytes for E
edges) in each of the three requests, ``Σ_k P(tree_k) + 8`` (evaluate), and
``P(global) + R·(8C + wF)`` (ID3 rules: codes in the smallest signed integer
type holding them, w = 1 byte below 128 codes) or ``R·(8C + 16F)`` (CART: two
bounds) for R rules (global). Nothing in any message has a row dimension.

Client ``k``'s CART is seeded by ``[seed, 7, crc32(k)]``; ID3 is deterministic.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from fedtrees._random import client_key, keyed_rng
from fedtrees._typing import FloatArray, IntArray
from fedtrees.algorithms._discretize import BinnedFields, Binning, BinningRound
from fedtrees.algorithms._packed import (
    PackedTrees,
    class_codes,
    packed_fields,
    rebuild_packed,
)
from fedtrees.algorithms.icdta._filter import TreeFilter, tree_scores
from fedtrees.algorithms.icdta._global import Gain, build_global_tree
from fedtrees.algorithms.icdta._rules import Base, Merge, RuleSet, aggregate
from fedtrees.federation import (
    ClientData,
    FederationInfo,
    Field,
    InvalidField,
    Payload,
    ReplySpec,
    RoundPlan,
    handler,
    payload,
)
from fedtrees.learners import default_max_depth, fit_cart, fit_id3
from fedtrees.tree import NodeKind, Tree, pack_trees

__all__ = [
    "CART_DEPTH",
    "EvaluateRequest",
    "FitRequest",
    "GlobalReply",
    "GlobalRequest",
    "ICDTAResult",
    "ICDTASettings",
    "ICDTAStrategy",
    "ScoresReply",
    "TreeReply",
]

CART_STREAM: Final = 7
CART_DEPTH: Final = 5
"""The paper's depth of the clients' CART trees (Sec. 4.3)."""


# -- messages ---------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class _Common(BinnedFields):
    """Fields of every ICDTA4FL request: binning, agreed labels, base and metric."""

    classes: np.ndarray
    base: str
    metric: str

    def labels(self, data: ClientData) -> IntArray:
        """Return the client's labels as codes of the agreed classes."""
        return data.label_codes(self.classes)

    def trees(self, arrays: object) -> list[Tree]:
        """Rebuild packed trees (labels as codes); InvalidField if malformed."""
        n_features = int(self.binned.shape[0])
        return rebuild_packed(
            arrays, n_features=n_features, classes=class_codes(self.classes)
        )


@payload("icdta.tree")
class TreeReply(PackedTrees):
    """A client's local tree (packed)."""


@payload("icdta.fit")
class FitRequest(_Common):
    """Train the local tree (step 1)."""

    max_depth: int
    seed: int

    def expected_reply(self) -> ReplySpec:
        """One packed tree of the base's kind, within max_depth and the codes."""
        fields = packed_fields(1, int(self.classes.shape[0]))
        return ReplySpec(TreeReply, fields, check=self._check_tree)

    def _check_tree(self, reply: TreeReply) -> None:
        (tree,) = self.trees(reply)
        if tree.max_depth > self.max_depth:
            raise InvalidField("trees", f"deeper than max_depth={self.max_depth}")
        split = tree.kind != NodeKind.LEAF
        wanted = NodeKind.CATEGORICAL if self.base == "id3" else NodeKind.NUMERIC
        if np.any(split & (tree.kind != wanted)):
            raise InvalidField("trees", f"a {self.base} tree has {wanted.name} splits")
        if self.base == "id3":
            _check_id3(tree, self.arity)


def _check_id3(tree: Tree, arity: IntArray) -> None:
    """Multiway: one code per branch, codes within the arity, no default branch."""
    split = tree.kind == NodeKind.CATEGORICAL
    owner = np.repeat(np.arange(tree.n_nodes), np.diff(tree.branch_ptr))
    _, codes_per_child = np.unique(tree.branch_child, return_counts=True)
    if np.any(codes_per_child > 1) or np.any(tree.right[split] != -1):
        raise InvalidField("trees", "ID3 branches hold one code each, no default")
    if np.any(tree.branch_code >= arity[tree.feature[owner]]):
        raise InvalidField("branch_code", "a code beyond its column's categories")
    for rule in tree.rules():
        features = [c.feature for c in rule.conditions]
        if len(set(features)) != len(features):
            raise InvalidField("trees", "ID3 uses a feature at most once per path")


@payload("icdta.scores")
class ScoresReply(Payload):
    """A client's score of every tree, NaN for its own."""

    scores: np.ndarray


@payload("icdta.evaluate")
class EvaluateRequest(PackedTrees, _Common):
    """Score every other client's tree on your rows (step 2)."""

    owners: np.ndarray
    recipient: int

    def expected_reply(self) -> ReplySpec:
        """One score per tree in [0, 1]; NaN exactly in the recipient's slot."""
        n = int(self.owners.shape[0])
        fields = {"scores": Field.array("f", (n,), finite=False, low=0.0, high=1.0)}
        return ReplySpec(ScoresReply, fields, check=self._own_slot)

    def _own_slot(self, reply: ScoresReply) -> None:
        missing = np.isnan(reply.scores)
        if not missing[self.recipient] or missing.sum() != 1:
            raise InvalidField(
                "scores", "must score every tree but the client's own (NaN there)"
            )


@payload("icdta.global_score")
class GlobalReply(Payload):
    """A client's score of the global tree on its rows."""

    score: float


@payload("icdta.global")
class GlobalRequest(PackedTrees, _Common):
    """The global tree and the aggregated rules (step 6); score the tree."""

    rule_values: np.ndarray
    rule_low: np.ndarray
    rule_high: np.ndarray
    rule_proba: np.ndarray

    def expected_reply(self) -> ReplySpec:
        """Expect a score in [0, 1]."""
        return ReplySpec(GlobalReply, {"score": Field.scalar(low=0.0, high=1.0)})


# -- client handlers ----------------------------------------------------------------
@handler("icdta.fit")
def fit_tree(request: FitRequest, data: ClientData) -> TreeReply:
    """Client: train the local ID3 or CART tree on the local rows."""
    X, y = request.codes(data), request.labels(data)
    n_classes = int(request.classes.shape[0])
    if request.base == "id3":
        tree = fit_id3(
            X, y, n_classes, arity=request.arity, max_depth=request.max_depth
        )
    else:
        key = client_key(data.client_id)
        seed = int(keyed_rng(request.seed, CART_STREAM, key).integers(2**31 - 1))
        tree = fit_cart(
            X, y, n_classes=n_classes, max_depth=request.max_depth, seed=seed
        )
    return TreeReply(**pack_trees([tree]))


@handler("icdta.evaluate")
def score_trees(request: EvaluateRequest, data: ClientData) -> ScoresReply:
    """Client: score every other client's tree on the local rows."""
    if str(request.owners[request.recipient]) != data.client_id:
        raise ValueError("the request names another client as its recipient")
    X, y = request.codes(data), request.labels(data)
    scores = np.full(request.owners.shape[0], np.nan)
    for i, tree in enumerate(request.trees(request)):
        if i != request.recipient:
            scores[i] = score_labels(y, tree.predict(X), request.metric)
    return ScoresReply(scores=scores)


@handler("icdta.global")
def score_global(request: GlobalRequest, data: ClientData) -> GlobalReply:
    """Client: keep the global tree and rules; score the tree on the local rows."""
    (tree,) = request.trees(request)
    X, y = request.codes(data), request.labels(data)
    return GlobalReply(score=score_labels(y, tree.predict(X), request.metric))


def score_labels(y: IntArray, predicted: IntArray, metric: str) -> float:
    """Accuracy, or macro-F1 over the classes present in ``y`` or the predictions.

    Equal to scikit-learn's ``accuracy_score`` and ``f1_score(average="macro",
    zero_division=0)`` (a test checks it), without their per-call validation:
    a client scores every other client's tree.

    Examples
    --------
    >>> score_labels(np.array([0, 1, 1]), np.array([0, 1, 0]), "accuracy")
    0.6666666666666666
    >>> round(score_labels(np.array([0, 1, 1]), np.array([0, 1, 0]), "f1_macro"), 4)
    0.6667
    """
    if metric == "accuracy":
        return float(np.mean(y == predicted))
    n = int(max(y.max(initial=0), predicted.max(initial=0))) + 1
    confusion = np.bincount(y * n + predicted, minlength=n * n).reshape(n, n)
    tp = np.diag(confusion).astype(np.float64)
    actual, guessed = confusion.sum(axis=1), confusion.sum(axis=0)
    present = (actual + guessed) > 0
    f1 = np.where(present, 2 * tp / np.maximum(actual + guessed, 1), 0.0)
    return float(f1[present].mean())


# -- server -------------------------------------------------------------------------
@dataclass(frozen=True)
class ICDTASettings:
    """The validated parameters of one ICDTA4FL run."""

    base: Base
    metric: str
    filter: TreeFilter
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
    rules: RuleSet
    tree: Tree
    global_scores: dict[str, float]
    binning: Binning | None
    max_depth: int


@dataclass
class _State:
    """The server's state between rounds."""

    trees: dict[str, Tree] = field(default_factory=dict)
    scores: FloatArray = field(default_factory=lambda: np.zeros((0, 0)))
    kept: list[str] = field(default_factory=list)
    rules: RuleSet | None = None
    tree: Tree | None = None
    global_scores: dict[str, float] = field(default_factory=dict)


class ICDTAStrategy:
    """Server side of ICDTA4FL (see the module docstring for the protocol)."""

    def __init__(self, settings: ICDTASettings) -> None:
        self.settings = settings
        self.info: FederationInfo | None = None
        self.binning: BinningRound | None = None
        self.max_depth = 1
        self.phase = ""
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

    def expected_rounds(self) -> int:
        """Three rounds, plus the sketch round when numeric columns need bins."""
        return 4 if self.phase == "sketch" else 3

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
            else _raw_fields(info.schema.n_features)
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
        matrix = np.stack([_as(replies[c], ScoresReply).scores for c in owners])
        self.state.scores = matrix
        s = self.settings
        self.state.kept = s.filter.kept_or_raise(tree_scores(matrix), owners, s.owner)
        self._aggregate_rules()
        self.phase = "global"

    def _aggregate_rules(self) -> None:
        s, st = self.settings, self.state
        rule_sets = [RuleSet.from_tree(st.trees[c], s.base) for c in st.kept]
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
            c: _as(r, GlobalReply).score for c, r in replies.items()
        }
        self.phase = "done"


def _compact(codes: IntArray) -> np.ndarray:
    """Codes (-1: none) in the smallest signed integer type that holds them."""
    top = int(codes.max(initial=0))
    for dtype in (np.int8, np.int16, np.int32):
        if top <= np.iinfo(dtype).max:
            return codes.astype(dtype)
    return codes


def _raw_fields(n_features: int) -> dict[str, np.ndarray]:
    """Binning fields that leave every column as it is (CART on raw values)."""
    return {
        "binned": np.zeros(n_features, dtype=bool),
        "bin_edges": np.zeros(0),
        "bin_ptr": np.zeros(n_features + 1, dtype=np.int64),
        "arity": np.zeros(n_features, dtype=np.int64),
    }


def _as(reply: Payload, cls: type[Any]) -> Any:
    assert isinstance(reply, cls)  # validated by the round loop against the request
    return reply
