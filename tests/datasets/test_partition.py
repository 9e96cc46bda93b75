from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fedtrees.datasets import partition
from fedtrees.exceptions import ValidationError


def _covers_every_row_once(p: partition.Partition, n: int) -> None:
    joined = np.concatenate(list(p))
    np.testing.assert_array_equal(np.sort(joined), np.arange(n))


@given(n=st.integers(1, 300), k=st.integers(1, 12), seed=st.integers(0, 1000))
def test_iid_and_quantity_skew_cover_every_row_once(n: int, k: int, seed: int) -> None:
    k = min(k, n)
    p = partition.iid(n, k, random_state=seed)
    _covers_every_row_once(p, n)
    assert max(p.sizes) - min(p.sizes) <= 1
    q = partition.quantity_skew(
        n, k, alpha=0.5, random_state=seed, min_samples=min(1, n // k)
    )
    _covers_every_row_once(q, n)


@given(
    n=st.integers(20, 300),
    k=st.integers(1, 6),
    alpha=st.sampled_from([0.1, 1.0, 100.0]),
    seed=st.integers(0, 1000),
)
def test_dirichlet_label_skew_covers_every_row_once(
    n: int, k: int, alpha: float, seed: int
) -> None:
    y = np.random.default_rng(seed).integers(0, 3, n)
    p = partition.dirichlet_label_skew(
        y, k, alpha=alpha, random_state=seed, min_samples=1
    )
    _covers_every_row_once(p, n)
    assert min(p.sizes) >= 1


def test_same_seed_same_partition_and_different_seed_differs() -> None:
    y = np.repeat([0, 1, 2], 100)
    a = partition.dirichlet_label_skew(y, 5, 0.3, random_state=1)
    b = partition.dirichlet_label_skew(y, 5, 0.3, random_state=1)
    c = partition.dirichlet_label_skew(y, 5, 0.3, random_state=2)
    assert all(np.array_equal(x, z) for x, z in zip(a, b, strict=True))
    assert not all(np.array_equal(x, z) for x, z in zip(a, c, strict=True))


def test_small_alpha_skews_labels_large_alpha_does_not() -> None:
    y = np.repeat([0, 1], 5000)

    def mean_imbalance(alpha: float) -> float:
        p = partition.dirichlet_label_skew(y, 10, alpha, random_state=0)
        return float(np.mean([abs(y[i].mean() - 0.5) for i in p]))

    assert mean_imbalance(0.05) > 0.3
    assert mean_imbalance(1000.0) < 0.05


def test_by_column_and_groups() -> None:
    values = np.array(["b", "a", "b", "c"])
    p = partition.by_column(values)
    assert p.names == ("a", "b", "c")
    assert p.groups(4).tolist() == ["b", "a", "b", "c"]
    _covers_every_row_once(p, 4)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: partition.iid(3, 4),
            r"'n_clients' parameter of iid must be at most n_samples \(3\)",
        ),
        (lambda: partition.iid(0, 1), "'n_samples' parameter of iid"),
        (
            lambda: partition.quantity_skew(10, 2, alpha=0.0),
            "'alpha' parameter of quantity_skew",
        ),
        (
            lambda: partition.quantity_skew(10, 2, min_samples=6),
            "'min_samples' parameter of quantity_skew",
        ),
        (
            lambda: partition.dirichlet_label_skew(
                np.zeros(10), 5, 0.01, min_samples=3
            ),
            "could not give every one of 5 clients",
        ),
        (lambda: partition.by_column([None, "a"]), "no missing values"),
    ],
)
def test_bad_arguments(call: object, message: str) -> None:
    assert callable(call)
    with pytest.raises(ValidationError, match=message):
        call()
