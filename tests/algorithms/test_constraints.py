"""Configs that validate themselves: every parameter has a constraint (issue 38).

Every public estimator declares a constraint for each of its constructor
parameters (``_constraint_table``, docs/design.md) and checks
them through :func:`fedtrees.algorithms._constraints.validate`; these tests
prove the tables are complete and are the ones a fit uses.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import fedtrees
from fedtrees.algorithms._constraints import (
    Boolean,
    Check,
    Interval,
    Later,
    NoneOr,
    Options,
    Rule,
    Seed,
    Size,
    validate,
)
from fedtrees.exceptions import LocalProtocolError, ValidationError
from tests.algorithms.test_estimator_keywords import ESTIMATORS


def test_the_public_estimators_are_found() -> None:
    assert len(ESTIMATORS) >= 15
    assert {"FedForestClassifier", "FedGBDTRegressor", "LocalModelsRegressor"} <= set(
        ESTIMATORS
    )


@pytest.mark.parametrize("name", ESTIMATORS)
def test_every_constructor_parameter_has_a_constraint(name: str) -> None:
    cls = getattr(fedtrees, name)
    table = getattr(cls, "_constraint_table", None)
    assert table is not None, f"{name} declares no _constraint_table"
    params = set(cls().get_params())
    missing = sorted(params - set(table))
    assert not missing, f"{name}: no constraint for the parameters {missing}"
    stale = sorted(set(table) - params)
    assert not stale, f"{name}: constraints without a parameter {stale}"


class _Nothing:
    """A value no constraint but "checked later" accepts."""

    def __repr__(self) -> str:
        return "<nothing>"


def _checked_now(name: str) -> list[str]:
    table = getattr(fedtrees, name)._constraint_table
    return [p for p, c in table.items() if not isinstance(c, Later)]


_CASES = [(name, param) for name in ESTIMATORS for param in _checked_now(name)]


@pytest.fixture(scope="module")
def small_data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(24, 2))
    return X, (X[:, 0] > 0).astype(int), np.arange(24) % 2


@pytest.mark.parametrize(("name", "param"), _CASES)
def test_fit_refuses_a_bad_value_of_every_parameter_by_name(
    name: str, param: str, small_data: tuple[np.ndarray, np.ndarray, np.ndarray]
) -> None:
    X, y, groups = small_data
    model = getattr(fedtrees, name)().set_params(**{param: _Nothing()})
    with pytest.raises(ValidationError, match=rf"\b{param}\b"):
        model.fit(X, y, groups=groups)


# -- validate ------------------------------------------------------------------
TABLE = {
    "max_bins": Size(2, 256),
    "bin_edges": Check(lambda v, bins, owner: (v, bins), reads=("max_bins",)),
    "depth": NoneOr(Interval(int, 1, 16), none=16),
    "rate": Interval(float, 0.0, 1.0, low_open=True),
    "mode": Options(("a", "b")),
    "secure": Boolean(),
    "later": Later("the strategy"),
    "random_state": Seed(),
}
GOOD = {
    "max_bins": 8,
    "bin_edges": None,
    "depth": None,
    "rate": 0.5,
    "mode": "a",
    "secure": False,
    "later": object,
    "random_state": np.random.default_rng(0),
}


def test_validate_returns_every_value_checked() -> None:
    checked = validate("M", GOOD, TABLE)
    assert list(checked) == list(TABLE)
    assert checked["bin_edges"] == (None, 8)  # a Check reads checked values
    assert checked["depth"] == 16  # None stands for its value
    assert checked["later"] is object
    assert checked["random_state"] is GOOD["random_state"]  # nothing drawn


@pytest.mark.parametrize(
    ("param", "value", "message"),
    [
        ("max_bins", 10**9, "The 'max_bins' parameter of M must be an int in [2, 256]"),
        ("depth", 0, "The 'depth' parameter of M must be an int in [1, 16]. Got 0"),
        ("rate", 0.0, "The 'rate' parameter of M must be a finite float > 0.0"),
        ("mode", "c", "The 'mode' parameter of M must be one of 'a', 'b'. Got 'c'"),
        ("secure", 1, "The 'secure' parameter of M must be a bool. Got 1 instead."),
        ("random_state", -1, "The 'random_state' parameter of M must be an int in"),
    ],
)
def test_validate_keeps_the_message_template(
    param: str, value: object, message: str
) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        validate("M", {**GOOD, param: value}, TABLE)


RULES = (
    Rule(
        ("secure", "mode"),
        lambda secure, mode: not secure or mode == "a",
        "{owner}: secure=True needs mode='a' (got mode={mode!r}).",
    ),
    Rule(
        ("rate",),
        lambda rate: rate < 1.0,
        "a rate below 1 with this mode",
        parameter="rate",
    ),
)


def test_a_rule_names_what_it_reads() -> None:
    with pytest.raises(ValidationError, match=r"^M: secure=True needs mode='a' \(got"):
        validate("M", {**GOOD, "secure": True, "mode": "b"}, TABLE, RULES)
    given = {**GOOD, "rate": 1}  # quoted as given, not as checked (1.0)
    with pytest.raises(
        ValidationError,
        match=r"^The 'rate' parameter of M must be a rate below 1 with this mode\. "
        r"Got 1 instead\.$",
    ):
        validate("M", given, TABLE, RULES)


def test_parameters_are_checked_before_rules() -> None:
    bad = {**GOOD, "secure": True, "mode": "b", "depth": 99}
    with pytest.raises(ValidationError, match="'depth'"):
        validate("M", bad, TABLE, RULES)


def test_a_parameter_without_a_constraint_is_a_bug_named() -> None:
    with pytest.raises(LocalProtocolError, match=r"M has parameters without .*'new'"):
        validate("M", {**GOOD, "new": 1}, TABLE)
    shorter = {k: v for k, v in GOOD.items() if k != "mode"}
    with pytest.raises(LocalProtocolError, match=r"without a parameter \['mode'\]"):
        validate("M", shorter, TABLE)
