"""FedGA-Tree's federation-independent pieces (docs/fedga.md).

Encoding round-trips and decodes to valid trees; every GA operator keeps the
string length and the feature ids and reproduces for a seed; Update keeps the
best; and a client's evaluation equals a reference built by hand from
scikit-learn's one-feature stumps on the rows reaching each node.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import f1_score
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from fedtrees.algorithms.fedga import (
    NIL,
    TrainingRows,
    child_positions,
    crossover,
    decision_nodes,
    decode,
    edit_distance,
    encode,
    evaluate_population,
    evaluate_structure,
    fit_structure,
    mutate,
    mutate_population,
    node_flip,
    node_swap,
    one_point_crossover,
    random_structure,
    score_structures,
    substring_swap,
    tournament_select,
    update,
)
from fedtrees.exceptions import ValidationError
from fedtrees.learners import fit_cart
from fedtrees.tree import NodeKind

SETTINGS = settings(max_examples=40, deadline=None)


def _valid_decoded(structure: np.ndarray, depth: int) -> None:
    tree = decode(structure, depth)
    left_pos, right_pos, level = child_positions(depth)
    assert (structure[tree.position] >= 0).all()
    assert (tree.feature == structure[tree.position]).all()
    assert (tree.level == level[tree.position]).all()
    for i in range(tree.n_decision):  # children really are the string's children
        for child, pos in ((tree.left[i], left_pos), (tree.right[i], right_pos)):
            if child >= 0:
                assert tree.position[child] == pos[tree.position[i]]
                assert tree.parent[child] == i
    assert (tree.parent[1:] < np.arange(1, tree.n_decision)).all()  # pre-order
    assert decision_nodes(structure) == tree.n_decision


# -- encoding -----------------------------------------------------------------


def test_positions_follow_preorder_layout() -> None:
    left, right, level = child_positions(4)
    # pre-order visit of the full tree by recursion, compared with the formulas
    visit: list[tuple[int, int]] = []

    def walk(pos: int, lvl: int) -> None:
        visit.append((pos, lvl))
        if lvl < 3:
            walk(int(left[pos]), lvl + 1)
            walk(int(right[pos]), lvl + 1)

    walk(0, 0)
    assert [p for p, _ in visit] == list(range(15))
    assert [lv for _, lv in visit] == level.tolist()


@SETTINGS
@given(
    seed=st.integers(0, 2**16),
    depth=st.integers(1, 5),
    n_classes=st.integers(2, 4),
    n=st.integers(2, 60),
)
def test_decode_encode_roundtrip(seed: int, depth: int, n_classes: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, size=(n, 3)).astype(float)
    y = rng.integers(0, n_classes, size=n)
    tree = fit_cart(X, y, n_classes=n_classes, max_depth=depth, seed=seed)
    structure = encode(tree, depth)
    decoded = decode(structure, depth)
    numeric = np.flatnonzero(tree.kind == NodeKind.NUMERIC)
    # same decision nodes, in pre-order (sklearn stores its nodes in pre-order)
    assert decoded.feature.tolist() == tree.feature[numeric].tolist()
    assert decision_nodes(structure) == numeric.shape[0]
    # and the fitted tree of the structure on the same rows has the same shape
    refit = fit_structure(structure, depth, X, y, "classification", n_classes)
    assert encode(refit, depth).tolist() == structure.tolist()


def test_encode_pads_shallow_trees_and_refuses_deep_ones() -> None:
    X = np.arange(8.0)[:, None]
    tree = fit_cart(
        X, np.array([0, 0, 1, 1, 0, 0, 1, 1]), n_classes=2, max_depth=3, seed=0
    )
    assert encode(tree, 4).shape == (15,)
    with pytest.raises(ValidationError, match="deeper than the string's depth 2"):
        encode(tree, 2)


def test_children_of_nil_are_ignored() -> None:
    # Fig. 2 of the paper with the left child of the root set to nil
    full = np.array([0, 2, 1, 3, 1, -1, 2])
    cut = full.copy()
    cut[1] = NIL
    tree = decode(cut, 3)
    assert tree.position.tolist() == [0, 4, 6]
    assert decision_nodes(cut) == 3
    # whatever sits below the nil position does not matter
    other = cut.copy()
    other[2:4] = [0, -1]
    assert decode(other, 3).position.tolist() == tree.position.tolist()
    assert edit_distance(cut, other) == 0.0
    assert decode([-1, 1, 2], 2).n_decision == 0


@SETTINGS
@given(
    seed=st.integers(0, 2**16),
    depth=st.integers(1, 8),
    n_features=st.integers(1, 6),
    nil_rate=st.floats(0.0, 1.0),
)
def test_random_structures_decode_to_valid_trees(
    seed: int, depth: int, n_features: int, nil_rate: float
) -> None:
    structure = random_structure(
        np.random.default_rng(seed), depth, n_features, nil_rate
    )
    assert structure.shape == ((1 << depth) - 1,)
    assert structure.min() >= NIL
    assert structure.max() < n_features
    assert (structure == NIL).sum() == round(nil_rate * structure.shape[0])
    _valid_decoded(structure, depth)


def test_edit_distance_definition() -> None:
    a = np.array([0, 1, 2])
    assert edit_distance(a, a) == 0.0
    assert edit_distance(a, [1, 0, 0]) == 1.0
    assert edit_distance(a, [0, 1, -1]) == pytest.approx(1 / 3)
    assert edit_distance([-1, 0, 0], [-1, 1, 1]) == 0.0
    with pytest.raises(ValidationError, match="same depth"):
        edit_distance(a, np.zeros(7, int))


def test_bad_structures_are_refused() -> None:
    with pytest.raises(ValidationError, match="length 2\\*\\*d - 1"):
        decode(np.zeros(4, int), 2)
    with pytest.raises(ValidationError, match="feature indices or -1"):
        decode([0, -2, 1], 2)
    with pytest.raises(ValidationError, match="2\\*\\*depth - 1 = 7"):
        decode([0, 1, 1], 3)


# -- operators ----------------------------------------------------------------


def _population(
    seed: int, size: int = 8, depth: int = 4, n_features: int = 5
) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.stack(
        [random_structure(rng, depth, n_features, 0.2) for _ in range(size)]
    )


def _assert_valid(strings: np.ndarray, length: int, n_features: int) -> None:
    assert strings.shape[-1] == length
    assert strings.dtype == np.int64
    assert strings.min() >= NIL
    assert strings.max() < n_features


OPERATORS = {
    "one_point_crossover": lambda rng, pop: np.stack(
        one_point_crossover(rng, pop[0], pop[1])
    ),
    "crossover": lambda rng, pop: crossover(rng, pop, np.arange(8.0), 3, maximize=True),
    "node_flip": lambda rng, pop: node_flip(rng, pop[0], 5, 3),
    "node_swap": lambda rng, pop: node_swap(rng, pop[0], 3),
    "substring_swap": lambda rng, pop: substring_swap(rng, pop[0]),
    "mutate": lambda rng, pop: mutate(rng, pop[0], 5, 3, 3),
    "mutate_population": lambda rng, pop: mutate_population(rng, pop, 5, 3, 3),
}


@pytest.mark.parametrize("name", sorted(OPERATORS))
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_operators_keep_length_ids_and_reproduce(name: str, seed: int) -> None:
    pop = _population(seed)
    operator = OPERATORS[name]
    first = operator(np.random.default_rng([seed, 7]), pop)
    again = operator(np.random.default_rng([seed, 7]), pop)
    _assert_valid(first, 15, 5)
    np.testing.assert_array_equal(first, again)


@pytest.mark.parametrize("seed", range(5))
def test_mutations_change_what_they_promise(seed: int) -> None:
    rng = np.random.default_rng(seed)
    s = _population(seed)[0]
    flipped = node_flip(rng, s, 5, 4)
    assert (flipped != s).sum() == 4  # m1 positions, each to another value
    swapped = node_swap(rng, s, 3)
    assert sorted(swapped.tolist()) == sorted(s.tolist())
    moved = substring_swap(rng, s)
    assert sorted(moved.tolist()) == sorted(s.tolist())
    c1, c2 = one_point_crossover(rng, s, np.full(15, 9))
    cut = int(np.argmax(c1 == 9))
    assert (c1[:cut] == s[:cut]).all()
    assert (c2[cut:] == s[cut:]).all()


def test_tournament_prefers_the_fittest() -> None:
    fitness = np.array([0.1, 0.4, 0.9, 0.3, 0.2])
    rng = np.random.default_rng(0)
    assert (tournament_select(rng, fitness, 10, 5, maximize=True) == 2).all()
    assert (tournament_select(rng, fitness, 10, 5, maximize=False) == 0).all()
    winners = tournament_select(rng, fitness, 400, 3, maximize=True)
    assert np.bincount(winners, minlength=5).argmax() == 2
    assert (tournament_select(rng, [0.5, 0.5], 20, 2, maximize=True) == 0).all()


@pytest.mark.parametrize("maximize", [True, False])
def test_update_keeps_best_and_best_fitness_is_monotone(maximize: bool) -> None:
    rng = np.random.default_rng(4)
    pop = _population(4, size=6)
    fit = rng.random(6)
    best = []
    for _ in range(15):
        children = mutate_population(
            rng, crossover(rng, pop, fit, 3, maximize=maximize), 5, 1, 1
        )
        child_fit = rng.random(children.shape[0])
        pool_fit = np.concatenate([fit, child_fit])
        pop, fit = update(pop, fit, children, child_fit, 6, maximize=maximize)
        expected = np.sort(pool_fit)[::-1][:6] if maximize else np.sort(pool_fit)[:6]
        np.testing.assert_array_equal(fit, expected)
        best.append(fit[0])
    steps = np.diff(best)
    assert (steps >= 0).all() if maximize else (steps <= 0).all()


def test_update_breaks_ties_by_position_and_sinks_nan() -> None:
    pop, fit = update(
        [[0], [1]], [0.5, np.nan], [[2], [3]], [0.5, 0.7], 3, maximize=True
    )
    assert pop.ravel().tolist() == [3, 0, 2]
    assert fit.tolist() == [0.7, 0.5, 0.5]


# -- evaluation against a hand-built reference ----------------------------------


def _reference_check(structure, depth, X, y, tree, n_classes) -> None:
    """Walk the structure; compare each node with sklearn's one-feature stump."""
    left_pos, right_pos, _ = child_positions(depth)
    stack = [(0, 0, np.arange(X.shape[0]))]  # (tree node, position, rows)
    while stack:
        node, pos, rows = stack.pop()
        f = structure[pos] if pos >= 0 else NIL
        stump = None
        if f >= 0 and rows.shape[0] >= 2:
            cls = DecisionTreeClassifier if n_classes else DecisionTreeRegressor
            criterion = "gini" if n_classes else "squared_error"
            stump = cls(max_depth=1, criterion=criterion, random_state=0)
            stump.fit(X[rows, f][:, None], y[rows])
        if stump is not None and stump.tree_.node_count == 3:
            assert tree.kind[node] == NodeKind.NUMERIC
            assert tree.feature[node] == f
            assert tree.threshold[node] == stump.tree_.threshold[0]
            go_left = X[rows, f] <= tree.threshold[node]
            stack.append((int(tree.left[node]), int(left_pos[pos]), rows[go_left]))
            stack.append((int(tree.right[node]), int(right_pos[pos]), rows[~go_left]))
            continue
        assert tree.kind[node] == NodeKind.LEAF
        assert tree.count[node] == rows.shape[0]
        if n_classes:
            counts = np.bincount(y[rows], minlength=n_classes)
            np.testing.assert_allclose(tree.value[node], counts / counts.sum())
        else:
            assert tree.value[node, 0] == pytest.approx(y[rows].mean())


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("task", ["classification", "regression"])
def test_thresholds_and_leaves_match_sklearn_reference(seed: int, task: str) -> None:
    rng = np.random.default_rng(seed)
    n, depth = 120, 4
    # float32-representable values: scikit-learn's trees split on float32 copies
    X = rng.normal(size=(n, 4)).astype(np.float32).astype(np.float64)
    X[:, 3] = rng.integers(0, 3, size=n)  # repeated values: ties and constants
    if task == "classification":
        n_classes = 3
        y = ((X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5) + (rng.random(n) < 0.2)) % 3
    else:
        n_classes = 0
        y = X[:, 0] * 2 + X[:, 3] + rng.normal(size=n)
    structure = random_structure(rng, depth, 4, 0.15)
    tree = fit_structure(structure, depth, X, y, task, n_classes)
    _reference_check(structure, depth, X, y, tree, n_classes)
    # and the fitness is the one of that tree on the validation rows
    X_val, y_val = X[:40] + 0.1, y[:40]
    fitted, score = evaluate_structure(
        structure, depth, X, y, X_val, y_val, task, n_classes
    )
    predicted = fitted.predict(X_val)
    if n_classes:
        expected = f1_score(y_val, predicted, average="macro", zero_division=0)
    else:
        expected = float(np.mean((predicted - y_val) ** 2))
    assert score == pytest.approx(expected)


