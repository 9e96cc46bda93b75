"""Read XGBoost's JSON model into FedGBDT's trees (``load_model``).

The reverse of :mod:`._export`, for the models :func:`._export.to_xgboost`
writes and for XGBoost's own JSON models of the same kind (``gbtree``, one
tree per output per iteration, numeric splits; ``binary:logistic``,
``multi:softprob`` or ``reg:squarederror``):

- **Numeric splits.** XGBoost sends a row left when ``float32(x) <
  split_condition``, i.e. ``float32(x) <= T`` with ``T`` the float32 just
  below the condition. The tree gets the largest float64 ``t`` that rounds to
  at most ``T`` (half a float32 step above it, :func:`float64_thresholds`), so
  ``x <= t`` sends left exactly the rows XGBoost does, float64 values
  included. For the models :mod:`._export` wrote, ``T`` is the fitted
  threshold in float32: the loaded model is the exported Booster, which
  differs from the fitted model only on a value within half a float32 step
  above a threshold.
- **Missing values** follow ``default_left``.
- **Leaves** keep their weights (``split_conditions``; already shrunk), and
  ``sum_hessian`` as the node's training count.
- **Starting margin.** ``base_score`` (a number, or XGBoost 3.1's vector of
  one per output): its log-odds for ``binary:logistic``, taken as a margin
  otherwise.

Anything else (another objective or booster, categorical splits, vector
leaves, several trees per output and iteration) is refused naming the field.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from fedtrees._typing import FloatArray
from fedtrees.algorithms.fedgbdt._config import OBJECTIVES, Objective
from fedtrees.exceptions import ValidationError
from fedtrees.tree import Missing, NodeStats, Tree, TreeBuilder

__all__ = ["XGBoostModel", "float64_thresholds", "read_model"]


@dataclass(frozen=True)
class XGBoostModel:
    """What a FedGBDT estimator needs from an XGBoost JSON model."""

    objective: Objective
    trees: list[list[Tree]]
    """Per iteration, one tree per output."""
    margin: FloatArray
    """The starting raw prediction, one per output."""
    n_features: int
    feature_names: list[str] | None
    gains: FloatArray
    """Total ``loss_changes`` per feature (XGBoost's gain importance)."""
    attributes: dict[str, str]


def read_model(text: str, owner: str) -> XGBoostModel:
    """Return the model of XGBoost's JSON document ``text`` (module docstring).

    Raises
    ------
    ValidationError
        Naming the field that is not a model FedGBDT can hold.
    """
    try:
        document = json.loads(text)
        learner = document["learner"]
        param = learner["learner_model_param"]
        booster = learner["gradient_booster"]
        name = learner["objective"]["name"]
    except (ValueError, KeyError, TypeError) as exc:
        raise _error(owner, "the document", "XGBoost's JSON model", exc) from None
    objective = OBJECTIVES.get(name)
    if objective is None:
        raise _error(owner, "objective", f"one of {list(OBJECTIVES)}", name)
    if booster.get("name") != "gbtree":
        raise _error(owner, "gradient_booster", "'gbtree'", booster.get("name"))
    n_features = _int(param, "num_feature", owner)
    outputs = _int(param, "num_class", owner) if objective == "softmax" else 1
    model = booster["model"]
    if _int(model["gbtree_model_param"], "num_parallel_tree", owner) != 1:
        raise _error(owner, "num_parallel_tree", "1 (one tree per output)", "more")
    built = [_tree(t, n_features, learner, owner) for t in model["trees"]]
    info = [int(k) for k in model["tree_info"]]
    if len(built) % outputs or info != [i % outputs for i in range(len(built))]:
        raise _error(owner, "tree_info", "one tree per output per iteration", info)
    names = learner.get("feature_names") or None
    return XGBoostModel(
        objective=objective,
        trees=[built[i : i + outputs] for i in range(0, len(built), outputs)],
        margin=_margin(param.get("base_score", "0.5"), objective, outputs, owner),
        n_features=n_features,
        feature_names=None if names is None else [str(n) for n in names],
        gains=_gains(model["trees"], n_features),
        attributes={str(k): str(v) for k, v in learner.get("attributes", {}).items()},
    )


def _error(owner: str, field: str, expected: str, got: object) -> ValidationError:
    return ValidationError(
        f"{owner}: the model's {field} must be {expected} (an XGBoost JSON model "
        f"FedGBDT can hold); got {str(got)[:80]!r}."
    )


def _int(mapping: dict[str, Any], key: str, owner: str) -> int:
    try:
        return int(mapping[key])
    except (KeyError, TypeError, ValueError):
        raise _error(owner, key, "an int", mapping.get(key)) from None


def _margin(text: object, objective: Objective, outputs: int, owner: str) -> FloatArray:
    """Return the starting margin per output from XGBoost's ``base_score``."""
    try:
        values = np.atleast_1d(
            np.asarray(json.loads(str(text).lower()), np.float64)
        ).astype(np.float32)
    except ValueError:
        raise _error(owner, "base_score", "a number", text) from None
    if values.shape[0] not in (1, outputs) or not np.all(np.isfinite(values)):
        raise _error(owner, "base_score", f"1 or {outputs} finite numbers", text)
    score = np.broadcast_to(values.astype(np.float64), (outputs,)).copy()
    if objective != "binary":
        return score
    p = float(score[0])
    if not 0.0 < p < 1.0:
        raise _error(owner, "base_score", "a probability in (0, 1)", text)
    return np.array([math.log(p / (1.0 - p))])


def _tree(doc: dict[str, Any], n_features: int, learner: Any, owner: str) -> Tree:
    """Return one XGBoost tree as a fedtrees regression Tree of leaf weights."""
    try:
        left = [int(v) for v in doc["left_children"]]
        right = [int(v) for v in doc["right_children"]]
        feature = [int(v) for v in doc["split_indices"]]
        condition = np.asarray(doc["split_conditions"], np.float32)
        default_left = [bool(v) for v in doc["default_left"]]
        cover = np.asarray(doc["sum_hessian"], np.float64)
        kinds = [int(v) for v in doc.get("split_type", [0] * len(left))]
        leaf_size = int(doc["tree_param"].get("size_leaf_vector", "1"))
    except (KeyError, TypeError, ValueError) as exc:
        raise _error(owner, f"tree {doc.get('id')!r}", "a tree", exc) from None
    if any(kinds) or leaf_size > 1:
        raise _error(
            owner, f"tree {doc.get('id')!r}", "numeric splits and one value per "
            "leaf (one-hot encode a categorical column)", "others",
        )  # fmt: skip
    names = learner.get("feature_names") or None
    builder = TreeBuilder(n_features=n_features, feature_names=names)

    def stats(node: int) -> NodeStats:
        value = float(condition[node]) if left[node] == -1 else 0.0
        return NodeStats.from_mean(value, float(cover[node]))

    n = len(left)
    if not (n and len(right) == len(feature) == len(default_left) == n
            and condition.shape == cover.shape == (n,)):  # fmt: skip
        raise _error(owner, f"tree {doc.get('id')!r}", "arrays of one length", n)
    thresholds = float64_thresholds(condition)
    todo, seen = [(0, builder.add_root(stats(0)))], {0}
    while todo:
        node, at = todo.pop()
        if left[node] == -1:
            continue
        children = {left[node], right[node]}
        if len(children) != 2 or not children <= set(range(n)) or children & seen:
            raise _error(owner, "left_children", "a tree (each node once)", node)
        seen |= children
        if not 0 <= feature[node] < n_features:
            raise _error(owner, "split_indices", f"in [0, {n_features})", feature[node])
        threshold = float(thresholds[node])
        a, b = builder.split_numeric(
            at, feature[node], threshold, stats(left[node]), stats(right[node]),
            missing=Missing.LEFT if default_left[node] else Missing.RIGHT,
        )  # fmt: skip
        todo += [(left[node], a), (right[node], b)]
    return builder.build()


def float64_thresholds(condition: npt.NDArray[np.float32]) -> FloatArray:
    """Return ``t``: ``x <= t`` exactly when XGBoost's ``float32(x) < condition``.

    ``T``, the float32 below the condition, and the next float32 above it
    have their midpoint exactly in float64; rounding to float32 sends the
    midpoint to T when T's last bit is even (ties to even), else above it.

    Examples
    --------
    >>> c = np.array([1.5], np.float32)
    >>> t = float64_thresholds(c)[0]
    >>> x = np.array([t, np.nextafter(t, 2.0)])
    >>> (x.astype(np.float32) < c).tolist(), (x <= t).tolist()
    ([True, False], [True, False])
    """
    with np.errstate(over="ignore", invalid="ignore"):
        below = np.nextafter(condition, np.float32(-np.inf))
        above = np.nextafter(below, np.float32(np.inf))
        mid = (below.astype(np.float64) + above.astype(np.float64)) / 2.0
        rounds_down = mid.astype(np.float32) == below
    out: FloatArray = np.where(rounds_down, mid, np.nextafter(mid, -np.inf))
    return out


def _gains(trees: list[dict[str, Any]], n_features: int) -> FloatArray:
    """Return each feature's total ``loss_changes`` over the splits (gain)."""
    out = np.zeros(n_features)
    for doc in trees:
        split = np.asarray(doc["left_children"]) != -1
        features = np.asarray(doc["split_indices"], np.int64)[split]
        gains = np.asarray(doc["loss_changes"], np.float64)[split]
        np.add.at(out, features, gains)
    return out
