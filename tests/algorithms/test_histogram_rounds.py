"""The engine's whole-round pieces against the kernels they compose.

:class:`GridAgreement` (declared edges, the summaries' agreement, the secure
fine grid) against :func:`declared_grid`, :func:`agree_grid` and
:func:`fine_edges` called by hand; :func:`summarise_columns` against
:func:`sketch_columns` and :func:`fine_histograms`; :class:`LevelRounds`
(pooling, subtraction, the after-dropout rule) against a pooled sum computed
with numpy and the level plan of :func:`plan_level`.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from fedtrees.algorithms.histogram import (
    FINE_BINS,
    GridAgreement,
    GridSketch,
    Kept,
    LevelPlan,
    LevelRounds,
    agree_grid,
    fine_edges,
    fine_histograms,
    node_weights,
    plan_level,
    sketch_columns,
    summarise_columns,
)
from fedtrees.exceptions import ValidationError
from fedtrees.federation import FederationInfo, InvalidField, Schema

KINDS = ("numeric", "numeric", "categorical")


def _info() -> FederationInfo:
    schema = Schema(
        ("age", "bmi", "ward"), KINDS, (None, None, ("a", "b", "c")),
        "classification", ("no", "yes"), "str",
    )  # fmt: skip
    return FederationInfo(("h1", "h2", "h3"), schema)


def _agreement(**kw: object) -> GridAgreement:
    settings: dict[str, object] = {
        "owner": "Test", "max_bins": 8, "bin_edges": None, "feature_ranges": None,
        "secure": False,
    }  # fmt: skip
    settings.update(kw)
    return GridAgreement.begin(_info(), **settings)  # type: ignore[arg-type]


def _client_matrix(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.column_stack([
        rng.normal(50, 10, n), rng.normal(25, 4, n), rng.integers(0, 3, n)
    ]).astype(float)  # fmt: skip


def test_agreement_declares_and_sketches_the_other_numeric_columns() -> None:
    a = _agreement(bin_edges={"age": [30.0, 60.0]})
    assert a.columns.tolist() == [False, True, False]
    assert a.needed
    assert a.ranges is None
    assert a.n_fine == 0
    fields = a.request_fields()
    assert fields["n_features"] == 3
    assert fields["max_bins"] == 8
    assert "ranges" not in fields
    before = a.before()
    assert before.n_bins.tolist() == [3, 1, 3]  # bmi: one bin until agreed


def test_agreement_from_replies_is_the_kernels_by_hand(rng) -> None:
    a = _agreement(bin_edges={0: [30.0, 60.0]})
    X = [_client_matrix(rng, n) for n in (40, 70, 55)]
    skipped = ~a.columns
    sketches = [sketch_columns(x, skipped, 8) for x in X]
    grid = a.agree(sketches)
    by_hand = agree_grid(sketches, ~a.columns, np.array([0, 0, 3]), 8)
    np.testing.assert_array_equal(grid.feature_edges(0), [30.0, 60.0])
    np.testing.assert_array_equal(grid.feature_edges(1), by_hand.feature_edges(1))
    assert grid.n_bins[2] == 3


def test_every_column_declared_needs_no_round() -> None:
    a = _agreement(bin_edges={"age": [30.0], "bmi": [20.0, 25.0]})
    assert not a.needed
    assert a.declared_only().n_bins.tolist() == [2, 3, 3]
    assert a.agree([]).n_bins.tolist() == [2, 3, 3]


def test_secure_agreement_needs_declared_ranges_and_cuts_the_fine_sum(rng) -> None:
    with pytest.raises(ValidationError, match="feature_ranges"):
        _agreement(secure=True)
    ranges = {"age": (0.0, 100.0), "bmi": (0.0, 50.0)}
    a = _agreement(secure=True, feature_ranges=ranges)
    assert a.ranges is not None
    assert a.n_fine == 2 * FINE_BINS
    assert a.request_fields()["ranges"] is a.ranges
    request = SimpleNamespace(max_bins=8, ranges=a.ranges)
    skipped = ~a.columns
    fines = [
        summarise_columns(request, _client_matrix(rng, n), skipped, None, True)
        for n in (40, 70, 55)
    ]
    total = np.sum(fines, axis=0)
    grid = a.agree_masked(total)
    cut = fine_edges(total, a.columns, a.ranges, 8)
    np.testing.assert_array_equal(grid.feature_edges(0), cut[0])
    np.testing.assert_array_equal(grid.feature_edges(1), cut[1])
    np.testing.assert_array_equal(a.fine(total), total.reshape(2, FINE_BINS))
    a.check_fine(total, sites=3, bound=165.0)
    with pytest.raises(InvalidField, match="fine"):
        a.check_fine(-total, sites=3, bound=165.0)


def test_secure_with_every_column_declared_sends_zero_ranges() -> None:
    a = _agreement(secure=True, bin_edges={"age": [1.0], "bmi": [2.0]})
    assert a.ranges is not None
    assert a.ranges.shape == (3, 2)
    assert not a.ranges.any()
    assert a.n_fine == 0


def test_summary_is_the_sketch_or_the_weighted_fine_histograms(rng) -> None:
    X = _client_matrix(rng, 30)
    skipped = np.array([False, True, True])
    w = rng.uniform(0.5, 2.0, 30)
    ranges = np.array([[0.0, 100.0], [0.0, 50.0], [0.0, 0.0]])
    request = SimpleNamespace(max_bins=8, ranges=ranges)
    plain = summarise_columns(request, X, skipped, w, False)
    want = sketch_columns(X, skipped, 8, w)
    assert isinstance(plain, GridSketch)
    np.testing.assert_array_equal(plain.points, want.points)
    masked = summarise_columns(request, X, skipped, None, True)
    ones = fine_histograms(X, ranges, ~skipped, np.ones(30)).ravel()
    np.testing.assert_array_equal(masked, ones)
    assert float(np.sum(masked)) == 30.0


def test_node_weights_are_a_column_or_the_sum() -> None:
    stats = np.array([[2.0, 3.0, 5.0], [1.0, 0.0, 4.0]])
    assert node_weights(stats, -1).tolist() == [10.0, 5.0]
    assert node_weights(stats, 2).tolist() == [5.0, 4.0]
    assert node_weights(stats, 0).tolist() == [2.0, 1.0]


# -- level rounds -------------------------------------------------------------------
def _reply(node_stats: np.ndarray, count, code, stats) -> SimpleNamespace:
    return SimpleNamespace(
        node_stats=np.asarray(node_stats, float),
        bin_count=np.asarray(count, np.int64),
        bin_code=np.asarray(code, np.uint8),
        bin_stats=np.asarray(stats, float),
    )


def test_pooled_node_stats_are_the_sum_over_asked_positions() -> None:
    rounds = LevelRounds.begin(2, -1, subtract=True)
    pairs = np.array([[0], [0]])
    plan = plan_level(
        np.array([1, 2]), pairs, np.array([0, 0]), np.array([3.0, 4.0]), rounds.kept
    )
    a = _reply([[1, 2], [0, 1]], [[2], [1]], [0, 1, 1], [[1, 0], [0, 2], [0, 1]])
    b = _reply([[3, 0]], [[1]], [0], [[3, 0]])
    stats, bins_of = rounds.pooled(plan, [(np.array([0, 1]), a), (np.array([1]), b)], 2)
    np.testing.assert_array_equal(stats, [[1, 2], [3, 1]])
    bins = bins_of()
    assert bins.stats.sum(axis=0).tolist() == [4.0, 3.0]


def test_after_dropout_rule_repeats_only_a_level_with_subtraction() -> None:
    rounds = LevelRounds.begin(1, 0, subtract=True)
    empty = np.zeros(0, np.int64)
    plain = LevelPlan(np.zeros((2, 1), np.int64), empty, empty, empty)
    derived = LevelPlan(np.zeros((2, 1), np.int64), np.array([1]), empty, empty)
    assert not rounds.repeat(derived)  # nobody dropped out
    rounds.drop()
    assert rounds.kept.nodes.size == 0
    assert not rounds.repeat(plain)  # no subtraction: go on with the answers
    rounds.drop()
    assert rounds.repeat(derived)  # the kept parents held the dropped rows
    assert not rounds.repeat(derived)  # the flag is spent: the repeat goes on
    assert rounds.repeat(None)  # nobody answered


def test_keep_respects_subtract() -> None:
    stats = np.array([[1.0], [2.0]])
    bins_kept = LevelRounds.begin(1, 0, subtract=True)
    bins_none = LevelRounds.begin(1, 0, subtract=False)
    pairs = np.array([[0], [0]])
    plan = plan_level(
        np.array([0, 1]), pairs, np.array([-1, -1]), stats[:, 0], Kept.none(1)
    )
    one = _reply(stats, [[1], [1]], [0, 0], [[1.0], [2.0]])
    for r in (bins_kept, bins_none):
        _, bins_of = r.pooled(plan, [(np.arange(2), one)], 2)
        r.keep(bins_of(), np.array([0]), np.array([0]), 1)
    assert bins_kept.kept.nodes.tolist() == [0]
    assert bins_none.kept.nodes.size == 0
