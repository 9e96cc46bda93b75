"""Codec round trips, pickle and JSON.

- ``codec``: ``decode(encode(x)) == x`` for edge arrays (empty of every shape and
  dtype, big-endian, views, 0-d) and edge scalars; an unsendable dtype refused.
- ``persist``: every estimator survives pickle with categorical columns and
  string labels; tree JSON with extreme thresholds round-trips, and tampered
  documents are refused naming the field.
"""

from __future__ import annotations

import json
import math
import pickle
import struct
from typing import Any

import numpy as np
import pandas as pd
from _sweep_core import (
    SMALL,
    Verdict,
    accepted,
    blobs,
    case,
    check,
    is_regressor,
    make,
    predict,
    same,
)

from fedtrees.federation import Field, Payload, ReplySpec, payload


@payload("sweep.edge")
class Edge(Payload):
    """One array, for codec round trips."""

    value: np.ndarray


@payload("sweep.scalars")
class Scalars(Payload):
    """A float and a string, for codec round trips."""

    number: float
    text: str


@payload("sweep.ask")
class Ask(Payload):
    """A request whose reply is an :class:`Edge`."""

    def expected_reply(self) -> ReplySpec:
        """Any float array."""
        return ReplySpec(Edge, {"value": Field.array("f", (None,))})


# -- codec ----------------------------------------------------------------------------
DTYPES = ("?", "i1", "<i8", ">i4", "<u2", "<f2", "<f4", ">f8", "<c8", ">c16", "<U3",
          "|S3")  # fmt: skip
SHAPES = {
    "0": (0,), "0x0": (0, 0), "5x0": (5, 0), "0x5": (0, 5), "0x0x0": (0, 0, 0),
    "2x0x3": (2, 0, 3),
}  # fmt: skip


def _round_trip(value: Any) -> Any:
    from fedtrees.federation import Envelope, decode, encode

    sent = Edge(value) if isinstance(value, np.ndarray) else value
    return decode(encode(Envelope("request", 1, "c", sent.kind, sent))).payload


def _same_array(a: np.ndarray, b: np.ndarray) -> str:
    """'' when equal in dtype, shape and bytes; else what differs."""
    if a.dtype.str != b.dtype.str or a.shape != b.shape:
        return f"{a.dtype.str}{a.shape} came back as {b.dtype.str}{b.shape}"
    if np.ascontiguousarray(a).tobytes() != np.ascontiguousarray(b).tobytes():
        return f"{a.dtype.str}{a.shape}: bytes differ"
    return ""


def _empty_shape(shape: tuple[int, ...]) -> Verdict:
    bad = [
        _same_array(a, _round_trip(a).value)
        for a in (np.zeros(shape, dtype=d) for d in DTYPES)
    ]
    bad = [b for b in bad if b]
    return check(not bad, f"{len(DTYPES)} dtypes", "; ".join(bad))


for _label, _shape in SHAPES.items():
    case(f"empty-array-{_label}", "codec", ("value",))(
        lambda _s=_shape: _empty_shape(_s)
    )


@case("views-and-0d-arrays", "codec", ("value",))
def views() -> Verdict:
    base = np.arange(24.0).reshape(4, 6)
    arrays = [base[::2], base.T, base[:, ::-1], np.array(7.5), base.astype(">f8").T]
    bad = [_same_array(np.array(a, order="C"), _round_trip(a).value) for a in arrays]
    bad = [b for b in bad if b]
    return check(not bad, "strided, transposed, reversed and 0-d", "; ".join(bad))


@case("float-bits-nan-payload-and-minus-zero", "codec", ("number",))
def float_bits() -> Verdict:
    odd_nan = struct.unpack(">d", bytes.fromhex("7ff8000000000123"))[0]
    bad = []
    for number in (-0.0, odd_nan, 5e-324, -math.inf):
        got = _round_trip(Scalars(number, "")).number
        if struct.pack(">d", got) != struct.pack(">d", number):
            bad.append(f"{number!r} came back as {got!r}")
    array = np.array([-0.0, odd_nan, 5e-324], dtype=np.float64)
    if _same_array(array, _round_trip(array).value):
        bad.append("float array bits changed")
    return check(not bad, "bit-exact", "; ".join(bad))


@case("strings-surrogate-nul-astral", "codec", ("text|value",))
def strings() -> Verdict:
    bad = []
    for text in ("\ud800", "a\x00b", "\U0010ffff😀", "é" * 1000):
        if _round_trip(Scalars(0.0, text)).text != text:
            bad.append(repr(text[:8]))
    array = np.array(["😀", "\U0010ffff", "ab"])
    if _same_array(array, _round_trip(array).value):
        bad.append("U array changed")
    return check(not bad, "exact", f"changed: {bad}")


@case("datetime-array-refused", "codec", ("value", "datetime|<M8|M8"))
def datetime_array() -> Verdict:
    _round_trip(np.array(["2024-01-01"], dtype="datetime64[D]"))
    return accepted("a datetime64 array")


