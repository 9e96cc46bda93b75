"""ICDTA4FL rule sets: the rules of client trees as arrays (docs/icdta.md).

Step 3 turns every kept client tree into rules, one per leaf: the conjunction of
the conditions on its root-to-leaf path and the leaf's class-probability vector ŷ
(:meth:`RuleSet.from_tree`). Step 4 merges identical conjunctions by summing their
ŷ (:meth:`RuleSet.deduplicated`); the Cartesian product itself lives in
:mod:`fedtrees.algorithms.icdta._rules`, which re-exports :class:`RuleSet`.

One row per rule. ID3 rules hold the code that each rule requires of every feature
(-1: no condition). CART rules hold one interval ``low < x_f <= high`` per feature
(±inf: no bound).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, cast

import numpy as np
import numpy.typing as npt
import pandas as pd

from fedtrees._typing import BoolArray, FloatArray, IntArray
from fedtrees._validation import check_choice, check_int, check_matrix, invalid
from fedtrees.algorithms.icdta._rules_text import format_number, rule_texts
from fedtrees.exceptions import ValidationError
from fedtrees.tree import format_condition

if TYPE_CHECKING:
    from fedtrees.tree import Condition, Rule, Tree

__all__ = ["Base", "RuleSet"]

Base: TypeAlias = Literal["id3", "cart"]
_BASES: Final = ("id3", "cart")


@dataclass(frozen=True, eq=False)
class RuleSet:
    """Rules (conjunctions) with their summed class-probability vectors ŷ.

    Parameters
    ----------
    base : {"id3", "cart"}
        ``"id3"``: equality conditions in ``values``; ``"cart"``: intervals in
        ``low``/``high``. The arrays of the other base may be given as any empty
        array; they are stored with shape (n_rules, 0).
    values : int64 array of shape (n_rules, n_features)
        ID3: the code each rule requires of feature f, -1 for no condition.
    low, high : float64 arrays of shape (n_rules, n_features)
        CART: each rule requires ``low < x_f <= high`` (-inf / +inf: no bound).
        Every interval must be non-empty (``low < high``).
    proba : float64 array of shape (n_rules, n_classes)
        ŷ, finite and >= 0, summed over merged rules (not renormalised).
    n_features : int

    Examples
    --------
    >>> rs = RuleSet("cart", values=np.empty(0, dtype=np.int64),
    ...              low=[[-np.inf], [32.5]], high=[[32.5], [np.inf]],
    ...              proba=[[0.9, 0.1], [0.2, 0.8]], n_features=1)
    >>> rs.holds([[30.0], [40.0]]).tolist()
    [[True, False], [False, True]]
    >>> print(rs.to_text(feature_names=["age"], classes=["no", "yes"]))
    2 rules (cart), classes: no, yes
    0: age <= 32.5 → no (p=[0.9, 0.1])
    1: age > 32.5 → yes (p=[0.2, 0.8])
    """

    base: Base
    values: IntArray
    low: FloatArray
    high: FloatArray
    proba: FloatArray
    n_features: int

    def __post_init__(self) -> None:
        for name, array in _coerce(self).items():
            object.__setattr__(self, name, array)

    @property
    def n_rules(self) -> int:
        """Number of rules."""
        return int(self.proba.shape[0])

    def __len__(self) -> int:
        return self.n_rules

    @property
    def n_classes(self) -> int:
        """Length of every ŷ."""
        return int(self.proba.shape[1])

    @cached_property
    def predicted(self) -> IntArray:
        """Class index of every rule: argmax of ŷ (first class on ties)."""
        result: IntArray = np.argmax(self.proba, axis=1).astype(np.int64)
        return result

    def holds(self, X: npt.ArrayLike) -> BoolArray:
        """Return the (n_rows, n_rules) matrix of which rows satisfy which rule.

        Parameters
        ----------
        X : array-like of shape (n_rows, n_features)
            Category codes (ID3) or numeric values (CART).
        """
        rows = check_matrix(
            X, "X", "RuleSet.holds", n_features=self.n_features, allow_empty=True
        )
        result = np.ones((rows.shape[0], self.n_rules), dtype=bool)
        for f in range(self.n_features):
            column = rows[:, f, None]
            if self.base == "id3":
                result &= (self.values[:, f] < 0) | (column == self.values[:, f])
            else:
                result &= (column > self.low[:, f]) & (column <= self.high[:, f])
        return result

    def to_frame(
        self,
        feature_names: Sequence[str] | None = None,
        categories: Sequence[Sequence[str] | None] | None = None,
        classes: npt.ArrayLike | None = None,
        *,
        decimals: int = 3,
    ) -> pd.DataFrame:
        """Return one row per rule: its text, predicted class and normalised ŷ.

        Columns: ``"rule"`` (``"safety = high ∧ persons = 4"``, ``"age > 32.5 ∧
        age <= 40"``, ``"(always)"`` for no condition), ``"class"`` (label of the
        argmax of ŷ) and one column per class (named ``str(label)``) holding ŷ
        normalised to sum 1. The index is the rule number.
        """
        labels = self._labels(classes)
        total = self.proba.sum(axis=1, keepdims=True)
        share = np.divide(
            self.proba,
            total,
            out=np.full(self.proba.shape, 1.0 / self.n_classes),
            where=total > 0,
        )
        frame = pd.DataFrame(
            {
                "rule": rule_texts(self, feature_names, categories, decimals),
                "class": labels[self.predicted],
            }
        )
        for c, label in enumerate(labels):
            frame[str(label)] = share[:, c]
        return frame

    def to_text(
        self,
        max_rules: int = 20,
        *,
        feature_names: Sequence[str] | None = None,
        categories: Sequence[Sequence[str] | None] | None = None,
        classes: npt.ArrayLike | None = None,
        decimals: int = 3,
    ) -> str:
        """Return the first ``max_rules`` rules as text, then ``... and N more``."""
        shown = check_int(max_rules, "max_rules", "RuleSet.to_text", min_value=0)
        head = self._take(np.arange(min(shown, self.n_rules)))
        frame = head.to_frame(feature_names, categories, classes, decimals=decimals)
        labels = ", ".join(str(label) for label in self._labels(classes))
        lines = [f"{self.n_rules} rules ({self.base}), classes: {labels}"]
        for i, row in enumerate(frame.to_numpy().tolist()):
            probs = ", ".join(format_number(p, decimals) for p in row[2:])
            lines.append(f"{i}: {row[0]} → {row[1]} (p=[{probs}])")
        if self.n_rules > shown:
            lines.append(f"... and {self.n_rules - shown} more")
        return "\n".join(lines)

    @classmethod
    def from_tree(cls, tree: Tree, base: Base) -> RuleSet:
        """Return one rule per leaf of ``tree`` (docs/icdta.md step 3).

        ŷ is the leaf's class distribution; rules come in ``Tree.rules()`` order.
        ``base="id3"`` accepts multiway splits only (every condition ``x_f in
        {one code}``); ``base="cart"`` accepts numeric ``<=`` / ``>`` conditions
        (repeated conditions on one feature are intersected).

        Raises
        ------
        ValidationError
            For a regression tree, or a condition the base cannot express (a
            ``not in`` default branch, a multi-code set, a numeric split under ID3,
            a categorical or client split under CART), naming the condition.

        Examples
        --------
        >>> from fedtrees.tree import NodeStats, TreeBuilder
        >>> b = TreeBuilder(n_features=1, classes=["no", "yes"])
        >>> root = b.add_root(NodeStats.from_class_counts([2, 2]))
        >>> _ = b.split_numeric(root, 0, 0.5, NodeStats.from_class_counts([2, 0]),
        ...                     NodeStats.from_class_counts([0, 2]))
        >>> rs = RuleSet.from_tree(b.build(), "cart")
        >>> rs.low.tolist(), rs.high.tolist(), rs.predicted.tolist()
        ([[-inf], [0.5]], [[0.5], [inf]], [0, 1])
        """
        base = _check_base(base, "RuleSet.from_tree")
        if tree.classes is None:
            raise ValidationError(
                "RuleSet.from_tree needs a classification tree; got a regression "
                "tree (its leaves hold means, not class distributions)."
            )
        rules = tree.rules()
        proba, none = np.stack([rule.value for rule in rules]), np.zeros(0)
        if base == "id3":
            values = _id3_values(tree, rules)
            return cls(base, values, none, none, proba, tree.n_features)
        low, high = _cart_bounds(tree, rules)
        return cls(base, none.astype(np.int64), low, high, proba, tree.n_features)

    def deduplicated(self) -> RuleSet:
        """Merge identical conjunctions, summing their ŷ (docs/icdta.md step 4).

        The result keeps the order of first appearance.
        """
        if self.n_rules == 0:
            return self
        keys = self.values if self.base == "id3" else np.hstack([self.low, self.high])
        _, first, inverse = np.unique(
            _row_keys(keys), return_index=True, return_inverse=True
        )
        order = np.argsort(first)
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        group = rank[inverse]
        proba = np.zeros((order.size, self.n_classes))
        np.add.at(proba, group, self.proba)
        return self._take(first[order], proba)

    def _take(self, rows: npt.NDArray[Any], proba: FloatArray | None = None) -> RuleSet:
        return RuleSet(
            self.base,
            self.values[rows],
            self.low[rows],
            self.high[rows],
            self.proba[rows] if proba is None else proba,
            self.n_features,
        )

    def _labels(self, classes: npt.ArrayLike | None) -> npt.NDArray[Any]:
        if classes is None:
            return np.arange(self.n_classes)
        labels = np.asarray(classes)
        if labels.shape != (self.n_classes,):
            wanted = f"{self.n_classes} labels (one per ŷ column)"
            raise invalid("classes", "RuleSet.to_frame", wanted, labels.tolist())
        return labels

    def __repr__(self) -> str:
        sizes = f"{self.n_rules}, n_features={self.n_features}"
        return f"RuleSet({self.base!r}, n_rules={sizes}, n_classes={self.n_classes})"


def _row_keys(columns: npt.NDArray[Any]) -> IntArray:
    """Return one int64 per row of ``columns``, equal iff the rows are equal.

    Every column becomes codes below some ``size`` (:func:`_column_codes`),
    packed mixed-radix into the key; when the next column would overflow the key,
    the key is first re-ranked (below the number of rows). Sorting these keys is
    several times faster than ``np.unique(axis=0)``, which sorts whole rows as
    records.
    """
    key = np.zeros(columns.shape[0], dtype=np.int64)
    span = 1  # the key is below span (a Python int: no overflow)
    for column in columns.T:
        codes, size = _column_codes(column)
        if span * size >= 2**62:
            ranked, key = np.unique(key, return_inverse=True)
            span = ranked.size
        key = key * size + codes
        span *= size
    return key


def _column_codes(column: npt.NDArray[Any]) -> tuple[IntArray, int]:
    """Return int64 codes below ``size``, equal iff the values are equal.

    Integers in a range shorter than the column are their offset from the
    minimum (no sort); other columns get the rank among their distinct values
    (so -0.0 and 0.0 are one value; no NaN).
    """
    if column.dtype.kind == "i":
        low, high = int(column.min()), int(column.max())
        if high - low < column.size:
            return column - low, high - low + 1
    distinct, rank = np.unique(column, return_inverse=True)
    return rank, int(distinct.size)


# -- validation ------------------------------------------------------------------------
def _coerce(rules: RuleSet) -> dict[str, npt.NDArray[Any]]:
    """Read-only canonical copies of the arrays, or a ValidationError."""
    owner = "RuleSet"
    base = _check_base(rules.base, owner)
    n_features = check_int(rules.n_features, "n_features", owner, min_value=1)
    proba = _array(rules.proba, "proba", np.float64)
    if proba.ndim != 2 or proba.shape[1] < 1 or not np.all(np.isfinite(proba)):
        shape = f"an array of shape {proba.shape} (or with NaN/inf)"
        raise invalid("proba", owner, "a finite 2-D array with >= 1 column", shape)
    if np.any(proba < 0):
        raise invalid("proba", owner, "an array of values >= 0", "a negative value")
    n = proba.shape[0]
    used = ("values",) if base == "id3" else ("low", "high")
    out: dict[str, npt.NDArray[Any]] = {"proba": proba}
    for name in ("values", "low", "high"):
        dtype = np.int64 if name == "values" else np.float64
        array = _array(getattr(rules, name), name, dtype)
        wanted = (n, n_features) if name in used else (n, 0)
        if name not in used and array.size == 0:
            array = np.zeros(wanted, dtype=dtype)
        if array.shape != wanted:
            shape = f"an array of shape {wanted} for base={base!r}"
            raise invalid(name, owner, shape, f"shape {array.shape}")
        array.flags.writeable = False
        out[name] = array
    _check_conditions(out, base)
    proba.flags.writeable = False
    return out


def _array(value: object, name: str, dtype: type[Any]) -> npt.NDArray[Any]:
    try:
        return np.array(value, dtype=dtype, copy=True)
    except (TypeError, ValueError, OverflowError) as exc:
        what = f"an array convertible to {np.dtype(dtype)}"
        raise invalid(name, "RuleSet", what, type(value).__name__) from exc


def _check_conditions(arrays: dict[str, npt.NDArray[Any]], base: str) -> None:
    if base == "id3":
        if np.any(arrays["values"] < -1):
            raise invalid("values", "RuleSet", "codes >= 0 or -1", "a value below -1")
        return
    low, high = arrays["low"], arrays["high"]
    empty = ~(low < high)  # also catches NaN
    if empty.any():
        rule, f = (int(i[0]) for i in np.nonzero(empty))
        raise invalid(
            "low",
            "RuleSet",
            "below 'high' everywhere (non-empty intervals, no NaN)",
            f"rule {rule}, feature {f}: ({low[rule, f]}, {high[rule, f]}]",
        )


def _check_base(base: object, owner: str) -> Base:
    return cast(Base, check_choice(base, "base", owner, _BASES))


# -- from a tree, and text -----------------------------------------------------------
def _id3_values(tree: Tree, rules: list[Rule]) -> IntArray:
    values = np.full((len(rules), tree.n_features), -1, dtype=np.int64)
    for i, rule in enumerate(rules):
        for cond in rule.conditions:
            if cond.op != "in" or cond.feature < 0 or len(cond.codes) != 1:
                raise _unsupported(tree, "id3", rule, cond)
            if values[i, cond.feature] not in (-1, cond.codes[0]):
                raise _unsupported(tree, "id3", rule, cond, "a contradictory")
            values[i, cond.feature] = cond.codes[0]
    return values


def _cart_bounds(tree: Tree, rules: list[Rule]) -> tuple[FloatArray, FloatArray]:
    low = np.full((len(rules), tree.n_features), -np.inf)
    high = np.full((len(rules), tree.n_features), np.inf)
    for i, rule in enumerate(rules):
        for cond in rule.conditions:
            f = cond.feature
            if cond.op == "<=":
                high[i, f] = min(high[i, f], cond.threshold)
            elif cond.op == ">":
                low[i, f] = max(low[i, f], cond.threshold)
            else:
                raise _unsupported(tree, "cart", rule, cond)
    return low, high


def _unsupported(
    tree: Tree, base: str, rule: Rule, cond: Condition, what: str = ""
) -> ValidationError:
    if not what:
        kinds = {"<=": "a numeric", ">": "a numeric", "not in": "a default-branch"}
        kinds["in"] = "a multi-code" if base == "id3" else "a categorical"
        what = "a client" if cond.feature < 0 else kinds[cond.op]
    accepted = {
        "id3": "multiway ID3 splits only (conditions 'feature in {one code}')",
        "cart": "numeric splits only (conditions 'feature <= t' and 'feature > t')",
    }[base]
    return ValidationError(
        f"RuleSet.from_tree(base={base!r}) accepts {accepted}; the rule of leaf "
        f"{rule.leaf} has {what} condition: {format_condition(tree, cond)}."
    )
