from __future__ import annotations

import numpy as np
import pytest

from fedtrees._random import check_random_state, keyed_rng, resolve_seed
from fedtrees._validation import check_choice, check_float, check_int, check_matrix
from fedtrees.exceptions import FedTreesError, ValidationError


def test_validation_errors_are_value_errors_and_fedtrees_errors() -> None:
    with pytest.raises(
        ValueError, match=r"'q' parameter of f must be an int >= 2\. Got 1 instead\."
    ):
        check_int(1, "q", "f", min_value=2)
    assert issubclass(ValidationError, FedTreesError)


@pytest.mark.parametrize("value", [1.5, "3", None, True, np.float64(2.0)])
def test_check_int_refuses_non_integers(value: object) -> None:
    with pytest.raises(ValidationError, match="'n' parameter of f must be an int"):
        check_int(value, "n", "f")


def test_check_int_accepts_numpy_integers_and_checks_ranges() -> None:
    assert check_int(np.int32(4), "n", "f", min_value=1, max_value=4) == 4
    with pytest.raises(ValidationError, match=r"an int in \[1, 3\]"):
        check_int(4, "n", "f", min_value=1, max_value=3)


@pytest.mark.parametrize(
    ("value", "kwargs"),
    [
        (float("nan"), {}),
        (float("inf"), {}),
        (-float("inf"), {"allow_inf": True}),
        (0.0, {"min_value": 0.0, "min_inclusive": False}),
        (2.0, {"max_value": 1.0}),
        ("1", {}),
    ],
)
def test_check_float_refusals(value: object, kwargs: dict[str, object]) -> None:
    with pytest.raises(ValidationError, match="'eps' parameter of f"):
        check_float(value, "eps", "f", **kwargs)  # type: ignore[arg-type]


def test_check_float_and_choice_accept() -> None:
    assert check_float(float("inf"), "eps", "f", allow_inf=True) == float("inf")
    assert check_choice("gini", "criterion", "f", ["gini", "entropy"]) == "gini"
    with pytest.raises(ValidationError, match="one of 'gini', 'entropy'"):
        check_choice("mse", "criterion", "f", ["gini", "entropy"])


def test_check_matrix_shapes_and_content() -> None:
    np.testing.assert_array_equal(check_matrix([[1, 2]], "X", "f"), [[1.0, 2.0]])
    with pytest.raises(ValidationError, match="must be a 2-D array"):
        check_matrix([1.0, 2.0], "X", "f")
    with pytest.raises(ValidationError, match="an array with 3 columns"):
        check_matrix([[1.0, 2.0]], "X", "f", n_features=3)
    with pytest.raises(ValidationError, match="at least one row"):
        check_matrix(np.zeros((0, 2)), "X", "f")
    with pytest.raises(ValidationError, match="a numeric 2-D array"):
        check_matrix([["a", "b"]], "X", "f")
    with pytest.raises(ValidationError, match=r"Column 1 of 'X' .* row 2"):
        check_matrix([[0, 0], [0, 0], [0, np.inf]], "X", "f")
    with pytest.raises(
        ValidationError,
        match=r"Column 0 of 'X' \(f\) holds NaN or inf at row 1; finite values were",
    ):
        check_matrix([[0, 0], [np.nan, 0]], "X", "f")


def test_check_matrix_may_allow_nan_but_never_inf() -> None:
    out = check_matrix([[np.nan, 1.0]], "X", "f", allow_nan=True)
    assert np.isnan(out[0, 0])
    assert out[0, 1] == 1.0
    with pytest.raises(
        ValidationError,
        match=r"Column 'b' of 'X' \(f\) holds inf at row 1; finite values or NaN "
        r"\(missing\) were expected\.",
    ):
        check_matrix(
            [[np.nan, 0.0], [np.nan, -np.inf]],
            "X",
            "f",
            column_names=["a", "b"],
            allow_nan=True,
        )


def test_keyed_generators_do_not_depend_on_draw_order() -> None:
    first = [
        keyed_rng(9, tree, client).random() for tree in range(3) for client in range(4)
    ]
    second = [
        keyed_rng(9, tree, client).random() for client in range(4) for tree in range(3)
    ]
    assert sorted(first) == sorted(second)
    assert keyed_rng(9, 0, 1).random() != keyed_rng(9, 1, 0).random()


def test_random_state_resolution() -> None:
    assert resolve_seed(5, "f") == 5
    assert resolve_seed(np.random.default_rng(0), "f") == resolve_seed(
        np.random.default_rng(0), "f"
    )
    assert isinstance(resolve_seed(None, "f"), int)
    gen = np.random.default_rng(1)
    assert check_random_state(gen, "f") is gen
    with pytest.raises(ValidationError, match="'random_state' parameter of f"):
        resolve_seed(-1, "f")
    with pytest.raises(ValidationError, match="'random_state' parameter of f"):
        resolve_seed("0", "f")  # type: ignore[arg-type]
