"""ICDTA4FL rule sets, their Cartesian product and the global tree (docs/icdta.md steps 3–5)."""

from __future__ import annotations

import re
import time
import tracemalloc
from collections.abc import Callable
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from fedtrees.algorithms.icdta import _bitsets, _rules
from fedtrees.algorithms.icdta._global import build_global_tree
from fedtrees.algorithms.icdta._rules import (
    RuleSet,
    aggregate,
    compatible,
    merge_rules,
)
from fedtrees.exceptions import RuleLimitExceeded, ValidationError
from fedtrees.stats import entropy
from fedtrees.tree import NodeKind, NodeStats, Tree, TreeBuilder

INF = np.inf
GRID = np.array([-INF, 0.0, 1.0, 2.0, 3.0, INF])


def id3(values: object, proba: object = None) -> RuleSet:
    v = np.asarray(values, dtype=np.int64)
    p = np.eye(2)[np.arange(v.shape[0]) % 2] if proba is None else proba
    return RuleSet("id3", v, np.zeros(0), np.zeros(0), np.asarray(p), v.shape[1])


def cart(low: object, high: object, proba: object) -> RuleSet:
    lo = np.asarray(low, dtype=np.float64)
    return RuleSet("cart", np.zeros(0, np.int64), lo, high, proba, lo.shape[1])


def keys(rules: RuleSet) -> list[tuple[float, ...]]:
    """Each rule's conditions as a tuple (CART: low_f, high_f per feature)."""
    if rules.base == "id3":
        return [tuple(row) for row in rules.values.tolist()]
    pairs = np.stack([rules.low, rules.high], axis=2).reshape(
        len(rules), 2 * rules.n_features
    )
    return [tuple(row) for row in pairs.tolist()]


# -- brute-force reference of docs/icdta.md step 4 ---------------------------------------------
def merge_one(a: RuleSet, i: int, b: RuleSet, j: int, merge: str) -> tuple | None:
    if a.base == "id3":
        pairs = zip(a.values[i].tolist(), b.values[j].tolist(), strict=True)
        merged = []
        for x, y in pairs:
            if x >= 0 and y >= 0 and x != y:
                return None
            merged.append(x if x >= 0 else y)
        return tuple(merged)
    out: list[float] = []
    for f in range(a.n_features):
        la, ha, lb, hb = a.low[i, f], a.high[i, f], b.low[j, f], b.high[j, f]
        if not max(la, lb) < min(ha, hb):
            return None
        if merge == "intersection":
            out += [max(la, lb), min(ha, hb)]
        else:
            low = min(la, lb) if la > -INF and lb > -INF else max(la, lb)
            high = max(ha, hb) if ha < INF and hb < INF else min(ha, hb)
            out += [low, high]
    return tuple(out)


def reference_merge(a: RuleSet, b: RuleSet, merge: str) -> dict[tuple, np.ndarray]:
    result: dict[tuple, np.ndarray] = {}
    for i in range(len(a)):
        for j in range(len(b)):
            key = merge_one(a, i, b, j, merge)
            if key is not None:
                result[key] = result.get(key, 0.0) + a.proba[i] + b.proba[j]
    return result


@st.composite
def rule_set_pairs(draw: st.DrawFn, base: str) -> tuple[RuleSet, RuleSet]:
    n_features = draw(st.integers(1, 3))
    n_classes = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    sets = []
    for _ in range(2):
        n = draw(st.integers(0, 7))
        proba = rng.random((n, n_classes))
        if base == "id3":
            sets.append(id3(rng.integers(-1, 3, (n, n_features)), proba))
            continue
        lo = rng.integers(0, 5, (n, n_features))
        hi = np.maximum(rng.integers(1, 6, (n, n_features)), lo + 1)
        sets.append(cart(GRID[lo], GRID[hi], proba))
    return sets[0], sets[1]


def random_rules(
    rng: np.random.Generator, base: str, n: int, width: int, n_features: int = 3
) -> RuleSet:
    """``n`` rules; ``width`` codes or grid steps per feature."""
    proba = np.ones((n, 2))
    shape = (n, n_features)
    if base == "id3":
        return id3(rng.integers(-1, width, shape), proba)
    lo = rng.integers(0, width, shape)
    hi = np.minimum(lo + rng.integers(1, width + 1, shape), width)
    grid = np.r_[-INF, np.arange(1.0, width), INF]
    grid[grid == 1.0] = rng.choice([0.0, -0.0])  # signed zeros compare equal
    return cart(grid[lo], grid[hi], proba)


def random_rows(rules: RuleSet, rng: np.random.Generator, n: int = 200) -> np.ndarray:
    if rules.base == "id3":
        return rng.integers(0, 4, (n, rules.n_features)).astype(float)
    return rng.integers(-1, 8, (n, rules.n_features)) / 2.0


