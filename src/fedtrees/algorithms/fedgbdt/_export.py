"""Export a fitted FedGBDT model as an XGBoost model (``to_xgboost``).

The document is XGBoost's JSON model (``Booster.save_raw("json")``'s schema,
which XGBoost 2 and 3 load), built from the fitted trees:

- **Numeric splits.** fedtrees sends ``x <= threshold`` left, in float64;
  XGBoost reads every value as float32 and sends ``x < split_condition``
  left. The export writes ``split_condition = nextafter(float32(threshold),
  +inf)`` (in float32), so XGBoost sends a row left exactly when
  ``float32(x) <= float32(threshold)``: the comparison of fedtrees, made in
  float32. Every value at or below the threshold goes left, training rows
  lying on a grid edge included; the two models disagree only on a value
  above the threshold that rounds to the threshold's own float32 (within
  half a float32 step of it). A threshold past the float32 range becomes
  ``±inf`` (JSON's ``Infinity``, which XGBoost reads and writes): the last
  bin's threshold (the largest float), which splits the missing values from
  the others, sends every value left, as in fedtrees.
- **Missing values.** ``default_left`` is 1 where a NaN goes left
  (:attr:`~fedtrees.tree.Missing.LEFT`; ``LARGER`` resolves to the child with
  the larger training count, as fedtrees routes it); XGBoost's DMatrix reads
  NaN as missing.
- **Leaves.** A leaf's ``split_condition`` is its weight (already shrunk by
  the learning rate); ``base_weights`` hold the unshrunk weights, as XGBoost
  writes them. ``sum_hessian`` (the cover of SHAP's path-dependent
  explanations) holds the nodes' pooled training weights: the hessian sums
  are not kept. ``loss_changes`` are 0 (per-node gains are not kept either),
  so XGBoost's gain importance is empty: use ``feature_importances_``.
- **Starting margin.** XGBoost holds one float32 ``base_score``, and for
  ``binary:logistic`` it holds a probability whose log-odds it takes in
  float32 (a prior of 0.9975 already moves the margin by 1e-5). So the
  logistic model gets ``base_score = 0.5`` (margin 0, exact), the softmax
  model ``base_score = 0`` (one number cannot hold a prior per class; the
  vector of XGBoost 3.1 is not read by XGBoost 2 or SHAP), and
  ``base_margin_`` is added to every leaf of the first iteration's trees
  (class k's prior to class k's tree), which shifts the prediction by it
  exactly. The squared-error model's ``base_score`` is its margin.
- **Categorical columns** are refused: XGBoost's categorical splits need its
  own encoding of the column, which the export does not build. One-hot
  encode such a column into numeric columns before fitting.

The Booster's ``predict(DMatrix(X), output_margin=True)`` is the model's raw
margin (``decision_function``; the regressor's ``predict``) up to float32
rounding (XGBoost sums the same leaves in float32), and its ``predict`` the
probabilities of ``predict_proba`` (of the positive class for two classes).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, overload

import numpy as np
from sklearn.utils.validation import check_is_fitted

from fedtrees._typing import FloatArray
from fedtrees.algorithms.fedgbdt._config import Objective, xgboost_objective
from fedtrees.exceptions import ValidationError
from fedtrees.tree import Missing, NodeKind, Tree

if TYPE_CHECKING:
    from xgboost import Booster

__all__ = ["save_model", "to_xgboost"]

_NO_PARENT: Final = 2147483647  # XGBoost's parent of the root
_FORMAT_VERSION: Final = [2, 0, 0]  # the schema as XGBoost 2.0 writes it


@overload
def to_xgboost(model: Any, *, as_json: Literal[False] = False) -> Booster: ...
@overload
def to_xgboost(model: Any, *, as_json: Literal[True]) -> str: ...
@overload
def to_xgboost(model: Any, *, as_json: bool) -> Booster | str: ...
def to_xgboost(model: Any, *, as_json: bool = False) -> Booster | str:
    """Return a fitted FedGBDT model as an ``xgboost.Booster``.

    Parameters
    ----------
    model : FedGBDTClassifier or FedGBDTRegressor
        A fitted model without categorical columns.
    as_json : bool, default False
        Return XGBoost's JSON model document instead (a str; needs no
        XGBoost): ``Booster().load_model(bytearray(text, "utf-8"))`` loads it.

    Returns
    -------
    xgboost.Booster or str
        Its margins are the model's raw margins up to float32 rounding; the
        mapping rules are in this module's docstring.

    Raises
    ------
    ValidationError
        If the model has a categorical column.
    ImportError
        If XGBoost is not installed (and ``as_json`` is False).
    """
    check_is_fitted(model, "trees_")
    owner = f"{type(model).__name__}.to_xgboost"
    _refuse_categorical(model, owner)
    text = json.dumps(_document(model, owner))
    if as_json:
        return text
    try:
        import xgboost
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            f"{owner} needs XGBoost: pip install '.[export]' in a fedtrees clone"
        ) from exc
    booster = xgboost.Booster()
    booster.load_model(bytearray(text, "utf-8"))
    return booster


def save_model(model: Any, path: str | Path) -> None:
    """Write ``model`` to ``path`` as XGBoost's JSON model (``to_xgboost``'s).

    XGBoost's ``Booster().load_model(path)`` and ``XGBClassifier/XGBRegressor()
    .load_model(path)`` read it, and so does the estimator's ``load_model``,
    which also gets the class labels back (kept in the model's attributes:
    ``"fedtrees"``, beside XGBoost's own ``"scikit_learn"``).

    Raises
    ------
    ValidationError
        If ``path`` does not end in ``.json`` (XGBoost reads another suffix as
        its binary format) or the model has a categorical column.
    """
    check_is_fitted(model, "trees_")
    owner = f"{type(model).__name__}.save_model"
    if Path(path).suffix.lower() != ".json":
        raise ValidationError(
            f"{owner}: the path {str(path)!r} must end in '.json': the file is "
            "XGBoost's JSON model, and XGBoost reads another suffix as its binary "
            "format."
        )
    _refuse_categorical(model, owner)
    document = _document(model, owner)
    classifier = hasattr(model, "classes_")
    meta = {"estimator": type(model).__name__}
    if classifier:
        meta["classes"] = np.asarray(model.classes_).tolist()
    document["learner"]["attributes"] = {
        "fedtrees": json.dumps(meta),
        "scikit_learn": json.dumps(
            {"_estimator_type": "classifier" if classifier else "regressor"}
        ),
    }
    Path(path).write_text(json.dumps(document), encoding="utf-8")


def _refuse_categorical(model: Any, owner: str) -> None:
    names = getattr(model, "feature_names_in_", None)
    for j, kind in enumerate(model.feature_kinds_):
        if kind != "numeric":
            column = f"{names[j]!r}" if names is not None else f"{j}"
            raise ValidationError(
                f"{owner}: column {column} is categorical; the XGBoost export "
                "supports numeric columns only (XGBoost's categorical splits "
                "need its own encoding of the column). One-hot encode the column "
                "into numeric columns before fitting, then export."
            )


def _document(model: Any, owner: str) -> dict[str, Any]:
    """Build XGBoost's JSON model of ``model`` (module docstring)."""
    objective: Objective = model.config_.objective
    margin = np.asarray(model.base_margin_, dtype=np.float64)
    n_outputs = margin.shape[0]
    if objective == "squared_error":
        base_score, shift = float(margin[0]), np.zeros(1)
    else:  # margin 0: probability 0.5 (logistic) or 0 (softmax)
        base_score, shift = (0.5 if objective == "binary" else 0.0), margin
    eta = float(model.config_.learning_rate)
    trees = [
        _tree(tree, i * n_outputs + k, shift[k] if i == 0 else 0.0, eta, owner)
        for i, per_output in enumerate(model.trees_)
        for k, tree in enumerate(per_output)
    ]
    n_features = int(model.n_features_in_)
    names = getattr(model, "feature_names_in_", None)
    n_class = str(n_outputs) if objective == "softmax" else "0"
    objective_params = (
        {"softmax_multiclass_param": {"num_class": n_class}}
        if objective == "softmax"
        else {
            "reg_loss_param": {
                "scale_pos_weight": _float32_text(
                    float(getattr(model.config_, "scale_pos_weight", 1.0))
                )
            }
        }
    )
    return {
        "learner": {
            "attributes": {},
            "feature_names": [] if names is None else [str(n) for n in names],
            "feature_types": [] if names is None else ["float"] * n_features,
            "gradient_booster": {
                "model": {
                    "gbtree_model_param": {
                        "num_parallel_tree": "1",
                        "num_trees": str(len(trees)),
                    },
                    "iteration_indptr": list(range(0, len(trees) + 1, n_outputs)),
                    "tree_info": [k for _ in model.trees_ for k in range(n_outputs)],
                    "trees": trees,
                },
                "name": "gbtree",
            },
            "learner_model_param": {
                "base_score": _float32_text(base_score),
                "boost_from_average": "0",
                "num_class": n_class,
                "num_feature": str(n_features),
                "num_target": "1",
            },
            "objective": {"name": xgboost_objective(objective), **objective_params},
        },
        "version": _FORMAT_VERSION,
    }


def _tree(tree: Tree, tree_id: int, shift: float, eta: float, owner: str) -> Any:
    """Return one tree of XGBoost's model, its leaves shifted by ``shift``."""
    kind = tree.kind
    leaf = kind == NodeKind.LEAF
    if np.any(~leaf & (kind != NodeKind.NUMERIC)):
        raise ValidationError(
            f"{owner}: tree {tree_id} has a non-numeric split; the XGBoost "
            "export supports numeric splits only."
        )
    n = tree.n_nodes
    nodes = np.arange(n)
    left = np.where(leaf, -1, tree.left)
    right = np.where(leaf, -1, tree.right)
    parents = np.full(n, _NO_PARENT, dtype=np.int64)
    parents[left[~leaf]] = nodes[~leaf]
    parents[right[~leaf]] = nodes[~leaf]
    larger_left = tree.count[np.maximum(left, 0)] > tree.count[np.maximum(right, 0)]
    default_left = ~leaf & (
        (tree.missing == Missing.LEFT)
        | ((tree.missing == Missing.LARGER) & larger_left)
    )
    weight = tree.value[:, 0]
    conditions = np.where(leaf, weight + shift, _split_conditions(tree.threshold))
    floats = _float32_list
    return {
        "base_weights": floats(weight / eta),
        "categories": [],
        "categories_nodes": [],
        "categories_segments": [],
        "categories_sizes": [],
        "default_left": default_left.astype(int).tolist(),
        "id": tree_id,
        "left_children": left.tolist(),
        "loss_changes": floats(np.zeros(n)),
        "parents": parents.tolist(),
        "right_children": right.tolist(),
        "split_conditions": floats(conditions),
        "split_indices": np.where(leaf, 0, tree.feature).tolist(),
        "split_type": [0] * n,
        "sum_hessian": floats(tree.count),
        "tree_param": {
            "num_deleted": "0",
            "num_feature": str(tree.n_features),
            "num_nodes": str(n),
            "size_leaf_vector": "1",
        },
    }


def _split_conditions(threshold: FloatArray) -> FloatArray:
    """Return ``nextafter(float32(t), +inf)``: ``x < it`` iff ``f32(x) <= f32(t)``.

    NaN (the leaves' threshold) stays NaN; a threshold beyond the float32
    range rounds to ``±inf``, whose successor sends every finite value the
    way fedtrees does.
    """
    with np.errstate(over="ignore"):
        rounded = threshold.astype(np.float32)
    out: FloatArray = np.nextafter(rounded, np.float32(np.inf)).astype(np.float64)
    return out


def _float32_list(values: FloatArray) -> list[float]:
    """Return float32 values as floats whose JSON text XGBoost reads back exactly.

    Every value is a float32 written at float64 precision (float32 parsing
    of that text returns the same float32), and JSON's float syntax (``0.0``,
    never ``0``), which XGBoost's reader needs for its float arrays.
    """
    with np.errstate(over="ignore"):
        out: list[float] = values.astype(np.float32).astype(np.float64).tolist()
    return out


def _float32_text(value: float) -> str:
    """Spell a float32 as XGBoost writes its parameters (``5E-1``).

    The shortest digits of the float32: XGBoost 2 silently keeps its default
    ``base_score`` when the text has more digits than it parses.
    """
    digits = np.format_float_scientific(
        np.float32(value), unique=True, trim="-", exp_digits=1
    )
    return digits.upper()
