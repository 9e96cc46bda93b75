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

**Agreed categories** (docs/runtime.md, "Sites whose categories differ"). When
the sites' category lists of an undeclared column differ, the server agrees on
their sorted union and tells each site whose list differs only *where its own
categories sit* in it (:meth:`ClientData.agree_categories`: the union's size and
one position per own category), never the other sites' names. From then on the
site's codes of that column index the union, exactly as a declaration's would.
It is kept like a declaration (on the ClientData in process; on Flower the site
keeps it with its run state, :mod:`fedtrees.federation._agreement`).
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
    "AgreedCoding",
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
class AgreedCoding:
    """Where a site's own categories of a column sit in the agreed union.

    ``size``: the union's number of categories; ``positions[i]``: the union
    position of the site's i-th own category (its dtype's order).
    """

    size: int
    positions: IntArray


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
    reports_categories: bool = True
    """False: the site never sends a category name (its own setting; on Flower
    the node config's ``report-categories``): an undeclared categorical column
    fails the agreement, naming the site and the column."""
    from_file: bool = False
    """The rows come from a site data file (a Flower site): errors advise the
    run config and node config keys rather than pandas dtypes."""
    _declared: DeclaredCategories = field(default_factory=dict, init=False, repr=False)
    _agreed: dict[str, AgreedCoding] = field(
        default_factory=dict, init=False, repr=False
    )
    _declared_rows: dict[str, IntArray] = field(
        default_factory=dict, init=False, repr=False
    )
    """Each declared column's codes, computed once by :meth:`declare_categories`."""

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
        reports_categories: bool = True,
        from_file: bool = False,
    ) -> ClientData:
        """Validate and normalise one client's data (``weights``: per-row, >= 0).

        ``budget``: the site's privacy budget (:meth:`charge_privacy`);
        ``noise``: its noise source (default: fresh OS entropy, numpy sampler);
        ``reports_categories`` and ``from_file``: see the attributes.
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
            reports_categories,
            from_file,
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
        key = release_key(self.client_id, self._rows_digest, self._coding(), request)
        return self.noise.generator(key)

    def _coding(self) -> DeclaredCategories:
        """Return the declared names and agreed positions that set the codes."""
        agreed = {
            column: (f"agreed:{coding.size}", *map(str, coding.positions.tolist()))
            for column, coding in self._agreed.items()
        }
        return {**self._declared, **agreed}

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
            "categorical" if isinstance(dtype, pd.CategoricalDtype) else "numeric"
            for dtype in self.X.dtypes
        )

    @property
    def categories(self) -> tuple[tuple[str, ...] | None, ...]:
        """Category names of every categorical column (None for numeric ones).

        A declared column has the declared names; an agreed one as many names
        as the agreed union, this site's own at their positions and ``""`` for
        the others (the site does not know them); the others, the names of the
        local dtype's categories.
        """
        return tuple(
            self._column_categories(str(c)) if kind == "categorical" else None
            for c, kind in zip(self.X.columns, self.feature_kinds, strict=True)
        )

    def _column_categories(self, column: str) -> tuple[str, ...]:
        """Return a categorical column's names: declared, agreed, else its dtype's."""
        declared = self._declared.get(column)
        if declared is not None:
            return declared
        own = tuple(str(v) for v in self.X[column].cat.categories)
        coding = self._agreed.get(column)
        if coding is None:
            return own
        names = [""] * coding.size
        for name, position in zip(own, coding.positions.tolist(), strict=True):
            names[position] = name
        return tuple(names)

    @property
    def declared_columns(self) -> tuple[str, ...]:
        """The columns whose categories the current run declared."""
        return tuple(self._declared)

    def agree_categories(self, agreed: Mapping[str, AgreedCoding]) -> None:
        """Code the ``agreed`` columns by their agreed union from now on.

        ``agreed[column]`` gives the size of the union and, for each of this
        site's own categories of the column (in its dtype's order), its
        position in the union (module docstring). It adds to the run's
        declaration; :meth:`declare_categories` (round 0 of every run) forgets
        it.

        Raises
        ------
        ValidationError
            Naming this client and the column: not a categorical column here,
            a declared one, or positions that are not one distinct position in
            ``[0, size)`` per own category (a malformed request).
        """
        checked = {
            column: self._checked_coding(str(column), coding)
            for column, coding in agreed.items()
        }
        self._agreed.update(checked)
        self.__dict__.pop("matrix", None)  # recompute the codes in the new order

    def _checked_coding(self, column: str, coding: AgreedCoding) -> AgreedCoding:
        where = f"Client {self.client_id!r}: the agreed categories of column {column!r}"
        if column not in self.X.columns or not isinstance(
            self.X[column].dtype, pd.CategoricalDtype
        ):
            raise ValidationError(f"{where} name a column not categorical here.")
        if column in self._declared:
            raise ValidationError(f"{where} name a declared column.")
        own = len(self.X[column].cat.categories)
        positions = coding.positions
        if (
            positions.shape != (own,)
            or np.unique(positions).shape[0] != own
            or (own and (positions.min() < 0 or positions.max() >= coding.size))
        ):
            raise ValidationError(
                f"{where} must give one distinct position in [0, {coding.size}) per "
                "category of this client (a malformed request)."
            )
        return coding

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
        declared = check_categories(categories, f"Client {self.client_id!r}")
        codes = {
            column: self._checked_codes(column, tuple(names))
            for column, names in declared.items()
        }
        self._declared.clear()
        self._declared.update({column: tuple(n) for column, n in declared.items()})
        self._declared_rows.clear()
        self._declared_rows.update(codes)
        self._agreed.clear()
        self.__dict__.pop("matrix", None)  # recompute the codes in the new order

    def _checked_codes(self, column: str, names: tuple[str, ...]) -> IntArray:
        """Return a declared column's codes (-1: missing), or refuse the column."""
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
        codes = category_codes(series, names)
        outside = int((codes < 0).sum() - (series.cat.codes.to_numpy() < 0).sum())
        if outside:
            raise ValidationError(
                f"Client {self.client_id!r}: column {column!r} holds a value outside "
                "the declared categories (neither the value nor its rows are "
                "counted or named here, as this message travels to the server)."
            )
        return codes

    @cached_property
    def matrix(self) -> FloatArray:
        """Features as float64: categorical columns as category codes (missing: NaN).

        A declared column's codes index the declared names.
        """
        columns = []
        for column, kind in zip(self.X.columns, self.feature_kinds, strict=True):
            series = self.X[column]
            if kind == "categorical":
                codes = self._codes(str(column), series).astype(np.float64)
                columns.append(np.where(codes < 0, np.nan, codes))
            else:
                columns.append(
                    pd.to_numeric(series, errors="coerce").to_numpy(np.float64)
                )
        return np.column_stack(columns) if columns else np.zeros((self.n_rows, 0))

    def _codes(self, column: str, series: pd.Series) -> IntArray:
        """Return a categorical column's codes: declared, agreed or local (-1: NaN)."""
        declared = self._declared_rows.get(column)
        if declared is not None:
            return declared
        local: IntArray = series.cat.codes.to_numpy().astype(np.int64)
        coding = self._agreed.get(column)
        if coding is None:
            return local
        table: IntArray = np.append(coding.positions, -1).astype(np.int64)
        return table[local]  # code -1 (missing) -> -1

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