# -- 1. compatibility and merging: the paper's examples -----------------------------
def test_id3_paper_examples() -> None:
    # x7: 0 = recommend, 1 = not_recom; x3 == 3; x4: 0 = less_conv (Fig. 1).
    rule_1a = [-1, -1, -1, 3, -1, -1, -1, 0]
    rule_1b = [-1, -1, -1, -1, 0, -1, -1, 0]
    rule_2a = [-1, -1, -1, -1, -1, -1, -1, 1]
    a, b = id3([rule_1a, rule_2a]), id3([rule_1b])
    assert compatible(a, b).tolist() == [[True], [False]]
    merged = merge_rules(a, b)
    assert keys(merged) == [(-1, -1, -1, 3, 0, -1, -1, 0)]  # 1A-1B
    np.testing.assert_allclose(merged.proba, [a.proba[0] + b.proba[0]])


@pytest.mark.parametrize(("merge", "low"), [("intersection", 35.0), ("paper", 32.5)])
def test_cart_paper_examples(merge: str, low: float) -> None:
    # 1A: x0 <= 32.5; 2A: x0 > 32.5; 3B: x0 > 39; 4B: x0 > 35 (Fig. 2).
    a = cart([[-INF], [32.5]], [[32.5], [INF]], [[1.0, 0.0], [0.0, 1.0]])
    b = cart([[39.0], [35.0]], [[INF], [INF]], [[0.0, 1.0], [0.2, 0.8]])
    assert compatible(a, b).tolist() == [[False, False], [True, True]]
    merged = merge_rules(a, b, merge=merge)
    assert merged.low[:, 0].tolist() == (
        [39.0, 35.0] if merge == "intersection" else [32.5]
    )
    assert merged.high[:, 0].tolist() == [INF] * len(merged)
    assert low in merged.low[:, 0]


def test_paper_merge_keeps_a_bound_only_one_rule_has() -> None:
    a = cart([[32.5, -INF]], [[INF, 5.0]], [[1.0, 0.0]])
    b = cart([[35.0, 1.0]], [[40.0, INF]], [[0.0, 1.0]])
    paper = merge_rules(a, b, merge="paper")
    assert keys(paper) == [(32.5, 40.0, 1.0, 5.0)]
    conj = merge_rules(a, b, merge="intersection")
    assert keys(conj) == [(35.0, 40.0, 1.0, 5.0)]


def test_touching_intervals_are_incompatible() -> None:
    a = cart([[-INF]], [[1.0]], [[1.0]])
    b = cart([[1.0], [0.5]], [[INF], [INF]], [[1.0], [1.0]])
    assert compatible(a, b).tolist() == [[False, True]]


# -- 2. de-duplication --------------------------------------------------------------
def test_paper_merge_deduplicates_by_summing_proba() -> None:
    a = cart([[32.5]], [[INF]], [[0.0, 1.0]])
    b = cart([[35.0], [40.0]], [[INF], [INF]], [[0.2, 0.8], [0.1, 0.9]])
    merged = merge_rules(a, b, merge="paper")
    assert keys(merged) == [(32.5, INF)]
    np.testing.assert_allclose(merged.proba, [[0.3, 3.7]])
    assert len(merge_rules(a, b)) == 2


def test_deduplicated_keeps_first_appearance_order() -> None:
    rules = id3(
        [[1, -1], [0, 2], [1, -1], [0, 2], [-1, -1]], np.arange(10.0).reshape(5, 2)
    )
    dedup = rules.deduplicated()
    assert keys(dedup) == [(1, -1), (0, 2), (-1, -1)]
    np.testing.assert_allclose(dedup.proba, [[4.0, 6.0], [8.0, 10.0], [8.0, 9.0]])


def test_deduplicated_treats_signed_zero_bounds_as_equal() -> None:
    rules = cart([[0.0], [-0.0]], [[1.0], [1.0]], [[1.0], [2.0]])
    np.testing.assert_allclose(rules.deduplicated().proba, [[3.0]])


@pytest.mark.parametrize("base", ["id3", "cart"])
@given(seed=st.integers(0, 2**32 - 1), n_features=st.sampled_from([1, 2, 30]))
def test_deduplicated_matches_a_dict_of_rows(
    base: str, seed: int, n_features: int
) -> None:
    # 30 features of up to 6 values do not fit one packed int64 key: re-ranked.
    rng = np.random.default_rng(seed)
    rules = random_rules(rng, base, 80, 5, n_features)
    rules = rules._take(rng.integers(0, 80, 200), rng.random((200, 2)))
    expected: dict[tuple, np.ndarray] = {}
    for key, p in zip(keys(rules), rules.proba, strict=True):
        expected[key] = expected.get(key, 0.0) + p
    dedup = rules.deduplicated()
    assert keys(dedup) == list(expected)
    np.testing.assert_array_equal(dedup.proba, np.array(list(expected.values())))


