"""Real data that used to break (issue 24, round two).

A categorical column with hundreds of categories (zip or ICD codes) sends
``(0, K, S)`` statistics wherever a level considers none of its pairs; the codec
refused such an empty array whenever K exceeded the message's length, so
``decode`` refused what ``encode`` wrote and an honest client was blamed. The
codec's rule is on element counts now: ``decode(encode(p)) == p`` for every
payload ``encode`` accepts (a property test), and every method trains on such a
column or refuses it naming the column and a way out.

Integer categories at fit and float categories at predict (``1`` and ``1.0``)
used to make every row an unseen category without a word; numbers are compared
by value now (:mod:`fedtrees.federation._values`).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import fedtrees
from fedtrees.algorithms.fedforest._sketch_payloads import SketchReply
from fedtrees.exceptions import LocalProtocolError, ValidationError
from fedtrees.federation import Envelope, Federation, Payload, decode, encode, payload
from tests.hostile.test_estimator_inputs import ALL

K = 1000  # zip or ICD codes: more categories than a short reply has bytes
MODES = ("quantile", "exact", "uniform", "hist")
PERSONAL = ("FedGAClassifier", "FedGARegressor", "LocalModelsClassifier")
PERSONAL += ("LocalModelsRegressor",)


@payload("test.real_data_array")
class OneArray(Payload):
    """One array field, for the codec's property test."""

    values: np.ndarray


def _round_trip(array: np.ndarray) -> np.ndarray:
    envelope = Envelope("reply", 1, "site", OneArray.kind, OneArray(array))
    back = decode(encode(envelope)).payload
    assert isinstance(back, OneArray)
    return back.values


# -- the codec: element counts, not dimensions -------------------------------------
@pytest.mark.hostile("correct")
def test_an_empty_array_longer_than_its_message_round_trips() -> None:
    reply = SketchReply(
        np.ones(1),
        np.ones((1, 2)),
        np.ones((1, 1), np.int64),
        np.ones(3),
        np.zeros((0, 450, 2)),
    )
    data = encode(Envelope("reply", 7, "a", reply.kind, reply))
    assert len(data) < 450  # the old rule: no dimension above the length
    assert decode(data).payload == reply


DTYPES = ["<f8", ">i4", "|u1", "|b1", "<U3", "|S2", "<c16", "<f2"]
SIDES = st.one_of(st.integers(0, 3), st.integers(0, 2**62))


@pytest.mark.hostile("correct")
@settings(max_examples=300, deadline=None)
@given(dtype=st.sampled_from(DTYPES), shape=st.lists(SIDES, max_size=36))
def test_decode_inverts_encode_for_every_array_encode_accepts(
    dtype: str, shape: list[int]
) -> None:
    assume(0 in shape or math.prod(shape) <= 64)  # an array numpy can hold here
    try:
        array = np.zeros(shape, dtype)
    except ValueError:  # larger than numpy can build: no payload to encode
        assume(False)
    if array.ndim > 32:  # refused when written, never when read
        with pytest.raises(LocalProtocolError, match="at most 32 travel"):
            _round_trip(array)
        return
    back = _round_trip(array)
    assert (back.dtype, back.shape) == (array.dtype, array.shape)
    assert back.tobytes() == array.tobytes()


@pytest.mark.hostile("clear_error")
def test_an_array_of_33_dimensions_is_refused_when_written() -> None:
    with pytest.raises(LocalProtocolError, match="33 dimensions; at most 32 travel"):
        _round_trip(np.zeros((1,) * 33))


