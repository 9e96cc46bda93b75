"""A client's local data, as its handlers see it.

:class:`ClientData` never leaves the client: handlers read it, and only the
payloads they return travel. It keeps the raw DataFrame and target, and derives
(once, cached) the numeric matrix handlers compute on: numeric columns as float64,
categorical columns as the codes of their categories.

**Declared categories.** A run may declare the categories of some columns as
public metadata (``fedtrees.federation.run(..., categories=...)``); round 0
sends the declaration down and each client calls
:meth:`ClientData.declare_categories`: from then on the codes of a declared
column index the *declared* list, whatever the client's own category order, so
every client agrees without telling the server its values. **Decision:** the
declaration is kept on the ClientData (the in-process transport keeps one per
client for the whole federation, and round 0 of every run replaces it), not in
the per-run :class:`~fedtrees.federation.ClientState`, which is a cache that may
be lost; on Flower a new ClientData is loaded for every message, so the ClientApp
applies the run config's declaration to each one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Final, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from fedtrees._categories import category_codes
from fedtrees._typing import FloatArray, IntArray
from fedtrees._validation import MAX_ABS_TARGET, check_sample_weight, label_array
from fedtrees.exceptions import UnsupportedInputError, ValidationError
from fedtrees.federation._budget import SiteBudget
from fedtrees.federation._noise import SiteNoise, data_digest, release_key
from fedtrees.federation._payload import Payload
from fedtrees.federation._values import (
    DeclaredCategories,
    check_categories,
    check_classes,
)

__all__ = [
    "ClientData",
    "DeclaredCategories",
    "FeatureKind",
    "as_frame",
    "check_categories",
    "check_classes",
]

FeatureKind = Literal["numeric", "categorical"]
_CATEGORICAL_KINDS: Final = "OSUb"


def as_frame(
    X: object, owner: str, *, strings: Literal["categorical", "keep"] = "categorical"
) -> pd.DataFrame:
    """Columns as a DataFrame with string names.

    ``strings="categorical"`` (a client's data) makes object, string and bool
    columns categorical; ``"keep"`` leaves every dtype as given, for the
    estimators, whose rule is stricter (only pandas ``category`` columns are
    categorical: :mod:`fedtrees.algorithms._base`).

    Sparse matrices, complex numbers and object cells that are neither strings nor
    numbers raise :class:`UnsupportedInputError` (a ``TypeError``, as in
    scikit-learn).
    """
    if isinstance(X, pd.DataFrame):
        frame = X.copy()
        frame.columns = [str(c) for c in frame.columns]
    else:
        if hasattr(X, "tocsr") or hasattr(X, "todense"):
            raise UnsupportedInputError(
                f"{owner}: sparse input is not supported; pass a dense array "
                "(X.toarray())."
            )
        array = np.asarray(X)
        if array.ndim != 2:
            raise ValidationError(
                f"{owner}: X must be 2-D, got shape {array.shape}. Reshape your data "
                "with X.reshape(-1, 1) for one feature or X.reshape(1, -1) for one row."
            )
        frame = pd.DataFrame(array, columns=[f"x{i}" for i in range(array.shape[1])])
    repeated = frame.columns[frame.columns.duplicated()].unique().tolist()
    if repeated:
        named = " or ".join(repr(name) for name in repeated)
        raise ValidationError(
            f"{owner}: X has duplicate column names: more than one column is named "
            f"{named} (names compared as text); give every column its own name."
        )
    for column in frame.columns:
        series = frame[column]
        _check_cell_types(series, str(column), owner)
        if (
            strings == "categorical"
            and not isinstance(series.dtype, pd.CategoricalDtype)
            and (
                series.dtype.kind in _CATEGORICAL_KINDS
                or pd.api.types.is_string_dtype(series)
            )
        ):
            frame[column] = pd.Categorical(series.astype("object"))
    return frame


_SCALAR_TYPES: Final = (str, bytes, bool, int, float, np.generic)


def _check_cell_types(series: pd.Series, column: str, owner: str) -> None:
    """Refuse complex numbers and object cells that are not strings or numbers."""
    if series.dtype.kind == "c":
        raise UnsupportedInputError(
            f"{owner}: column {column!r} holds complex numbers. Complex data not "
            "supported."
        )
    if series.dtype.kind != "O" or pd.api.types.infer_dtype(series) != "mixed":
        return
    for row, value in enumerate(series.to_numpy()):
        if value is not None and not isinstance(value, _SCALAR_TYPES):
            raise UnsupportedInputError(
                f"{owner}: column {column!r} holds a {type(value).__name__} at row "
                f"{row}; argument must be a string or a number."
            )


@dataclass(frozen=True, eq=False)
class ClientData:
    """The rows one client holds: features ``X``, target ``y``, and its id.

    ``X`` keeps the client's own categories; :attr:`categories` and
    :attr:`matrix` follow the run's declaration (:meth:`declare_categories`).
    ``budget`` is the site's own privacy budget, if it declared one
    (:meth:`charge_privacy`); ``noise`` its own noise source (:meth:`noise_rng`).
    """

    client_id: str
    X: pd.DataFrame
    y: pd.Series
    weights: FloatArray | None = None
    budget: SiteBudget | None = None
    noise: SiteNoise = field(default_factory=SiteNoise)
    _declared: DeclaredCategories = field(default_factory=dict, init=False, repr=False)

    @classmethod
    def build(
        cls,
        client_id: object,
        X: object,
        y: object,
        weights: object = None,
        *,
        budget: SiteBudget | None = None,
        noise: SiteNoise | None = None,
    ) -> ClientData:
        """Validate and normalise one client's data (``weights``: per-row, >= 0).

        ``budget``: the site's privacy budget (:meth:`charge_privacy`);
        ``noise``: its noise source (default: fresh OS entropy, numpy sampler).
        """
        name = str(client_id)
        frame = as_frame(X, f"client {name!r}")
        values = label_array(y)
        if values.ndim != 1:
            raise ValidationError(
                f"Client {name!r}: y must be 1-D (one label or target per row); got "
                f"shape {values.shape}."
            )
        # An object column of numbers is numbers: [1, 1.0] is one label "1.0".
        target = pd.Series(values).infer_objects()
        if frame.shape[0] == 0:
            raise ValidationError(
                f"Client {name!r} has no rows; every client needs data."
            )
        if target.shape[0] != frame.shape[0]:
            more = "y" if target.shape[0] > frame.shape[0] else "X"
            raise ValidationError(  # a site's error travels: no row count in it
                f"Client {name!r}: y and X must have one row each per sample; "
                f"{more} has more rows."
            )
        if target.isna().any():
            raise ValidationError(f"Client {name!r}: y holds missing values.")
        return cls(
            name,
            frame.reset_index(drop=True),
            target,
            None
            if weights is None
            else check_sample_weight(weights, frame.shape[0], f"client {name!r}"),
            budget,
            SiteNoise() if noise is None else noise,
        )

    def charge_privacy(self, epsilon: float, request: str) -> None:
        """Charge a DP release of ``epsilon`` to this site's budget, if it has one.

        Every DP handler calls it before drawing any noise
        (:mod:`fedtrees.federation._budget`); ``request`` names the release (its
        kind and part). Without a declared budget nothing is charged: the
        request's own ε bounds the release, through the handler's accountant.

        Raises
        ------
        PrivacyBudgetExceeded
            The release would take the site above its total ε; nothing is
            charged or released.
        """
        if self.budget is not None:
            self.budget.charge(epsilon, request)

    def noise_rng(self, request: Payload) -> np.random.Generator:
        """Return the generator of the DP noise this site releases for ``request``.

        The one source of every DP draw at a site
        (:mod:`fedtrees.federation._noise`): the site's own, never derived from
        what the server sends or knows alone — fresh OS entropy, or keyed by the
        site's secret, its id, its rows and the whole request. The sampler is
        :attr:`noise` ``.sampler``.
        """
        if self.noise.seed is None:  # fresh entropy: no key to derive
            return self.noise.generator(b"")
        key = release_key(self.client_id, self._rows_digest, self._declared, request)
        return self.noise.generator(key)

    @cached_property
    def _rows_digest(self) -> bytes:
        """Digest of the rows (:func:`fedtrees.federation._noise.data_digest`)."""
        return data_digest(self.X, self.y, self.weights)

    @property
    def n_rows(self) -> int:
        """Number of rows (known only on this client)."""
        return int(self.X.shape[0])

    @cached_property
    def feature_kinds(self) -> tuple[FeatureKind, ...]:
        """Kind of every column (the frame's dtypes: fixed when the data is built)."""
        return tuple(
            "categorical"
            if isinstance(self.X[c].dtype, pd.CategoricalDtype)
            else "numeric"
            for c in self.X.columns
        )

    @property
    def categories(self) -> tuple[tuple[str, ...] | None, ...]:
        """Category names of every categorical column (None for numeric ones).

        A declared column has the declared names; the others, the names of the
        local dtype's categories.
        """
        return tuple(
            self._declared.get(str(c), tuple(str(v) for v in self.X[c].cat.categories))
            if kind == "categorical"
            else None
            for c, kind in zip(self.X.columns, self.feature_kinds, strict=True)
        )

    @property
    def declared_columns(self) -> tuple[str, ...]:
        """The columns whose categories the current run declared."""
        return tuple(self._declared)

    def declare_categories(self, categories: Mapping[str, Sequence[str]]) -> None:
        """Compute on the declared categories from now on (replacing any earlier).

        Every declared column must be a categorical column here, and every value
        it holds must be among the declared names (compared as ``str``); its codes
        then index the declared list. An empty mapping returns to the local
        categories (a run without a declaration).

        Raises
        ------
        ValidationError
            Naming this client and the column. **Decision:** a value outside the
            declaration is not named — the error travels to the server, and
            naming it would leak the very value the declaration keeps here — nor
            is the number of rows holding such values (no client error states a
            row count, :mod:`fedtrees.algorithms._requests`).
        """
        checked = {
            column: self._checked_declaration(column, tuple(names))
            for column, names in check_categories(
                categories, f"Client {self.client_id!r}"
            ).items()
        }
        self._declared.clear()
        self._declared.update(checked)
        self.__dict__.pop("matrix", None)  # recompute the codes in the new order

    def _checked_declaration(
        self, column: str, names: tuple[str, ...]
    ) -> tuple[str, ...]:
        if column not in self.X.columns:
            raise ValidationError(
                f"Client {self.client_id!r}: categories are declared for column "
                f"{column!r}, which this client does not have."
            )
        series = self.X[column]
        if not isinstance(series.dtype, pd.CategoricalDtype):
            raise ValidationError(
                f"Client {self.client_id!r}: categories are declared for column "
                f"{column!r}, but it is numeric here ({series.dtype}); make it a "
                "pandas category or string column."
            )
        outside = int((category_codes(series, names) < 0).sum() - series.isna().sum())
        if outside:
            raise ValidationError(
                f"Client {self.client_id!r}: column {column!r} holds a value outside "
                "the declared categories (neither the value nor its rows are "
                "counted or named here, as this message travels to the server)."
            )
        return names

    @cached_property
    def matrix(self) -> FloatArray:
        """Features as float64: categorical columns as category codes (missing: NaN).

        A declared column's codes index the declared names.
        """
        columns = []
        for column, kind in zip(self.X.columns, self.feature_kinds, strict=True):
            series = self.X[column]
            if kind == "categorical":
                names = self._declared.get(str(column))
                codes = (
                    series.cat.codes.to_numpy()
                    if names is None
                    else category_codes(series, names)
                ).astype(np.float64)
                columns.append(np.where(codes < 0, np.nan, codes))
            else:
                columns.append(
                    pd.to_numeric(series, errors="coerce").to_numpy(np.float64)
                )
        return np.column_stack(columns) if columns else np.zeros((self.n_rows, 0))

    def finite_matrix(self) -> FloatArray:
        """Return the matrix, or raise naming the first column with NaN or inf."""
        bad = ~np.isfinite(self.matrix)
        if bad.any():
            column = self.X.columns[int(np.flatnonzero(bad.any(axis=0))[0])]
            raise ValidationError(
                f"Client {self.client_id!r}: column {column!r} holds missing or "
                "infinite values; fill or drop them before training."
            )
        return self.matrix

    def label_codes(self, classes: npt.ArrayLike) -> IntArray:
        """Index of every row's label in the agreed ``classes`` (strings).

        Raises
        ------
        ValidationError
            Naming this client: ``classes`` (from a request) is not a list of
            distinct labels, or a row's label is not among them.
        """
        names = np.asarray(classes, dtype=str)
        if names.ndim != 1 or np.unique(names).shape[0] != names.shape[0]:
            got = f"shape {names.shape}" if names.ndim != 1 else "a label repeated"
            raise ValidationError(
                f"Client {self.client_id!r}: the request's classes must be one list "
                f"of distinct labels; got {got} (a malformed request)."
            )
        agreed = pd.Index(names)
        found = agreed.get_indexer(pd.Index(self.label_texts))
        codes: IntArray = np.asarray(found, dtype=np.int64)
        if np.any(codes < 0):
            raise ValidationError(
                f"Client {self.client_id!r}: y holds a label that is not among the "
                f"{agreed.shape[0]} agreed classes (no label is named here, as this "
                "message travels to the server)."
            )
        return codes

    @cached_property
    def label_texts(self) -> pd.Series:
        """Every row's label as the text that travels (``str`` of the value).

        The one text of a label: the label set of the agreement, the declared
        classes and every request's agreed classes are compared with it.
        """
        return pd.Series([str(v) for v in self.y.to_numpy(dtype=object)], dtype=object)

    def label_set(self) -> npt.NDArray[np.str_]:
        """Return the distinct label texts, in order of appearance (the agreement).

        Raises
        ------
        ValidationError
            Naming this client, if distinct labels print alike (``1`` and
            ``"1"``): they would be one class (no label is named).
        """
        texts = pd.unique(self.label_texts)
        if len(texts) != len(pd.unique(self.y.to_numpy(dtype=object))):
            raise ValidationError(
                f"Client {self.client_id!r}: y holds distinct labels that print "
                "alike (such as 1 and '1'); give y one type."
            )
        return np.asarray(texts, dtype=str).reshape(-1)

    def check_declared_classes(self, classes: Sequence[str]) -> None:
        """Refuse labels outside the declared ``classes`` (compared as ``str``).

        Raises
        ------
        ValidationError
            Naming this client, neither the label nor its number of rows (the
            error travels to the server; see :meth:`declare_categories`).
        """
        if not self.label_texts.isin(list(classes)).all():
            raise ValidationError(
                f"Client {self.client_id!r}: y holds a label outside the declared "
                "classes (the label and its rows are not named or counted here, as "
                "this message travels to the server)."
            )

    def targets(self) -> FloatArray:
        """Numeric regression targets, within the range every site agrees to.

        ``|y| <= 1e100`` (:data:`fedtrees._validation.MAX_ABS_TARGET`), as
        ``fit`` requires of a pooled target: beyond it a site's own sums of
        ``w·y²`` could overflow and it would be blamed for an infinite
        statistic. The error travels, so it names no value.

        Raises
        ------
        ValidationError
            y is not numeric, not finite, or beyond the range.
        """
        values = pd.to_numeric(self.y, errors="coerce").to_numpy(np.float64)
        if not np.all(np.isfinite(values)):
            raise ValidationError(
                f"Client {self.client_id!r}: regression needs a numeric, finite y."
            )
        if values.size and np.max(np.abs(values)) > MAX_ABS_TARGET:
            raise ValidationError(
                f"Client {self.client_id!r}: regression targets must lie within "
                f"|y| <= {MAX_ABS_TARGET:g}, the range every site agrees to (the "
                "sums of w*y^2 must stay finite float64); rescale y at every site."
            )
        return values
