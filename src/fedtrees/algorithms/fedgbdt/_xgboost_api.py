"""FedGBDT's faces in XGBoost's scikit-learn API (docs/fedgbdt.md).

What a user of ``xgboost.XGBClassifier`` reaches for besides ``fit`` and
``predict``: the model as a Booster (:meth:`XGBoostAPI.to_xgboost`,
:meth:`~XGBoostAPI.get_booster`), XGBoost's JSON model file
(:meth:`~XGBoostAPI.save_model`, :meth:`~XGBoostAPI.load_model`) and the
recorded metrics (:meth:`~XGBoostAPI.evals_result`,
:attr:`~XGBoostAPI.best_iteration`). The estimators get them from
:class:`XGBoostAPI`, a base of their shared class.
"""

from __future__ import annotations

import abc
import json
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt
from sklearn.utils.validation import check_is_fitted

from fedtrees.algorithms._base import FederatedEstimator
from fedtrees.algorithms.fedgbdt._config import BoostConfig, xgboost_objective
from fedtrees.algorithms.fedgbdt._export import save_model, to_xgboost
from fedtrees.algorithms.fedgbdt._load import XGBoostModel, read_model
from fedtrees.exceptions import ValidationError

__all__ = ["XGBoostAPI"]

_OTHER: Final = {
    "classification": "FedGBDTRegressor",
    "regression": "FedGBDTClassifier",
}
"""The estimator of the other task (``load_model``'s advice)."""


class XGBoostAPI(FederatedEstimator):
    """XGBoost's model, file and metric methods of the FedGBDT estimators."""

    @abc.abstractmethod
    def _config(self) -> BoostConfig:
        """Return the estimator's checked settings."""

    def to_xgboost(self, *, as_json: bool = False) -> Any:
        """Return the model as an ``xgboost.Booster`` (or its JSON), same predictions.

        Needs the ``export`` extra; SHAP's ``TreeExplainer`` opens the Booster.
        Categorical columns are refused (one-hot encode them before fitting).
        """
        return to_xgboost(self, as_json=as_json)

    def evals_result(self) -> dict[str, dict[str, list[float]]]:
        """Return the recorded metric per iteration, in XGBoost's shape.

        ``{"validation_0": {metric: [...]}}`` holds the pooled training rows'
        metric and, with early stopping, ``"validation_1"`` the sites'
        held-out rows': what XGBoost returns for ``eval_set=[(X_train,
        y_train), (X_valid, y_valid)]`` (its last set stops the fit, as here).
        One value per iteration run (after that iteration's trees).
        """
        check_is_fitted(self, "trees_")
        out: dict[str, dict[str, list[float]]] = {}
        for key, values in self.evals_result_.items():
            where, metric = key.split("_", 1)
            name = "validation_0" if where == "training" else "validation_1"
            out[name] = {metric: list(values)}
        return out

    @property
    def best_iteration(self) -> int:
        """XGBoost's name of ``best_iteration_``: the last iteration kept (0-based)."""
        check_is_fitted(self, "trees_")
        return int(self.best_iteration_)

    def get_booster(self) -> Any:
        """Return the model as an ``xgboost.Booster`` (:meth:`to_xgboost`)."""
        return self.to_xgboost()

    def save_model(self, fname: str | Path) -> None:
        """Write the model to ``fname`` (``.json``) as XGBoost's JSON model.

        XGBoost's ``Booster().load_model(fname)`` predicts as this model does
        (:meth:`to_xgboost`), and :meth:`load_model` reads it back with the
        class labels. Needs no XGBoost; categorical columns are refused.
        """
        save_model(self, fname)

    def load_model(self, fname: str | Path) -> Any:
        """Read XGBoost's JSON model from ``fname``: this estimator, fitted.

        Reads what :meth:`save_model` writes (the labels come back) and
        XGBoost's own JSON models of the estimator's objective with numeric
        splits (classes then ``0 … n_classes - 1``, as XGBoost's). The
        estimator predicts as XGBoost's Booster of the file does, its float32
        comparisons kept (so as the saved model, but for a value within half a
        float32 step above a threshold). Its parameters are left as they are;
        it has no ``communication_`` (no fit ran).

        Raises
        ------
        ValidationError
            Naming what in the file is not a model of this estimator.
        """
        owner = f"{type(self).__name__}.load_model"
        model = read_model(Path(fname).read_text(encoding="utf-8"), owner)
        if (model.objective == "squared_error") != (self._task == "regression"):
            raise ValidationError(
                f"{owner}: {str(fname)!r} holds a "
                f"{xgboost_objective(model.objective)!r} model; load it with "
                f"{_OTHER[self._task]}."
            )
        self._restore(model)
        return self

    def _restore(self, model: XGBoostModel) -> None:
        """Set the fitted attributes from a read model (``load_model``)."""
        n = model.n_features
        n_outputs = model.margin.shape[0]
        config = self._config()
        self.config_ = replace(
            config, objective=model.objective, n_classes=max(n_outputs, 2)
        )
        self.n_features_in_ = n
        if model.feature_names is not None:
            self.feature_names_in_ = np.asarray(model.feature_names, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self.feature_kinds_ = ("numeric",) * n
        self.categories_ = (None,) * n
        self.clients_ = ()
        if self._task == "classification":
            self.classes_ = _loaded_classes(model, n_outputs)
        self.base_margin_ = model.margin
        self.trees_ = model.trees
        self.evals_result_: dict[str, list[float]] = {}
        self.n_iter_ = len(model.trees)
        self.best_iteration_ = self.n_iter_ - 1
        total = model.gains.sum()
        self._importances = model.gains / total if total > 0 else model.gains
        self._empty_forest_cache()


def _loaded_classes(model: XGBoostModel, n_outputs: int) -> npt.NDArray[Any]:
    """Return the labels ``save_model`` kept, else XGBoost's ``0 … n - 1``."""
    meta = json.loads(model.attributes.get("fedtrees", "{}"))
    n_classes = max(n_outputs, 2)
    classes = meta.get("classes") if isinstance(meta, dict) else None
    if isinstance(classes, list) and len(classes) in (n_classes, n_outputs):
        return np.asarray(classes)
    return np.arange(n_classes)