# -- every method, a column of K categories ------------------------------------------
def _zip_codes(n: int = 300) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    codes = rng.integers(0, K, n)
    names = [f"z{v:04d}" for v in range(K)]
    X = pd.DataFrame({f"n{i}": rng.normal(size=n) for i in range(5)})
    X["zip"] = pd.Categorical([names[v] for v in codes], categories=names)
    return X, X["n0"].to_numpy(), np.repeat(["a", "b", "c"], n // 3)


def _cases() -> list[Any]:
    cases = [
        pytest.param(name, {"candidates": mode}, id=f"{name}-{mode}")
        for name in ("FedForestClassifier", "FedForestRegressor")
        for mode in MODES
    ]
    others = sorted(set(ALL) - {"FedForestClassifier", "FedForestRegressor"})
    return cases + [pytest.param(name, {}, id=name) for name in others]


def _fit(name: str, params: dict[str, Any]) -> tuple[Any, pd.DataFrame, np.ndarray]:
    X, target, groups = _zip_codes()
    y = target if name.endswith("Regressor") else (target > 0).astype(np.int64)
    settings_ = {**ALL[name], **params}
    if name == "DPForestClassifier":
        settings_["feature_ranges"] = {f"n{i}": (-4.0, 4.0) for i in range(5)}
    if name.startswith("FedForest"):
        settings_.update(max_depth=4, max_features=1, random_state=0)
    model = getattr(fedtrees, name)(**settings_)
    return model.fit(X, y, groups), X, groups


@pytest.mark.hostile("correct")
@pytest.mark.parametrize(("name", "params"), _cases())
def test_a_column_of_a_thousand_categories_trains_or_is_refused_by_name(
    name: str, params: dict[str, Any]
) -> None:
    histogram = name.startswith("FedGBDT") or params.get("candidates") == "hist"
    if histogram:  # 255 codes at most: refused naming the column and a way out
        way_out = (
            "use FedForestClassifier/FedForestRegressor\\(candidates='quantile'\\)"
        )
        if name.startswith("FedForest"):
            way_out = "use candidates='quantile'"
        with pytest.raises(
            ValidationError,
            match=rf"categorical column 'zip' has {K} categories; the histogram "
            rf"engine codes at most 255\. Merge the rarest categories into one, or "
            rf"{way_out}",
        ):
            _fit(name, params)
        return
    model, X, groups = _fit(name, params)
    kw = {"client": groups} if name in PERSONAL else {}
    assert model.predict(X, **kw).shape == (X.shape[0],)
    assert model.categories_[-1] == tuple(X["zip"].cat.categories)


# -- 1 at fit, 1.0 at predict --------------------------------------------------------
def _grades(dtype: Any) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    grade = rng.integers(1, 6, 90)
    X = pd.DataFrame(
        {"age": rng.normal(50, 10, 90), "grade": pd.Categorical(grade.astype(dtype))}
    )
    return X, (grade >= 3).astype(np.int64), np.repeat(["a", "b", "c"], 30)


def _refit(name: str, X: pd.DataFrame, y: np.ndarray, groups: np.ndarray) -> Any:
    params = dict(ALL[name])
    if name == "DPForestClassifier":
        params["feature_ranges"] = {"age": (0.0, 100.0)}
    target = X["age"].to_numpy() if name.endswith("Regressor") else y
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return getattr(fedtrees, name)(**params).fit(X, target, groups)


@pytest.mark.hostile("correct")
@pytest.mark.parametrize(("fit_as", "predict_as"), [(int, float), (float, int)])
@pytest.mark.parametrize("name", sorted(ALL))
def test_equal_numbers_are_one_category_at_fit_and_predict(
    name: str, fit_as: type, predict_as: type
) -> None:
    """**Decision:** ``1`` and ``1.0`` are one category, as in pandas and sklearn."""
    X, y, groups = _grades(fit_as)
    model = _refit(name, X, y, groups)
    other = X.assign(grade=pd.Categorical(X["grade"].astype(predict_as)))
    kw = {"client": groups} if name in PERSONAL else {}
    np.testing.assert_array_equal(model.predict(other, **kw), model.predict(X, **kw))
    assert model._encode(other).tolist() == model._encode(X).tolist()


@pytest.mark.hostile("documented")
def test_text_categories_are_not_read_as_numbers() -> None:
    """A zip code ``"01234"`` is text: the number 1234 is an unseen category."""
    X = pd.DataFrame({"zip": pd.Categorical(["01234", "02345"] * 15)})
    y = np.array([0, 1] * 15)
    model = _refit("FedForestClassifier", X, y, np.repeat(["a", "b", "c"], 10))
    codes = model._encode(pd.DataFrame({"zip": pd.Categorical([1234, 2345])}))
    assert codes[:, 0].tolist() == [2.0, 2.0]  # K = 2: the unseen code


@pytest.mark.hostile("correct")
def test_a_client_with_float_categories_meets_a_declaration_of_ints() -> None:
    X, y, _ = _grades(float)
    parts = {s: (X.iloc[i::3], y[i::3]) for i, s in enumerate("abc")}
    declared = {"grade": [1, 2, 3, 4, 5]}
    federation = Federation.from_clients(parts, categories=declared)
    model = fedtrees.FedForestClassifier(n_estimators=2, max_depth=3, random_state=0)
    model.fit_federation(federation)
    assert model.categories_[1] == ("1", "2", "3", "4", "5")
    ints = X.assign(grade=pd.Categorical(X["grade"].astype(int)))
    assert model.score(ints, y) == model.score(X, y) > 0.9