@pytest.mark.parametrize("base", ["id3", "cart"])
def test_deduplicated_keeps_rows_apart_past_64_bits_of_key(base: str) -> None:
    # 200 two-valued features: a key packed without re-ranking would wrap.
    bits = np.zeros((5, 200), dtype=np.int64)
    bits[1, 0] = bits[3, 100] = 1  # rows 0 and 2 are equal
    bits[4] = 1
    rules = (
        id3(bits - 1, np.ones((5, 1)))
        if base == "id3"
        else cart(np.where(bits, 0.0, -INF), np.full((5, 200), INF), np.ones((5, 1)))
    )
    dedup = rules.deduplicated()
    assert keys(dedup) == [keys(rules)[i] for i in (0, 1, 3, 4)]
    np.testing.assert_array_equal(dedup.proba, [[2.0], [1.0], [1.0], [1.0]])


# -- 3. merge_rules equals the brute-force double loop ------------------------------
@pytest.mark.parametrize("merge", ["intersection", "paper"])
@pytest.mark.parametrize("base", ["id3", "cart"])
def test_merge_rules_matches_reference(base: str, merge: str) -> None:
    @given(pair=rule_set_pairs(base), block=st.sampled_from([1, 3, 4_000_000]))
    def check(pair: tuple[RuleSet, RuleSet], block: int) -> None:
        a, b = pair
        with patch.object(_rules, "_BLOCK_CELLS", block):
            merged = merge_rules(a, b, merge=merge)
        expected = reference_merge(a, b, merge)
        assert keys(merged) == list(expected)  # same rules, first-appearance order
        want = np.array(list(expected.values())).reshape(-1, a.n_classes)
        np.testing.assert_allclose(merged.proba, want, rtol=1e-12)

    check()


@pytest.mark.parametrize("base", ["id3", "cart"])
def test_compatible_matches_reference(base: str) -> None:
    @given(pair=rule_set_pairs(base))
    def check(pair: tuple[RuleSet, RuleSet]) -> None:
        a, b = pair
        want = [
            [merge_one(a, i, b, j, "intersection") is not None for j in range(len(b))]
            for i in range(len(a))
        ]
        assert compatible(a, b).tolist() == want

    check()


# -- 3b. the bitset search equals a dense comparison ---------------------------------
def dense_compatible(a: RuleSet, b: RuleSet) -> np.ndarray:
    """The (len(a), len(b)) compatibility matrix, compared cell by cell."""
    if a.base == "id3":
        x, y = a.values[:, None, :], b.values[None, :, :]
        return ((x < 0) | (y < 0) | (x == y)).all(axis=2)
    low_a, high_a = a.low[:, None, :], a.high[:, None, :]
    return ((low_a < b.high[None]) & (b.low[None] < high_a)).all(axis=2)


@st.composite
def bitset_cases(draw: st.DrawFn, base: str) -> tuple[RuleSet, RuleSet, int]:
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_b = draw(st.sampled_from([1, 63, 64, 65, 130]))
    # a draws codes b never uses (ID3) and bounds between b's (CART) too.
    a = random_rules(rng, base, draw(st.integers(0, 12)), draw(st.integers(2, 7)))
    b = random_rules(rng, base, n_b, draw(st.integers(2, 5)))
    return a, b, draw(st.sampled_from([1, 200, 4_000_000]))


