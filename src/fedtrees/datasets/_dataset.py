"""The ``Dataset`` value every loader returns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Literal, TypeAlias

import numpy as np
import numpy.typing as npt
import pandas as pd

from fedtrees.exceptions import ValidationError

__all__ = ["Dataset", "FeatureKind"]

FeatureKind: TypeAlias = Literal["numeric", "categorical"]


@dataclass(frozen=True, eq=False)
class Dataset:
    """A tabular dataset: features, target, and where known its clients and split.

    Attributes
    ----------
    name : str
    X : DataFrame of shape (n_samples, n_features)
        Categorical features have pandas ``category`` dtype; missing values are NaN.
    y : Series of shape (n_samples,)
        The target.
    feature_kinds : mapping column -> "numeric" | "categorical"
    clients : Series or None
        The natural client (site, hotel, participant) of every row.
    split : Series or None
        ``"train"`` / ``"test"`` per row where the source defines a split.
    description : str
        Provenance and preparation.
    """

    name: str
    X: pd.DataFrame
    y: pd.Series
    feature_kinds: Mapping[str, FeatureKind]
    clients: pd.Series | None = None
    split: pd.Series | None = None
    description: str = field(default="", repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "feature_kinds", MappingProxyType(dict(self.feature_kinds))
        )
        if list(self.feature_kinds) != list(self.X.columns):
            raise ValidationError(
                f"Dataset {self.name!r}: feature_kinds must list the columns of X "
                "in order."
            )
        for name, series in (
            ("y", self.y),
            ("clients", self.clients),
            ("split", self.split),
        ):
            if series is not None and series.shape[0] != self.X.shape[0]:
                raise ValidationError(
                    f"Dataset {self.name!r}: {name} has {series.shape[0]} rows, "
                    f"X has {self.X.shape[0]}."
                )

    @property
    def n_samples(self) -> int:
        """Number of rows."""
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        """Number of feature columns."""
        return int(self.X.shape[1])

    @property
    def classes(self) -> npt.NDArray[np.generic]:
        """Sorted distinct target values."""
        return np.sort(self.y.dropna().unique())

    @property
    def categorical_features(self) -> list[str]:
        """Names of the categorical columns."""
        return [c for c, kind in self.feature_kinds.items() if kind == "categorical"]

    def subset(self, rows: npt.ArrayLike) -> Dataset:
        """Return the rows selected by a boolean mask or positions (index reset)."""
        index = np.asarray(rows)
        if index.dtype == bool:
            index = np.flatnonzero(index)

        def take(series: pd.Series | None) -> pd.Series | None:
            return None if series is None else series.iloc[index].reset_index(drop=True)

        y = take(self.y)
        assert y is not None
        return replace(
            self,
            X=self.X.iloc[index].reset_index(drop=True),
            y=y,
            clients=take(self.clients),
            split=take(self.split),
        )

    def train(self) -> Dataset:
        """Return the rows of the training split."""
        return self._part("train")

    def test(self) -> Dataset:
        """Return the rows of the test split."""
        return self._part("test")

    def _part(self, which: str) -> Dataset:
        if self.split is None:
            raise ValidationError(
                f"Dataset {self.name!r} defines no train/test split; use "
                "sklearn.model_selection.train_test_split or "
                "fedtrees.datasets.partition."
            )
        return self.subset((self.split == which).to_numpy())

    def client_table(self) -> pd.DataFrame:
        """Return rows and class counts per client (one row "all" without clients)."""
        clients = (
            self.clients
            if self.clients is not None
            else pd.Series(["all"] * self.n_samples)
        )
        in_order = pd.Categorical(clients, categories=pd.unique(clients))
        table = pd.crosstab(
            in_order, self.y.to_numpy(), rownames=["client"], colnames=["class"]
        )
        table.insert(0, "rows", table.sum(axis=1))
        return table

    def __repr__(self) -> str:
        extra = (
            f", clients={self.clients.nunique()}" if self.clients is not None else ""
        )
        return (
            f"Dataset({self.name!r}, n_samples={self.n_samples}, "
            f"n_features={self.n_features}, n_classes={len(self.classes)}{extra})"
        )