def test_no_admissible_split_makes_a_leaf() -> None:
    X = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0], [1.0, 3.0]])
    y = np.array([0, 1, 0, 1])
    tree = fit_structure([0, 1, 1], 2, X, y, "classification", 2)  # constant column
    assert tree.n_nodes == 1
    pure = fit_structure([1, 0, 0], 2, X, np.zeros(4, int), "classification", 2)
    assert pure.n_nodes == 1  # zero impurity: not split, as CART


def test_population_scores_equal_one_by_one_and_reuse_presort() -> None:
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(200, 5)), rng.normal(size=200)
    pop = _population(3, size=6, depth=4, n_features=5)
    scores = evaluate_population(
        pop, 4, X[:150], y[:150], X[150:], y[150:], "regression"
    )
    one_by_one = [
        evaluate_structure(s, 4, X[:150], y[:150], X[150:], y[150:], "regression")[1]
        for s in pop
    ]
    np.testing.assert_allclose(scores, one_by_one)
    rows = TrainingRows.of(X[:150], y[:150], "regression")
    np.testing.assert_array_equal(
        score_structures(rows, pop, 4, X[150:], y[150:]), scores
    )


def test_evaluation_refuses_bad_input() -> None:
    X, y = np.zeros((4, 2)), np.array([0, 1, 2, 0])
    with pytest.raises(ValidationError, match=r"agreed class codes 0\.\.1"):
        evaluate_population([[0]], 1, X, y, X, y, "classification", 2)
    with pytest.raises(ValidationError, match="feature ids below n_features = 2"):
        evaluate_population([[5]], 1, X, y, X, y, "classification", 3)
    with pytest.raises(ValidationError, match="'task'"):
        evaluate_population([[0]], 1, X, y, X, y, "ranking", 3)  # type: ignore[arg-type]