@case("broadcast-to-odd-client-ids", "codec", ())
def broadcast() -> Verdict:
    from fedtrees.federation import decode, encode_broadcast

    clients = ['a"b', "ü\\n", "", "x" * 500]
    out = encode_broadcast("request", 3, clients, Edge(np.arange(4.0)))
    got = {c: decode(b).client for c, b in out.items()}
    return check(got == {c: c for c in clients}, "every client id exact", f"ids: {got}")


# -- persist --------------------------------------------------------------------------
def _edge_data(name: str) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """A numeric column, a categorical one; string labels or a float target."""
    rng = np.random.default_rng(11)
    n = 90
    ward = rng.choice(["north", "south", "east"], n)
    X = pd.DataFrame({"age": rng.normal(50, 10, n), "ward": pd.Categorical(ward)})
    y = (
        X["age"].to_numpy() + (ward == "east")
        if is_regressor(name)
        else np.where((ward == "east") | (X["age"] > 55), "sick", "well")
    )
    return X, y, np.repeat(["a", "b", "c"], n // 3)


def _pickled(name: str) -> Verdict:
    X, y, groups = _edge_data(name)
    params = (
        {"feature_ranges": {"age": (0.0, 100.0)}}
        if "feature_ranges" in SMALL[name]
        else {}
    )
    model = make(name, **params).fit(X, y, groups)
    restored = pickle.loads(pickle.dumps(model))
    a, b = predict(model, X, groups), predict(restored, X, groups)
    proba = getattr(model, "predict_proba", None)
    same_proba = (
        proba is None
        or type(model).__name__ in ("FedGAClassifier", "LocalModelsClassifier")
        or same(proba(X), restored.predict_proba(X))
    )
    return check(
        same(a, b) and same_proba,
        "predictions identical after pickle",
        "predictions changed by pickle",
    )


for _name in SMALL:
    case(f"{_name}-pickle-categories-string-labels", "persist", ("ward|age",))(
        lambda _n=_name: _pickled(_n)
    )


def _tree_doc() -> dict[str, Any]:
    from fedtrees import FedForestClassifier

    X, y, groups = blobs()
    model = FedForestClassifier(1, max_depth=2, random_state=0).fit(X, y, groups)
    return model.trees_[0].to_dict()


def _splits(doc: dict[str, Any]) -> list[int]:
    """The split nodes of a tree document (kind 0 is a leaf)."""
    return [i for i, k in enumerate(doc["nodes"]["kind"]["data"]) if k != 0]


@case("tree-json-extreme-thresholds", "persist", ("threshold",))
def extreme_thresholds() -> Verdict:
    from fedtrees.tree import Tree

    doc = _tree_doc()
    extremes = [-1.7976931348623157e308, -0.0, 5e-324]
    for i, value in zip(_splits(doc), extremes, strict=False):
        doc["nodes"]["threshold"]["data"][i] = value
    tree = Tree.from_dict(doc)
    back = Tree.from_json(tree.to_json())
    X = np.array([[-1.7976931348623157e308, 0.0, 5e-324], [0.0, -0.0, 1e308]])
    return check(
        back == tree and same(back.predict(X), tree.predict(X)),
        "exact round trip",
        "JSON changed the tree",
    )


def _tampered(change: Any) -> Verdict:
    from fedtrees.tree import Tree

    doc = _tree_doc()
    change(doc)
    tree = Tree.from_json(json.dumps(doc))
    tree.predict(np.zeros((2, 3)))
    return accepted("a tampered tree document")


def _cycle(doc: dict[str, Any]) -> None:
    doc["nodes"]["left"]["data"][1] = 0  # node 1's left child is the root


def _nan_threshold(doc: dict[str, Any]) -> None:
    doc["nodes"]["threshold"]["data"][_splits(doc)[0]] = None


case("tree-json-cycle", "persist", ("left|child|parent",))(lambda: _tampered(_cycle))
case("tree-json-version-99", "persist", ("version",))(
    lambda: _tampered(lambda d: d.update(version=99))
)
case("tree-json-nan-threshold", "persist", ("threshold",))(
    lambda: _tampered(_nan_threshold)
)
case("tree-json-shape-lies", "persist", ("value|shape",))(
    lambda: _tampered(lambda d: d["nodes"]["value"].update(shape=[10**9, 2]))
)


@case("FedGBDTRegressor-to_xgboost-beyond-float32", "persist", ("float32|x0|3.4",))
def xgboost_beyond_float32() -> Verdict:
    """Thresholds beyond float32's range: the margins agree on what XGBoost reads.

    XGBoost refuses values beyond float32 in a DMatrix, so the rows are clipped
    to float32's range, where docs/fedgbdt.md promises equal margins.
    """
    import xgboost

    X, _, groups = blobs()
    X = X * 2.0**128
    model = make("FedGBDTRegressor").fit(X, X[:, 0] / 2.0**128, groups)
    top = float(np.finfo(np.float32).max)
    X = np.clip(X, -top, top)
    margins = model.to_xgboost().predict(xgboost.DMatrix(X), output_margin=True)
    gap = float(np.max(np.abs(margins - model.predict(X))))
    return check(
        gap < 1e-3, f"margins agree ({gap:.2g})", f"margins differ by {gap:.3g}"
    )