def old_block_total(want: np.ndarray, block: int, max_rules: int) -> int | None:
    """The running total at the end of the first block of a that exceeds the limit."""
    rows = max(1, block // want.shape[1])
    totals = np.cumsum(want.sum(axis=1))[rows - 1 :: rows].tolist()
    totals.append(int(want.sum()))
    return next((t for t in totals if t > max_rules), None)


@pytest.mark.parametrize("base", ["id3", "cart"])
def test_bitset_pairs_match_a_dense_reference(base: str) -> None:
    @given(case=bitset_cases(base), slice_rules=st.sampled_from([64, 128, 2048]))
    def check(case: tuple[RuleSet, RuleSet, int], slice_rules: int) -> None:
        a, b, block = case
        want = dense_compatible(a, b)
        limit = max(1, int(want.sum()) - 3)
        with (
            patch.object(_bitsets, "SLICE_RULES", slice_rules),
            patch.object(_rules, "_BLOCK_CELLS", block),
        ):
            assert compatible(a, b).tolist() == want.tolist()
            ia, ib = _rules._compatible_pairs(a, b, len(a) * len(b) + 1, "")
            assert [ia.tolist(), ib.tolist()] == [p.tolist() for p in np.nonzero(want)]
            total = old_block_total(want, block, limit)
            if total is None:
                return
            with pytest.raises(RuleLimitExceeded, match=f"at least {total} compatible"):
                _rules._compatible_pairs(a, b, limit, "")

    check()


@pytest.mark.parametrize("bitwise_count", [True, False])
def test_set_bits_and_popcount(bitwise_count: bool) -> None:
    rng = np.random.default_rng(0)
    words = np.frombuffer(rng.bytes(8 * 7 * 3), dtype="<u8").reshape(7, 3).copy()
    words[2] = 0
    words[3, 1] = 1 << 63
    bits = np.unpackbits(words.view(np.uint8), axis=1, bitorder="little")
    with patch.object(_bitsets, "HAS_BITWISE_COUNT", bitwise_count):
        assert _bitsets.popcount(words) == bits.sum()
        rows, found = _bitsets.set_bits(words)
    assert [rows.tolist(), found.tolist()] == [p.tolist() for p in np.nonzero(bits)]


# -- 4. semantics: a row satisfies r1 ∧ r2 iff it satisfies r1 and r2 ---------------
@pytest.mark.parametrize("base", ["id3", "cart"])
def test_merged_rules_are_conjunctions(base: str) -> None:
    @given(pair=rule_set_pairs(base), seed=st.integers(0, 1000))
    def check(pair: tuple[RuleSet, RuleSet], seed: int) -> None:
        a, b = pair
        X = random_rows(a, np.random.default_rng(seed))
        merged = merge_rules(a, b, merge="intersection")
        ha, hb, hm = a.holds(X), b.holds(X), merged.holds(X)
        # Merged rules are distinct conjunctions, so a row satisfies at most one
        # per pair; Σ ŷ over satisfied merged rules = Σ over satisfied pairs.
        want = (ha @ a.proba) * hb.sum(1, keepdims=True)
        want += ha.sum(1, keepdims=True) * (hb @ b.proba)
        np.testing.assert_allclose(hm @ merged.proba, want, atol=1e-9)
        assert (hm.any(1) == (ha.any(1) & hb.any(1))).all()

    check()


def test_holds_checks_its_input() -> None:
    with pytest.raises(ValidationError, match=r"'X' parameter of RuleSet\.holds"):
        id3([[0, 1]]).holds([[0.0]])


# -- 5. max_rules -----------------------------------------------------------------------
def free_rules(n: int, base: str) -> RuleSet:
    """``n`` rules without conditions: every pair is compatible."""
    if base == "id3":
        return id3(np.full((n, 3), -1), np.ones((n, 2)))
    return cart(np.full((n, 3), -INF), np.full((n, 3), INF), np.ones((n, 2)))


@pytest.mark.parametrize("base", ["id3", "cart"])
def test_rule_limit_fails_before_the_product(base: str) -> None:
    a, b = free_rules(10_000, base), free_rules(10_000, base)  # 10^8 pairs
    step = "merging the rules of client 'c7' (tree 3 of 9)"
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(RuleLimitExceeded, match=re.escape(step)) as info:
            merge_rules(a, b, max_rules=1000, step=step)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20  # the product was never built
    assert time.perf_counter() - start < 30.0  # nor walked: a hang check, not speed
    message = str(info.value)
    assert step in message
    assert "max_rules=1000" in message
    assert "filter='percentile:75'" in message
    assert "'median'" in message


@pytest.mark.parametrize("block", [1, 7, 4_000_000])
def test_rule_limit_is_inclusive(block: int) -> None:
    a = id3(np.c_[np.arange(10), np.full(10, -1)], np.ones((10, 2)))
    b = id3(np.c_[np.full(10, -1), np.arange(10)], np.ones((10, 2)))
    with patch.object(_rules, "_BLOCK_CELLS", block):
        assert len(merge_rules(a, b, max_rules=100)) == 100
        with pytest.raises(RuleLimitExceeded, match="exceed max_rules=99"):
            merge_rules(a, b, max_rules=99)


def test_aggregate_names_the_client_that_exceeds_the_limit() -> None:
    on_f0 = id3(np.c_[np.arange(10), np.full(10, -1)])  # 10 distinct rules
    free = id3([[-1, -1]])
    on_f1 = id3(np.c_[np.full(20, -1), np.arange(20)])  # 20 distinct rules
    names = ["c1", "c2", "c3"]
    assert len(aggregate([on_f0, free, on_f1], max_rules=200, names=names)) == 200
    with pytest.raises(RuleLimitExceeded, match=r"client 'c3' \(tree 3 of 3\)"):
        aggregate([on_f0, free, on_f1], max_rules=199, names=names)
    with pytest.raises(
        RuleLimitExceeded,
        match=r"taking the rules of client 'c1' \(tree 1 of 3\): its 20",
    ):
        aggregate([on_f1, free, on_f0], max_rules=15, names=names)
    with pytest.raises(
        RuleLimitExceeded, match="merging the rules of tree 3 of 3: the"
    ):
        aggregate([on_f0, free, on_f1], max_rules=199)


def test_aggregate_folds_left_and_deduplicates() -> None:
    rng = np.random.default_rng(0)
    sets = [id3(rng.integers(-1, 2, (5, 3)), rng.random((5, 2))) for _ in range(3)]
    folded = merge_rules(merge_rules(sets[0].deduplicated(), sets[1]), sets[2])
    result = aggregate(sets)
    assert keys(result) == keys(folded)
    np.testing.assert_allclose(result.proba, folded.proba)
    assert keys(aggregate(sets[:1])) == keys(sets[0].deduplicated())


def test_aggregate_validates() -> None:
    with pytest.raises(ValidationError, match="'rule_sets' parameter of aggregate"):
        aggregate([])
    with pytest.raises(ValidationError, match="must share base"):
        aggregate([free_rules(2, "id3"), free_rules(2, "cart")])
    with pytest.raises(ValidationError, match="must share n_classes"):
        aggregate([id3([[0]]), id3([[0]], [[1.0, 0.0, 0.0]])])
    with pytest.raises(ValidationError, match="'names' parameter of aggregate"):
        aggregate([id3([[0]])], names=["a", "b"])
    with pytest.raises(ValidationError, match="'merge' parameter of merge_rules"):
        merge_rules(id3([[0]]), id3([[0]]), merge="union")  # type: ignore[arg-type]


def test_rule_set_validates() -> None:
    with pytest.raises(ValidationError, match="'low' parameter of RuleSet"):
        cart([[1.0]], [[1.0]], [[1.0]])
    with pytest.raises(ValidationError, match="'proba' parameter of RuleSet"):
        id3([[0]], [[-1.0]])
    with pytest.raises(ValidationError, match=r"shape \(1, 2\) for base='id3'"):
        RuleSet("id3", [[0]], np.zeros(0), np.zeros(0), [[1.0]], 2)
    with pytest.raises(ValidationError, match="'base' parameter of RuleSet"):
        RuleSet("c45", [[0]], [], [], [[1.0]], 1)  # type: ignore[arg-type]


# -- views ------------------------------------------------------------------------------
def test_to_frame_and_to_text() -> None:
    rules = id3([[2, 1], [0, -1], [-1, -1]], [[1.0, 3.0], [2.0, 0.0], [0.0, 0.0]])
    frame = rules.to_frame(
        ["safety", "persons"], [["low", "med", "high"], None], ["no", "yes"]
    )
    assert frame["rule"].tolist() == [
        "safety = high ∧ persons = 1",
        "safety = low",
        "(always)",
    ]
    assert frame["class"].tolist() == ["yes", "no", "no"]
    np.testing.assert_allclose(frame[["no", "yes"]], [[0.25, 0.75], [1, 0], [0.5, 0.5]])
    text = rules.to_text(max_rules=2)
    assert text.splitlines() == [
        "3 rules (id3), classes: 0, 1",
        "0: x0 = 2 ∧ x1 = 1 → 1 (p=[0.25, 0.75])",
        "1: x0 = 0 → 0 (p=[1, 0])",
        "... and 1 more",
    ]
    bounds = cart([[32.5]], [[40.0]], [[1.0]]).to_frame(["age"])
    assert bounds["rule"].tolist() == ["age > 32.5 ∧ age <= 40"]


# -- 6. the global tree -------------------------------------------------------------
def test_id3_global_tree_sends_free_rules_to_every_branch() -> None:
    rules = id3([[0, -1], [1, 0], [1, 1]], [[1.0, 0.0], [0.0, 1.0], [0.9, 0.1]])
    quinlan = build_global_tree(rules, max_depth=2, classes=["no", "yes"])
    assert quinlan.feature[0] == 0  # a (x0) gains 0.31 > b (x1) 0.25 over |node|
    tree = build_global_tree(rules, max_depth=2, classes=["no", "yes"], gain="paper")
    # Eq. 1: b (x1) gains 0.42 > a (x0) 0.25; rule 0 is in both x1-branches.
    assert tree.feature[0] == 1
    assert tree.kind[0] == NodeKind.CATEGORICAL
    assert tree.count.tolist() == [3.0, 2.0, 2.0, 1.0, 1.0]  # count holds rules
    np.testing.assert_allclose(tree.value[2], [0.95, 0.05])
    assert tree.impurity[1] == pytest.approx(1.0)
    X = [[0, 0], [1, 0], [1, 1], [0, 1], [0, 7]]
    assert tree.predict(X).tolist() == ["no", "yes", "no", "no", "no"]
    assert tree.apply([[0, 7]]).tolist() == [0]  # unseen code stops at the root
    assert Tree.from_json(tree.to_json()) == tree
    assert len(tree.rules()) == 3


def test_id3_ties_go_to_the_first_feature() -> None:
    tree = build_global_tree(id3([[0, 0], [1, 1]]), max_depth=3, classes=[0, 1])
    assert tree.feature[0] == 0
    assert tree.n_leaves == 2


@pytest.mark.parametrize(
    ("values", "classes", "depth", "n_nodes"),
    [
        ([[0, 1], [1, -1]], [0, 0], 3, 1),  # all rules share the class
        ([[0, 1], [1, -1]], [0, 1], 0, 1),  # max_depth
        ([[-1, -1], [-1, -1]], [0, 1], 3, 1),  # no feature has a condition
        ([[0, -1], [-1, -1]], [0, 1], 3, 1),  # the only branch holds every rule
        ([[0, -1], [1, -1], [1, -1]], [0, 1, 0], 3, 3),  # no feature left below
    ],
)
def test_id3_stop_rules(
    values: list[list[int]], classes: list[int], depth: int, n_nodes: int
) -> None:
    proba = np.eye(2)[classes] * np.arange(1, len(classes) + 1)[:, None]
    rules = id3(values, proba)
    tree = build_global_tree(rules, max_depth=depth, classes=["a", "b"])
    assert tree.n_nodes == n_nodes
    summed = proba.sum(0)
    np.testing.assert_allclose(tree.value[0], summed / summed.sum())
    assert tree.count[0] == len(values)


def spanning_rules() -> RuleSet:
    # r0: x <= 1 (class 0); r1: x > 1 (class 1); r2: 0 < x <= 2 (class 0).
    return cart(
        [[-INF], [1.0], [0.0]],
        [[1.0], [INF], [2.0]],
        [[1.0, 0.0], [0.0, 1.0], [0.6, 0.4]],
    )


def test_cart_global_tree_sends_spanning_rules_to_both_sides() -> None:
    tree = build_global_tree(spanning_rules(), max_depth=5, classes=["a", "b"])
    # Gains: t=0 and t=2 0.23, t=1 0.42 -> root x <= 1; r2 spans it.
    assert (tree.feature[0], tree.threshold[0]) == (0, 1.0)
    left, right = tree.left[0], tree.right[0]
    assert tree.count[[left, right]].tolist() == [2.0, 2.0]
    assert tree.kind[left] == NodeKind.LEAF  # {r0, r2}: pure
    # Right {r1, r2} splits at 2; its left child (1, 2] has no threshold inside.
    assert tree.threshold[right] == 2.0
    inner = tree.left[right]
    assert tree.kind[inner] == NodeKind.LEAF
    np.testing.assert_allclose(tree.value[inner], [0.3, 0.7])
    assert tree.predict([[0.5], [1.5], [3.0]]).tolist() == ["a", "b", "b"]
    assert tree.max_depth == 2
    assert Tree.from_json(tree.to_json()) == tree


def test_cart_max_depth_and_purity() -> None:
    tree = build_global_tree(spanning_rules(), max_depth=1, classes=["a", "b"])
    assert tree.n_nodes == 3
    np.testing.assert_allclose(tree.value[2], [0.3, 0.7])
    pure = cart([[-INF], [1.0]], [[1.0], [INF]], [[1.0, 0.0], [0.6, 0.4]])
    assert build_global_tree(pure, max_depth=5, classes=[0, 1]).n_nodes == 1
    free = cart([[-INF], [-INF]], [[INF], [INF]], [[1.0, 0.0], [0.0, 1.0]])
    assert build_global_tree(free, max_depth=5, classes=[0, 1]).n_nodes == 1


def test_cart_ties_go_to_first_feature_then_smallest_threshold() -> None:
    two = cart([[-INF, -INF], [1.0, 1.0]], [[1.0, 1.0], [INF, INF]], np.eye(2))
    assert build_global_tree(two, max_depth=2, classes=[0, 1]).feature[0] == 0
    # t=1 and t=2 both gain 0.25.
    three = cart([[-INF], [1.0], [2.0]], [[1.0], [2.0], [INF]], np.eye(2)[[0, 1, 0]])
    assert build_global_tree(three, max_depth=2, classes=[0, 1]).threshold[0] == 1.0


def reference_best_gain(rules: RuleSet, gain: str) -> float:
    classes = rules.predicted
    idx = np.arange(len(rules))

    def h(part: np.ndarray) -> float:
        return float(entropy(np.bincount(classes[part], minlength=rules.n_classes)))

    best = -INF
    for f in range(rules.n_features):
        for t in np.unique(np.r_[rules.low[:, f], rules.high[:, f]]):
            left, right = idx[rules.low[:, f] < t], idx[rules.high[:, f] > t]
            if np.isfinite(t) and left.size and right.size:
                spread = left.size * h(left) + right.size * h(right)
                weight = left.size + right.size if gain == "paper" else idx.size
                best = max(best, h(idx) - spread / weight)
    return best


@pytest.mark.parametrize("gain", ["quinlan", "paper"])
@given(pair=rule_set_pairs("cart"))
def test_cart_root_split_maximises_the_rule_gain(
    gain: str, pair: tuple[RuleSet, RuleSet]
) -> None:
    rules = pair[0]
    if len(rules) == 0 or (rules.predicted == rules.predicted[0]).all():
        return
    tree = build_global_tree(
        rules, max_depth=1, classes=np.arange(rules.n_classes), gain=gain
    )
    if tree.n_nodes == 1:
        assert reference_best_gain(rules, gain) == -INF  # no admissible threshold
        return
    f, t = int(tree.feature[0]), float(tree.threshold[0])
    left, right = rules.low[:, f] < t, rules.high[:, f] > t
    h = [
        float(entropy(np.bincount(rules.predicted[m], minlength=rules.n_classes)))
        for m in (np.ones(len(rules), bool), left, right)
    ]
    weight = left.sum() + right.sum() if gain == "paper" else len(rules)
    found = h[0] - (left.sum() * h[1] + right.sum() * h[2]) / weight
    assert found == pytest.approx(reference_best_gain(rules, gain), abs=1e-9)


def reference_id3_gains(rules: RuleSet, gain: str) -> dict[int, tuple[float, bool]]:
    """Gain of every candidate feature and whether its split keeps every rule."""
    classes = rules.predicted

    def h(part: np.ndarray) -> float:
        return float(entropy(np.bincount(classes[part], minlength=rules.n_classes)))

    gains = {}
    for f in range(rules.n_features):
        column = rules.values[:, f]
        children = [
            np.flatnonzero((column == v) | (column < 0))
            for v in set(column[column >= 0])
        ]
        if children:
            sizes = np.array([c.size for c in children])
            weight = sizes.sum() if gain == "paper" else len(rules)
            spread = sum(c.size * h(c) for c in children) / weight
            keeps_all = all(c.size == len(rules) for c in children)
            gains[f] = (h(np.arange(len(rules))) - spread, keeps_all)
    return gains


@pytest.mark.parametrize("gain", ["quinlan", "paper"])
@given(pair=rule_set_pairs("id3"))
def test_id3_root_split_maximises_the_rule_gain(
    gain: str, pair: tuple[RuleSet, RuleSet]
) -> None:
    rules = pair[0]
    if len(rules) == 0 or (rules.predicted == rules.predicted[0]).all():
        return
    tree = build_global_tree(
        rules, max_depth=1, classes=np.arange(rules.n_classes), gain=gain
    )
    gains = reference_id3_gains(rules, gain)
    if not gains:
        assert tree.n_nodes == 1
        return
    best = max(g for g, _ in gains.values())
    first = min(f for f, (g, _) in gains.items() if g >= best - 1e-9)
    if gains[first][1]:  # the best split keeps every rule in its one branch: stop
        assert tree.n_nodes == 1
        return
    assert tree.feature[0] == first


@given(pair=rule_set_pairs("cart"))
def test_cart_splits_always_reduce_a_child(pair: tuple[RuleSet, RuleSet]) -> None:
    rules = pair[0]
    if len(rules) == 0:
        return
    tree = build_global_tree(rules, max_depth=8, classes=np.arange(rules.n_classes))
    inner = np.flatnonzero(tree.kind == NodeKind.NUMERIC)
    smaller = np.minimum(tree.count[tree.left[inner]], tree.count[tree.right[inner]])
    assert (smaller < tree.count[inner]).all()


def test_build_global_tree_validates() -> None:
    with pytest.raises(ValidationError, match="non-empty RuleSet"):
        build_global_tree(id3(np.zeros((0, 2))), max_depth=2, classes=[0, 1])
    with pytest.raises(ValidationError, match="'classes' parameter"):
        build_global_tree(id3([[0]]), max_depth=2, classes=[0, 1, 2])
    with pytest.raises(ValidationError, match="'max_depth' parameter"):
        build_global_tree(id3([[0]]), max_depth=-1, classes=[0, 1])


# -- 7. one tree, round trip --------------------------------------------------------
def sklearn_tree(name: str) -> tuple[DecisionTreeClassifier, np.ndarray]:
    if name == "breast_cancer":
        X, y = load_breast_cancer(return_X_y=True)
    else:
        X, y = make_classification(
            2000, 10, n_informative=6, n_classes=3, random_state=0
        )
    return DecisionTreeClassifier(max_depth=5, random_state=0).fit(X, y), X


@pytest.mark.parametrize("dataset", ["breast_cancer", "make_classification"])
def test_one_tree_round_trip_is_exact_without_a_depth_cap(dataset: str) -> None:
    est, X = sklearn_tree(dataset)
    original = Tree.from_sklearn(est)
    rules = RuleSet.from_tree(original, "cart")
    assert len(rules) == original.n_leaves
    tree = build_global_tree(rules, max_depth=64, classes=original.classes)
    np.testing.assert_array_equal(tree.predict(X), est.predict(X))


def test_one_tree_round_trip_at_the_client_depth_needs_quinlans_gain() -> None:
    # With the paper's Eq. 2 the rule-count gain is blind to sklearn's root split
    # (both sides hold the same class mix of rules: gain 0), so with the clients'
    # max_depth=5 the global tree runs out of depth; weighting children by the
    # node's rule count (the default, Quinlan's gain) reproduces the tree.
    est, X = sklearn_tree("breast_cancer")
    original = Tree.from_sklearn(est)
    rules = RuleSet.from_tree(original, "cart")
    f, t = int(original.feature[0]), float(original.threshold[0])
    left, right = (
        rules.predicted[rules.high[:, f] <= t],
        rules.predicted[rules.low[:, f] >= t],
    )
    assert np.bincount(left, minlength=2)[0] / left.size == pytest.approx(
        np.bincount(right, minlength=2)[0] / right.size
    )
    tree = build_global_tree(rules, max_depth=5, classes=original.classes, gain="paper")
    agreement = np.mean(tree.predict(X) == est.predict(X))
    assert tree.max_depth == 5
    assert 0.9 < agreement < 0.99
    quinlan = build_global_tree(rules, max_depth=5, classes=original.classes)
    assert np.mean(quinlan.predict(X) == est.predict(X)) >= 0.99


# -- 8. from_tree refuses what it cannot express ------------------------------------
def categorical_tree(*, default: bool = False, codes: tuple[int, ...] = (0,)) -> Tree:
    b = TreeBuilder(n_features=2, classes=["a", "b"], categories=[["lo", "hi"], None])
    root = b.add_root(NodeStats.from_class_counts([2, 2]))
    branches = [(list(codes), NodeStats.from_class_counts([2, 0]))]
    if not default and 1 not in codes:
        branches.append(([1], NodeStats.from_class_counts([0, 2])))
    b.split_categorical(
        root, 0, branches, NodeStats.from_class_counts([0, 2]) if default else None
    )
    return b.build()


def test_from_tree_reads_id3_trees() -> None:
    rules = RuleSet.from_tree(categorical_tree(), "id3")
    assert keys(rules) == [(0, -1), (1, -1)]
    np.testing.assert_allclose(rules.proba, [[1.0, 0.0], [0.0, 1.0]])


def test_from_tree_intersects_repeated_cart_conditions() -> None:
    b = TreeBuilder(n_features=1, classes=[0, 1])
    root = b.add_root(NodeStats.from_class_counts([2, 2]))
    left, _ = b.split_numeric(
        root,
        0,
        5.0,
        NodeStats.from_class_counts([2, 1]),
        NodeStats.from_class_counts([0, 1]),
    )
    b.split_numeric(
        left,
        0,
        2.0,
        NodeStats.from_class_counts([2, 0]),
        NodeStats.from_class_counts([0, 1]),
    )
    assert keys(RuleSet.from_tree(b.build(), "cart")) == [
        (-INF, 2.0),
        (2.0, 5.0),
        (5.0, INF),
    ]


def client_tree() -> Tree:
    b = TreeBuilder(n_features=1, classes=[0, 1], clients=["a", "b"])
    root = b.add_root(NodeStats.from_class_counts([1, 1]))
    b.split_client(
        root,
        [
            ([0], NodeStats.from_class_counts([1, 0])),
            ([1], NodeStats.from_class_counts([0, 1])),
        ],
        None,
    )
    return b.build()


@pytest.mark.parametrize(
    ("make", "base", "match"),
    [
        (
            lambda: categorical_tree(default=True),
            "id3",
            "default-branch condition: x0 not in",
        ),
        (
            lambda: categorical_tree(codes=(0, 1)),
            "id3",
            r"multi-code condition: x0 in \{lo, hi\}",
        ),
        (lambda: categorical_tree(), "cart", r"categorical condition: x0 in \{lo\}"),
        (
            lambda: Tree.from_sklearn(sklearn_tree("breast_cancer")[0]),
            "id3",
            "numeric condition",
        ),
        (client_tree, "id3", r"client condition: client in \{a\}"),
        (client_tree, "cart", "client condition"),
        (
            lambda: Tree.from_sklearn(
                DecisionTreeRegressor().fit([[0.0], [1.0]], [0, 1])
            ),
            "cart",
            "regression tree",
        ),
    ],
)
def test_from_tree_refuses_what_the_base_cannot_express(
    make: Callable[[], Tree], base: str, match: str
) -> None:
    with pytest.raises(ValidationError, match=match):
        RuleSet.from_tree(make(), base)  # type: ignore[arg-type]
